"""Attention written at the tile level, in Triton: FlashAttention-2 and split-KV decoding.

- :func:`flash_attention`, :func:`flash_attention_lse` -- FlashAttention-2 (Dao 2023): a forward
  kernel that keeps one block of queries in registers and streams the keys past it with the
  online softmax, and a backward that recomputes the weights from the log-sum-exp, with the
  key blocks outer for dK, dV (one kernel) and the query blocks outer for dQ (another)
- :func:`split_kv_decode` -- split-KV decoding (Flash-Decoding): the cache cut into chunks that
  run in parallel, their partial results merged by log-sum-exp

Where the kernels run. On a machine with a CUDA GPU, Triton compiles them for it. Without one,
Triton's interpreter runs every program instance of a kernel one after another on the CPU, with
NumPy, so the same source runs (slowly) everywhere. The interpreter cannot show races (nothing
runs concurrently), computes ``tl.dot`` in full float32 and emulates bfloat16; use small shapes
with it. Triton chooses between the two when a kernel is defined, its own library's kernels
included, that is when triton is first imported; so this module sets ``TRITON_INTERPRET=1``
itself when no GPU is present and Triton has not been imported yet (the variable unset), and
``import attnlab`` already does the same where no GPU driver is present, because torch imports
Triton (``torch.nn.attention.bias``, used by ``attnlab.torch_ops``). Where Triton was imported
without the variable on a machine without a GPU, importing this module raises RuntimeError
saying so.

Triton is an optional dependency: ``pip install -e .[kernels]``.
"""
from __future__ import annotations

import os
import sys

import torch

if "triton" not in sys.modules and "TRITON_INTERPRET" not in os.environ and not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"                    # no GPU: run the kernels in Triton's interpreter

try:
    import triton
    from triton.runtime.interpreter import InterpretedFunction
except ImportError as error:                               # ModuleNotFoundError included
    raise ImportError("attnlab.kernels needs Triton, an optional dependency: pip install -e .[kernels] "
                      "(or pip install triton)") from error

if not torch.cuda.is_available() and not triton.knobs.runtime.interpret:
    raise RuntimeError("attnlab.kernels: there is no GPU, and Triton was imported before TRITON_INTERPRET=1 was "
                       "set, so its kernels cannot run in the interpreter. Set TRITON_INTERPRET=1 before "
                       "importing torch, or import attnlab first (it sets the variable where there is no GPU)")
if triton.knobs.runtime.interpret and not isinstance(triton.language.standard.sum, InterpretedFunction):
    raise RuntimeError("attnlab.kernels: TRITON_INTERPRET=1 was set after Triton was imported, so Triton's own "
                       "library is compiled for a GPU and the interpreter cannot run it. Set TRITON_INTERPRET=1 "
                       "before importing torch, or import attnlab first (it sets the variable where there is "
                       "no GPU)")

from ._launch import interpreted  # noqa: E402
from .flash import flash_attention, flash_attention_lse  # noqa: E402
from .split_kv import split_kv_decode  # noqa: E402

__all__ = ["flash_attention", "flash_attention_lse", "interpreted", "split_kv_decode"]
