"""Chapter 6's equivalences: MHA block form, MQA/GQA end points and head map, GQA backward, nn.MultiheadAttention."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import attnlab as al
from attnlab.torch_ops import MultiHeadAttention

f64 = torch.float64


def random_weights(r, d_q, d_m, H, H_kv, d_k, d_out):
    return (r.normal(size=(d_q, H * d_k)) / np.sqrt(d_q), r.normal(size=(d_m, H_kv * d_k)) / np.sqrt(d_m),
            r.normal(size=(d_m, H_kv * d_k)) / np.sqrt(d_m), r.normal(size=(H * d_k, d_out)) / np.sqrt(H * d_k))


def per_head_loop(x_q, x_m, w_q, w_k, w_v, w_o, H, H_kv, allowed=None):
    """MHA/GQA written as an explicit loop over query heads (eq. gqa), NumPy."""
    d_k = w_q.shape[1] // H
    r = H // H_kv
    outs = []
    for h in range(H):
        g = h // r
        q = x_q @ w_q[:, h * d_k:(h + 1) * d_k]
        k = x_m @ w_k[:, g * d_k:(g + 1) * d_k]
        v = x_m @ w_v[:, g * d_k:(g + 1) * d_k]
        outs.append(al.attention(q, k, v, allowed=allowed))
    return outs


@settings(max_examples=30, deadline=None)
@given(H_kv=st.sampled_from([1, 2, 3]), r=st.sampled_from([1, 2, 3]), d_k=st.integers(1, 3),
       T=st.integers(1, 5), S=st.integers(1, 5), seed=st.integers(0, 10 ** 6))
def test_block_form_and_gqa_equal_the_per_head_loop(H_kv, r, d_k, T, S, seed):
    rng = np.random.default_rng(seed)
    H = H_kv * r
    x_q, x_m = rng.normal(size=(T, 5)), rng.normal(size=(S, 4))
    w_q, w_k, w_v, w_o = random_weights(rng, 5, 4, H, H_kv, d_k, 3)
    heads = per_head_loop(x_q, x_m, w_q, w_k, w_v, w_o, H, H_kv)
    y = al.multi_head_attention(x_q, x_m, w_q, w_k, w_v, w_o, n_heads=H, n_kv_heads=H_kv)
    blocks = [w_o[h * d_k:(h + 1) * d_k] for h in range(H)]
    np.testing.assert_allclose(y, sum(o @ b for o, b in zip(heads, blocks)), atol=1e-12)   # Y = sum_h O^(h) W_O^(h)
    np.testing.assert_allclose(y, np.concatenate(heads, axis=1) @ w_o, atol=1e-12)


def test_n_kv_heads_equal_to_n_heads_is_mha_and_one_is_mqa():
    rng = np.random.default_rng(0)
    T, d, H, d_k = 5, 12, 4, 3
    x = rng.normal(size=(T, d))
    w_q, w_k, w_v, w_o = random_weights(rng, d, d, H, H, d_k, d)
    mha = al.multi_head_attention(x, x, w_q, w_k, w_v, w_o, n_heads=H)
    np.testing.assert_array_equal(mha, al.multi_head_attention(x, x, w_q, w_k, w_v, w_o, n_heads=H, n_kv_heads=H))
    # MQA: every head reads the single K, V
    w_k1, w_v1 = w_k[:, :d_k], w_v[:, :d_k]
    K, V = x @ w_k1, x @ w_v1
    heads = [al.attention(x @ w_q[:, h * d_k:(h + 1) * d_k], K, V) for h in range(H)]
    mqa = al.multi_head_attention(x, x, w_q, w_k1, w_v1, w_o, n_heads=H, n_kv_heads=1)
    np.testing.assert_allclose(mqa, np.concatenate(heads, 1) @ w_o, atol=1e-12)
    assert not np.allclose(heads[0], heads[1])          # shared K, V; different outputs


def test_torch_module_end_points():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 16, dtype=f64)
    full = MultiHeadAttention(16, 4, n_kv_heads=4).double()
    plain = MultiHeadAttention(16, 4).double()
    plain.load_state_dict(full.state_dict())
    assert torch.allclose(full(x)[0], plain(x)[0], atol=1e-14)
    mqa = MultiHeadAttention(16, 4, n_kv_heads=1).double()
    assert mqa.w_k.out_features == mqa.w_v.out_features == 4       # one head of width d_k = 4


def test_kv_head_for_is_floor_h_over_r_and_matches_repeat_interleave():
    for H, H_kv in [(8, 8), (8, 4), (8, 2), (8, 1), (6, 3), (12, 4)]:
        r = H // H_kv
        g = [al.kv_head_for(h, H, H_kv) for h in range(H)]
        assert g == [h // r for h in range(H)]
        assert g == torch.arange(H_kv).repeat_interleave(r).tolist() == np.repeat(np.arange(H_kv), r).tolist()
        if 1 < H_kv < H:
            assert g != torch.arange(H_kv).repeat(r).tolist()


@settings(max_examples=25, deadline=None)
@given(H_kv=st.sampled_from([1, 2, 3]), r=st.sampled_from([1, 2, 4]), T=st.integers(1, 5), S=st.integers(1, 5),
       causal=st.booleans(), seed=st.integers(0, 10 ** 6))
def test_gqa_matches_sdpa_enable_gqa(H_kv, r, T, S, causal, seed):
    g = torch.Generator().manual_seed(seed)
    H, d_k = H_kv * r, 3
    q = torch.randn(2, H, T, d_k, generator=g, dtype=f64)
    k = torch.randn(2, H_kv, S, d_k, generator=g, dtype=f64)
    v = torch.randn(2, H_kv, S, 2, generator=g, dtype=f64)
    allowed = al.masks.causal(T, S, offset=0) if causal else None     # query i sees keys 0..i
    mask = None if allowed is None else torch.from_numpy(allowed)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    # NumPy reference with a group axis: K, V of shape (B, H_kv, 1, S, d) broadcast over r query heads
    ours = al.attention(q.numpy().reshape(2, H_kv, r, T, d_k), k.numpy()[:, :, None], v.numpy()[:, :, None],
                        allowed=allowed).reshape(2, H, T, 2)
    np.testing.assert_allclose(ours, ref.numpy(), atol=1e-12)
    right = F.scaled_dot_product_attention(q, k.repeat_interleave(r, 1), v.repeat_interleave(r, 1), attn_mask=mask)
    assert torch.allclose(right, ref, atol=1e-12)


def test_repeat_instead_of_repeat_interleave_silently_mixes_groups():
    torch.manual_seed(1)
    H, H_kv, r = 6, 2, 3
    q = torch.randn(1, H, 4, 3, dtype=f64)
    k, v = torch.randn(1, H_kv, 5, 3, dtype=f64), torch.randn(1, H_kv, 5, 3, dtype=f64)
    ref = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    wrong = F.scaled_dot_product_attention(q, k.repeat(1, r, 1, 1), v.repeat(1, r, 1, 1))
    assert wrong.shape == ref.shape
    assert (wrong - ref).abs().max() > 0.1
    # head 0 is right by accident (0 // 3 == 0 % 2), head 1 is not
    assert torch.allclose(wrong[:, 0], ref[:, 0]) and not torch.allclose(wrong[:, 1], ref[:, 1])


def test_torch_module_gqa_equals_sdpa_enable_gqa():
    torch.manual_seed(2)
    B, T, d, H, H_kv = 2, 5, 24, 6, 2
    m = MultiHeadAttention(d, H, n_kv_heads=H_kv).double()
    x = torch.randn(B, T, d, dtype=f64)
    split = lambda t, n: t.view(B, T, n, d // H).transpose(1, 2)
    o = F.scaled_dot_product_attention(split(m.w_q(x), H), split(m.w_k(x), H_kv), split(m.w_v(x), H_kv),
                                       enable_gqa=True)
    ref = m.w_o(o.transpose(1, 2).reshape(B, T, d))
    assert torch.allclose(m(x)[0], ref, atol=1e-12)


def test_gqa_backward_sums_dk_dv_over_the_group():
    torch.manual_seed(3)
    B, H, H_kv, T, d_k = 2, 6, 2, 5, 4
    r = H // H_kv
    q = torch.randn(B, H, T, d_k, dtype=f64, requires_grad=True)
    k = torch.randn(B, H_kv, T, d_k, dtype=f64, requires_grad=True)
    v = torch.randn(B, H_kv, T, d_k, dtype=f64, requires_grad=True)
    G = torch.randn(B, H, T, d_k, dtype=f64)
    (F.scaled_dot_product_attention(q, k, v, enable_gqa=True) * G).sum().backward()

    # per-query-head gradients from an expanded copy, then summed over each group
    k_rep = k.detach().repeat_interleave(r, 1).requires_grad_()
    v_rep = v.detach().repeat_interleave(r, 1).requires_grad_()
    (F.scaled_dot_product_attention(q.detach(), k_rep, v_rep) * G).sum().backward()
    assert torch.allclose(k.grad, k_rep.grad.view(B, H_kv, r, T, d_k).sum(2), atol=1e-12)
    assert torch.allclose(v.grad, v_rep.grad.view(B, H_kv, r, T, d_k).sum(2), atol=1e-12)
    # no single query head's gradient is the whole story
    assert not torch.allclose(k.grad, k_rep.grad.view(B, H_kv, r, T, d_k)[:, :, 0], atol=1e-6)

    # attnlab.grad does the sum by un-broadcasting the group axis
    grouped = lambda t: t.detach().numpy().reshape(B, H_kv, r, T, d_k)
    dq, dk, dv = al.grad.attention_backward(grouped(q), k.detach().numpy()[:, :, None],
                                            v.detach().numpy()[:, :, None], G.numpy().reshape(B, H_kv, r, T, d_k))
    np.testing.assert_allclose(dk[:, :, 0], k.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(dv[:, :, 0], v.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(dq.reshape(B, H, T, d_k), q.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("masks", ["none", "key_padding", "key_padding+causal"])
@pytest.mark.parametrize("bias", [False, True])
def test_attnlab_mha_matches_nn_multiheadattention(masks, bias):
    torch.manual_seed(4)
    B, T, d, H = 2, 6, 16, 4
    ref = torch.nn.MultiheadAttention(d, H, bias=bias, batch_first=True, dtype=f64).eval()
    x = torch.randn(B, T, d, dtype=f64)
    allowed = np.ones((T, T), dtype=bool)
    kw = {}
    if masks != "none":
        keys_ok = al.masks.padding(np.array([6, 3]), T)                 # (B, 1, T)
        allowed = keys_ok
        kw["key_padding_mask"] = torch.from_numpy(~keys_ok[:, 0])       # True = masked
        if masks.endswith("causal"):
            allowed = keys_ok & al.masks.causal(T)
            kw["attn_mask"] = torch.from_numpy(~al.masks.causal(T))
    y_ref, w_ref = ref(x, x, x, need_weights=True, average_attn_weights=False, **kw)

    ours = MultiHeadAttention.from_torch(ref)
    y_ours, w_ours = ours(x, allowed=torch.from_numpy(allowed), need_weights=True)
    assert torch.allclose(y_ours, y_ref, atol=1e-12) and torch.allclose(w_ours, w_ref, atol=1e-12)

    if not bias:   # the NumPy reference has no biases
        w_q, w_k, w_v = (w.detach().T.numpy() for w in ref.in_proj_weight.chunk(3))
        y_np, w_np = al.multi_head_attention(
            x.numpy(),
            x.numpy(),
            w_q,
            w_k,
            w_v,
            ref.out_proj.weight.detach().T.numpy(),
            n_heads=H,
            allowed=allowed,
            return_weights=True,
        )
        np.testing.assert_allclose(y_np, y_ref.detach().numpy(), atol=1e-12)
        np.testing.assert_allclose(w_np, w_ref.detach().numpy(), atol=1e-12)
    _, w_avg = ref(x, x, x, need_weights=True, **kw)                   # default: averaged over heads
    assert torch.allclose(w_avg, w_ref.mean(1), atol=1e-14)


def test_cross_attention_matches_nn_multiheadattention_with_kdim():
    torch.manual_seed(5)
    B, T, S, d_q, d_m, H = 2, 4, 6, 8, 6, 2
    ref = torch.nn.MultiheadAttention(d_q, H, kdim=d_m, vdim=d_m, bias=False, batch_first=True, dtype=f64).eval()
    x_q, x_m = torch.randn(B, T, d_q, dtype=f64), torch.randn(B, S, d_m, dtype=f64)
    y_ref, w_ref = ref(x_q, x_m, x_m, average_attn_weights=False)
    assert w_ref.shape == (B, H, T, S) and y_ref.shape == (B, T, d_q)
    y_np = al.multi_head_attention(x_q.numpy(), x_m.numpy(), ref.q_proj_weight.detach().T.numpy(),
                                   ref.k_proj_weight.detach().T.numpy(), ref.v_proj_weight.detach().T.numpy(),
                                   ref.out_proj.weight.detach().T.numpy(), n_heads=H)
    np.testing.assert_allclose(y_np, y_ref.detach().numpy(), atol=1e-12)
    y_ours, _ = MultiHeadAttention.from_torch(ref)(x_q, x_m)
    assert torch.allclose(y_ours, y_ref, atol=1e-12)


def test_full_cross_mask_keeps_the_decoder_causal_and_a_triangle_changes_it():
    rng = np.random.default_rng(6)
    T, S = 4, 6
    x_q, x_m = rng.normal(size=(T, 8)), rng.normal(size=(S, 6))
    w = random_weights(rng, 8, 6, 2, 2, 4, 8)
    y = al.multi_head_attention(x_q, x_m, *w, n_heads=2)
    changed = x_q.copy()
    changed[-1] += 3.0
    np.testing.assert_allclose(al.multi_head_attention(changed, x_m, *w, n_heads=2)[:-1], y[:-1], atol=1e-14)
    tri = np.tril(np.ones((T, S), dtype=bool))
    assert np.abs(al.multi_head_attention(x_q, x_m, *w, n_heads=2, allowed=tri)[0] - y[0]).max() > 1e-3


@pytest.mark.parametrize("d", [64, 96])
def test_parameter_count_independent_of_heads(d):
    counts = set()
    for H in [h for h in (1, 2, 3, 4, 8, 16, 32) if d % h == 0]:
        ours = sum(p.numel() for p in MultiHeadAttention(d, H).parameters())
        theirs = sum(p.numel() for p in torch.nn.MultiheadAttention(d, H, bias=False).parameters())
        assert ours == theirs == 4 * d * d
        counts.add(ours)
    assert len(counts) == 1


def test_kv_cache_bytes_exercises_5_7_and_5_11():
    def cache_bytes(H_kv, S, d_h):
        k = torch.empty(1, H_kv, S, d_h, dtype=torch.float16)
        return 2 * k.nbytes
    assert cache_bytes(6, 2048, 64) == 3_145_728 == 3 * 2 ** 20            # exercise 5.7: 3 MiB
    assert cache_bytes(24, 2048, 64) == 4 * cache_bytes(6, 2048, 64)       # MHA: 12 MiB
    assert cache_bytes(8, 4096, 128) * 4 == cache_bytes(32, 4096, 128)     # exercise 5.11
    rng = np.random.default_rng(7)
    x = rng.normal(size=(4, 16))
    for H_kv in (8, 2, 1):                         # the number of scores does not shrink
        w_kv = rng.normal(size=(16, H_kv * 2))
        _, weights = al.multi_head_attention(x, x, rng.normal(size=(16, 16)), w_kv, w_kv,
                                             rng.normal(size=(16, 16)), 8, n_kv_heads=H_kv, return_weights=True)
        assert weights.shape == (8, 4, 4)


def test_averaging_kv_heads_changes_the_function_unless_heads_are_equal():
    rng = np.random.default_rng(8)
    T, d, H, H_kv = 6, 32, 8, 2
    r, d_k = H // H_kv, d // H
    x = rng.normal(size=(T, d))
    w_q, w_o = rng.normal(size=(d, d)) / 6, rng.normal(size=(d, d)) / 6
    merge = lambda W: W.reshape(d, H_kv, r, d_k).mean(2).reshape(d, H_kv * d_k)
    w_k, w_v = rng.normal(size=(d, d)) / 6, rng.normal(size=(d, d)) / 6
    y = al.multi_head_attention(x, x, w_q, w_k, w_v, w_o, H)
    y_gqa = al.multi_head_attention(x, x, w_q, merge(w_k), merge(w_v), w_o, H, n_kv_heads=H_kv)
    assert np.linalg.norm(y_gqa - y) / np.linalg.norm(y) > 0.1
    same = lambda W: np.repeat(W.reshape(d, H_kv, 1, d_k), r, axis=2).reshape(d, d)   # equal heads per group
    w_k2, w_v2 = same(merge(w_k)), same(merge(w_v))
    y2 = al.multi_head_attention(x, x, w_q, w_k2, w_v2, w_o, H)
    np.testing.assert_allclose(al.multi_head_attention(x, x, w_q, merge(w_k2), merge(w_v2), w_o, H, n_kv_heads=H_kv),
                               y2, atol=1e-12)


def test_tied_query_key_projection_gives_symmetric_psd_scores():
    rng = np.random.default_rng(9)
    for _ in range(20):
        X, W = rng.normal(size=(7, 10)), rng.normal(size=(10, 3))
        U = (X @ W) @ (X @ W).T / np.sqrt(3)
        np.testing.assert_allclose(U, U.T, atol=1e-12)
        d = np.diag(U)
        assert np.all(U <= (d[:, None] + d[None, :]) / 2 + 1e-9)


def test_reshape_without_transpose_is_not_a_head_split():
    torch.manual_seed(10)
    B, T, H, d_k = 2, 5, 3, 4
    x, W = torch.randn(B, T, H * d_k, dtype=f64), torch.randn(H * d_k, H * d_k, dtype=f64)
    right = (x @ W).view(B, T, H, d_k).transpose(1, 2)
    wrong = (x @ W).view(B, H, T, d_k)
    for h in range(H):
        assert torch.allclose(right[:, h], x @ W[:, h * d_k:(h + 1) * d_k])
    assert not torch.allclose(wrong[:, 1], x @ W[:, d_k:2 * d_k])
