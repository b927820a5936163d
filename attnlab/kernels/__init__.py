"""Attention written at the tile level, in Triton: FlashAttention-2 and split-KV decoding.

- :func:`flash_attention`, :func:`flash_attention_lse` -- FlashAttention-2 (Dao 2023): a forward
  kernel that keeps one block of queries in registers and streams the keys past it with the
  online softmax, and a backward that recomputes the weights from the log-sum-exp, with the
  key blocks outer for dK, dV (one kernel) and the query blocks outer for dQ (another)
- :func:`split_kv_decode` -- split-KV decoding (Flash-Decoding): the cache cut into chunks that
  run in parallel, their partial results merged by log-sum-exp

Where the kernels run. On a machine with a CUDA GPU, Triton compiles them for it. Without one,
this module sets ``TRITON_INTERPRET=1`` itself (unless the variable is already set) before it
defines its kernels: Triton's interpreter then runs every program instance of a kernel one after
another on the CPU, with NumPy, so the same source runs (slowly) everywhere. Triton reads the
variable when a kernel is defined (``@triton.jit``), not when Triton is imported, so this works
even where Triton was imported already (``torch.nn.attention.bias`` imports it, and with it
``attnlab.torch_ops``). The interpreter cannot show races (nothing runs concurrently), computes
``tl.dot`` in full float32 and emulates bfloat16; use small shapes with it. With
``TRITON_INTERPRET=0`` set by hand on a machine without a GPU, the kernels cannot run and say so
when called.

Triton is an optional dependency: ``pip install -e .[kernels]``.
"""
from __future__ import annotations

import os

import torch

if "TRITON_INTERPRET" not in os.environ and not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"                    # no GPU: run the kernels in Triton's interpreter

try:
    import triton  # noqa: F401
except ImportError as error:                               # ModuleNotFoundError included
    raise ImportError("attnlab.kernels needs Triton, an optional dependency: pip install -e .[kernels] "
                      "(or pip install triton)") from error

from ._launch import interpreted  # noqa: E402
from .flash import flash_attention, flash_attention_lse  # noqa: E402
from .split_kv import split_kv_decode  # noqa: E402

__all__ = ["flash_attention", "flash_attention_lse", "interpreted", "split_kv_decode"]
