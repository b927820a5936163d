"""attnlab.torch_ops.MultiHeadAttention against nn.MultiheadAttention, SDPA's GQA and the NumPy reference."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import attnlab as al
from attnlab.errors import AttentionInputError
from attnlab.torch_ops import MultiHeadAttention

F64 = dict(atol=1e-10, rtol=1e-8)


@pytest.fixture(autouse=True, scope="module")
def _one_thread(torch_one_thread):
    """Every test in this module runs torch on one thread (see conftest)."""


def torch_mha(E=16, H=4, device="cpu", dtype=torch.float64, **kw):
    """An nn.MultiheadAttention with random weights and biases (its biases start at zero)."""
    torch.manual_seed(0)
    m = nn.MultiheadAttention(E, H, device=device, dtype=dtype, **kw)
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.3)
    return m


def tril(T, S, device="cpu"):
    return torch.ones(T, S, dtype=torch.bool, device=device).tril(S - T)


def randn(*shape, device="cpu", dtype=torch.float64, seed=1):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype).to(device)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("masks", ["none", "padding", "causal", "both"])
def test_from_torch_matches_nn_multihead_attention(bias, masks, device):
    B, T, E, H = 3, 6, 16, 4
    m = torch_mha(E, H, device=device, bias=bias, batch_first=True)
    ours = MultiHeadAttention.from_torch(m)
    x = randn(B, T, E, device=device)
    keys = torch.arange(T, device=device) < torch.tensor([6, 3, 1], device=device)[:, None]   # (B, S) real keys
    allowed = {"none": None, "padding": keys[:, None, :], "causal": tril(T, T, device),
               "both": tril(T, T, device) & keys[:, None, :]}[masks]
    kw = {}
    if masks in ("padding", "both"):
        kw["key_padding_mask"] = ~keys                      # nn.MultiheadAttention: True = masked
    if masks in ("causal", "both"):
        kw["attn_mask"] = ~tril(T, T, device)
    expected, expected_w = m(x, x, x, need_weights=True, average_attn_weights=False, **kw)
    out, w = ours(x, allowed=allowed, need_weights=True)
    torch.testing.assert_close(out, expected, **F64)
    torch.testing.assert_close(w, expected_w, **F64)
    torch.testing.assert_close(ours(x, allowed=allowed)[0], expected, **F64)   # the fast path agrees too


def test_from_torch_float32_sequence_first_and_cross_attention(device):
    m = torch_mha(12, 3, device=device, dtype=torch.float32, kdim=10, vdim=10)   # batch_first=False
    ours = MultiHeadAttention.from_torch(m)
    assert ours.w_q.weight.dtype == torch.float32 and ours.d_kv == 10
    x_q, x_kv = randn(2, 5, 12, device=device, dtype=torch.float32), randn(2, 7, 10, device=device, dtype=torch.float32)
    expected, _ = m(x_q.transpose(0, 1), x_kv.transpose(0, 1), x_kv.transpose(0, 1))   # (T, B, E) in, out
    torch.testing.assert_close(ours(x_q, x_kv)[0], expected.transpose(0, 1), atol=1e-5, rtol=1e-4)


class _NotPlainAttention(nn.MultiheadAttention):
    def forward(self, *args, **kwargs):
        out, w = super().forward(*args, **kwargs)
        return out + 1, w


def test_from_torch_refuses_what_it_cannot_copy():
    with pytest.raises(AttentionInputError, match="expects an nn.MultiheadAttention"):
        MultiHeadAttention.from_torch(nn.Linear(4, 4))
    with pytest.raises(AttentionInputError, match="add_bias_kv=True"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, add_bias_kv=True))
    with pytest.raises(AttentionInputError, match="kdim=5, vdim=6"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, kdim=5, vdim=6))
    with pytest.raises(AttentionInputError, match="differs from the nn.MultiheadAttention"):
        MultiHeadAttention.from_torch(_NotPlainAttention(8, 2, batch_first=True))


@pytest.mark.parametrize("n_kv_heads", [1, 2, 4])
def test_grouped_query_attention_matches_sdpa_enable_gqa(n_kv_heads, device):
    B, T, E, H = 2, 5, 16, 4
    torch.manual_seed(0)
    mha = MultiHeadAttention(E, H, n_kv_heads=n_kv_heads, bias=True).double().to(device)
    x = randn(B, T, E, device=device)

    def by_hand(x):
        q = F.linear(x, mha.w_q.weight, mha.w_q.bias).view(B, T, H, 4).transpose(1, 2)
        k = F.linear(x, mha.w_k.weight, mha.w_k.bias).view(B, T, n_kv_heads, 4).transpose(1, 2)
        v = F.linear(x, mha.w_v.weight, mha.w_v.bias).view(B, T, n_kv_heads, 4).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return F.linear(o.transpose(1, 2).reshape(B, T, E), mha.w_o.weight, mha.w_o.bias)

    ours, expected = mha(x, allowed=tril(T, T, device))[0], by_hand(x)
    torch.testing.assert_close(ours, expected, **F64)
    params = [mha.w_q.weight, mha.w_k.weight, mha.w_v.weight]   # shared K, V: gradients sum over the group
    grad_out = randn(B, T, E, device=device, seed=2)
    for a, b in zip(torch.autograd.grad(ours, params, grad_out), torch.autograd.grad(expected, params, grad_out)):
        torch.testing.assert_close(a, b, **F64)


def _numpy_reference(mha, x_q, x_kv, allowed, query_valid):
    w = [lin.weight.detach().cpu().numpy().T for lin in (mha.w_q, mha.w_k, mha.w_v, mha.w_o)]   # x @ W
    return al.multi_head_attention(x_q.cpu().numpy(), x_kv.cpu().numpy(), *w, mha.n_heads, mha.n_kv_heads,
                                   allowed=allowed, query_valid=query_valid, return_weights=True)


def test_matches_numpy_reference_with_padding_masks(device):
    B, T, S, E = 2, 4, 6, 12
    torch.manual_seed(0)
    mha = MultiHeadAttention(E, 6, n_kv_heads=2).double().to(device)
    x_q, x_kv = randn(B, T, E, device=device), randn(B, S, E, device=device, seed=2)
    allowed = al.masks.padding([6, 2], S)                  # (B, 1, S) NumPy, becomes (B, 1, 1, S)
    query_valid = np.array([[True, True, False, True], [True, False, True, True]])   # (B, T) -> (B, 1, T)
    out, w = mha(x_q, x_kv, allowed=allowed, query_valid=query_valid, need_weights=True)
    ref_out, ref_w = _numpy_reference(mha, x_q, x_kv, allowed, query_valid)
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref_out, atol=1e-12)
    np.testing.assert_allclose(w.detach().cpu().numpy(), ref_w, atol=1e-12)
    assert torch.all(w[~torch.as_tensor(query_valid, device=device)[:, None, :].expand(B, 6, T)] == 0)


def test_fully_padded_sequence_gives_zeros_not_nan(device):
    mha = MultiHeadAttention(8, 2).double().to(device)
    x = randn(2, 3, 8, device=device).requires_grad_()
    allowed = al.masks.padding([3, 0], 3)                  # sequence 1 has no real key at all
    valid = torch.tensor([[True] * 3, [False] * 3], device=device)
    out, w = mha(x, allowed=allowed, query_valid=valid, need_weights=True)
    assert torch.all(out[1] == 0) and torch.all(w[1] == 0) and torch.isfinite(out).all()
    (grad,) = torch.autograd.grad(out.sum(), (x,))
    assert torch.isfinite(grad).all() and torch.all(grad[1] == 0)


def test_weights_are_per_head_and_optional():
    mha = MultiHeadAttention(12, 3)
    x = torch.randn(2, 5, 12)
    out, w = mha(x)
    assert out.shape == (2, 5, 12) and w is None
    out, w = mha(x, torch.randn(2, 7, 12), need_weights=True)
    assert w.shape == (2, 3, 5, 7)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 5))
    assert mha(x[0])[0].shape == (5, 12)                     # unbatched input works too


@pytest.mark.parametrize("make,message", [
    (lambda: MultiHeadAttention(10, 3), "d_model=10 must be divisible by n_heads=3"),
    (lambda: MultiHeadAttention(12, 4, n_kv_heads=3), "n_kv_heads must divide n_heads"),
    (lambda: MultiHeadAttention(12, 0), "n_heads must be a positive integer"),
    (lambda: MultiHeadAttention(12.0, 4), "d_model must be a positive integer"),
    (lambda: MultiHeadAttention(12, 4, d_kv=-1), "d_kv must be a positive integer"),
])
def test_bad_construction_is_refused(make, message):
    with pytest.raises(AttentionInputError, match=message):
        make()


@pytest.mark.parametrize("kwargs,message", [
    (dict(x_q=torch.randn(2, 5, 10)), r"x_q must have shape \(\.\.\., positions, 12\)"),
    (dict(x_q=torch.randn(12)), r"x_q must have shape .* got \(12\)"),
    (dict(x_q=torch.ones(2, 5, 12, dtype=torch.long)), "x_q must be a floating-point tensor"),
    (dict(x_q=torch.randn(2, 5, 12, dtype=torch.float64)), "must share one dtype"),
    (dict(x_kv=torch.randn(3, 5, 12)), "leading .* axes of x_q and x_kv"),
    (dict(x_kv=torch.randn(2, 5, 7)), r"x_kv must have shape \(\.\.\., positions, 12\)"),
    (dict(allowed=torch.ones(5, 6, dtype=torch.bool)), "does not broadcast to"),
    (dict(allowed=torch.ones(5, 5)), "allowed must be a boolean"),
    (dict(query_valid=torch.ones(2, 6, dtype=torch.bool)), "query_valid of shape"),
    (dict(impl="fast"), "impl must be one of"),
])
def test_bad_forward_input_is_refused(kwargs, message):
    mha = MultiHeadAttention(12, 4)
    args = {"x_q": torch.randn(2, 5, 12), **kwargs}
    with pytest.raises(AttentionInputError, match=message):
        mha(**args)


@settings(max_examples=20, deadline=None)
@given(heads=st.sampled_from([(1, 1), (2, 1), (4, 2), (6, 3), (6, 2), (4, 4)]), d_k=st.integers(1, 3),
       B=st.integers(1, 2), T=st.integers(1, 5), S=st.integers(1, 6), self_attention=st.booleans(),
       dtype=st.sampled_from([torch.float32, torch.float64]), seed=st.integers(0, 2**16))
def test_property_matches_numpy_reference(heads, d_k, B, T, S, self_attention, dtype, seed):
    H, H_kv = heads
    torch.manual_seed(seed)
    mha = MultiHeadAttention(H * d_k, H, n_kv_heads=H_kv).to(dtype)
    rng = np.random.default_rng(seed)
    S = T if self_attention else S
    x_q = torch.randn(B, T, H * d_k, dtype=dtype)
    x_kv = x_q if self_attention else torch.randn(B, S, H * d_k, dtype=dtype)
    allowed = al.masks.padding(rng.integers(1, S + 1, size=B), S)                 # (B, 1, S)
    query_valid = rng.random((B, T)) < 0.8
    out, w = mha(x_q, None if self_attention else x_kv, allowed=allowed, query_valid=query_valid, need_weights=True)
    ref_out, ref_w = _numpy_reference(mha, x_q, x_kv, allowed, query_valid)
    tol = 1e-10 if dtype == torch.float64 else 1e-4
    np.testing.assert_allclose(out.detach().numpy(), ref_out, atol=tol, rtol=tol)
    np.testing.assert_allclose(w.detach().numpy(), ref_w, atol=tol, rtol=tol)
    fast, _ = mha(x_q, None if self_attention else x_kv, allowed=allowed, query_valid=query_valid)
    np.testing.assert_allclose(fast.detach().numpy(), ref_out, atol=10 * tol, rtol=10 * tol)
