"""Claims of chapters 1-2 (queries/keys/values, scaling and softmax) checked against independent references.

Each test recomputes a statement the two chapters make, with SymPy (exact), PyTorch (SDPA,
autograd, dropout) or a simulation whose tolerance is derived from its sample size.
"""
import itertools

import numpy as np
import pytest
import sympy as sp
import torch
import torch.nn.functional as F

import attnlab as al

Z_TOL = 5.0  # simulated estimates must lie within 5 standard errors of the prediction


# ----------------------------------------------------------------------------------------
# Chapter 1: the transpose trap, packing, hard selection, "not a dictionary"
# ----------------------------------------------------------------------------------------

Q_TRAP = [[1, 2], [0, 1]]
K_TRAP = [[1, 0], [2, 1]]


def test_transpose_trap_exact_values_and_same_shape():
    Q, K = sp.Matrix(Q_TRAP), sp.Matrix(K_TRAP)
    # q_i . k_j by hand: (1,2).(1,0) = 1, (1,2).(2,1) = 4, (0,1).(1,0) = 0, (0,1).(2,1) = 1
    hand = sp.Matrix([[sum(Q[i, r] * K[j, r] for r in range(2)) for j in range(2)] for i in range(2)])
    assert hand == sp.Matrix([[1, 4], [0, 1]])
    assert Q * K.T == hand
    assert Q * K == sp.Matrix([[5, 2], [2, 1]])
    assert (Q * K).shape == (Q * K.T).shape          # a shape assertion cannot tell them apart


def test_transpose_trap_attention_differs_from_sdpa_only_in_values():
    q, k = np.array(Q_TRAP, float), np.array(K_TRAP, float)
    v = np.array([[1.0, -1.0], [3.0, 2.0]])
    sdpa = F.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v)).numpy()
    np.testing.assert_allclose(al.attention(q, k, v), sdpa, atol=1e-12)
    buggy = al.softmax(q @ k / np.sqrt(2)) @ v
    assert buggy.shape == sdpa.shape and not np.allclose(buggy, sdpa)
    # exact weights of the correct version: softmax of [1, 4]/sqrt2 and [0, 1]/sqrt2
    _, A = al.exact.attention(Q_TRAP, K_TRAP, sp.eye(2))
    a12 = sp.exp(4 / sp.sqrt(2)) / (sp.exp(1 / sp.sqrt(2)) + sp.exp(4 / sp.sqrt(2)))
    assert sp.simplify(A[0, 1] - a12) == 0
    _, w = al.attention(q, k, v, return_weights=True)
    assert w[0, 1] == pytest.approx(float(a12), rel=1e-14)


def test_symmetric_keys_hide_the_transpose_bug_and_distinct_sizes_expose_it():
    q = np.array(Q_TRAP, float)
    k_sym = np.array([[1.0, 2.0], [2.0, 1.0]])
    np.testing.assert_array_equal(q @ k_sym, q @ k_sym.T)
    rng = np.random.default_rng(0)
    q3, k5 = rng.normal(size=(3, 2)), rng.normal(size=(5, 2))
    with pytest.raises(ValueError):
        q3 @ k5                                        # T=3, S=5, d_k=2: the wrong product is undefined


def test_packing_wqkv_is_a_layout_and_only_wq_wk_product_matters():
    rng = np.random.default_rng(1)
    d, d_k = 8, 2
    X = rng.normal(size=(5, d))
    Wq, Wk, Wv = rng.normal(size=(3, d, d_k))
    packed = X @ np.concatenate([Wq, Wk, Wv], axis=1)
    for block, W in zip(np.split(packed, 3, axis=1), (Wq, Wk, Wv)):
        np.testing.assert_allclose(block, X @ W, atol=1e-12)
    # the same split is what nn.MultiheadAttention's packed in_proj_weight means
    mha = torch.nn.MultiheadAttention(d, 1, bias=False, batch_first=True, dtype=torch.float64)
    xt = torch.tensor(X)[None]
    y, _ = mha(xt, xt, xt)
    w_q, w_k, w_v = (w.T.detach().numpy() for w in mha.in_proj_weight.chunk(3))
    ref = al.multi_head_attention(X, X, w_q, w_k, w_v, mha.out_proj.weight.T.detach().numpy(), n_heads=1)
    np.testing.assert_allclose(y[0].detach().numpy(), ref, atol=1e-12)
    # scores depend on W_Q W_K^T only: (W_Q R, W_K R^{-T}) gives identical scores
    R = rng.normal(size=(d_k, d_k))
    s1 = (X @ Wq) @ (X @ Wk).T
    s2 = (X @ Wq @ R) @ (X @ Wk @ np.linalg.inv(R).T).T
    np.testing.assert_allclose(s1, s2, atol=1e-10)
    assert np.linalg.matrix_rank(Wq @ Wk.T) == d_k
    # tying W_K = W_Q makes the scores symmetric
    tied = (X @ Wq) @ (X @ Wq).T
    np.testing.assert_allclose(tied, tied.T, atol=1e-12)
    assert not np.allclose(s1, s1.T)


def test_hard_selection_has_zero_gradient_softmax_does_not():
    values = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 1.0], [1.0, 1.0]])
    s0 = np.array([0.3, 1.2, -0.4, 0.9])
    fd_hard = al.grad.numerical_gradient(lambda s: values[np.argmax(s), 1], s0)
    assert np.all(fd_hard == 0)
    st = torch.tensor(s0, requires_grad=True)
    (torch.softmax(st, 0) @ torch.tensor(values))[1].backward()
    fd_soft = al.grad.numerical_gradient(lambda s: (al.softmax(s) @ values)[1], s0)
    np.testing.assert_allclose(fd_soft, st.grad.numpy(), atol=1e-8)
    assert np.abs(st.grad.numpy()).min() > 0


def test_query_equal_to_a_key_is_not_a_lookup_of_that_key():
    K = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    V = np.array([[10.0, 0.0], [0.0, 10.0], [-10.0, -10.0]])
    q = K[:1]
    _, w = al.attention(q, K, V, return_weights=True)
    # exact: scores (1, 2, 0)/sqrt2, so key 2 (index 1) wins
    exact = [sp.exp(sp.Integer(s) / sp.sqrt(2)) for s in (1, 2, 0)]
    np.testing.assert_allclose(w[0], [float(e / sum(exact)) for e in exact], rtol=1e-14)
    assert w[0].argmax() == 1
    sharp = al.attention(q, K, V, scale=50.0)
    np.testing.assert_allclose(sharp[0], V[1], atol=1e-8)


# ----------------------------------------------------------------------------------------
# Chapter 2: the variance lemma, the trace formula, q = k
# ----------------------------------------------------------------------------------------

def _var_of_square_iid(d, kurt_q, kurt_k, var_q, var_k):
    """Var(s^2) for s = sum_r q_r k_r, coordinates independent, zero mean, E x^4 = kurt * var^2.

    E s^4 = d E q^4 E k^4 + 3 d (d - 1) (var_q var_k)^2, and (E s^2)^2 = d^2 (var_q var_k)^2.
    """
    m = (var_q * var_k) ** 2
    return d * kurt_q * kurt_k * m + 3 * d * (d - 1) * m - d**2 * m


@pytest.mark.parametrize("dist", ["gaussian", "uniform", "rademacher"])
@pytest.mark.parametrize("d_k", [1, 8, 64])
def test_variance_lemma_by_simulation(dist, d_k):
    rng = np.random.default_rng(10 + d_k)
    N, var_q, var_k = 40_000, 4.0, 4.0            # exercise 5.2: coordinate variance 4
    if dist == "gaussian":
        draw, kurt = (lambda var: rng.normal(0, np.sqrt(var), (N, d_k))), 3.0
    elif dist == "uniform":                        # U(-a, a) has variance a^2/3, kurtosis 9/5
        draw, kurt = (lambda var: rng.uniform(-np.sqrt(3 * var), np.sqrt(3 * var), (N, d_k))), 9 / 5
    else:                                          # +-sigma with probability 1/2: kurtosis 1
        draw, kurt = (lambda var: np.sqrt(var) * rng.choice([-1.0, 1.0], (N, d_k))), 1.0
    s = np.einsum("nr,nr->n", draw(var_q), draw(var_k))
    predicted = d_k * var_q * var_k                # the lemma: 16 d_k
    se = np.sqrt(_var_of_square_iid(d_k, kurt, kurt, var_q, var_k) / N)
    # (+1e-9: for +-1 coordinates and d_k = 1, s^2 is a constant and se = 0)
    assert abs(np.mean(s**2) - predicted) <= Z_TOL * se + 1e-9
    assert abs(s.mean()) < Z_TOL * np.sqrt(predicted / N)
    scaled = s / np.sqrt(d_k)                      # scaled: 16, independent of d_k
    assert abs(np.mean(scaled**2) - var_q * var_k) <= Z_TOL * se / d_k + 1e-9


def test_var_of_square_formula_matches_gaussian_trace_formula():
    # the iid formula with kurtosis 3 equals 6 tr((CqCk)^2) + 2 tr(CqCk)^2 for isotropic C
    for d in (1, 5, 64):
        Cq, Ck = 2.0 * np.eye(d), 3.0 * np.eye(d)
        tr = np.trace(Cq @ Ck)
        assert _var_of_square_iid(d, 3.0, 3.0, 2.0, 3.0) == pytest.approx(
            6 * np.trace(Cq @ Ck @ Cq @ Ck) + 2 * tr**2)


def test_trace_formula_exact_on_finite_distributions():
    """E[(q k^T)^2] = tr(C_q C_k), exactly, for independent zero-mean q, k on finite supports."""
    pts_q = [sp.Matrix([[1, 2, 0]]), sp.Matrix([[0, -1, 3]]), sp.Matrix([[2, 1, -1]])]
    pts_k = [sp.Matrix([[1, 0, 1]]), sp.Matrix([[-2, 1, 0]]), sp.Matrix([[0, 3, -2]])]
    pts_q += [-p for p in pts_q]                   # symmetric supports: mean exactly zero
    pts_k += [-p for p in pts_k]
    Cq = sum((p.T * p for p in pts_q), sp.zeros(3)) / len(pts_q)
    Ck = sum((p.T * p for p in pts_k), sp.zeros(3)) / len(pts_k)
    second_moment = sum((q * k.T)[0, 0] ** 2 for q in pts_q for k in pts_k) / (len(pts_q) * len(pts_k))
    assert second_moment == (Cq * Ck).trace()
    assert second_moment != 3 * (Cq.trace() / 3) * (Ck.trace() / 3)   # isotropic rule is off here


@pytest.mark.parametrize("case", ["aligned", "orthogonal", "random"])
def test_trace_formula_by_simulation(case):
    rng = np.random.default_rng(20)
    d_k, N = 16, 60_000
    if case == "aligned":
        Lq = Lk = np.diag([np.sqrt(d_k / 2)] * 2 + [0.0] * (d_k - 2))
    elif case == "orthogonal":
        Lq = np.diag([np.sqrt(d_k / 2)] * 2 + [0.0] * (d_k - 2))
        Lk = np.diag([0.0] * 2 + [np.sqrt(d_k / 2)] * 2 + [0.0] * (d_k - 4))
    else:
        Lq, Lk = rng.normal(size=(2, d_k, d_k)) / np.sqrt(d_k)
    Cq, Ck = Lq @ Lq.T, Lk @ Lk.T
    q = rng.standard_normal((N, d_k)) @ Lq.T
    k = rng.standard_normal((N, d_k)) @ Lk.T
    s = np.einsum("nr,nr->n", q, k)
    tr = np.trace(Cq @ Ck)
    se = np.sqrt((6 * np.trace(Cq @ Ck @ Cq @ Ck) + 2 * tr**2) / N)
    assert abs(np.mean(s**2) - tr) <= Z_TOL * se + 1e-12
    if case == "aligned":
        assert tr == pytest.approx(8 * d_k)        # 8x the isotropic d_k sigma^4 = 16
    if case == "orthogonal":
        assert np.all(s == 0)


def test_q_equal_k_has_mean_dk_sigma2_not_zero():
    rng = np.random.default_rng(30)
    N, sigma2 = 40_000, 2.0
    for d_k in (4, 64):
        q = rng.normal(0, np.sqrt(sigma2), (N, d_k))
        s = np.einsum("nr,nr->n", q, q)
        se = np.sqrt(2 * d_k * sigma2**2 / N)      # Var |q|^2 = 2 d_k sigma^4 for Gaussian q
        assert abs(s.mean() - d_k * sigma2) < Z_TOL * se
        assert abs((s / np.sqrt(d_k)).mean() - np.sqrt(d_k) * sigma2) < Z_TOL * se / np.sqrt(d_k)


def test_tied_projections_put_weight_on_the_diagonal():
    rng = np.random.default_rng(2)
    T, d = 16, 64
    X = rng.standard_normal((T, d))
    Wq, Wk = rng.standard_normal((2, d, d)) / np.sqrt(d)
    q, k = torch.tensor(X @ Wq), torch.tensor(X @ Wk)
    A_tied = F.scaled_dot_product_attention(q, q, torch.eye(T, dtype=q.dtype)).numpy()   # V = I -> A
    A_free = F.scaled_dot_product_attention(q, k, torch.eye(T, dtype=q.dtype)).numpy()
    assert np.diag(A_tied).mean() > 0.5 > np.diag(A_free).mean()


# ----------------------------------------------------------------------------------------
# Chapter 2: softmax properties
# ----------------------------------------------------------------------------------------

def test_rows_sum_to_one_columns_do_not():
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 2))
    _, A = al.attention(q, k, v, return_weights=True)
    A_torch = F.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.eye(6, dtype=torch.float64))
    np.testing.assert_allclose(A, A_torch.numpy(), atol=1e-14)
    np.testing.assert_allclose(A.sum(axis=1), 1.0, rtol=1e-14)
    assert not np.allclose(A.sum(axis=0), 1.0)


def test_weights_not_symmetric_when_q_equals_k_exact():
    QK = [[1, 0], [0, 2]]
    _, A = al.exact.attention(QK, QK, sp.eye(2))
    a12 = 1 / (1 + sp.exp(1 / sp.sqrt(2)))
    a21 = 1 / (1 + sp.exp(2 * sp.sqrt(2)))
    assert sp.simplify(A[0, 1] - a12) == 0 and sp.simplify(A[1, 0] - a21) == 0
    assert float(a12) != pytest.approx(float(a21))
    scores = sp.Matrix(QK) * sp.Matrix(QK).T
    assert scores == scores.T                       # the scores ARE symmetric
    qt = torch.tensor(np.array(QK, float))
    A_t = F.scaled_dot_product_attention(qt, qt, torch.eye(2, dtype=qt.dtype)).numpy()
    np.testing.assert_allclose(A_t, np.array(A, dtype=float), rtol=1e-12)


def test_shift_invariance_and_overflow():
    z = np.array([1000.0, 999.0, 998.0])
    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.exp(z) / np.exp(z).sum()
        naive_low = np.exp(-z) / np.exp(-z).sum()
    assert np.isnan(naive).all() and np.isnan(naive_low).all()
    e = sp.E
    exact = [e**2 / (e**2 + e + 1), e / (e**2 + e + 1), 1 / (e**2 + e + 1)]
    exact_f = np.array([float(x) for x in exact])
    np.testing.assert_allclose(al.softmax(z), exact_f, rtol=1e-14)
    np.testing.assert_allclose(al.softmax(-z), exact_f[::-1], rtol=1e-14)
    np.testing.assert_allclose(torch.softmax(torch.tensor(z), 0).numpy(), exact_f, rtol=1e-14)
    rng = np.random.default_rng(4)
    u = rng.normal(size=7)
    for c in (-300.0, 0.5, 700.0):
        np.testing.assert_allclose(al.softmax(u + c), torch.softmax(torch.tensor(u), 0).numpy(), rtol=1e-12)
    assert np.log(float(np.finfo(np.float16).max)) == pytest.approx(11.09, abs=0.01)
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp(np.float16(12.0)))


def test_softmax_jacobian_against_sympy_and_autograd_and_kills_ones():
    u = sp.symbols("u0:3")
    Z = sum(sp.exp(x) for x in u)
    J_sym = sp.Matrix([sp.exp(x) / Z for x in u]).jacobian(u)
    point = {u[0]: 0.3, u[1]: -1.2, u[2]: 2.0}
    J_exact = np.array(J_sym.subs(point).evalf(), dtype=float)
    u0 = np.array([0.3, -1.2, 2.0])
    J = al.grad.softmax_jacobian(al.softmax(u0))
    np.testing.assert_allclose(J, J_exact, atol=1e-14)
    J_auto = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, 0), torch.tensor(u0)).numpy()
    np.testing.assert_allclose(J, J_auto, atol=1e-14)
    np.testing.assert_allclose(J @ np.ones(3), 0.0, atol=1e-15)       # exercise 5.4


def test_unscaled_saturates_and_shrinks_the_jacobian_at_dk_64():
    rng = np.random.default_rng(5)
    n, S, d_k = 1000, 16, 64
    q, k = rng.standard_normal((n, 1, d_k)), rng.standard_normal((n, S, d_k))
    eye = torch.eye(S, dtype=torch.float64).expand(n, S, S)
    stats = {}
    for name, scale in (("scaled", None), ("unscaled", 1.0)):
        a = F.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), eye, scale=scale).numpy()[:, 0]
        ent = -(a * np.log(np.where(a > 0, a, 1.0))).sum(1)
        jac = np.linalg.norm(al.grad.softmax_jacobian(a), axis=(1, 2))
        stats[name] = (a.max(1).mean(), ent.mean(), jac.mean())
    (m_s, e_s, j_s), (m_u, e_u, j_u) = stats["scaled"], stats["unscaled"]
    assert m_u > 0.75 > 0.35 > m_s
    assert e_u < 0.6 and e_s > 2.0 and np.log(S) > e_s
    assert j_u < 0.7 * j_s
    # two-key split has a larger Jacobian than the uniform row: |J|_F is not monotone in sharpness
    two = np.r_[0.5, 0.5, np.zeros(S - 2)]
    assert np.linalg.norm(al.grad.softmax_jacobian(two)) == pytest.approx(0.5)
    assert np.linalg.norm(al.grad.softmax_jacobian(np.full(S, 1 / S))) == pytest.approx(
        np.sqrt(1 / S - 1 / S**2))


def test_temperature_absorbed_into_wq_matches_sdpa():
    rng = np.random.default_rng(6)
    d_k = 64
    q, k, v = rng.normal(size=(5, d_k)), rng.normal(size=(7, d_k)), rng.normal(size=(7, 3))
    ref = F.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v)).numpy()
    unscaled = F.scaled_dot_product_attention(torch.tensor(q / np.sqrt(d_k)), torch.tensor(k),
                                              torch.tensor(v), scale=1.0).numpy()
    np.testing.assert_allclose(unscaled, ref, rtol=1e-12)
    np.testing.assert_allclose(al.attention(q / np.sqrt(d_k), k, v, scale=1.0), ref, rtol=1e-12)


# ----------------------------------------------------------------------------------------
# Chapter 2: convex combinations and dropout
# ----------------------------------------------------------------------------------------

def test_linear_and_affine_maps_preserve_the_convex_combination():
    rng = np.random.default_rng(7)
    S, d_v = 5, 8
    V = rng.normal(size=(S, d_v))
    a = al.softmax(rng.normal(size=S))
    o = al.attention(rng.normal(size=(1, 3)), rng.normal(size=(S, 3)), V)[0]
    _, w = al.attention(rng.normal(size=(1, 3)), rng.normal(size=(S, 3)), V, return_weights=True)
    assert np.all(V.min(0) <= o) and np.all(o <= V.max(0))                 # coordinate bounds
    for _ in range(3):
        P, b = rng.normal(size=(d_v, 2)), rng.normal(size=2)
        np.testing.assert_allclose(a @ V @ P, a @ (V @ P), atol=1e-12)     # eq. 5.10
        np.testing.assert_allclose((a @ V) @ P + b, a @ (V @ P + b), atol=1e-12)
        np.testing.assert_allclose((w[0] @ V) @ P + b, w[0] @ (V @ P + b), atol=1e-12)
    # a map that is not affine does not commute with mixing
    assert not np.allclose(np.tanh(a @ V), a @ np.tanh(V))


def test_convex_picture_draws_the_projected_output():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rng = np.random.default_rng(8)
    V, a, P = rng.normal(size=(5, 8)), al.softmax(rng.normal(size=5)), rng.normal(size=(8, 2))
    fig, ax = plt.subplots()
    star = al.plots.convex_picture(ax, V @ P, a)
    plt.close(fig)
    np.testing.assert_allclose(star, (a @ V) @ P, atol=1e-12)


def _exact_row_sum_moments(a, q):
    """Mean, variance and 4th central moment of R = sum m_j a_j / q by listing all masks."""
    masks = np.array(list(itertools.product([0, 1], repeat=len(a))))
    prob = np.prod(np.where(masks == 1, q, 1 - q), axis=1)
    R = masks @ a / q
    mean = prob @ R
    var = prob @ (R - mean) ** 2
    return mean, var, prob @ (R - mean) ** 4


def test_dropout_row_sum_formula_exact_with_sympy():
    qs = sp.Rational(7, 10)
    a = [sp.Rational(1, 2), sp.Rational(1, 3), sp.Rational(1, 6)]
    mean = var_terms = 0
    for mask in itertools.product([0, 1], repeat=3):
        p = sp.Mul(*[qs if m else 1 - qs for m in mask])
        R = sum(m * aj for m, aj in zip(mask, a)) / qs
        mean += p * R
        var_terms += p * R**2
    assert mean == 1
    assert var_terms - mean**2 == (1 - qs) / qs * sum(aj**2 for aj in a)   # exercise 5.9


@pytest.mark.parametrize("p_drop", [0.1, 0.3])
def test_dropout_row_sum_mean_and_variance_by_simulation(p_drop):
    torch.manual_seed(0)
    rng = np.random.default_rng(9)
    S, N = 6, 200_000
    a = al.softmax(rng.normal(size=S))
    q = 1 - p_drop
    mean, var, mu4 = _exact_row_sum_moments(a, q)
    np.testing.assert_allclose([mean, var], [1.0, (1 - q) / q * np.sum(a**2)], rtol=1e-12)
    R = F.dropout(torch.tensor(a).expand(N, S), p=p_drop, training=True).sum(1).numpy()
    assert abs(R.mean() - 1.0) < Z_TOL * np.sqrt(var / N)
    assert abs(R.var() - var) < Z_TOL * np.sqrt((mu4 - var**2) / N)
    p_zero = p_drop**S
    assert abs(np.mean(R == 0) - p_zero) < Z_TOL * np.sqrt(p_zero * (1 - p_zero) / N) + 1 / N


def test_sdpa_dropout_acts_on_the_weights_with_the_same_moments():
    """With V = I the output of SDPA is the (dropped-out) weight matrix itself."""
    torch.manual_seed(1)
    rng = np.random.default_rng(11)
    S, N, p_drop = 5, 100_000, 0.3
    q, k = rng.normal(size=(1, 1, 3)), rng.normal(size=(1, S, 3))
    _, w = al.attention(q, k, np.eye(S), return_weights=True)
    a = w[0, 0]
    qt = torch.tensor(q).expand(N, 1, 3)
    kt = torch.tensor(k).expand(N, S, 3)
    out = F.scaled_dot_product_attention(qt, kt, torch.eye(S, dtype=torch.float64).expand(N, S, S),
                                         dropout_p=p_drop).numpy()[:, 0]
    mean, var, mu4 = _exact_row_sum_moments(a, 1 - p_drop)
    R = out.sum(1)
    assert abs(R.mean() - mean) < Z_TOL * np.sqrt(var / N)
    assert abs(R.var() - var) < Z_TOL * np.sqrt((mu4 - var**2) / N)
    q_keep = 1 - p_drop
    se_entry = a * np.sqrt((1 - q_keep) / q_keep / N)       # E A~ = A, Var A~_j = a_j^2 (1-q)/q
    assert np.all(np.abs(out.mean(0) - a) < Z_TOL * se_entry)


# ----------------------------------------------------------------------------------------
# Chapter 2: scaling after initialisation, QK-norm, soft-capping, half precision
# ----------------------------------------------------------------------------------------

def test_aligned_query_has_mean_score_rho_dk_exactly():
    """q = rho k + sqrt(1 - rho^2) z with unit-variance coordinates: E[q . k] = rho d_k (SymPy, d_k = 3)."""
    rho = sp.Rational(1, 2)
    k = sp.symbols("k1:4", real=True)
    z = sp.symbols("z1:4", real=True)
    score = sum((rho * kr + sp.sqrt(1 - rho**2) * zr) * kr for kr, zr in zip(k, z))
    # expectation over independent standard normal k_r, z_r: E[k^2] = 1, E[k z] = E[k] E[z] = 0
    moments = {kr**2: 1 for kr in k}
    expanded = sp.expand(score)
    mean = sum(coef * (moments.get(term, 0)) for term, coef in expanded.as_coefficients_dict().items())
    assert mean == rho * 3


@pytest.mark.parametrize("b,S", [(1.0, 4), (8.0, 16), (50.0, 1000)])
def test_bounded_logits_bound_the_largest_weight(b, S):
    """Scores in [-b, b]: the largest weight is at most 1 / (1 + (S - 1) e^{-2b}), attained at the extremes."""
    bound = 1 / (1 + (S - 1) * np.exp(-2 * b))
    extreme = np.array([b] + [-b] * (S - 1))
    np.testing.assert_allclose(al.softmax(extreme)[0], bound, rtol=1e-12)
    rng = np.random.default_rng(0)
    for _ in range(200):
        assert al.softmax(rng.uniform(-b, b, S)).max() <= bound * (1 + 1e-12)


def test_qk_norm_and_soft_cap_keep_scores_in_range():
    rng = np.random.default_rng(1)
    q, k = 1e3 * rng.standard_normal((50, 64)), 1e3 * rng.standard_normal((70, 64))
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)
    g, c = 8.0, 8.0
    assert np.abs(g * unit(q) @ unit(k).T).max() <= g * (1 + 1e-12)
    capped = c * np.tanh((q @ k.T / 8.0) / c)
    assert np.abs(capped).max() <= c
    small = np.linspace(-0.1, 0.1, 11)
    np.testing.assert_allclose(c * np.tanh(small / c), small, atol=1e-5)   # close to s for |s| << c


def test_float16_scores_overflow_and_prescaling_fixes_them():
    q = torch.full((1, 128), 24.0, dtype=torch.float16)
    k = torch.full((3, 128), 24.0, dtype=torch.float16)
    assert torch.isinf(q @ k.T).all() and 128 * 24 * 24 > float(torch.finfo(torch.float16).max)
    assert torch.isfinite((q / 128**0.5) @ k.T).all()
    # after max-subtraction no exponent is positive, in any format
    u = torch.tensor([1e4, 3.0, -5.0], dtype=torch.float16)
    assert torch.isfinite(torch.exp(u - u.max())).all() and torch.exp(u - u.max()).max() == 1


def test_float16_accumulator_stalls_on_small_weights():
    total = np.float16(0)
    for x in np.full(4096, 1 / 4096, dtype=np.float16):
        total = np.float16(total + x)
    spacing = np.spacing(np.float16(total))
    assert float(total) <= 0.5 and np.float16(1 / 4096) <= spacing / 2   # the next weight rounds away
    assert abs(np.float32(np.full(4096, 1 / 4096, np.float32).sum()) - 1) < 1e-5
