"""Exact attention with SymPy: the worked examples' weights as closed forms.

Entries may be numbers or symbols. Forbidden entries get the exact weight 0 and the softmax
runs over the allowed entries only, as in the NumPy reference.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from .errors import AttentionInputError, EmptyVisibilityError
from .i18n import _


def _matrix(name: str, m) -> sp.Matrix:
    try:
        M = sp.Matrix(m)
    except Exception as exc:  # sympy raises many types for ragged input
        raise AttentionInputError(
            _("{name} must be a 2-D matrix (list of rows or sympy Matrix): {reason}").format(name=name, reason=exc)
        ) from None
    if M.rows == 0 or M.cols == 0:
        raise AttentionInputError(_("{name} is empty: shape ({rows}, {cols})").format(
            name=name, rows=M.rows, cols=M.cols))
    return M


def softmax_row(entries) -> list:
    """Exact softmax of a list of SymPy expressions, simplified entry by entry."""
    exps = [sp.exp(e) for e in entries]
    total = sum(exps)
    return [sp.simplify(e / total) for e in exps]


def attention(Q, K, V, allowed=None, scale=None):
    """Exact (O, A) for softmax(Q K^T * scale) V, with an optional boolean allowed mask.

    Q (T, d_k), K (S, d_k), V (S, d_v) as nested lists or SymPy matrices; scale defaults to
    1/sqrt(d_k). Returns simplified SymPy matrices O (T, d_v) and A (T, S).
    """
    Q, K, V = _matrix("Q", Q), _matrix("K", K), _matrix("V", V)
    if Q.cols != K.cols:
        raise AttentionInputError(
            _("Q and K must share d_k: Q is {q_shape}, K is {k_shape}").format(q_shape=Q.shape, k_shape=K.shape)
        )
    if K.rows != V.rows:
        raise AttentionInputError(
            _("K and V must have the same number of rows S: K is {k_shape}, V is {v_shape}").format(
                k_shape=K.shape, v_shape=V.shape)
        )
    T, S = Q.rows, K.rows
    c = 1 / sp.sqrt(Q.cols) if scale is None else sp.sympify(scale)
    mask = np.ones((T, S), dtype=bool) if allowed is None else np.asarray(allowed)
    if mask.dtype != bool or mask.shape != (T, S):
        raise AttentionInputError(
            _("allowed must be a boolean ({T}, {S}) array; got dtype {dtype}, shape {shape}").format(
                T=T, S=S, dtype=mask.dtype, shape=mask.shape)
        )

    scores = (Q * K.T) * c  # (T, S)
    A = sp.zeros(T, S)
    for i in range(T):
        cols = [j for j in range(S) if mask[i, j]]
        if not cols:
            raise EmptyVisibilityError(
                _("query row {row} may read no key: its row of allowed is all False").format(row=i)
            )
        for j, w in zip(cols, softmax_row([scores[i, j] for j in cols])):
            A[i, j] = w
    O = (A * V).applyfunc(sp.simplify)  # (T, d_v)
    return O, A


def to_float(M) -> np.ndarray:
    """A SymPy matrix or expression as a float64 array, evaluated with 30 digits first."""
    value = sp.Matrix(M) if isinstance(M, (list, tuple)) else sp.sympify(M)
    if isinstance(value, sp.MatrixBase):
        return np.array(value.evalf(30).tolist(), dtype=float)
    return np.array(float(value.evalf(30)))
