"""attnlab: the helper package of the executable book on attention.

The NumPy reference (``softmax``, ``attention``, ``multi_head_attention``) is the oracle;
``masks``, ``grad`` and ``exact`` build on it; ``torch_ops`` runs the same semantics in
PyTorch on any device. ``display`` shows exact values with their decimals. ``torch_ops``,
``widgets``, ``checks``, ``plots``, ``memory``, ``pretrained`` and ``display`` are imported on
first use, so ``import attnlab`` stays fast for NumPy work. ``set_language("zh_CN")`` switches
the package's messages, labels and errors to Chinese; ``tr("...")`` (``page_text``) translates
the strings of the pages' own code cells.
"""
from __future__ import annotations

import importlib

from . import exact, grad, masks
from .cache_size import kv_cache_bytes
from .errors import AttentionInputError, EmptyVisibilityError, KVCacheError
from .i18n import page_table, page_text, set_language
from .i18n import page_table as tr_table
from .i18n import page_text as tr
from .reference import attention, kv_head_for, multi_head_attention, softmax

__all__ = [
    "AttentionInputError", "EmptyVisibilityError", "KVCacheError", "attention", "exact", "grad", "kv_cache_bytes",
    "kv_head_for", "masks", "multi_head_attention", "page_table", "page_text", "set_language", "softmax", "tr",
    "tr_table",
]

_LAZY = {"torch_ops", "widgets", "checks", "plots", "memory", "pretrained", "display", "diagrams", "example"}


def __getattr__(name):
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'attnlab' has no attribute {name!r}")
