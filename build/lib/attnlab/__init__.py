"""attnlab: the helper package of the executable book on attention.

The NumPy reference (``softmax``, ``attention``, ``multi_head_attention``) is the oracle;
``masks``, ``grad`` and ``exact`` build on it; ``torch_ops`` runs the same semantics in
PyTorch on any device. ``torch_ops``, ``widgets``, ``checks``, ``plots``, ``memory`` and
``pretrained`` are imported on first use, so ``import attnlab`` stays fast for NumPy work.
"""
from __future__ import annotations

import importlib

from . import exact, grad, masks
from .errors import AttentionInputError, EmptyVisibilityError
from .reference import attention, kv_head_for, multi_head_attention, softmax

__all__ = [
    "AttentionInputError", "EmptyVisibilityError", "attention", "exact", "grad", "kv_head_for",
    "masks", "multi_head_attention", "softmax",
]

_LAZY = {"torch_ops", "widgets", "checks", "plots", "memory", "pretrained"}


def __getattr__(name):
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'attnlab' has no attribute {name!r}")
