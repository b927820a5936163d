"""The NumPy reference: softmax, single-head and multi-head attention.

This is the oracle every other implementation in the book is checked against. It favours
clarity over speed, works in float64 by default, and follows the row-vector convention:
``Q = X @ W_Q``, one position per row. Leading (batch, head) axes broadcast.
"""

from __future__ import annotations

import numpy as np

from . import _validate as V
from .errors import AttentionInputError, EmptyVisibilityError
from .i18n import _


def _as_float(name: str, x) -> np.ndarray:
    """Convert to a float64 array (keeping float32 if given) and refuse non-finite values."""
    a = np.asarray(x)
    if a.dtype == bool or not (
        np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)
    ):
        raise AttentionInputError(
            _("{name} must hold real numbers; got dtype {dtype} with shape {shape}").format(
                name=name, dtype=a.dtype, shape=V.fmt(a.shape))
        )
    if a.dtype != np.float32:
        a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        bad = np.argwhere(~np.isfinite(a))[0]
        raise AttentionInputError(
            _("{name} contains a non-finite value (nan or inf) at index {index}; shape {shape}").format(
                name=name, index=tuple(int(i) for i in bad), shape=V.fmt(a.shape))
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
            _("x must have at least one axis; got a scalar"))
    if not -a.ndim <= axis < a.ndim:
        raise AttentionInputError(
            _("axis {axis} is out of range for x of shape {shape}").format(axis=axis, shape=V.fmt(a.shape)))
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
    allowed = np.ones((), bool) if allowed is None else np.asarray(allowed)
    if live_rows is not None:
        allowed = allowed & np.asarray(live_rows)[..., None]   # (..., T, S)
    scores, allowed = np.broadcast_arrays(scores, allowed)      # (..., T, S)
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
            _("query at index {index} (batch/head axes..., query row) is "
              "valid but may read no key: its row of `allowed` is all False, "
              "so the softmax has nothing to normalise. Mark it invalid with "
              "query_valid=False (it then gets zero output) or fix the mask"
              ).format(index=where)
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


def scaled_dot_product(q, k, v, scale, allowed=None, query_valid=None):
    """softmax(q k^T * scale) v: scores, softmax over keys, sum of values.

    No checks: `attention` validates the inputs, then calls this.
    Returns out (..., T, d_v) and weights (..., T, S).
    """
    scores = (q @ np.swapaxes(k, -1, -2)) * scale    # (..., T, S)
    weights = masked_softmax(scores, allowed, query_valid)
    return weights @ v, weights                      # (..., T, d_v)


def attention(q, k, v, allowed=None, query_valid=None, scale=None,
              return_weights=False):
    """Scaled dot-product attention softmax(q k^T * scale) v, with masks.

    q (..., T, d_k), k (..., S, d_k), v (..., S, d_v) -> out (..., T, d_v)
    allowed: bool, broadcastable to (..., T, S); True = query may read key.
    query_valid: bool, broadcastable to (..., T); False rows (padding
    queries) get zero output and zero weights. A valid query with no
    allowed key raises EmptyVisibilityError. The inputs are checked here;
    the arithmetic is `scaled_dot_product`.
    """
    q, k, v = _as_float("q", q), _as_float("k", k), _as_float("v", v)
    batch, T, S, d_k, _d_v = V.qkv_shapes(q.shape, k.shape, v.shape)
    allowed, query_valid, wshape = prepare_masks(
        allowed, query_valid, batch, T, S)
    c = V.scale_value(scale, d_k)
    check_visibility(allowed, query_valid, wshape)

    with np.errstate(over="ignore", invalid="ignore"):
        out, weights = scaled_dot_product(q, k, v, c, allowed, query_valid)
    _check_scores(weights, q, k)
    if weights.shape != wshape:      # v alone carried a batch axis
        weights = np.broadcast_to(weights, wshape).copy()   # (..., T, S)
    return (out, weights) if return_weights else out


def _check_scores(weights, q, k) -> None:
    """Finite inputs can still overflow in q k^T (float32 above ~1e19); the weights then hold NaN."""
    if not np.isfinite(weights).all():
        raise AttentionInputError(
            _("the scores q k^T * scale overflowed {dtype} (finite "
              "inputs, infinite products; largest |q| = {q_max:.3g}, "
              "|k| = {k_max:.3g}). Rescale or compute in float64").format(
                dtype=weights.dtype, q_max=np.abs(q).max(), k_max=np.abs(k).max()))


def kv_head_for(h: int, n_heads: int, n_kv_heads: int) -> int:
    """The KV head that query head ``h`` reads: h // (n_heads // n_kv_heads)."""
    n_heads, n_kv_heads = V.head_counts(n_heads, n_kv_heads)
    if (
        isinstance(h, bool)
        or not isinstance(h, (int, np.integer))
        or not 0 <= h < n_heads
    ):
        raise AttentionInputError(
            _("h must be a query head index in [0, {n_heads}); got {h!r}").format(n_heads=n_heads, h=h)
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
                _("{name} must be a 2-D matrix; got shape {shape}").format(name=name, shape=V.fmt(w.shape))
            )
    if x_q.ndim < 2 or x_kv.ndim < 2:
        raise AttentionInputError(
            _("x_q and x_kv need at least 2 axes (..., positions, features); "
              "got {x_q_shape} and {x_kv_shape}").format(x_q_shape=V.fmt(x_q.shape), x_kv_shape=V.fmt(x_kv.shape))
        )
    for name, x, w, wn in (
        ("x_q", x_q, w_q, "w_q"),
        ("x_kv", x_kv, w_k, "w_k"),
        ("x_kv", x_kv, w_v, "w_v"),
    ):
        if x.shape[-1] != w.shape[0]:
            raise AttentionInputError(
                _("{name} has {features} features (shape {x_shape}) but {w_name} expects {rows} "
                  "(shape {w_shape}); row-vector convention: x @ {w_name}").format(
                    name=name, features=x.shape[-1], x_shape=V.fmt(x.shape), w_name=wn, rows=w.shape[0],
                    w_shape=V.fmt(w.shape))
            )
    d_k = V.split_width("w_q", w_q.shape[1], H, "query")
    if V.split_width("w_k", w_k.shape[1], H_kv, "key") != d_k:
        raise AttentionInputError(
            _("w_q gives d_k = {d_k} per head ({q_width} / {n_heads}) but w_k gives {k_d_k} "
              "({k_width} / {n_kv_heads}); queries and keys must share d_k").format(
                d_k=d_k, q_width=w_q.shape[1], n_heads=H, k_d_k=w_k.shape[1] // H_kv, k_width=w_k.shape[1],
                n_kv_heads=H_kv)
        )
    d_v = V.split_width("w_v", w_v.shape[1], H_kv, "value")
    if w_o.shape[0] != H * d_v:
        raise AttentionInputError(
            _("w_o has {rows} rows but the {n_heads} concatenated heads give {n_heads} * {d_v} = {width} "
              "columns").format(rows=w_o.shape[0], n_heads=H, d_v=d_v, width=H * d_v)
        )

    batch_ndim = max(x_q.ndim, x_kv.ndim) - 2
    allowed = _with_head_axis(allowed, batch_ndim, core=2)  # (..., 1 or H, T, S)
    query_valid = _with_head_axis(query_valid, batch_ndim, core=1)  # (..., 1 or H, T)
    batch, T, S = V.qkv_shapes(                          # the shapes of the heads' q, k, v
        x_q.shape[:-2] + (H, x_q.shape[-2], d_k),
        x_kv.shape[:-2] + (H, x_kv.shape[-2], d_k),
        x_kv.shape[:-2] + (H, x_kv.shape[-2], d_v))[:3]
    allowed, query_valid, wshape = prepare_masks(allowed, query_valid, batch, T, S)
    check_visibility(allowed, query_valid, wshape)
    with np.errstate(over="ignore", invalid="ignore"):
        y, weights = multi_head(x_q, x_kv, w_q, w_k, w_v, w_o, H, H_kv, allowed, query_valid)
    _check_scores(weights, x_q, x_kv)
    if weights.shape != wshape:
        weights = np.broadcast_to(weights, wshape).copy()   # (..., H, T, S)
    return (y, weights) if return_weights else y


def split_heads(x, heads: int):
    """(..., T, heads*width) -> (..., heads, T, width): each head's columns in their own block."""
    x = x.reshape(x.shape[:-1] + (heads, x.shape[-1] // heads))  # (..., T, heads, width)
    return np.moveaxis(x, -2, -3)                                # (..., heads, T, width)


def merge_heads(x):
    """(..., heads, T, width) -> (..., T, heads*width): the heads' outputs side by side."""
    x = np.moveaxis(x, -3, -2)                         # (..., T, heads, width)
    return x.reshape(x.shape[:-2] + (-1,))             # (..., T, heads*width)


def multi_head(x_q, x_kv, w_q, w_k, w_v, w_o, n_heads, n_kv_heads, allowed=None, query_valid=None):
    """Multi-head attention: project, split heads, attend, merge, project.

    No checks: `multi_head_attention` validates the inputs, then calls
    this. Query head h reads KV head h // (n_heads // n_kv_heads).
    Returns y (..., T, d_out) and weights (..., H, T, S).
    """
    q = split_heads(x_q @ w_q, n_heads)                # (..., H, T, d_k)
    k = split_heads(x_kv @ w_k, n_kv_heads)            # (..., H_kv, S, d_k)
    v = split_heads(x_kv @ w_v, n_kv_heads)            # (..., H_kv, S, d_v)
    group = n_heads // n_kv_heads
    k = np.repeat(k, group, axis=-3)                   # (..., H, S, d_k): head h reads KV head h // group
    v = np.repeat(v, group, axis=-3)                   # (..., H, S, d_v)
    out, weights = scaled_dot_product(q, k, v, 1 / np.sqrt(q.shape[-1]), allowed, query_valid)
    return merge_heads(out) @ w_o, weights             # (..., T, d_out), (..., H, T, S)
