"""Key values of every worked example in chapter 4 (chapters/04_worked_examples.md).

Each expected value is a closed form typed here from the mathematics (for example
1/(1 + e^c) with c = 1/sqrt(2), or 3/4), not taken from attnlab. The tests then check
that attnlab.exact (SymPy), attnlab.attention (NumPy) and torch's
scaled_dot_product_attention all reproduce it, and that the decimals printed in the source
material are the exact values correctly rounded.
"""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
import torch
import torch.nn.functional as F

import attnlab as al
from attnlab.exact import to_float

R = sp.Rational
c = 1 / sp.sqrt(2)
E = sp.exp(c)          # e^c, the recurring constant of the causal example
ATOL = 1e-13


def assert_exact_equal(got, want):
    diff = sp.simplify(sp.Matrix(got) - sp.Matrix(want))
    assert diff == sp.zeros(*diff.shape), f"exact mismatch:\n{got}\nvs\n{want}"


def check_all_paths(Q, K, V, A_want, O_want, allowed=None, scale=None):
    """attnlab.exact, attnlab.attention and torch SDPA against closed forms."""
    O_ex, A_ex = al.exact.attention(Q, K, V, allowed=allowed, scale=scale)
    assert_exact_equal(A_ex, A_want)
    assert_exact_equal(O_ex, O_want)

    q, k, v = to_float(Q), to_float(K), to_float(V)
    s = None if scale is None else float(scale)
    o_np, a_np = al.attention(q, k, v, allowed=allowed, scale=s, return_weights=True)
    np.testing.assert_allclose(a_np, to_float(A_want), rtol=0, atol=ATOL)
    np.testing.assert_allclose(o_np, to_float(O_want), rtol=0, atol=ATOL)

    mask = None if allowed is None else torch.from_numpy(np.array(allowed))
    o_t = F.scaled_dot_product_attention(*(torch.from_numpy(m) for m in (q, k, v)),
                                         attn_mask=mask, scale=s)
    np.testing.assert_allclose(o_t.numpy(), to_float(O_want), rtol=0, atol=ATOL)


# --- four tokens, d_k = 2 (no mask) -------------------------------------------------------

Q4 = sp.Matrix([[1, 1], [0, 1], [1, 0], [R(1, 2), R(1, 2)]])
V4 = sp.Matrix([[1, 0], [0, 1], [1, 1], [R(1, 2), R(1, 2)]])


def four_token_weights():
    # scaled scores: rows (2c,c,c,c), (c,c,0,c/2), (c,0,c,c/2), (c,c/2,c/2,c/2);
    # each row divided by its common factor, then normalised
    h = sp.exp(c / 2)
    rows = [[E, 1, 1, 1], [E, E, 1, h], [E, 1, E, h], [h, 1, 1, 1]]
    return sp.Matrix([[x / sum(r) for x in r] for r in rows])


def test_four_token_example():
    A = four_token_weights()
    check_all_paths(Q4, Q4, V4, A, A * V4)
    assert_exact_equal(A[0, :], sp.Matrix([[E, 1, 1, 1]]) / (E + 3))


def test_four_token_source_decimals():
    U = to_float(Q4 * Q4.T / sp.sqrt(2))
    printed_step2 = [[1.41, 0.71, 0.71, 0.71], [0.71, 0.71, 0.00, 0.35],
                     [0.71, 0.00, 0.71, 0.35], [0.71, 0.35, 0.35, 0.35]]
    assert np.array_equal(np.round(U, 2), printed_step2)
    A = to_float(four_token_weights())
    assert np.array_equal(np.round(A[0], 2), [0.40, 0.20, 0.20, 0.20])
    o0 = to_float(four_token_weights() * V4)[0]
    assert np.array_equal(np.round(o0, 2), [0.70, 0.50])
    # the source multiplies rounded weights: exactly (0.70, 0.50), but not the exact output
    from_rounded = np.array([0.40, 0.20, 0.20, 0.20]) @ to_float(V4)
    np.testing.assert_allclose(from_rounded, [0.70, 0.50], atol=1e-15)
    assert np.abs(from_rounded - o0).max() > 1e-3


# --- padding mask on four logits ----------------------------------------------------------

def test_padding_logits_example():
    logits = sp.Matrix([3, R(1, 2), -1, 2])           # (S, 1): keys = logits, q = [[1]]
    keep = np.array([[True, True, False, False]])
    p = 1 / (1 + sp.exp(-R(5, 2)))                    # e^3 / (e^3 + e^(1/2))
    A = sp.Matrix([[p, 1 - p, 0, 0]])
    check_all_paths(sp.Matrix([[1]]), logits, sp.eye(4), A, A, allowed=keep, scale=1)
    assert np.array_equal(np.round(to_float(A)[0], 2), [0.92, 0.08, 0.0, 0.0])
    # the masked_fill(-inf) idiom gives the same weights
    scores = torch.tensor([[3.0, 0.5, -1.0, 2.0]], dtype=torch.float64)
    filled = torch.softmax(scores.masked_fill(torch.from_numpy(~keep), float("-inf")), -1)
    np.testing.assert_allclose(filled.numpy(), to_float(A), rtol=0, atol=ATOL)


# --- two positions, a = sqrt(2) ln 3 ------------------------------------------------------

a = sp.sqrt(2) * sp.log(3)
Q2, K2, V2 = a * sp.eye(2), sp.eye(2), sp.diag(2, 4)
A2 = sp.Matrix([[R(3, 4), R(1, 4)], [R(1, 4), R(3, 4)]])
O2 = sp.Matrix([[R(3, 2), 1], [R(1, 2), 3]])


def test_two_position_example():
    check_all_paths(Q2, K2, V2, A2, O2)
    O_ex, A_ex = al.exact.attention(Q2, K2, V2)
    assert A_ex == A2 and O_ex == O2                   # exact rationals, no simplify needed
    assert O_ex[0, 0] + 2 * O_ex[1, 1] == R(15, 2)     # the probe loss J
    o = al.attention(to_float(Q2), to_float(K2), to_float(V2))
    np.testing.assert_allclose(o[0, 0] + 2 * o[1, 1], 7.5, rtol=0, atol=ATOL)


def test_two_position_convex_bounds_catch_classic_slips():
    Vf = to_float(V2)
    lo, hi = Vf.min(axis=0), Vf.max(axis=0)
    inside = lambda O: bool(np.all((O >= lo - 1e-12) & (O <= hi + 1e-12)))
    assert inside(al.attention(to_float(Q2), to_float(K2), Vf))
    U = to_float(Q2 * K2.T / sp.sqrt(2))
    assert not inside(np.exp(U) @ Vf)      # forgot to normalise
    assert not inside(U @ Vf)              # scores used as weights


# --- three tokens, causal -----------------------------------------------------------------

X3 = sp.Matrix([[1, 0], [0, 1], [1, 1]])
V3 = X3 * sp.diag(1, 2)
A3 = sp.Matrix([[1, 0, 0],
                [1 / (1 + E), E / (1 + E), 0],
                [1 / (2 + E), 1 / (2 + E), E / (2 + E)]])


def test_three_token_causal_example():
    assert V3 == sp.Matrix([[1, 0], [0, 2], [1, 2]])
    check_all_paths(X3, X3, V3, A3, A3 * V3, allowed=al.masks.causal(3))
    q = torch.from_numpy(to_float(X3))
    o = F.scaled_dot_product_attention(q, q, torch.from_numpy(to_float(V3)), is_causal=True)
    np.testing.assert_allclose(o.numpy(), to_float(A3 * V3), rtol=0, atol=ATOL)


def test_three_token_source_decimals():
    assert round(float(c), 6) == 0.707107
    assert np.array_equal(np.round(to_float(A3), 6),
                          [[1, 0, 0], [0.330238, 0.669762, 0], [0.248255, 0.248255, 0.503490]])
    assert np.array_equal(np.round(to_float(A3 * V3), 6),
                          [[1, 0], [0.330238, 1.339523], [0.751745, 1.503490]])


def test_three_token_x_instead_of_v_halves_second_coordinate():
    wrong, right = to_float(A3 * X3), to_float(A3 * V3)
    np.testing.assert_allclose(2 * wrong[:, 1], right[:, 1], rtol=0, atol=ATOL)
    np.testing.assert_allclose(wrong[:, 0], right[:, 0], rtol=0, atol=ATOL)


def test_three_token_gradient_preview():
    alpha = 1 / (1 + E)
    d21 = float(alpha * (1 - alpha))
    g = float(alpha * (1 - alpha) / sp.sqrt(2))
    assert round(d21, 6) == 0.221181 and round(g, 6) == 0.156399 and round(g, 7) == 0.1563986
    q, k, v = (torch.from_numpy(to_float(M)).requires_grad_() for M in (X3, X3, V3))
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    o[1, 0].backward()
    np.testing.assert_allclose(q.grad[1].numpy(), [g, -g], rtol=0, atol=1e-15)
    np.testing.assert_allclose(k.grad[0].numpy(), [0, g], rtol=0, atol=1e-15)


@pytest.mark.parametrize("seed", range(5))
def test_future_perturbation_is_bit_identical_under_causal_mask(seed):
    rng = np.random.default_rng(seed)
    X = to_float(X3)
    X_new = X.copy()
    X_new[2] = rng.normal(scale=3.0, size=2)
    W_v = np.diag([1.0, 2.0])
    causal = al.masks.causal(3)
    before = al.attention(X, X, X @ W_v, allowed=causal)
    after = al.attention(X_new, X_new, X_new @ W_v, allowed=causal)
    assert np.array_equal(before[:2], after[:2])
    assert not np.array_equal(before[2], after[2])
    t = lambda x: torch.from_numpy(x)
    sb = F.scaled_dot_product_attention(t(X), t(X), t(X @ W_v), is_causal=True)
    sa = F.scaled_dot_product_attention(t(X_new), t(X_new), t(X_new @ W_v), is_causal=True)
    assert torch.equal(sb[:2], sa[:2])
    open_b = al.attention(X, X, X @ W_v)
    open_a = al.attention(X_new, X_new, X_new @ W_v)
    assert not np.array_equal(open_b[0], open_a[0])


def test_stacked_causal_layers_keep_prefix_isolation():
    rng = np.random.default_rng(1)
    T, d, L = 8, 6, 4
    params = [[rng.normal(scale=d ** -0.5, size=(d, d)) for _ in range(5)] for _ in range(L)]

    def stack(x, allowed):
        for w_q, w_k, w_v, w_1, w_2 in params:
            x = x + al.attention(x @ w_q, x @ w_k, x @ w_v, allowed=allowed)
            x = x + np.tanh(x @ w_1) @ w_2
        return x

    x = rng.normal(size=(T, d))
    for t in range(T):
        x_new = x.copy()
        x_new[t] = rng.normal(size=d)
        h, h_new = stack(x, al.masks.causal(T)), stack(x_new, al.masks.causal(T))
        assert np.array_equal(h[:t], h_new[:t])
        assert np.all(np.abs(h[t:] - h_new[t:]).max(axis=-1) > 0)
    h, h_new = stack(x, None), stack(x_new, None)
    assert np.abs(h[:-1] - h_new[:-1]).max() > 1e-3


# --- cross-attention with scores (log 3, 0) -----------------------------------------------

def test_cross_attention_example():
    ln3 = sp.log(3)
    Q = sp.Matrix([[0, 0], [ln3, 0], [0, ln3]])
    K, V = sp.eye(2), sp.Matrix([[2, 0], [0, 4]])
    A = sp.Matrix([[R(1, 2), R(1, 2)], [R(3, 4), R(1, 4)], [R(1, 4), R(3, 4)]])
    O = sp.Matrix([[1, 2], [R(3, 2), 1], [R(1, 2), 3]])
    assert A * V == O
    check_all_paths(Q, K, V, A, O, scale=1)
    masked = np.array([[True, False]] * 3)
    check_all_paths(Q, K, V, sp.Matrix([[1, 0]] * 3), sp.Matrix([[2, 0]] * 3),
                    allowed=masked, scale=1)


# --- worked exercise: unmasked first row, then v_3 replaced by zero ------------------------

def test_exercise_unmasked_row_then_zero_value():
    r, s = E / (2 * E + 1), 1 / (2 * E + 1)
    O_ex, A_ex = al.exact.attention(X3, X3, V3)
    assert_exact_equal(A_ex[0, :], sp.Matrix([[r, s, r]]))
    assert_exact_equal(O_ex[0, :], sp.Matrix([[2 * r, 2 * s + 2 * r]]))
    V_zero = V3.copy()
    V_zero[2, :] = sp.zeros(1, 2)
    O_z, A_z = al.exact.attention(X3, X3, V_zero)
    assert A_z == A_ex
    assert_exact_equal(O_z[0, :], sp.Matrix([[r, 2 * s]]))
    assert_exact_equal(O_ex[0, :] - O_z[0, :], r * V3[2, :])
    for V_, row in [(V3, [2 * r, 2 * s + 2 * r]), (V_zero, [r, 2 * s])]:
        o = al.attention(to_float(X3), to_float(X3), to_float(V_))
        np.testing.assert_allclose(o[0], to_float(sp.Matrix([row]))[0], rtol=0, atol=ATOL)
        t = lambda M: torch.from_numpy(to_float(M))
        o_t = F.scaled_dot_product_attention(t(X3), t(X3), t(V_))
        np.testing.assert_allclose(o_t[0].numpy(), to_float(sp.Matrix([row]))[0], rtol=0, atol=ATOL)
    assert np.array_equal(np.round(to_float(sp.Matrix([[r, s, r]]))[0], 6), [0.401112, 0.197776, 0.401112])
    assert np.array_equal(np.round(to_float(sp.Matrix([[2 * r, 2 * s + 2 * r]]))[0], 6),
                          [0.802224, 1.197776])
    assert np.array_equal(np.round(to_float(sp.Matrix([[r, 2 * s]]))[0], 6), [0.401112, 0.395552])


def test_exercise_zeroing_the_input_changes_the_weights():
    X_zero = X3.copy()
    X_zero[2, :] = sp.zeros(1, 2)
    _, A = al.exact.attention(X_zero, X_zero, X_zero * sp.diag(1, 2))
    assert_exact_equal(A[0, :], sp.Matrix([[E, 1, 1]]) / (E + 2))
