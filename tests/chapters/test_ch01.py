"""Chapter 1's new claims about the running example "Mia said she won", checked against hand values.

The vectors are typed here from the example's definition (attnlab/example.py's docstring), and
every score, weight and output is derived from them with SymPy or PyTorch, not read from
``al.example``'s answers.
"""
import numpy as np
import pytest
import sympy as sp
import torch
import torch.nn.functional as F

import attnlab as al

half = sp.Rational(1, 2)
X_AB = sp.Matrix([[1, 1], [0, 1], [1, 0], [half, half]])     # features a, b of Mia, said, she, won
V_SIM = sp.Matrix([[1, 0], [0, 1], [1, 1], [half, half]])    # the similarity head's values


def _softmax_row(u):
    e = [sp.exp(x) for x in u]
    return [x / sum(e) for x in e]


def test_the_similarity_head_is_q_equals_k_equals_the_two_features():
    Q, K, V = al.example.qkv(al.example.SIMILARITY, exact=True)
    assert Q == K == X_AB and V == V_SIM
    assert al.example.tokens == ("Mia", "said", "she", "won")


def test_mias_scores_weights_and_output_by_hand():
    q_mia = X_AB.row(0)
    scores = [(q_mia * X_AB.row(j).T)[0] for j in range(4)]
    assert scores == [2, 1, 1, 1]                                        # step 1 in the text
    u = [s / sp.sqrt(2) for s in scores]                                 # step 2
    a = _softmax_row(u)                                                  # step 3
    e2, e1 = sp.exp(sp.sqrt(2)), sp.exp(1 / sp.sqrt(2))
    assert all(sp.simplify(x - y / (e2 + 3 * e1)) == 0 for x, y in zip(a, [e2, e1, e1, e1]))
    o = sum((a[j] * V_SIM.row(j) for j in range(4)), sp.zeros(1, 2))     # step 4
    O, A = al.example.attention(al.example.SIMILARITY, exact=True)
    assert sp.simplify(O.row(0) - o) == sp.zeros(1, 2)
    assert all(sp.simplify(A[0, j] - a[j]) == 0 for j in range(4))
    assert float(a[0]) == pytest.approx(0.403355, abs=1e-6)


def test_the_similarity_head_against_sdpa_and_she_ties_mia_with_herself():
    q = torch.tensor(np.array(X_AB.tolist(), dtype=float))
    v = torch.tensor(np.array(V_SIM.tolist(), dtype=float))
    A = F.scaled_dot_product_attention(q, q, torch.eye(4, dtype=q.dtype)).numpy()   # V = I gives A
    O = F.scaled_dot_product_attention(q, q, v).numpy()
    O_ex, A_ex = al.example.attention(al.example.SIMILARITY)
    np.testing.assert_allclose(A_ex, A, rtol=1e-14)
    np.testing.assert_allclose(O_ex, O, rtol=1e-14)
    assert A[2, 0] == pytest.approx(A[2, 2], rel=1e-14) and A[2, 0] == A[2].max()     # "she" splits Mia / she
    # every output lies in the values' box (convex combination)
    assert np.all((O >= v.numpy().min(0)) & (O <= v.numpy().max(0)))


def test_check_yourself_won_reads_mia_most():
    q_won = X_AB.row(3)
    scores = [(q_won * X_AB.row(j).T)[0] for j in range(4)]
    assert scores == [1, half, half, half]
    w = _softmax_row([s / sp.sqrt(2) for s in scores])
    closed = sp.exp(1 / sp.sqrt(2)) / (sp.exp(1 / sp.sqrt(2)) + 3 * sp.exp(1 / (2 * sp.sqrt(2))))
    assert sp.simplify(w[0] - closed) == 0 and float(w[0]) == max(float(x) for x in w)


def test_the_pronoun_head_makes_she_read_mia_with_0_849():
    X = sp.Matrix([[1, 1, 0, 1], [0, 1, 0, 0], [1, 0, 1, 0], [half, half, 0, 0]])   # a, b, pronoun, name
    q_she, k_mia = sp.Matrix([[2, 0]]), sp.Matrix([[2, 0]])        # "looking for a name", "I am a name"
    Q, K, V = al.example.qkv(al.example.PRONOUN, exact=True)
    assert Q == sp.Matrix.vstack(sp.zeros(2, 2), q_she, sp.zeros(1, 2))
    assert K == sp.Matrix.vstack(k_mia, sp.zeros(3, 2))
    assert V == X[:, :2]
    score = (q_she * k_mia.T)[0]
    assert score == 4
    e = sp.exp(score / sp.sqrt(2))
    a_she_mia = e / (e + 3)
    assert sp.simplify(a_she_mia - sp.exp(2 * sp.sqrt(2)) / (sp.exp(2 * sp.sqrt(2)) + 3)) == 0
    assert float(a_she_mia) == pytest.approx(0.849, abs=5e-4)
    o_she = a_she_mia * V.row(0) + (1 - a_she_mia) / 3 * (V.row(1) + V.row(2) + V.row(3))
    O, A = al.example.attention(al.example.PRONOUN, exact=True)
    assert sp.simplify(A[2, 0] - a_she_mia) == 0
    assert sp.simplify(O.row(2) - o_she) == sp.zeros(1, 2)
    assert [float(x) for x in o_she] == pytest.approx([0.925, 0.925], abs=5e-4)
    # a query of zero scores every key 0: uniform rows
    assert all(A[i, j] == sp.Rational(1, 4) for i in (0, 1, 3) for j in range(4))


def test_three_score_functions_on_the_example():
    rng = np.random.default_rng(0)
    X = np.array([[1, 1, 0, 1], [0, 1, 0, 0], [1, 0, 1, 0], [0.5, 0.5, 0, 0]])
    Wq, Wk, _ = al.example.projections(al.example.PRONOUN)
    # Luong's multiplicative score with M = W_Q W_K^T is the dot-product score (before 1/sqrt(d_k))
    np.testing.assert_allclose(X @ (Wq @ Wk.T) @ X.T, (X @ Wq) @ (X @ Wk).T, atol=1e-12)
    assert np.linalg.matrix_rank(Wq @ Wk.T) <= Wq.shape[1]
    # Bahdanau's additive score is bounded by sum |w| whatever the inputs; a dot product is not
    W1, W2, w = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=3)
    big = 1e3 * X
    additive = np.tanh((big @ W1)[:, None, :] + (big @ W2)[None, :, :]) @ w
    assert np.abs(additive).max() <= np.abs(w).sum()
    assert np.abs((big @ Wq) @ (big @ Wk).T).max() > np.abs(w).sum()


def test_vaswani_table_counts():
    d, k = 512, 3
    attention = lambda T: 4 * T**2 * d            # Q K^T and A V, 2 T^2 d each   # noqa: E731
    recurrent = lambda T: 4 * T * d**2            # h W and x U at each of T steps # noqa: E731
    assert attention(d) == recurrent(d)
    assert attention(d // 2) < recurrent(d // 2) and attention(2 * d) > recurrent(2 * d)
    # a stack of width-k convolutions: receptive field 1 + L (k - 1) must reach T
    for T in (2, 3, 128, 512, 4096):
        layers = int(np.ceil((T - 1) / (k - 1)))
        assert 1 + layers * (k - 1) >= T > 1 + (layers - 1) * (k - 1)
