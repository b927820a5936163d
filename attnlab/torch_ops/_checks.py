"""Input checks for the torch path: tensor type, dtype, device, finiteness, masks.

Shapes are checked by :mod:`attnlab._validate` (shared with the NumPy reference), so torch and
NumPy give the same messages. What lives here is what only torch has: dtypes, devices, and
fast checks that do not slow down the attention call they guard.
"""
from __future__ import annotations

import numpy as np
import torch

from .. import _validate as V
from ..errors import AttentionInputError, EmptyVisibilityError
from ..i18n import N_, _


def tensor_check(name: str, x) -> None:
    """``x`` must be a floating-point torch tensor (NumPy arrays are refused, not converted)."""
    if not isinstance(x, torch.Tensor):
        raise AttentionInputError(
            _("{name} must be a torch.Tensor; got {type}. Convert with torch.as_tensor({name})").format(
                name=name, type=type(x).__name__))
    if not x.is_floating_point():
        raise AttentionInputError(
            _("{name} must be a floating-point tensor; got dtype {dtype} with shape {shape}").format(
                name=name, dtype=x.dtype, shape=V.fmt(x.shape)))


def same_kind(named: dict) -> None:
    """All tensors in ``named`` share one dtype and one device."""
    for attr in ("dtype", "device"):
        values = {n: getattr(x, attr) for n, x in named.items()}
        if len(set(values.values())) > 1:
            listed = ", ".join(f"{_(n)} {val}" for n, val in values.items())
            message = {"dtype": N_("{names} must share one dtype; got {listed}"),
                       "device": N_("{names} must share one device; got {listed}")}[attr]
            names = ", ".join(_(n) for n in named)
            raise AttentionInputError(_(message).format(names=names, listed=listed))


def finite_check(named: dict) -> None:
    """Refuse nan and inf. Fast path: one sum per tensor, one device sync in all.

    A sum is finite whenever every entry is (barring overflow, which only sends us to the
    exact check below), so the common case costs a single cheap reduction.
    """
    sums = [x.sum(dtype=torch.float64 if x.dtype == torch.float64 else torch.float32) for x in named.values()]
    if bool(torch.isfinite(torch.stack(sums)).all()):
        return
    for name, x in named.items():
        bad = ~torch.isfinite(x)
        if bool(bad.any()):
            where = tuple(int(i) for i in bad.nonzero()[0])
            raise AttentionInputError(
                _("{name} contains a non-finite value (nan or inf) at index {where}; shape {shape}").format(
                    name=name, where=where, shape=V.fmt(x.shape)))


def check_qkv(q, k, v) -> tuple[tuple[int, ...], int, int, int, int]:
    """Check q (..., T, d_k), k (..., S, d_k), v (..., S, d_v); returns (batch, T, S, d_k, d_v)."""
    named = {"q": q, "k": k, "v": v}
    for name, x in named.items():
        tensor_check(name, x)
    same_kind(named)
    shapes = V.qkv_shapes(tuple(q.shape), tuple(k.shape), tuple(v.shape))
    finite_check(named)
    return shapes


def bool_tensor(name: str, mask, device) -> torch.Tensor | None:
    """A mask (torch tensor or NumPy array, e.g. from attnlab.masks) as a bool tensor on ``device``."""
    if mask is None:
        return None
    if isinstance(mask, np.ndarray):
        if mask.dtype != bool:
            V.mask_shape(name, mask.shape, False, mask.shape)  # raises with the shared message
        mask = torch.from_numpy(np.ascontiguousarray(mask))
    if not isinstance(mask, torch.Tensor):
        raise AttentionInputError(_("{name} must be a boolean torch tensor or NumPy array; got {type}").format(
            name=name, type=type(mask).__name__))
    if mask.dtype != torch.bool:
        V.mask_shape(name, tuple(mask.shape), False, tuple(mask.shape))  # raises with the shared message
    return mask.to(device)


def as_mask(name: str, mask, target, device) -> torch.Tensor | None:
    """Check a boolean mask against the shape it must broadcast to; return it on ``device``."""
    mask = bool_tensor(name, mask, device)
    if mask is not None and V.mask_shape(name, tuple(mask.shape), True, target) != tuple(target):
        raise AttentionInputError(_("{name} of shape {shape} does not broadcast to {target}").format(
            name=name, shape=V.fmt(mask.shape), target=V.fmt(target)))
    return mask


def empty_row_error(index) -> EmptyVisibilityError:
    """The error for a valid query that may read no key (same words as the NumPy reference)."""
    return EmptyVisibilityError(
        _("query at index {index} (batch/head axes..., query row) is valid but may read no key: its row of "
          "`allowed` is all False, so the softmax has nothing to normalise. Mark it invalid with "
          "query_valid=False (it then gets zero output) or fix the mask").format(
              index=tuple(int(i) for i in index)))


def empty_rows(allowed, query_valid, rows_shape) -> torch.Tensor | None:
    """Rows of ``allowed`` with no True entry, or None if there are none.

    Raises EmptyVisibilityError (naming the first offending index of ``rows_shape`` = (..., T))
    if such a row belongs to a valid query. The rows returned are therefore all padding rows.
    """
    if allowed is None:
        return None
    empty = ~allowed.any(dim=-1)                       # (mask's leading axes..., T)
    bad = empty if query_valid is None else empty & query_valid
    if bool(bad.any()):
        raise empty_row_error(torch.broadcast_to(bad, rows_shape).nonzero()[0])
    if query_valid is not None and bool(empty.any()):
        return empty
    return None


def positive_int(name: str, n) -> int:
    """A positive integer, e.g. a block size."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise AttentionInputError(_("{name} must be a positive integer; got {n!r}").format(name=name, n=n))
    return int(n)


def dropout_value(p) -> float:
    """A dropout probability in [0, 1)."""
    try:
        value = float(p)
    except (TypeError, ValueError):
        value = float("nan")
    if not 0.0 <= value < 1.0:
        raise AttentionInputError(_("dropout_p must be a probability in [0, 1); got {p!r}").format(p=p))
    return value
