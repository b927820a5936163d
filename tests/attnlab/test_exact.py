"""SymPy attention against closed forms derived by hand, and against the NumPy reference."""
import numpy as np
import pytest
import sympy as sp

import attnlab as al


def test_two_position_weights_are_three_quarters_and_one_quarter():
    a = sp.sqrt(2) * sp.log(3)
    # one query q = (a, 0), keys (1, 0) and (0, 0), d_k = 2: scores a/sqrt(2) = ln 3 and 0
    O, A = al.exact.attention([[a, 0]], [[1, 0], [0, 0]], [[1], [5]])
    assert sp.simplify(A[0, 0] - sp.Rational(3, 4)) == 0
    assert sp.simplify(A[0, 1] - sp.Rational(1, 4)) == 0
    assert sp.simplify(O[0, 0] - 2) == 0                 # 3/4 * 1 + 1/4 * 5


def test_causal_three_token_weights_closed_form():
    X = [[1, 0], [0, 1], [1, 1]]
    c = 1 / sp.sqrt(2)
    O, A = al.exact.attention(X, X, X, allowed=al.masks.causal(3))
    assert A[0, 1] == 0 and A[0, 2] == 0 and A[1, 2] == 0
    assert sp.simplify(A[1, 0] - 1 / (1 + sp.exp(c))) == 0            # scores 0 and c
    assert sp.simplify(A[1, 1] - sp.exp(c) / (1 + sp.exp(c))) == 0
    assert sp.simplify(A[2, 0] - 1 / (2 + sp.exp(c))) == 0            # scores c, c, 2c
    np.testing.assert_allclose(np.array(A.evalf(), dtype=float),
                               al.attention(np.array(X, float), np.array(X, float), np.array(X, float),
                                            allowed=al.masks.causal(3), return_weights=True)[1], atol=1e-15)


def test_exact_rejects_empty_row_and_bad_shapes():
    with pytest.raises(al.EmptyVisibilityError):
        al.exact.attention([[1]], [[1], [2]], [[1], [2]], allowed=np.array([[False, False]]))
    with pytest.raises(ValueError, match="share d_k"):
        al.exact.attention([[1, 2]], [[1]], [[1]])
