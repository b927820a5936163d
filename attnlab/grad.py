"""Gradients of attention, by hand (NumPy), plus the tools to check them.

With S = scale * Q K^T, A = masked_softmax(S), O = A V and an upstream gradient G = dL/dO:

    dV = A^T G        dA = G V^T        dS = A * (dA - rowsum(A * dA))
    dQ = scale * dS K        dK = scale * dS^T Q

Forbidden entries have A = 0, so they pass no gradient; padding query rows have A = 0 and
O = 0, so they pass none either.
"""

from __future__ import annotations

import numpy as np

from . import _validate as V
from .errors import AttentionInputError
from .i18n import _
from .reference import _as_float, attention


def softmax_jacobian(a) -> np.ndarray:
    """Jacobian of the softmax at output ``a``: diag(a) - a a^T, shape (..., n, n).

    Every row (and column) sums to zero: adding the same constant to all logits leaves
    the softmax unchanged, so the derivative along (1, ..., 1) is zero.
    """
    a = _as_float("a", a)
    if a.ndim == 0:
        raise AttentionInputError(
            _("a must be a probability vector with at least one axis; got a scalar")
        )
    diag = a[..., :, None] * np.eye(a.shape[-1])     # (..., n, n)
    outer = a[..., :, None] * a[..., None, :]         # (..., n, n)
    return diag - outer


def _unbroadcast(g: np.ndarray, shape) -> np.ndarray:
    """Sum a gradient over the axes that broadcasting added or stretched, back to ``shape``."""
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for axis, n in enumerate(shape):
        if n == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    return g


def attention_backward(q, k, v, grad_out, allowed=None, query_valid=None,
                       scale=None):
    """(dq, dk, dv) of L where dL/d(out) = grad_out, out = attention(...).

    Shapes follow :func:`attnlab.attention`; ``grad_out`` has the output's
    shape (..., T, d_v).
    """
    q, k, v = _as_float("q", q), _as_float("k", k), _as_float("v", v)
    out, a = attention(q, k, v, allowed=allowed, query_valid=query_valid,
                       scale=scale, return_weights=True)
    g = _as_float("grad_out", grad_out)
    if g.shape != out.shape:
        raise AttentionInputError(
            _("grad_out must have the output's shape {expected}; got {shape}").format(
                expected=V.fmt(out.shape), shape=V.fmt(g.shape)))
    c = V.scale_value(scale, q.shape[-1])

    dv = np.swapaxes(a, -1, -2) @ g                   # (..., S, d_v)
    da = g @ np.swapaxes(v, -1, -2)                   # (..., T, S)
    row = (a * da).sum(axis=-1, keepdims=True)        # (..., T, 1)
    ds = a * (da - row)                               # (..., T, S)
    dq = c * ds @ k                                   # (..., T, d_k)
    dk = c * np.swapaxes(ds, -1, -2) @ q              # (..., S, d_k)
    return (_unbroadcast(dq, q.shape), _unbroadcast(dk, k.shape),
            _unbroadcast(dv, v.shape))


def numerical_gradient(f, x, eps: float = 1e-6) -> np.ndarray:
    """Central finite differences of a scalar function ``f`` at ``x``; same shape as ``x``.

    Each entry is (f(x + eps e_i) - f(x - eps e_i)) / (2 eps), with truncation error O(eps^2)
    and rounding error about machine-epsilon / eps. Use float64 and an unsaturated example:
    where the softmax is saturated, gradients are tiny and a wrong one can still pass.
    """
    x = _as_float("x", x).astype(np.float64)
    eps = float(eps)
    if not np.isfinite(eps) or eps <= 0:
        raise AttentionInputError(_("eps must be a finite positive number; got {eps!r}").format(eps=eps))
    grad = np.zeros_like(x)
    flat, gflat = x.reshape(-1), grad.reshape(-1)  # views onto x and grad
    for i in range(flat.size):
        saved = flat[i]
        flat[i] = saved + eps
        up = float(f(x))
        flat[i] = saved - eps
        down = float(f(x))
        flat[i] = saved
        gflat[i] = (up - down) / (2 * eps)
    return grad
