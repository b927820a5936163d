"""The NumPy reference: softmax, single-head and multi-head attention.

This is the oracle every other implementation in the book is checked against. It favours
clarity over speed, works in float64 by default, and follows the row-vector convention:
``Q = X @ W_Q``, one position per row. Leading (batch, head) axes broadcast.
"""

from __future__ import annotations

import numpy as np

from . import _validate as V
from .errors import AttentionInputError, EmptyVisibilityError


def _as_float(name: str, x) -> np.ndarray:
    """Convert to a float64 array (keeping float32 if given) and refuse non-finite values."""
    a = np.asarray(x)
    if a.dtype == bool or not (
        np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)
    ):
        raise AttentionInputError(
            f"{name} must hold real numbers; got dtype {a.dtype} with shape {V.fmt(a.shape)}"
        )
    if a.dtype != np.float32:
        a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        bad = np.argwhere(~np.isfinite(a))[0]
        raise AttentionInputError(
            f"{name} contains a non-finite value (nan or inf) at index {tuple(int(i) for i in bad)}; "
            f"shape {V.fmt(a.shape)}"
        )
    return a


def softmax(x, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis``.

    Subtracting the row maximum first changes nothing mathematically (the
    softmax is invariant to adding one constant to every entry) but keeps
    ``exp`` from overflowing: every exponent is <= 0.
    """
    a = _as_float("x", x)
    if a.ndim == 0:
        raise AttentionInputError(
            "x must have at least one axis; got a scalar")
    if not -a.ndim <= axis < a.ndim:
        raise AttentionInputError(
            f"axis {axis} is out of range for x of shape {V.fmt(a.shape)}")
    shifted = a - a.max(axis=axis, keepdims=True)     # max entry becomes 0
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


def masked_softmax(scores, allowed=None, live_rows=None) -> np.ndarray:
    """Softmax over the last axis, only over ``allowed`` entries (Algorithm 5.1).

    Each row: take the largest *allowed* score, exponentiate the allowed
    scores minus it, divide by their sum. Forbidden entries get weight
    exactly 0 (never exp(-1e9)). Rows where ``live_rows`` is False (padding
    queries) get all-zero weights. Every other row must have an allowed
    entry; :func:`check_visibility` makes sure of that beforehand.
    """
    if allowed is None:
        allowed = np.ones(scores.shape, bool)
    allowed = np.broadcast_to(allowed, scores.shape)        # (..., T, S)
    if live_rows is not None:
        allowed = allowed & live_rows[..., None]            # (..., T, S)
    has_key = allowed.any(axis=-1, keepdims=True)           # (..., T, 1)
    masked = np.where(allowed, scores, -np.inf)
    row_max = masked.max(axis=-1, keepdims=True)
    row_max = np.where(has_key, row_max, 0.0)    # empty row: nothing to shift
    shifted = np.where(allowed, scores - row_max, 0.0)   # <= 0 where allowed
    e = np.where(allowed, np.exp(shifted), 0.0)  # forbidden: exactly 0
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(has_key, total, 1.0)     # empty rows stay all 0


def check_visibility(allowed, query_valid, shape) -> None:
    """Raise EmptyVisibilityError if a valid query may read no key."""
    if allowed is None:
        return
    empty = ~np.broadcast_to(allowed, shape).any(axis=-1)   # (..., T)
    if query_valid is not None:
        empty &= np.broadcast_to(query_valid, shape[:-1])
    if empty.any():
        where = tuple(int(i) for i in np.argwhere(empty)[0])
        raise EmptyVisibilityError(
            f"query at index {where} (batch/head axes..., query row) is "
            f"valid but may read no key: its row of `allowed` is all False, "
            f"so the softmax has nothing to normalise. Mark it invalid with "
            f"query_valid=False (it then gets zero output) or fix the mask"
        )


def prepare_masks(allowed, query_valid, batch, T, S):
    """Validate the two masks; return them as bool arrays (or None) and the weights' shape."""
    target = tuple(batch) + (T, S)
    if allowed is not None:
        allowed = np.asarray(allowed)
        V.mask_shape("allowed", allowed.shape, allowed.dtype == bool, target)
    if query_valid is not None:
        query_valid = np.asarray(query_valid)
        V.mask_shape(
            "query_valid", query_valid.shape, query_valid.dtype == bool, target[:-1]
        )
    return allowed, query_valid, target


def attention(q, k, v, allowed=None, query_valid=None, scale=None,
              return_weights=False):
    """Scaled dot-product attention softmax(q k^T * scale) v, with masks.

    q (..., T, d_k), k (..., S, d_k), v (..., S, d_v) -> out (..., T, d_v)
    allowed: bool, broadcastable to (..., T, S); True = query may read key.
    query_valid: bool, broadcastable to (..., T); False rows (padding
    queries) get zero output and zero weights. A valid query with no
    allowed key raises EmptyVisibilityError.
    """
    q, k, v = _as_float("q", q), _as_float("k", k), _as_float("v", v)
    batch, T, S, d_k, _ = V.qkv_shapes(q.shape, k.shape, v.shape)
    allowed, query_valid, wshape = prepare_masks(
        allowed, query_valid, batch, T, S)
    c = V.scale_value(scale, d_k)
    check_visibility(allowed, query_valid, wshape)

    with np.errstate(over="ignore", invalid="ignore"):
        scores = (q @ np.swapaxes(k, -1, -2)) * c       # (..., T, S)
    _check_scores(scores, q, k)
    scores = np.broadcast_to(scores, wshape)            # (..., T, S)
    live = None
    if query_valid is not None:
        live = np.broadcast_to(query_valid, wshape[:-1])    # (..., T)
    weights = masked_softmax(scores, allowed, live)     # (..., T, S)
    out = weights @ v                                   # (..., T, d_v)
    return (out, weights) if return_weights else out


def _check_scores(scores, q, k) -> None:
    """Finite inputs can still overflow in q k^T (float32 above ~1e19)."""
    if not np.isfinite(scores).all():
        raise AttentionInputError(
            f"the scores q k^T * scale overflowed {scores.dtype} (finite "
            f"inputs, infinite products; largest |q| = {np.abs(q).max():.3g}, "
            f"|k| = {np.abs(k).max():.3g}). Rescale or compute in float64")


def kv_head_for(h: int, n_heads: int, n_kv_heads: int) -> int:
    """The KV head that query head ``h`` reads: h // (n_heads // n_kv_heads)."""
    n_heads, n_kv_heads = V.head_counts(n_heads, n_kv_heads)
    if (
        isinstance(h, bool)
        or not isinstance(h, (int, np.integer))
        or not 0 <= h < n_heads
    ):
        raise AttentionInputError(
            f"h must be a query head index in [0, {n_heads}); got {h!r}"
        )
    return int(h) // (n_heads // n_kv_heads)


def _with_head_axis(mask, batch_ndim: int, core: int):
    """Give a mask without a head axis one, so it broadcasts against (..., H, T[, S]).

    A mask with exactly the batch rank of the input (``batch_ndim`` leading axes plus ``core``
    trailing ones), e.g. a key-padding mask (B, 1, S) or query_valid (B, T), gets a head axis
    of size 1 inserted before its ``core`` axes: (B, 1, 1, S), (B, 1, T). Lower-rank masks
    ((T, S) for every batch and head) and masks that already carry a head axis are left alone.
    """
    if mask is None:
        return None
    mask = np.asarray(mask)
    if batch_ndim > 0 and mask.ndim == batch_ndim + core:
        mask = np.expand_dims(mask, axis=-core - 1)
    return mask


def multi_head_attention(
    x_q,
    x_kv,
    w_q,
    w_k,
    w_v,
    w_o,
    n_heads,
    n_kv_heads=None,
    allowed=None,
    query_valid=None,
    return_weights=False,
):
    """Multi-head attention (MHA; GQA/MQA when n_kv_heads < n_heads), NumPy reference.

    x_q (..., T, d_q), x_kv (..., S, d_m); w_q (d_q, H*d_k), w_k (d_m, H_kv*d_k),
    w_v (d_m, H_kv*d_v), w_o (H*d_v, d_out). Query head h reads KV head h // (H // H_kv).
    ``allowed`` broadcasts against the weights (..., H, T, S) the way SDPA's attn_mask does;
    ``query_valid`` broadcasts against (..., H, T).
    """
    x_q, x_kv = _as_float("x_q", x_q), _as_float("x_kv", x_kv)
    w_q, w_k, w_v, w_o = (
        _as_float(n, w)
        for n, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v), ("w_o", w_o))
    )
    H, H_kv = V.head_counts(n_heads, n_kv_heads)
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v), ("w_o", w_o)):
        if w.ndim != 2:
            raise AttentionInputError(
                f"{name} must be a 2-D matrix; got shape {V.fmt(w.shape)}"
            )
    if x_q.ndim < 2 or x_kv.ndim < 2:
        raise AttentionInputError(
            f"x_q and x_kv need at least 2 axes (..., positions, features); "
            f"got {V.fmt(x_q.shape)} and {V.fmt(x_kv.shape)}"
        )
    for name, x, w, wn in (
        ("x_q", x_q, w_q, "w_q"),
        ("x_kv", x_kv, w_k, "w_k"),
        ("x_kv", x_kv, w_v, "w_v"),
    ):
        if x.shape[-1] != w.shape[0]:
            raise AttentionInputError(
                f"{name} has {x.shape[-1]} features (shape {V.fmt(x.shape)}) but {wn} expects {w.shape[0]} "
                f"(shape {V.fmt(w.shape)}); row-vector convention: x @ {wn}"
            )
    d_k = V.split_width("w_q", w_q.shape[1], H, "query")
    if V.split_width("w_k", w_k.shape[1], H_kv, "key") != d_k:
        raise AttentionInputError(
            f"w_q gives d_k = {d_k} per head ({w_q.shape[1]} / {H}) but w_k gives {w_k.shape[1] // H_kv} "
            f"({w_k.shape[1]} / {H_kv}); queries and keys must share d_k"
        )
    d_v = V.split_width("w_v", w_v.shape[1], H_kv, "value")
    if w_o.shape[0] != H * d_v:
        raise AttentionInputError(
            f"w_o has {w_o.shape[0]} rows but the {H} concatenated heads give {H} * {d_v} = {H * d_v} columns"
        )

    def split(x, heads, width):
        # (..., T, heads*width) -> (..., heads, T, width)
        x = x.reshape(x.shape[:-1] + (heads, width))  # (..., T, heads, width)
        return np.moveaxis(x, -2, -3)  # (..., heads, T, width)

    q = split(x_q @ w_q, H, d_k)  # (..., H, T, d_k)
    k = split(x_kv @ w_k, H_kv, d_k)  # (..., H_kv, S, d_k)
    v = split(x_kv @ w_v, H_kv, d_v)  # (..., H_kv, S, d_v)
    group = H // H_kv
    k = np.repeat(k, group, axis=-3)  # (..., H, S, d_k): head h reads KV head h // group
    v = np.repeat(v, group, axis=-3)  # (..., H, S, d_v)
    batch_ndim = max(x_q.ndim, x_kv.ndim) - 2
    allowed = _with_head_axis(allowed, batch_ndim, core=2)  # (..., 1 or H, T, S)
    query_valid = _with_head_axis(query_valid, batch_ndim, core=1)  # (..., 1 or H, T)
    out, weights = attention(
        q, k, v, allowed=allowed, query_valid=query_valid, return_weights=True
    )
    merged = np.moveaxis(out, -3, -2)  # (..., T, H, d_v)
    merged = merged.reshape(merged.shape[:-2] + (H * d_v,))  # (..., T, H*d_v)
    y = merged @ w_o  # (..., T, d_out)
    return (y, weights) if return_weights else y
