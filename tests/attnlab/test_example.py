"""The running example against hand computations (SymPy, written out here) and the references."""
import numpy as np
import pytest
import sympy as sp
import torch
import torch.nn.functional as F

import attnlab as al
from attnlab import example as ex
from attnlab.exact import to_float

half = sp.Rational(1, 2)
E = sp.exp(2 * sp.sqrt(2))          # e^(q_she . k_Mia / sqrt 2) = e^(4 / sqrt 2)


def test_tokens_and_shapes():
    assert ex.tokens == ("Mia", "said", "she", "won")
    assert ex.X.shape == (ex.T, ex.d_model) == (4, 4)
    assert ex.W_Q.shape == ex.W_K.shape == ex.W_V.shape == (4, ex.n_heads * ex.d_k)
    assert ex.W_O.shape == (ex.n_heads * ex.d_v, ex.d_model)
    with pytest.raises(ValueError):
        ex.X[0, 0] = 5.0                                  # shared by every chapter: read-only


def test_similarity_head_is_the_source_example():
    # chapter 4's "Four tokens with d_k = 2": Q = K = X_source, V given, as printed in the source
    X_source = sp.Matrix([[1, 1], [0, 1], [1, 0], [half, half]])
    V_source = sp.Matrix([[1, 0], [0, 1], [1, 1], [half, half]])
    Q, K, V = ex.qkv(ex.SIMILARITY, exact=True)
    assert Q == X_source and K == X_source and V == V_source
    # the source's table of scaled scores (two decimals) and its row 0 of weights
    printed = np.array([[1.41, 0.71, 0.71, 0.71], [0.71, 0.71, 0.00, 0.35],
                        [0.71, 0.00, 0.71, 0.35], [0.71, 0.35, 0.35, 0.35]])
    assert np.array_equal(np.round(ex.scores(ex.SIMILARITY), 2), printed)
    O, A = ex.attention(ex.SIMILARITY)
    assert np.array_equal(np.round(A[0], 2), [0.40, 0.20, 0.20, 0.20])
    assert np.array_equal(np.round(O[0], 2), [0.70, 0.50])


def test_projections_by_hand():
    # X @ W written out feature by feature: head 1's query is 2 * pronoun, its key 2 * name
    for i in range(4):
        a, b, pronoun, name = ex.X_exact.row(i)
        Q, K, V = (M.row(i) for M in ex.qkv(ex.PRONOUN, exact=True))
        assert list(Q) == [2 * pronoun, 0] and list(K) == [2 * name, 0] and list(V) == [a, b]
        Q0, K0, V0 = (M.row(i) for M in ex.qkv(ex.SIMILARITY, exact=True))
        assert list(Q0) == list(K0) == [a, b] and list(V0) == [a, b + pronoun - name]
    assert ex.projections("pronoun", exact=True) == ex.projections(1, exact=True)


def test_pronoun_head_weights_in_closed_form():
    # the only non-zero score is q_she . k_Mia = 2 * 2 = 4, scaled to 4 / sqrt 2 = 2 sqrt 2
    S = ex.scores(ex.PRONOUN, exact=True)
    expected = sp.zeros(4, 4)
    expected[2, 0] = 2 * sp.sqrt(2)
    assert sp.simplify(S - expected) == sp.zeros(4, 4)
    O, A = ex.attention(ex.PRONOUN, exact=True)
    quarter = sp.Rational(1, 4)
    by_hand = sp.Matrix([[quarter] * 4, [quarter] * 4, [E / (E + 3), 1 / (E + 3), 1 / (E + 3), 1 / (E + 3)],
                         [quarter] * 4])
    assert sp.simplify(A - by_hand) == sp.zeros(4, 4)
    # she's output: E/(E+3) (1, 1) + 1/(E+3) ((0, 1) + (1, 0) + (1/2, 1/2)) = (E + 3/2)/(E + 3) (1, 1)
    o_she = (E + sp.Rational(3, 2)) / (E + 3)
    assert sp.simplify(O.row(2) - sp.Matrix([[o_she, o_she]])) == sp.zeros(1, 2)
    assert to_float(A)[2, 0] == pytest.approx(0.8494, abs=1e-4)       # the clear preference


@pytest.mark.parametrize("head", [0, 1])
@pytest.mark.parametrize("causal", [False, True])
def test_float_path_agrees_with_exact_and_sdpa(head, causal):
    O, A = ex.attention(head, causal=causal)
    Oe, Ae = ex.attention(head, causal=causal, exact=True)
    np.testing.assert_allclose(A, to_float(Ae), atol=1e-15)
    np.testing.assert_allclose(O, to_float(Oe), atol=1e-15)
    q, k, v = (torch.tensor(M) for M in ex.qkv(head))
    sdpa = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    np.testing.assert_allclose(O, sdpa.numpy(), atol=1e-14)


def test_causal_rows_by_hand():
    _O, A = ex.attention(ex.PRONOUN, causal=True, exact=True)
    assert list(A.row(0)) == [1, 0, 0, 0]
    assert list(A.row(1)) == [half, half, 0, 0]
    assert sp.simplify(A[2, 0] - E / (E + 2)) == 0 and A[2, 3] == 0


def test_padded_batch():
    b = ex.padded_batch()
    assert b.X.shape == (2, 4, 4) and list(b.lengths) == [4, 2]
    assert b.tokens[1] == ("she", "won", ex.PAD, ex.PAD)
    np.testing.assert_array_equal(b.X[1, :2], ex.X[2:])
    np.testing.assert_array_equal(b.X[1, 2:], 0)
    np.testing.assert_array_equal(b.allowed[:, 0], [[1, 1, 1, 1], [1, 1, 0, 0]])
    wq, wk, wv = ex.projections(ex.PRONOUN)
    O, A = al.attention(b.X @ wq, b.X @ wk, b.X @ wv, allowed=b.allowed, query_valid=b.query_valid,
                        return_weights=True)
    # "she" finds no name in "she won": a zero query spreads its weight over the two real keys
    np.testing.assert_allclose(A[1, :2], [[0.5, 0.5, 0, 0]] * 2)
    np.testing.assert_array_equal(A[1, 2:], 0)
    np.testing.assert_allclose(A[0], ex.attention(ex.PRONOUN)[1])
    exact = ex.padded_batch(exact=True)
    assert exact.X[1].shape == (4, 4) and exact.X[1][:2, :] == ex.X_exact[2:, :]


def test_layer_matches_heads_and_torch():
    Y, A = ex.layer(causal=True)
    per_head = [ex.attention(h, causal=True) for h in range(ex.n_heads)]
    np.testing.assert_allclose(Y, np.hstack([O for O, _A in per_head]) @ ex.W_O, atol=1e-15)
    for h, (_O, Ah) in enumerate(per_head):
        np.testing.assert_allclose(A[h], Ah, atol=1e-15)
    Ye, _Ae = ex.layer(causal=True, exact=True)
    np.testing.assert_allclose(Y, to_float(Ye), atol=1e-15)
    mha = torch.nn.MultiheadAttention(ex.d_model, ex.n_heads, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():           # nn.Linear stores (out, in): transposes of the book's x @ W
        mha.in_proj_weight.copy_(torch.tensor(np.vstack([ex.W_Q.T, ex.W_K.T, ex.W_V.T])))
        mha.out_proj.weight.copy_(torch.tensor(ex.W_O.T))
    x = torch.tensor(ex.X)[None]
    y, _w = mha(x, x, x, attn_mask=~torch.tensor(ex.causal_allowed()))   # True = masked there
    np.testing.assert_allclose(Y, y[0].detach().numpy(), atol=1e-14)


def test_gradient_of_the_loss():
    dO = ex.upstream_gradient()
    assert dO.sum() == 1 and dO[ex.LOSS_TOKEN, 0] == 1
    Q, K, V = (torch.tensor(M, requires_grad=True) for M in ex.qkv(ex.PRONOUN))
    O = F.scaled_dot_product_attention(Q, K, V)
    ex.loss(O).backward()
    dq, dk, dv = al.grad.attention_backward(*ex.qkv(ex.PRONOUN), dO)
    np.testing.assert_allclose(dq, Q.grad.numpy(), atol=1e-14)
    np.testing.assert_allclose(dk, K.grad.numpy(), atol=1e-14)
    np.testing.assert_allclose(dv, V.grad.numpy(), atol=1e-14)
    # by hand: dV = A^T dO has she's weights in column 0; dQ only in she's row
    _O, A = ex.attention(ex.PRONOUN)
    np.testing.assert_allclose(dv[:, 0], A[ex.LOSS_TOKEN])
    assert np.count_nonzero(dq[[0, 1, 3]]) == 0


@pytest.mark.parametrize("head", [0, 1])
def test_decoding_reproduces_causal_attention(head):
    O, A = ex.attention(head, causal=True)
    Q, K, V = ex.qkv(head)
    for step in ex.decode(head):
        t = step.t
        assert step.token == ex.tokens[t] and step.K_cache.shape == (t + 1, ex.d_k)
        np.testing.assert_array_equal(step.K_cache[-1], K[t])
        np.testing.assert_array_equal(step.q, Q[t])
        np.testing.assert_allclose(step.weights, A[t, :t + 1], atol=1e-15)
        np.testing.assert_allclose(step.output, O[t], atol=1e-15)
    exact = ex.decode(head, exact=True)
    _Oe, Ae = ex.attention(head, causal=True, exact=True)
    assert sp.simplify(exact[2].weights - Ae[2, :3]) == sp.zeros(1, 3)


def test_words_are_the_tokens_in_every_language():
    """The running example's tokens are data: both editions label them in English."""
    assert ex.words() == ex.tokens == ("Mia", "said", "she", "won")
    al.set_language("zh_CN")
    try:
        assert ex.words() == ex.tokens
    finally:
        al.set_language("en")


def test_bad_head_is_refused():
    with pytest.raises(ValueError, match="head"):
        ex.qkv(2)
    with pytest.raises(ValueError, match="head"):
        ex.attention("the first")
