"""attnlab: the helper package of the executable book on attention.

The NumPy reference (``softmax``, ``attention``, ``multi_head_attention``) is the oracle;
``masks``, ``grad``, ``exact`` and ``position`` (position encodings) build on it; ``torch_ops``
runs the same semantics in PyTorch on any device. ``display`` shows exact values with their
decimals. ``torch_ops``, ``widgets``, ``checks``, ``plots``, ``memory``, ``pretrained``,
``decoder``, ``display``, ``diagrams``, ``example`` and ``kernels`` (Triton, an optional extra) are
imported on first use, so ``import attnlab`` stays fast for NumPy work.
``set_language("zh_CN")`` switches the package's messages, labels and errors to Chinese;
``tr("...")`` (``page_text``) translates the strings of the pages' own code cells.
"""
from __future__ import annotations

import importlib
import os
import sys

from . import exact, grad, masks, position
from .cache_size import kv_cache_bytes
from .errors import AttentionInputError, EmptyVisibilityError, KVCacheError
from .i18n import page_table, page_text, set_language
from .i18n import page_table as tr_table
from .i18n import page_text as tr
from .reference import attention, kv_head_for, multi_head_attention, softmax

__all__ = [
    "AttentionInputError", "EmptyVisibilityError", "KVCacheError", "attention", "exact", "grad", "kv_cache_bytes",
    "kv_head_for", "masks", "multi_head_attention", "page_table", "page_text", "position", "set_language", "softmax",
    "tr", "tr_table",
]

_LAZY = {"torch_ops", "widgets", "checks", "plots", "memory", "pretrained", "display", "diagrams", "example", "kernels",
         "decoder"}


def __getattr__(name):
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'attnlab' has no attribute {name!r}")


def _triton_interpreter_where_no_gpu() -> None:
    """Set TRITON_INTERPRET=1 where there is no GPU driver, before anything imports Triton.

    Triton decides for every kernel, its own library's included, whether to compile it or to run it in
    its CPU interpreter when the kernel is defined, that is mostly when triton is first imported; and
    torch imports triton (torch.nn.attention.bias, which attnlab.torch_ops uses). So attnlab.kernels,
    imported later, would come too late: the package does it on import instead, where the variable is
    unset, triton is not imported yet and no NVIDIA or AMD driver is present (without one, Triton can
    only interpret). Cheap: no torch import.
    """
    drivers = ("/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia/version", "/dev/kfd")
    if "TRITON_INTERPRET" not in os.environ and "triton" not in sys.modules \
            and not any(os.path.exists(path) for path in drivers):
        os.environ["TRITON_INTERPRET"] = "1"


_triton_interpreter_where_no_gpu()
