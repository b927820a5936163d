"""Visibility masks as boolean "allowed" arrays: True means this query may read this key.

One convention inside the book; converters at the edge for the other two in common use
(additive 0 / -inf masks, and nn.MultiheadAttention's True-means-masked). Positions are
absolute: query row i sits at position ``offset + i`` and key column j at position j.
"""

from __future__ import annotations

import numpy as np

from . import _validate as V
from .errors import AttentionInputError


def _count(name: str, n, minimum: int = 1) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < minimum:
        raise AttentionInputError(f"{name} must be an integer >= {minimum}; got {n!r}")
    return int(n)


def _positions(T, S, offset):
    """Absolute positions of the T queries (column) and S keys (row) for broadcasting."""
    T = _count("T", T)
    S = T if S is None else _count("S", S)
    if offset is None:
        offset = S - T  # queries are the newest T positions (bottom-right aligned)
    elif isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise AttentionInputError(
            f"offset must be an integer (absolute position of query 0); got {offset!r}"
        )
    q_pos = int(offset) + np.arange(T)[:, None]  # (T, 1)
    k_pos = np.arange(S)[None, :]  # (1, S)
    return q_pos, k_pos


def causal(T, S=None, offset=None) -> np.ndarray:
    """(T, S) mask with allowed[i, j] = j <= i + offset.

    ``offset`` is the absolute position of query 0; the default S - T makes the T queries the
    newest positions (as with a KV cache), like torch's ``causal_lower_right``.
    """
    q_pos, k_pos = _positions(T, S, offset)
    return k_pos <= q_pos


def sliding_window(T, window, S=None, offset=None) -> np.ndarray:
    """Causal mask that also forgets keys more than ``window - 1`` positions back.

    allowed[i, j] = (i + offset) - window < j <= i + offset: each query sees at most
    ``window`` keys, itself included.
    """
    window = _count("window", window)
    q_pos, k_pos = _positions(T, S, offset)
    return (k_pos <= q_pos) & (k_pos > q_pos - window)


def padding(lengths, S) -> np.ndarray:
    """(B, 1, S) key-padding mask: key j of sequence b is real iff j < lengths[b].

    The middle axis of size 1 broadcasts over queries, so the mask can be intersected with a
    (T, S) causal mask or handed to attention directly.
    """
    S = _count("S", S)
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or not np.issubdtype(lengths.dtype, np.integer):
        raise AttentionInputError(
            f"lengths must be a 1-D array of integers; got dtype {lengths.dtype}, shape {V.fmt(lengths.shape)}"
        )
    if (lengths < 0).any() or (lengths > S).any():
        raise AttentionInputError(
            f"every length must lie in [0, S={S}]; got {lengths.tolist()}"
        )
    return (np.arange(S)[None, :] < lengths[:, None])[:, None, :]  # (B, 1, S)


def documents(doc_ids) -> np.ndarray:
    """(..., T, T) mask for packed sequences: a position may read only its own document.

    Intersect with :func:`causal` for packed causal language modelling.
    """
    ids = np.asarray(doc_ids)
    if ids.ndim < 1 or ids.shape[-1] == 0:
        raise AttentionInputError(
            f"doc_ids must have shape (..., T) with T >= 1; got {V.fmt(ids.shape)}"
        )
    return ids[..., :, None] == ids[..., None, :]


def to_additive(allowed, dtype=np.float64) -> np.ndarray:
    """Boolean allowed -> additive mask: 0 where allowed, -inf where forbidden."""
    a = _boolean("allowed", allowed)
    return np.where(a, 0.0, -np.inf).astype(dtype)


def from_additive(additive) -> np.ndarray:
    """Additive mask -> boolean allowed: an entry is allowed iff its added value is finite.

    Large negative finite values such as -1e9 are refused: they are not a mask but a penalty
    that turns fully masked rows into uniform weights over forbidden keys.
    """
    m = np.asarray(additive, dtype=float)
    if np.isnan(m).any() or np.isposinf(m).any():
        raise AttentionInputError(
            "additive mask must hold 0 (allowed) or -inf (forbidden); found nan or +inf"
        )
    finite = np.isfinite(m)
    if (m[finite] != 0).any():
        bad = float(m[finite][m[finite] != 0][0])
        raise AttentionInputError(
            f"additive mask must hold 0 (allowed) or -inf (forbidden); found {bad!r}. A large finite penalty "
            f"like -1e9 is a bias, not a mask: rows it fully masks come out uniform instead of empty"
        )
    return finite


def from_forbidden(mask) -> np.ndarray:
    """True-means-masked (nn.MultiheadAttention's key_padding_mask / attn_mask) -> allowed."""
    return ~_boolean("mask", mask)


def _boolean(name, mask) -> np.ndarray:
    m = np.asarray(mask)
    if m.dtype != bool:
        raise AttentionInputError(
            f"{name} must be a boolean array; got dtype {m.dtype}, shape {V.fmt(m.shape)}"
        )
    return m
