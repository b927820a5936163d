"""Exact attention with SymPy: the worked examples' weights as closed forms.

Entries may be numbers or symbols. Forbidden entries get the exact weight 0 and the softmax
runs over the allowed entries only, as in the NumPy reference.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from .errors import AttentionInputError, EmptyVisibilityError


def _matrix(name: str, m) -> sp.Matrix:
    try:
        M = sp.Matrix(m)
    except Exception as exc:  # sympy raises many types for ragged input
        raise AttentionInputError(
            f"{name} must be a 2-D matrix (list of rows or sympy Matrix): {exc}"
        ) from None
    if M.rows == 0 or M.cols == 0:
        raise AttentionInputError(f"{name} is empty: shape ({M.rows}, {M.cols})")
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
            f"Q and K must share d_k: Q is {Q.shape}, K is {K.shape}"
        )
    if K.rows != V.rows:
        raise AttentionInputError(
            f"K and V must have the same number of rows S: K is {K.shape}, V is {V.shape}"
        )
    T, S = Q.rows, K.rows
    c = 1 / sp.sqrt(Q.cols) if scale is None else sp.sympify(scale)
    mask = np.ones((T, S), dtype=bool) if allowed is None else np.asarray(allowed)
    if mask.dtype != bool or mask.shape != (T, S):
        raise AttentionInputError(
            f"allowed must be a boolean ({T}, {S}) array; got dtype {mask.dtype}, shape {mask.shape}"
        )

    scores = (Q * K.T) * c  # (T, S)
    A = sp.zeros(T, S)
    for i in range(T):
        cols = [j for j in range(S) if mask[i, j]]
        if not cols:
            raise EmptyVisibilityError(
                f"query row {i} may read no key: its row of allowed is all False"
            )
        for j, w in zip(cols, softmax_row([scores[i, j] for j in cols])):
            A[i, j] = w
    O = (A * V).applyfunc(sp.simplify)  # (T, d_v)
    return O, A
