"""Claims made in chapter 3 (chapters/03_masks.md) beyond the package's own tests.

Each test states one claim of the chapter and checks it against an independent reference:
plain torch/NumPy arithmetic written out here, torch's SDPA and nn.MultiheadAttention, or
the exact expectation of the claim (NaN, a uniform row, chance-level loss).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

import attnlab as al


def _rng(seed=0):
    return np.random.default_rng(seed)


def _qkv(T, S, d_k=3, d_v=2, seed=0):
    r = _rng(seed)
    return r.normal(size=(T, d_k)), r.normal(size=(S, d_k)), r.normal(size=(S, d_v))


# --- fully masked rows ----------------------------------------------------------------------

def test_minus_inf_fill_gives_nan_for_a_fully_masked_row_in_naive_code():
    q, k, v = (torch.from_numpy(a) for a in _qkv(3, 4))
    allowed = torch.ones(3, 4, dtype=torch.bool)
    allowed[1] = False
    scores = q @ k.T / np.sqrt(3)
    w = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    assert torch.isnan(w[1]).all() and torch.isfinite(w[[0, 2]]).all()
    # the same in NumPy with the max-subtraction written out: -inf - (-inf) = nan
    row = np.full(4, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(row - row.max())
    assert np.isnan(e).all()


def test_multiplying_the_nan_row_by_zero_does_not_rescue_the_gradient():
    q = torch.from_numpy(_qkv(3, 4)[0])
    k = torch.from_numpy(_qkv(3, 4)[1]).requires_grad_()
    v = torch.from_numpy(_qkv(3, 4)[2]).requires_grad_()
    allowed = torch.ones(3, 4, dtype=torch.bool)
    allowed[1] = False
    w = torch.softmax((q @ k.T).masked_fill(~allowed, float("-inf")), dim=-1)
    keep = torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64)[:, None]
    ((w @ v) * keep).sum().backward()
    assert torch.isnan(v.grad).all()


def test_minus_1e9_fill_gives_uniform_weights_over_forbidden_keys():
    q, k, v = (torch.from_numpy(a) for a in _qkv(3, 4))
    allowed = torch.ones(3, 4, dtype=torch.bool)
    allowed[1] = False
    w = torch.softmax((q @ k.T / np.sqrt(3)).masked_fill(~allowed, -1e9), dim=-1)
    assert torch.equal(w[1], torch.full((4,), 0.25, dtype=torch.float64))
    torch.testing.assert_close((w @ v)[1], v.mean(dim=0), rtol=0, atol=1e-15)


def test_adding_minus_1e9_float64_keeps_unmasked_softmax_float32_uniform():
    u = torch.tensor([0.3, -1.2, 2.0, 0.5], dtype=torch.float64)
    torch.testing.assert_close(torch.softmax(u - 1e9, -1), torch.softmax(u, -1))
    assert torch.equal(torch.softmax(u.float() - 1e9, -1), torch.full((4,), 0.25))


def test_sdpa_fully_masked_row_current_behaviour():
    """What SDPA returns for a fully masked row is version dependent (older releases gave
    NaN). Observed with torch 2.13 on CPU: a row of zeros, and finite gradients. If this
    test fails after a torch upgrade, update chapter 3's prose expectations accordingly
    (the page itself reports whatever the installed version does)."""
    q = torch.from_numpy(_qkv(3, 4)[0])[None]
    k = torch.from_numpy(_qkv(3, 4)[1])[None].requires_grad_()
    v = torch.from_numpy(_qkv(3, 4)[2])[None].requires_grad_()
    allowed = torch.ones(3, 4, dtype=torch.bool)
    allowed[1] = False
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)[0]
    assert torch.equal(o[1], torch.zeros(2, dtype=torch.float64)), f"torch {torch.__version__}: {o[1]}"
    o.sum().backward()
    assert torch.isfinite(k.grad).all() and torch.isfinite(v.grad).all()


def test_our_rule_error_for_valid_query_zero_output_and_gradient_for_padding_query():
    q, k, v = _qkv(3, 4)
    allowed = np.ones((3, 4), dtype=bool)
    allowed[1] = False
    with pytest.raises(al.EmptyVisibilityError):
        al.attention(q, k, v, allowed=allowed)
    valid = np.array([True, False, True])
    out, w = al.attention(q, k, v, allowed=allowed, query_valid=valid, return_weights=True)
    assert np.all(out[1] == 0) and np.all(w[1] == 0)
    # the other rows are ordinary softmax attention, written out here
    s = q @ k.T / np.sqrt(3)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    ref = (e / e.sum(axis=-1, keepdims=True)) @ v
    np.testing.assert_allclose(out[[0, 2]], ref[[0, 2]], rtol=0, atol=1e-14)
    g = _rng(1).normal(size=out.shape)
    g0 = g.copy()
    g0[1] = 0
    dq, dk, dv = al.grad.attention_backward(q, k, v, g, allowed=allowed, query_valid=valid)
    dq0, dk0, dv0 = al.grad.attention_backward(q, k, v, g0, allowed=allowed, query_valid=valid)
    assert np.all(dq[1] == 0)
    np.testing.assert_array_equal(dk, dk0)
    np.testing.assert_array_equal(dv, dv0)


# --- polarity at the boundary ---------------------------------------------------------------

def _mha_setup():
    torch.manual_seed(0)
    d = 8
    x = torch.randn(2, 5, d, dtype=torch.float64)
    mha = torch.nn.MultiheadAttention(d, 1, bias=False, batch_first=True, dtype=torch.float64)
    keys_real = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]).astype(bool)
    return x, mha, keys_real


def test_key_padding_mask_needs_the_complement():
    x, mha, keys_real = _mha_setup()
    y_ok, _ = mha(x, x, x, key_padding_mask=torch.from_numpy(~keys_real))
    w_q, w_k, w_v = (w.T for w in mha.in_proj_weight.chunk(3))
    # independent reference: SDPA with the same (True = attend) mask, projections by hand
    o = F.scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v,
                                       attn_mask=torch.from_numpy(keys_real)[:, None, :])
    ref = o @ mha.out_proj.weight.T
    torch.testing.assert_close(y_ok, ref, rtol=0, atol=1e-12)
    _, w_wrong = mha(x, x, x, key_padding_mask=torch.from_numpy(keys_real))
    # unconverted: sequence 2 reads only its two padding keys
    assert torch.all(w_wrong[1, :, :3] == 0)
    torch.testing.assert_close(w_wrong[1].sum(-1), torch.ones(5, dtype=torch.float64))


def test_float_01_mask_is_added_not_masked():
    x, mha, keys_real = _mha_setup()
    w_q, w_k, w_v = (w.T for w in mha.in_proj_weight.chunk(3))
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    float_mask = torch.from_numpy(keys_real.astype(np.float64))[:, None, :]
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask)
    w = torch.softmax(q @ k.transpose(-2, -1) / np.sqrt(8) + float_mask, dim=-1)
    torch.testing.assert_close(o, w @ v, rtol=0, atol=1e-12)
    assert float(w[1, :, 3:].sum(-1).min().detach()) > 0.0      # pads keep weight


# --- padding --------------------------------------------------------------------------------

def test_padding_mask_padded_query_still_reads_valid_keys_and_zero_embedding_is_not_a_mask():
    r = _rng(2)
    S = 5
    x = r.normal(size=(2, S, 4))
    w_q, w_k, w_v = (r.normal(size=(4, 4)) for _ in range(3))
    pad = al.masks.padding(np.array([5, 3]), S)
    out, A = al.attention(x @ w_q, x @ w_k, x @ w_v, allowed=pad, return_weights=True)
    xa = x[1, :3]
    alone = al.attention(xa @ w_q, xa @ w_k, xa @ w_v)
    np.testing.assert_allclose(out[1, :3], alone, rtol=0, atol=1e-14)
    # padded queries (rows 3, 4) read the valid keys: full rows of weight, nonzero output
    np.testing.assert_allclose(A[1, 3:, :3].sum(-1), 1.0, rtol=0, atol=1e-14)
    assert np.all(np.abs(out[1, 3:]).max(axis=-1) > 0)
    # zero embeddings and no mask: keys are 0, score 0, exp(0) = 1 > 0
    xz = x.copy()
    xz[1, 3:] = 0
    out_z, A_z = al.attention(xz @ w_q, xz @ w_k, xz @ w_v, return_weights=True)
    assert np.all(A_z[1, :3, 3:] > 0)
    assert np.abs(out_z[1, :3] - alone).max() > 1e-2


def test_left_padding_creates_empty_rows_that_need_query_valid():
    T = 5
    real = np.arange(T)[None, :] >= (T - np.array([5, 3]))[:, None]
    allowed = al.masks.causal(T) & real[:, None, :]
    assert not allowed[1, 0].any() and not allowed[1, 1].any()
    r = _rng(3)
    x = r.normal(size=(2, T, 4))
    w_q, w_k, w_v = (r.normal(size=(4, 4)) for _ in range(3))
    with pytest.raises(al.EmptyVisibilityError):
        al.attention(x @ w_q, x @ w_k, x @ w_v, allowed=allowed)
    out = al.attention(x @ w_q, x @ w_k, x @ w_v, allowed=allowed, query_valid=real)
    assert np.all(out[1, :2] == 0)
    xa = x[1, 2:]
    np.testing.assert_allclose(out[1, 2:], al.attention(xa @ w_q, xa @ w_k, xa @ w_v,
                                                        allowed=al.masks.causal(3)),
                               rtol=0, atol=1e-14)
    # right padding under the same causal mask leaves no row empty
    right = al.masks.causal(T) & (np.arange(T) < 3)[None, :]
    assert right.any(axis=-1).all()


# --- causal masks and shifted targets -------------------------------------------------------

def _copy_model_accuracy(shift, vocab=16, T=12, n=256, seed=0):
    """A hand-built causal attention 'model' that copies its own token: one-hot embeddings,
    Q = K = 20 * one-hot (a query matches keys of the same token), V = one-hot, readout =
    argmax. Under the causal mask j <= i, so position i always sees its own token."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab, (n, T + 1), generator=g)
    inputs = tokens[:, :-1]
    targets = tokens[:, 1:] if shift else tokens[:, :-1]
    onehot = F.one_hot(inputs, vocab).double()
    o = F.scaled_dot_product_attention(20 * onehot, 20 * onehot, onehot, is_causal=True)
    return float((o.argmax(-1) == targets).double().mean())


def test_unshifted_target_leaks_through_the_causal_diagonal():
    assert _copy_model_accuracy(shift=False) == 1.0       # perfect on i.i.d. random tokens
    acc = _copy_model_accuracy(shift=True)
    assert abs(acc - 1 / 16) < 0.03                       # chance level when shifted


def test_trained_model_learns_the_leak_but_not_the_shifted_task():
    torch.set_num_threads(1)
    vocab, T, d = 16, 12, 32

    def train(shift, steps=150, seed=0):
        gen = torch.Generator().manual_seed(seed)
        torch.manual_seed(seed)
        emb = torch.nn.Embedding(vocab, d)
        lin = [torch.nn.Linear(d, d, bias=False) for _ in range(3)]
        out = torch.nn.Linear(d, vocab)
        params = [p for m in [emb, *lin, out] for p in m.parameters()]
        opt = torch.optim.Adam(params, lr=1e-2)

        def loss_of(tokens):
            h = emb(tokens[:, :-1])
            tgt = tokens[:, 1:] if shift else tokens[:, :-1]
            o = F.scaled_dot_product_attention(lin[0](h), lin[1](h), lin[2](h), is_causal=True)
            return F.cross_entropy(out(o).reshape(-1, vocab), tgt.reshape(-1))

        for _ in range(steps):
            loss = loss_of(torch.randint(0, vocab, (64, T + 1), generator=gen))
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            return float(loss_of(torch.randint(0, vocab, (512, T + 1), generator=gen)))

    assert train(shift=False) < 0.05
    assert abs(train(shift=True) - np.log(vocab)) < 0.05


# --- combining constraints ------------------------------------------------------------------

def test_additive_masks_add_as_allowed_sets_intersect():
    causal = al.masks.causal(5)
    pad = al.masks.padding(np.array([5, 3]), 5)
    assert np.array_equal(al.masks.to_additive(causal) + al.masks.to_additive(pad),
                          al.masks.to_additive(causal & pad))


def test_packed_documents_equal_separate_documents():
    doc_ids = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    T = len(doc_ids)
    r = _rng(4)
    x = r.normal(size=(T, 4))
    w_q, w_k, w_v = (r.normal(size=(4, 4)) for _ in range(3))
    packed = al.attention(x @ w_q, x @ w_k, x @ w_v,
                          allowed=al.masks.documents(doc_ids) & al.masks.causal(T))
    for d in range(3):
        xd = x[doc_ids == d]
        alone = al.attention(xd @ w_q, xd @ w_k, xd @ w_v, allowed=al.masks.causal(len(xd)))
        np.testing.assert_allclose(packed[doc_ids == d], alone, rtol=0, atol=1e-14)


def test_sliding_window_reads_at_most_w_keys():
    T, w = 8, 3
    m = al.masks.sliding_window(T, w)
    i, j = np.indices((T, T))
    assert np.array_equal(m, (j <= i) & (j > i - w))
    assert m.sum(-1).max() == w


# --- cached decoding: exercise 5.6 ----------------------------------------------------------

def test_exercise_5_6_one_query_at_absolute_position_8():
    correct = al.masks.causal(1, 9)
    top_left = np.tril(np.ones((1, 9), dtype=bool))
    assert correct.all() and correct.shape == (1, 9)
    assert top_left.sum() == 1 and top_left[0, 0]
    r = _rng(5)
    x = r.normal(size=(9, 4))
    w_q, w_k, w_v = (r.normal(size=(4, 4)) for _ in range(3))
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    full = al.attention(q, k, v, allowed=al.masks.causal(9))
    np.testing.assert_allclose(al.attention(q[-1:], k, v, allowed=correct)[0], full[-1],
                               rtol=0, atol=1e-14)
    np.testing.assert_array_equal(al.attention(q[-1:], k, v, allowed=top_left)[0], v[0])
    t = torch.from_numpy
    # SDPA's is_causal=True is top-left aligned when T != S; causal_lower_right is not
    top = F.scaled_dot_product_attention(t(q[-1:]), t(k), t(v), is_causal=True)
    np.testing.assert_allclose(top.numpy()[0], v[0], rtol=0, atol=1e-14)
    lower = F.scaled_dot_product_attention(t(q[-1:]), t(k), t(v), attn_mask=causal_lower_right(1, 9))
    np.testing.assert_allclose(lower.numpy()[0], full[-1], rtol=0, atol=1e-14)
    # a chunk of three new queries needs the bottom-right triangle, not "no mask"
    np.testing.assert_allclose(al.attention(q[-3:], k, v, allowed=al.masks.causal(3, 9)),
                               full[-3:], rtol=0, atol=1e-14)
    assert np.abs(al.attention(q[-3:], k, v) - full[-3:]).max() > 1e-3


# --- mask after softmax ---------------------------------------------------------------------

def test_mask_after_softmax_row_sums_below_one_and_future_leak():
    q, k, v = _qkv(4, 4, seed=6)
    causal = al.masks.causal(4)

    def after(k_):
        s = q @ k_.T / np.sqrt(3)
        e = np.exp(s - s.max(-1, keepdims=True))
        a = np.where(causal, e / e.sum(-1, keepdims=True), 0.0)
        return a @ v, a

    out, a = after(k)
    sums = a.sum(-1)
    assert np.all(sums[:-1] < 1) and np.isclose(sums[-1], 1.0)
    k2 = k.copy()
    k2[3] += 1.0
    out2, _ = after(k2)
    assert np.abs(out2[0] - out[0]).max() > 1e-6                  # leak via the denominator
    ok, ok2 = al.attention(q, k, v, allowed=causal), al.attention(q, k2, v, allowed=causal)
    np.testing.assert_array_equal(ok[:3], ok2[:3])


def test_renormalising_after_softmax_fails_when_a_forbidden_score_dominates():
    u = np.array([0.0, 800.0])
    e = np.exp(u - u.max())
    a = e / e.sum() * np.array([1.0, 0.0])
    with np.errstate(invalid="ignore"):
        assert np.isnan(a / a.sum()).all()
    _, w = al.attention(np.array([[1.0]]), u[:, None], np.eye(2), scale=1.0,
                        allowed=np.array([[True, False]]), return_weights=True)
    np.testing.assert_array_equal(w[0], [1.0, 0.0])
