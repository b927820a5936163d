"""MultiHeadLatentAttention: the absorbed path equals the explicit one; the cache holds d_latent per token.

Independent references: the explicit path written out here from the weights (latent, per-head
up-projections, softmax, output projection), autograd's gradcheck (finite differences), and
the explicit path's own gradients for the absorbed one.
"""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attnlab as al
from attnlab.torch_ops import MultiHeadLatentAttention

f64 = torch.float64


def by_hand(mla, x, causal):
    """softmax(Q_h K_h^T / sqrt(d_head)) V_h per head, with K_h = c W_UK_h and V_h = c W_UV_h."""
    H, d_h = mla.n_heads, mla.d_head
    c = x @ mla.w_dkv.weight.T                                       # (B, T, d_latent)
    heads = []
    for h in range(H):
        cols = slice(h * d_h, (h + 1) * d_h)
        q = x @ mla.w_q.weight[cols].T                               # (B, T, d_head)
        k, v = c @ mla.w_uk.weight[cols].T, c @ mla.w_uv.weight[cols].T
        s = q @ k.transpose(-1, -2) / math.sqrt(d_h)                 # (B, T, T)
        if causal:
            s = s.masked_fill(~torch.ones_like(s, dtype=torch.bool).tril(), float("-inf"))
        heads.append(torch.softmax(s, -1) @ v)
    return torch.cat(heads, -1) @ mla.w_o.weight.T                   # (B, T, d_model)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([1, 2, 4]), st.integers(1, 9), st.integers(1, 24), st.sampled_from([None, 3, 8]),
       st.booleans(), st.booleans(), st.integers(0, 2**16))
def test_absorbed_equals_explicit_float64(H, T, d_latent, d_head, causal, bias, seed):
    torch.manual_seed(seed)
    mla = MultiHeadLatentAttention(8, H, d_latent, d_head=d_head, bias=bias).double()
    x = torch.randn(2, T, 8, dtype=f64)
    allowed = al.masks.causal(T) if causal else None
    explicit = mla(x, allowed=allowed)
    torch.testing.assert_close(mla(x, allowed=allowed, absorbed=True), explicit, atol=1e-12, rtol=0)
    if not bias:
        torch.testing.assert_close(explicit, by_hand(mla, x, causal), atol=1e-12, rtol=0)


@pytest.mark.parametrize("causal", [False, True])
def test_absorbed_equals_explicit_float32(causal):
    torch.manual_seed(1)
    mla = MultiHeadLatentAttention(64, 4, 32)
    x = torch.randn(3, 17, 64)
    allowed = al.masks.causal(17) if causal else None
    torch.testing.assert_close(mla(x, allowed=allowed, absorbed=True), mla(x, allowed=allowed), atol=1e-5, rtol=0)


@pytest.mark.parametrize("absorbed", [False, True])
def test_through_a_cache(absorbed):
    torch.manual_seed(2)
    mla = MultiHeadLatentAttention(16, 4, 6).double()
    x = torch.randn(2, 11, 16, dtype=f64)
    want = mla(x, allowed=al.masks.causal(11))                       # whole sequence, explicit
    cache, outs, start = mla.new_cache(), [], 0
    for t in (4, 1, 1, 3, 2):
        outs.append(mla(x[:, start:start + t], cache=cache, absorbed=absorbed))
        start += t
        assert len(cache) == start
        assert cache.nbytes == 2 * start * mla.cache_bytes_per_token() == 2 * start * 6 * 8   # d_latent per token
    torch.testing.assert_close(torch.cat(outs, 1), want, atol=1e-12, rtol=0)


def test_cache_bytes_per_token():
    mla = MultiHeadLatentAttention(5120, 128, 512, d_head=128)       # DeepSeek-V2's widths, without RoPE part
    assert mla.cache_bytes_per_token(torch.bfloat16) == 512 * 2 == mla.cache_bytes_per_token("bfloat16")
    assert mla.cache_bytes_per_token() == 512 * 4                    # the weights are float32
    mha_bytes = al.kv_cache_bytes(128, 1, 128, dtype=torch.bfloat16)  # the same layer caching K and V per head
    assert mha_bytes / mla.cache_bytes_per_token(torch.bfloat16) == 2 * 128 * 128 / 512


def test_gradients_flow_through_the_explicit_path():
    torch.manual_seed(3)
    mla = MultiHeadLatentAttention(6, 2, 3).double()
    x = torch.randn(1, 4, 6, dtype=f64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: mla(x, allowed=al.masks.causal(4)), (x,))
    mla(x, allowed=al.masks.causal(4)).square().sum().backward()
    explicit = {n: p.grad.clone() for n, p in mla.named_parameters()}
    assert all(g.abs().sum() > 0 for g in explicit.values())
    mla.zero_grad()
    mla(x, allowed=al.masks.causal(4), absorbed=True).square().sum().backward()
    for n, p in mla.named_parameters():                              # the same function, the same gradients
        torch.testing.assert_close(p.grad, explicit[n], atol=1e-12, rtol=0)


def test_bad_input():
    with pytest.raises(al.AttentionInputError, match="d_latent"):
        MultiHeadLatentAttention(8, 2, 0)
    with pytest.raises(al.AttentionInputError, match="divisible"):
        MultiHeadLatentAttention(9, 2, 4)
    mla = MultiHeadLatentAttention(8, 2, 4)
    with pytest.raises(al.AttentionInputError, match=r"\(\.\.\., positions, 8\)"):
        mla(torch.randn(2, 3, 7))
    with pytest.raises(al.AttentionInputError, match="float64"):
        mla(torch.randn(2, 3, 8, dtype=f64))
    cache = mla.new_cache()
    mla(torch.randn(2, 3, 8), cache=cache)
    with pytest.raises(al.KVCacheError, match="does not match"):
        mla(torch.randn(1, 1, 8), cache=cache)                       # another batch size
