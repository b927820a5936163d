"""NumPy reference attention against torch SDPA, nn.MultiheadAttention and its own invariants."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attnlab as al

rng = np.random.default_rng(0)


def sdpa(q, k, v, allowed=None, scale=None):
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a))
    mask = None if allowed is None else t(np.asarray(allowed))
    return F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=mask, scale=scale).numpy()


def test_softmax_matches_torch_and_is_stable():
    x = rng.normal(size=(3, 4, 7)) * 50
    np.testing.assert_allclose(al.softmax(x), torch.softmax(torch.from_numpy(x), -1).numpy(), atol=1e-15)
    np.testing.assert_allclose(al.softmax(x, axis=0), torch.softmax(torch.from_numpy(x), 0).numpy(), atol=1e-15)
    big = np.array([1000.0, 1001.0, 999.0])
    out = al.softmax(big)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, al.softmax(big - 1000), rtol=1e-15)


@pytest.mark.parametrize("T,S,dk,dv", [(1, 1, 1, 1), (4, 4, 8, 8), (3, 7, 5, 2), (6, 2, 4, 9)])
def test_attention_matches_sdpa(T, S, dk, dv):
    q, k, v = rng.normal(size=(2, 3, T, dk)), rng.normal(size=(2, 3, S, dk)), rng.normal(size=(2, 3, S, dv))
    np.testing.assert_allclose(al.attention(q, k, v), sdpa(q, k, v), atol=1e-12)
    allowed = al.masks.causal(T, S) if T <= S else al.masks.causal(T, S, offset=0) | (np.arange(S) == 0)
    np.testing.assert_allclose(al.attention(q, k, v, allowed=allowed), sdpa(q, k, v, allowed), atol=1e-12)
    np.testing.assert_allclose(al.attention(q, k, v, scale=0.3), sdpa(q, k, v, scale=0.3), atol=1e-12)


def test_weights_rows_sum_to_one_and_forbidden_are_exactly_zero():
    q, k, v = rng.normal(size=(5, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    allowed = al.masks.sliding_window(5, 2)
    _, w = al.attention(q, k, v, allowed=allowed, return_weights=True)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-15)
    assert (w[~allowed] == 0.0).all()
    assert (w[allowed] > 0).all()


def test_broadcast_batch_axes_match_loop():
    q, k, v = rng.normal(size=(2, 1, 3, 4)), rng.normal(size=(1, 5, 6, 4)), rng.normal(size=(1, 5, 6, 2))
    out = al.attention(q, k, v)
    assert out.shape == (2, 5, 3, 2)
    for b in range(2):
        for h in range(5):
            np.testing.assert_allclose(out[b, h], al.attention(q[b, 0], k[0, h], v[0, h]), atol=1e-14)


def test_padding_queries_get_zero_output_and_weights():
    q, k, v = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 5))
    lengths = np.array([4, 2])
    allowed = al.masks.padding(lengths, 4)                 # (B, 1, S)
    valid = np.arange(4)[None, :] < lengths[:, None]        # (B, T)
    out, w = al.attention(q, k, v, allowed=allowed, query_valid=valid, return_weights=True)
    assert (out[1, 2:] == 0).all() and (w[1, 2:] == 0).all()
    np.testing.assert_allclose(out[1, :2], al.attention(q[1, :2], k[1, :2], v[1, :2]), atol=1e-14)
    np.testing.assert_allclose(out[0], al.attention(q[0], k[0], v[0]), atol=1e-14)


def test_fully_masked_padding_row_is_zero_not_nan():
    q = k = v = rng.normal(size=(3, 2))
    allowed = np.array([[True, False, False], [True, True, False], [False, False, False]])
    out = al.attention(q, k, v, allowed=allowed, query_valid=np.array([True, True, False]))
    assert np.isfinite(out).all() and (out[2] == 0).all()


def test_valid_query_with_no_key_raises():
    q = k = v = rng.normal(size=(3, 2))
    allowed = np.array([[True, False, False], [False, False, False], [True, True, True]])
    with pytest.raises(al.EmptyVisibilityError, match=r"index \(1,\).*valid but may read no key"):
        al.attention(q, k, v, allowed=allowed)


def test_causal_attention_has_no_future_leakage():
    x = rng.normal(size=(6, 4))
    allowed = al.masks.causal(6)
    base = al.attention(x, x, x, allowed=allowed)
    x2 = x.copy()
    x2[4:] = rng.normal(size=(2, 4)) * 10
    changed = al.attention(x2, x2, x2, allowed=allowed)
    assert np.array_equal(base[:4], changed[:4])           # bit-identical past
    assert not np.allclose(base[4:], changed[4:])


def test_permutation_equivariance_without_mask():
    x = rng.normal(size=(7, 4))
    perm = rng.permutation(7)
    np.testing.assert_allclose(al.attention(x[perm], x[perm], x[perm]), al.attention(x, x, x)[perm], atol=1e-14)


def test_multi_head_matches_nn_multihead_attention_with_padding():
    torch.manual_seed(0)
    d, H, B, T = 12, 3, 2, 5
    m = torch.nn.MultiheadAttention(d, H, bias=False, batch_first=True, dtype=torch.float64)
    x = torch.randn(B, T, d, dtype=torch.float64)
    lengths = np.array([5, 3])
    kpm = torch.from_numpy(~al.masks.padding(lengths, T)[:, 0, :])    # True = masked (nn.MHA polarity)
    y, w = m(x, x, x, key_padding_mask=kpm, average_attn_weights=False)
    wq, wk, wv = (t.detach().numpy().T for t in m.in_proj_weight.chunk(3))
    ref, ref_w = al.multi_head_attention(x.numpy(), x.numpy(), wq, wk, wv, m.out_proj.weight.detach().numpy().T,
                                         n_heads=H, allowed=al.masks.padding(lengths, T), return_weights=True)
    np.testing.assert_allclose(ref, y.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(ref_w, w.detach().numpy(), atol=1e-12)


@pytest.mark.parametrize("H,H_kv", [(4, 4), (4, 2), (4, 1), (6, 3)])
def test_gqa_matches_sdpa_enable_gqa(H, H_kv):
    B, T, d_k, d = 2, 5, 3, 7
    x = rng.normal(size=(B, T, d))
    wq, wk, wv = rng.normal(size=(d, H * d_k)), rng.normal(size=(d, H_kv * d_k)), rng.normal(size=(d, H_kv * d_k))
    wo = np.eye(H * d_k)
    out = al.multi_head_attention(x, x, wq, wk, wv, wo, n_heads=H, n_kv_heads=H_kv, allowed=al.masks.causal(T))
    split = lambda a, h: torch.from_numpy(a.reshape(B, T, h, d_k)).transpose(1, 2)     # (B, h, T, d_k)
    o = F.scaled_dot_product_attention(split(x @ wq, H), split(x @ wk, H_kv), split(x @ wv, H_kv),
                                       is_causal=True, enable_gqa=True)            # (B, H, T, d_k)
    np.testing.assert_allclose(out, o.transpose(1, 2).reshape(B, T, H * d_k).numpy(), atol=1e-12)


def test_kv_head_for_is_floor_division():
    assert [al.kv_head_for(h, 8, 2) for h in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [al.kv_head_for(h, 4, 4) for h in range(4)] == [0, 1, 2, 3]
    assert {al.kv_head_for(h, 6, 1) for h in range(6)} == {0}


def test_scaled_dot_product_is_the_three_lines_of_chapter_1():
    """The unchecked maths against SDPA, and the public function returns exactly what it computes."""
    from attnlab.reference import scaled_dot_product

    q, k, v = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 6, 3)), rng.normal(size=(2, 6, 5))
    out, w = scaled_dot_product(q, k, v, scale=1 / np.sqrt(3))
    np.testing.assert_allclose(out, sdpa(q, k, v), atol=1e-12)
    np.testing.assert_allclose(w, torch.softmax(torch.from_numpy(q @ k.transpose(0, 2, 1) / np.sqrt(3)), -1).numpy(),
                               atol=1e-15)
    allowed = al.masks.causal(4, 6)
    out_m, w_m = scaled_dot_product(q, k, v, 0.5, allowed=allowed)
    np.testing.assert_allclose(out_m, sdpa(q, k, v, allowed, scale=0.5), atol=1e-12)
    pub_out, pub_w = al.attention(q, k, v, allowed=allowed, scale=0.5, return_weights=True)
    np.testing.assert_array_equal(pub_out, out_m)
    np.testing.assert_array_equal(pub_w, w_m)


def test_weights_broadcast_when_only_v_has_a_batch_axis():
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(6, 3)), rng.normal(size=(2, 6, 5))
    out, w = al.attention(q, k, v, return_weights=True)
    assert out.shape == (2, 4, 5) and w.shape == (2, 4, 6)
    w.flags.writeable = True                       # a real array, not a read-only view
    np.testing.assert_allclose(out, sdpa(np.broadcast_to(q, (2, 4, 3)), np.broadcast_to(k, (2, 6, 3)), v),
                               atol=1e-12)


def test_multi_head_maths_matches_the_public_function_and_torch():
    """reference.multi_head (no checks) and the validated multi_head_attention agree with nn.MultiheadAttention."""
    from attnlab.reference import merge_heads, multi_head, split_heads

    d, H, T = 8, 2, 5
    mha = torch.nn.MultiheadAttention(d, H, bias=False, batch_first=True, dtype=torch.float64)
    x = torch.randn(1, T, d, dtype=torch.float64)
    want, _ = mha(x, x, x, need_weights=False)
    w_q, w_k, w_v = (w.T.detach().numpy() for w in mha.in_proj_weight.chunk(3))
    w_o = mha.out_proj.weight.T.detach().numpy()
    xn = x[0].numpy()
    y, w = multi_head(xn, xn, w_q, w_k, w_v, w_o, H, H)
    np.testing.assert_allclose(y, want[0].detach().numpy(), atol=1e-12)
    y_pub, w_pub = al.multi_head_attention(xn, xn, w_q, w_k, w_v, w_o, n_heads=H, return_weights=True)
    np.testing.assert_array_equal(y_pub, y)
    np.testing.assert_array_equal(w_pub, w)
    z = rng.normal(size=(3, T, H * 4))
    assert split_heads(z, H).shape == (3, H, T, 4)
    np.testing.assert_array_equal(split_heads(z, H)[:, 1], z[..., 4:])    # head 1 = second column block
    np.testing.assert_array_equal(merge_heads(split_heads(z, H)), z)


def test_overflowing_scores_still_raise_after_the_split():
    q = np.full((2, 3), 1e20, dtype=np.float32)
    with pytest.raises(al.AttentionInputError, match="overflowed"):
        al.attention(q, q, q)
    with pytest.raises(al.AttentionInputError, match="overflowed"):
        al.multi_head_attention(q, q, np.eye(3, dtype=np.float32), np.eye(3, dtype=np.float32),
                                np.eye(3, dtype=np.float32), np.eye(3, dtype=np.float32), n_heads=1)
