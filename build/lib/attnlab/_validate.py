"""Input checks shared by the NumPy and torch paths.

They work on shapes (tuples) and a few flags, so both array libraries can call them. Each
raises :class:`attnlab.errors.AttentionInputError` (a ``ValueError``) whose message names the
argument and the shapes involved.
"""

from __future__ import annotations

import numpy as np

from .errors import AttentionInputError


def fmt(shape) -> str:
    """Format a shape the way the messages print it: (2, 3, 4)."""
    return "(" + ", ".join(str(int(n)) for n in shape) + ")"


def broadcast(*shapes, what: str) -> tuple[int, ...]:
    """np.broadcast_shapes with a message that says which arguments disagreed."""
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        listed = ", ".join(fmt(s) for s in shapes)
        raise AttentionInputError(
            f"{what}: shapes {listed} do not broadcast together"
        ) from None


def qkv_shapes(q_shape, k_shape, v_shape) -> tuple[tuple[int, ...], int, int, int, int]:
    """Check q (..., T, d_k), k (..., S, d_k), v (..., S, d_v).

    Returns (batch_shape, T, S, d_k, d_v), where batch_shape is the broadcast of the leading axes.
    """
    for name, s in (("q", q_shape), ("k", k_shape), ("v", v_shape)):
        if len(s) < 2:
            raise AttentionInputError(
                f"{name} must have at least 2 axes (..., positions, features); got shape {fmt(s)}"
            )
        if 0 in tuple(s)[-2:]:
            raise AttentionInputError(f"{name} has an empty axis: shape {fmt(s)}")
    if q_shape[-1] != k_shape[-1]:
        raise AttentionInputError(
            f"q and k must share the last axis d_k: q has shape {fmt(q_shape)}, k has shape "
            f"{fmt(k_shape)} ({q_shape[-1]} != {k_shape[-1]})"
        )
    if k_shape[-2] != v_shape[-2]:
        raise AttentionInputError(
            f"k and v must have the same number of positions S: k has shape {fmt(k_shape)}, "
            f"v has shape {fmt(v_shape)} ({k_shape[-2]} != {v_shape[-2]})"
        )
    batch = broadcast(
        q_shape[:-2],
        k_shape[:-2],
        v_shape[:-2],
        what="leading (batch/head) axes of q, k, v",
    )
    return batch, int(q_shape[-2]), int(k_shape[-2]), int(q_shape[-1]), int(v_shape[-1])


def mask_shape(name: str, shape, is_bool: bool, target) -> tuple[int, ...]:
    """Check that a boolean mask broadcasts to ``target``; returns the broadcast shape."""
    if not is_bool:
        raise AttentionInputError(
            f"{name} must be a boolean array (True = {'may read' if name == 'allowed' else 'valid'}); "
            f"got a non-boolean array of shape {fmt(shape)}. Convert additive masks with "
            f"attnlab.masks.from_additive and True-means-masked masks with attnlab.masks.from_forbidden"
        )
    try:
        out = tuple(np.broadcast_shapes(tuple(shape), tuple(target)))
    except ValueError:
        out = None
    if out is None or len(out) != len(target):
        raise AttentionInputError(
            f"{name} of shape {fmt(shape)} does not broadcast to {fmt(target)}"
        )
    return out


def scale_value(scale, d_k: int) -> float:
    """The score scale: 1/sqrt(d_k) by default; an explicit value must be finite and positive."""
    if scale is None:
        return 1.0 / float(np.sqrt(d_k))
    s = float(scale)
    if not np.isfinite(s) or s <= 0:
        raise AttentionInputError(
            f"scale must be a finite positive number; got {scale!r}"
        )
    return s


def head_counts(n_heads, n_kv_heads) -> tuple[int, int]:
    """Check H and H_kv (None means H_kv = H) and that H_kv divides H."""
    if (
        isinstance(n_heads, bool)
        or not isinstance(n_heads, (int, np.integer))
        or n_heads < 1
    ):
        raise AttentionInputError(f"n_heads must be a positive integer; got {n_heads!r}")
    n_kv = n_heads if n_kv_heads is None else n_kv_heads
    if isinstance(n_kv, bool) or not isinstance(n_kv, (int, np.integer)) or n_kv < 1:
        raise AttentionInputError(
            f"n_kv_heads must be a positive integer or None; got {n_kv_heads!r}"
        )
    if n_heads % n_kv:
        raise AttentionInputError(
            f"n_kv_heads must divide n_heads: n_heads={n_heads}, n_kv_heads={n_kv} "
            f"(each KV head serves a group of n_heads // n_kv_heads query heads)"
        )
    return int(n_heads), int(n_kv)


def split_width(name: str, width: int, parts: int, what: str) -> int:
    """Check that a projection width splits evenly into ``parts`` heads; returns the per-head width."""
    if width % parts:
        raise AttentionInputError(
            f"{name} has {width} output columns, which do not split into {parts} {what} heads"
        )
    return width // parts
