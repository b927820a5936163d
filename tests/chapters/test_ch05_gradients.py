"""Chapter 5's worked gradients: exact SymPy values against attnlab.grad, autograd and finite differences."""
import numpy as np
import pytest
import sympy as sp
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import attnlab as al
from attnlab.exact import to_float

R = sp.Rational
LN3 = sp.log(3)


# ---------------------------------------------------------------- helpers

def sym_softmax_rows(U, allowed=None):
    """Row softmax of a SymPy matrix, written out with exp (forbidden entries get 0)."""
    T, S = U.shape
    ok = np.ones((T, S), dtype=bool) if allowed is None else np.asarray(allowed)
    rows = []
    for i in range(T):
        z = sum(sp.exp(U[i, r]) for r in range(S) if ok[i, r])
        rows.append([sp.exp(U[i, j]) / z if ok[i, j] else 0 for j in range(S)])
    return sp.Matrix(rows)


def sym_grad(f, M, name):
    """d f / d M at the matrix M, by SymPy differentiation of f on a symbolic matrix."""
    rows, cols = M.shape
    Ms = sp.Matrix(rows, cols, sp.symbols(f"{name}0:{rows * cols}", real=True))
    expr, at = f(Ms), dict(zip(Ms, M))
    return sp.Matrix(rows, cols, lambda i, j: sp.simplify(sp.diff(expr, Ms[i, j]).subs(at)))


def is_zero(M):
    return all(sp.simplify(sp.expand(e.rewrite(sp.exp))) == 0 for e in sp.Matrix(M))


def torch_grads(q, k, v, g, allowed=None):
    """Autograd through torch SDPA: an implementation independent of attnlab."""
    tq, tk, tv = (torch.tensor(np.asarray(a, dtype=float), requires_grad=True) for a in (q, k, v))
    mask = None if allowed is None else torch.from_numpy(np.ascontiguousarray(allowed))
    out = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=mask)
    (out * torch.from_numpy(np.asarray(g, dtype=float))).sum().backward()
    return tq.grad.numpy(), tk.grad.numpy(), tv.grad.numpy()


# ------------------------------------------------- source 003's worked backward

A_VAL = sp.sqrt(2) * LN3
X3 = sp.eye(2)
WQ3, WK3, WV3 = A_VAL * sp.eye(2), sp.eye(2), sp.diag(2, 4)
G3 = sp.Matrix([[1, 0], [0, 2]])                    # J = O_11 + 2 O_22


def probe3(Q, K, V):
    return sum((sym_softmax_rows(Q * K.T / sp.sqrt(2)) * V).multiply_elementwise(G3))


# Expected values, by hand from the source (not from attnlab)
EXP_A = sp.Matrix([[R(3, 4), R(1, 4)], [R(1, 4), R(3, 4)]])
EXP_DA = sp.Matrix([[2, 0], [0, 8]])
EXP_DS = sp.Matrix([[R(3, 8), -R(3, 8)], [-R(3, 2), R(3, 2)]])
EXP_DV = sp.Matrix([[R(3, 4), R(1, 2)], [R(1, 4), R(3, 2)]])
EXP_DQ = EXP_DS / sp.sqrt(2)                         # K = I
EXP_DK = LN3 * EXP_DS.T                              # Q = sqrt(2) ln 3 I
EXP_DX = A_VAL * EXP_DQ + EXP_DK + EXP_DV * sp.diag(2, 4)


def test_003_forward_exact():
    Q, K, V = X3 * WQ3, X3 * WK3, X3 * WV3
    O, A = al.exact.attention(Q, K, V)
    assert A == EXP_A
    assert O == sp.Matrix([[R(3, 2), 1], [R(1, 2), 3]])
    assert sp.simplify(probe3(Q, K, V) - R(15, 2)) == 0


def test_003_dA_and_dS_by_symbolic_differentiation():
    Q, K, V = X3 * WQ3, X3 * WK3, X3 * WV3
    U0 = Q * K.T / sp.sqrt(2)
    dA = sym_grad(lambda A: sum((A * V).multiply_elementwise(G3)), EXP_A, "a")
    dS = sym_grad(lambda U: sum((sym_softmax_rows(U) * V).multiply_elementwise(G3)), U0, "s")
    assert dA == EXP_DA
    assert is_zero(dS - EXP_DS)
    assert all(sp.simplify(sum(dS.row(i))) == 0 for i in range(2))   # shift invariance


def test_003_dQ_dK_dV_exact_vs_attnlab_and_autograd():
    Q, K, V = X3 * WQ3, X3 * WK3, X3 * WV3
    dQ = sym_grad(lambda M: probe3(M, K, V), Q, "q")
    dK = sym_grad(lambda M: probe3(Q, M, V), K, "k")
    dV = sym_grad(lambda M: probe3(Q, K, M), V, "v")
    assert is_zero(dQ - EXP_DQ) and is_zero(dK - EXP_DK) and is_zero(dV - EXP_DV)
    args = [to_float(Q), to_float(K), to_float(V), to_float(G3)]
    for got in (al.grad.attention_backward(*args), torch_grads(*args)):
        for g, e in zip(got, (EXP_DQ, EXP_DK, EXP_DV)):
            np.testing.assert_allclose(g, to_float(e), atol=1e-13)


def test_003_dW_and_dX_exact_vs_chain_and_autograd():
    def through(X=X3, WQ=WQ3, WK=WK3, WV=WV3):
        return probe3(X * WQ, X * WK, X * WV)

    dWQ = sym_grad(lambda M: through(WQ=M), WQ3, "wq")
    dWK = sym_grad(lambda M: through(WK=M), WK3, "wk")
    dWV = sym_grad(lambda M: through(WV=M), WV3, "wv")
    dX = sym_grad(lambda M: through(X=M), X3, "x")
    # X = I, so dW_Q = X^T dQ = dQ etc.
    assert is_zero(dWQ - EXP_DQ) and is_zero(dWK - EXP_DK) and is_zero(dWV - EXP_DV)
    assert is_zero(dX - EXP_DX)

    Xn, WQn, WKn, WVn, Gn = map(to_float, (X3, WQ3, WK3, WV3, G3))
    dq, dk, dv = al.grad.attention_backward(Xn @ WQn, Xn @ WKn, Xn @ WVn, Gn)
    np.testing.assert_allclose(Xn.T @ dq, to_float(dWQ), atol=1e-13)
    np.testing.assert_allclose(Xn.T @ dk, to_float(dWK), atol=1e-13)
    np.testing.assert_allclose(Xn.T @ dv, to_float(dWV), atol=1e-13)
    np.testing.assert_allclose(dq @ WQn.T + dk @ WKn.T + dv @ WVn.T, to_float(dX), atol=1e-13)

    t = [torch.tensor(m, requires_grad=True) for m in (Xn, WQn, WKn, WVn)]
    out = F.scaled_dot_product_attention(t[0] @ t[1], t[0] @ t[2], t[0] @ t[3])
    (out * torch.tensor(Gn)).sum().backward()
    for tensor, exp in zip(t, (dX, dWQ, dWK, dWV)):
        np.testing.assert_allclose(tensor.grad.numpy(), to_float(exp), atol=1e-13)


@pytest.mark.parametrize("h", [1e-5, 1e-6])
def test_003_central_differences_two_step_sizes(h):
    Qn, Kn, Vn, Gn = to_float(X3 * WQ3), to_float(X3 * WK3), to_float(X3 * WV3), to_float(G3)
    J = lambda Q, K, V: float((Gn * al.attention(Q, K, V)).sum())
    fd = [al.grad.numerical_gradient(lambda x: J(x, Kn, Vn), Qn, eps=h),
          al.grad.numerical_gradient(lambda x: J(Qn, x, Vn), Kn, eps=h),
          al.grad.numerical_gradient(lambda x: J(Qn, Kn, x), Vn, eps=h)]
    for f, e in zip(fd, (EXP_DQ, EXP_DK, EXP_DV)):
        np.testing.assert_allclose(f, to_float(e), atol=1e-7)       # source 003's threshold
    WQn, WKn, WVn, Xn = to_float(WQ3), to_float(WK3), to_float(WV3), to_float(X3)
    fdx = al.grad.numerical_gradient(lambda x: J(x @ WQn, x @ WKn, x @ WVn), Xn, eps=h)
    np.testing.assert_allclose(fdx, to_float(EXP_DX), atol=1e-7)


def test_overwriting_a_branch_of_dX_is_caught():
    Xn, WQn, WKn, WVn, Gn = map(to_float, (X3, WQ3, WK3, WV3, G3))
    dq, dk, dv = al.grad.attention_backward(Xn @ WQn, Xn @ WKn, Xn @ WVn, Gn)
    only_value = dv @ WVn.T
    assert np.abs(only_value - to_float(EXP_DX)).max() > 0.5


def test_identical_keys_dQ_zero_dK_nonzero():
    Q, V = X3 * WQ3, X3 * WV3
    K = sp.Matrix([[1, 1], [1, 1]])
    O, A = al.exact.attention(Q, K, V)
    assert A == sp.Matrix([[R(1, 2), R(1, 2)], [R(1, 2), R(1, 2)]])
    assert O == sp.Matrix([[1, 2], [1, 2]])
    assert sp.simplify(probe3(Q, K, V)) == 5
    dQ = sym_grad(lambda M: probe3(M, K, V), Q, "q")
    dK = sym_grad(lambda M: probe3(Q, M, V), K, "k")
    exp_dS = sp.Matrix([[R(1, 2), -R(1, 2)], [-2, 2]])      # row means of dA: 1 and 4
    assert dQ == sp.zeros(2, 2)
    assert is_zero(dK - LN3 * exp_dS.T) and not is_zero(dK)
    args = [to_float(Q), to_float(K), to_float(V), to_float(G3)]
    for dq, dk, _ in (al.grad.attention_backward(*args), torch_grads(*args)):
        np.testing.assert_allclose(dq, 0, atol=1e-14)
        np.testing.assert_allclose(dk, to_float(dK), atol=1e-13)


def test_asymmetric_pair_catches_a_transposed_dQ():
    Q = np.array([[1.0, 2.0], [0.0, 1.0]])
    K = np.array([[1.0, 0.0], [2.0, 1.0]])
    assert (Q @ K.T).tolist() == [[1, 4], [0, 1]] and (Q @ K).tolist() == [[5, 2], [2, 1]]
    V, G = to_float(X3 * WV3), to_float(G3)
    dq = al.grad.attention_backward(Q, K, V, G)[0]
    np.testing.assert_allclose(dq, torch_grads(Q, K, V, G)[0], atol=1e-13)
    _, A = al.attention(Q, K, V, return_weights=True)
    dA = G @ V.T
    dU = A * (dA - (A * dA).sum(-1, keepdims=True))
    assert np.abs(dU @ K.T / np.sqrt(2) - dq).max() > 0.1


# ------------------------------------------------- source 000's second query

def test_000_second_query_D21_and_gradients():
    X = sp.Matrix([[1, 0], [0, 1], [1, 1]])
    Q, K, V = X, X, X * sp.diag(1, 2)
    causal = al.masks.causal(3)
    c = 1 / sp.sqrt(2)
    alpha = 1 / (1 + sp.exp(c))
    U0 = Q * K.T / sp.sqrt(2)
    o21 = lambda U: (sym_softmax_rows(U, causal) * V)[1, 0]
    D = sym_grad(o21, U0, "u")
    assert is_zero(D.row(1) - alpha * (1 - alpha) * sp.Matrix([[1, -1, 0]]))
    assert D.row(0) == sp.zeros(1, 3) and D.row(2) == sp.zeros(1, 3)
    assert abs(float(D[1, 0]) - 0.221181) < 5e-7                     # source 000 (5.32)

    L = lambda Qs, Ks, Vs: (sym_softmax_rows(Qs * Ks.T / sp.sqrt(2), causal) * Vs)[1, 0]
    dQ = sym_grad(lambda M: L(M, K, V), Q, "q")
    dK = sym_grad(lambda M: L(Q, M, V), K, "k")
    f = alpha * (1 - alpha) / sp.sqrt(2)
    assert is_zero(dQ.row(1) - f * sp.Matrix([[1, -1]]))
    assert abs(float(dQ[1, 0]) - 0.156399) < 5e-7                    # source 000 (5.33)
    assert is_zero(dK - f * sp.Matrix([[0, 1], [0, -1], [0, 0]]))    # exercise 5.5

    G = np.zeros((3, 2))
    G[1, 0] = 1
    args = [to_float(Q), to_float(K), to_float(V), G]
    for dq, dk, dv in (al.grad.attention_backward(*args, allowed=causal), torch_grads(*args, allowed=causal)):
        np.testing.assert_allclose(dq, to_float(dQ), atol=1e-13)
        np.testing.assert_allclose(dk, to_float(dK), atol=1e-13)
        np.testing.assert_allclose(dv[:, 0], [float(alpha), 1 - float(alpha), 0], atol=1e-13)


def test_exercise_5_5_partial_versus_total_derivative():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    WV = np.diag([1.0, 2.0])
    causal = al.masks.causal(3)
    L_qkv = lambda Q, K, V: float(al.attention(Q, K, V, allowed=causal)[1, 0])
    dK_fd = al.grad.numerical_gradient(lambda k: L_qkv(X, k, X @ WV), X)
    dX_fd = al.grad.numerical_gradient(lambda x: L_qkv(x, x, x @ WV), X)
    alpha = 1 / (1 + np.exp(1 / np.sqrt(2)))
    assert abs(dK_fd[0, 1] - alpha * (1 - alpha) / np.sqrt(2)) < 1e-8   # 0.1563986
    assert abs(dK_fd[0, 1] - 0.1563986) < 1e-7
    # X_{1,2} reaches the loss only through key 1; X_{2,2} also moves query 2
    assert abs(dX_fd[0, 1] - dK_fd[0, 1]) < 1e-8
    assert abs(dX_fd[1, 1] - 2 * dK_fd[1, 1]) < 1e-8
    G = np.zeros((3, 2))
    G[1, 0] = 1                                     # L = o_{2,1}
    dq, dk, dv = al.grad.attention_backward(X, X, X @ WV, G, allowed=causal)
    np.testing.assert_allclose(dq + dk + dv @ WV.T, dX_fd, atol=1e-8)   # eq. dx: three branches


# ------------------------------------------------- softmax Jacobian

def test_softmax_jacobian_matches_sympy_for_symbolic_3_vector():
    u = sp.symbols("u1:4", real=True)
    Z = sum(sp.exp(x) for x in u)
    a = sp.Matrix([sp.exp(x) / Z for x in u])
    J = a.jacobian(u)
    assert (J - (sp.diag(*a) - a * a.T)).applyfunc(sp.simplify) == sp.zeros(3, 3)
    assert (J * sp.ones(3, 1)).applyfunc(sp.simplify) == sp.zeros(3, 1)
    for point in ([0.3, -1.2, 2.0], [0.0, 0.0, 0.0], [5.0, -3.0, 1.0]):
        sub = dict(zip(u, point))
        a_num = np.array([float(x.subs(sub)) for x in a])
        np.testing.assert_allclose(al.grad.softmax_jacobian(a_num), to_float(J.subs(sub)), atol=1e-14)


def test_two_position_jacobian_vjp_is_a_one_minus_a_times_u_minus_v():
    for alpha, u, v in ((0.75, 2.0, 0.0), (0.3, -1.0, 4.0), (0.5, 1.0, 1.0)):
        J = al.grad.softmax_jacobian(np.array([alpha, 1 - alpha]))
        expected = alpha * (1 - alpha) * (u - v) * np.array([1.0, -1.0])
        np.testing.assert_allclose(J @ np.array([u, v]), expected, atol=1e-15)


# ------------------------------------------------- property tests

def torch_reference_with_invalid_rows(q, k, v, g, allowed, valid):
    """Autograd reference: invalid rows read every key, then are multiplied by zero (no NaN)."""
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    ok = torch.from_numpy(np.ascontiguousarray(allowed | ~valid[..., None]))
    out = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=ok)
    out = out * torch.from_numpy(valid.astype(float))[..., None]
    (out * torch.from_numpy(g)).sum().backward()
    return tq.grad.numpy(), tk.grad.numpy(), tv.grad.numpy()


@st.composite
def masked_problems(draw):
    batch = tuple(draw(st.lists(st.integers(1, 2), max_size=2)))
    T, S = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    d_k, d_v = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2 ** 31 - 1))
    r = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["none", "causal", "random"]))
    if kind == "causal":
        allowed = np.broadcast_to(al.masks.causal(T, S, offset=draw(st.integers(0, S - 1))), batch + (T, S))
    elif kind == "random":
        allowed = r.random(batch + (T, S)) < 0.6
    else:
        allowed = np.ones(batch + (T, S), dtype=bool)
    allowed = np.array(allowed)
    valid = r.random(batch + (T,)) < 0.75
    valid &= allowed.any(-1)                       # a valid row must see some key
    q, k = r.uniform(-1.5, 1.5, batch + (T, d_k)), r.uniform(-1.5, 1.5, batch + (S, d_k))
    v, g = r.normal(size=batch + (S, d_v)), r.normal(size=batch + (T, d_v))
    return q, k, v, g, allowed, valid


@settings(max_examples=40, deadline=None)
@given(masked_problems())
def test_backward_with_masks_and_invalid_rows_vs_autograd(problem):
    q, k, v, g, allowed, valid = problem
    dq, dk, dv = al.grad.attention_backward(q, k, v, g, allowed=allowed, query_valid=valid)
    for ours, ref in zip((dq, dk, dv), torch_reference_with_invalid_rows(q, k, v, g, allowed, valid)):
        np.testing.assert_allclose(ours, ref, atol=1e-12)
    assert np.all(dq[~valid] == 0)                  # invalid queries: exactly zero gradient
    g0 = np.where(valid[..., None], g, 0.0)        # ... and they contribute nothing to dK, dV
    _, dk0, dv0 = al.grad.attention_backward(q, k, v, g0, allowed=allowed, query_valid=valid)
    np.testing.assert_array_equal(dk, dk0)
    np.testing.assert_array_equal(dv, dv0)


@settings(max_examples=15, deadline=None)
@given(masked_problems())
def test_backward_with_masks_vs_central_differences(problem):
    q, k, v, g, allowed, valid = problem
    loss = lambda q_, k_, v_: float((g * al.attention(q_, k_, v_, allowed=allowed, query_valid=valid)).sum())
    dq, dk, dv = al.grad.attention_backward(q, k, v, g, allowed=allowed, query_valid=valid)
    for h in (1e-5, 1e-6):
        np.testing.assert_allclose(al.grad.numerical_gradient(lambda x: loss(x, k, v), q, eps=h), dq, atol=1e-6)
        np.testing.assert_allclose(al.grad.numerical_gradient(lambda x: loss(q, x, v), k, eps=h), dk, atol=1e-6)
        np.testing.assert_allclose(al.grad.numerical_gradient(lambda x: loss(q, k, x), v, eps=h), dv, atol=1e-6)


def test_dropout_backward_reuses_the_forward_mask():
    r = np.random.default_rng(5)
    q, k, v, g = r.normal(size=(5, 3)), r.normal(size=(5, 3)), r.normal(size=(5, 2)), r.normal(size=(5, 2))
    p = 0.5
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    torch.manual_seed(11)
    A_t = torch.softmax(tq @ tk.T / np.sqrt(3), -1)
    dropped = F.dropout(A_t, p=p, training=True)
    (dropped @ tv * torch.tensor(g)).sum().backward()
    A, keep = A_t.detach().numpy(), dropped.detach().numpy() != 0

    def by_hand(mask):
        dA = (g @ v.T) * mask / (1 - p)
        dU = A * (dA - (A * dA).sum(-1, keepdims=True))
        return dU @ k / np.sqrt(3), dU.T @ q / np.sqrt(3), (A * mask / (1 - p)).T @ g

    for ours, ref in zip(by_hand(keep), (tq.grad, tk.grad, tv.grad)):
        np.testing.assert_allclose(ours, ref.numpy(), atol=1e-12)
    fresh = np.random.default_rng(7).random(A.shape) >= p
    assert not np.array_equal(fresh, keep)
    assert np.abs(by_hand(fresh)[2] - tv.grad.numpy()).max() > 1e-3


def test_saturated_example_lets_a_wrong_gradient_pass():
    Kn, Vn, Gn = to_float(X3 * WK3), to_float(X3 * WV3), to_float(G3)
    J = lambda Q, K: float((Gn * al.attention(Q, K, Vn)).sum())

    def check(Q, sign):
        dq = sign * al.grad.attention_backward(Q, Kn, Vn, Gn)[0]
        return np.allclose(dq, al.grad.numerical_gradient(lambda x: J(x, Kn), Q), rtol=1e-5, atol=1e-8)

    unsaturated, saturated = to_float(X3 * WQ3), 40 * np.sqrt(2) * np.eye(2)
    assert check(unsaturated, +1) and not check(unsaturated, -1)
    assert check(saturated, +1) and check(saturated, -1)      # the flipped sign passes
