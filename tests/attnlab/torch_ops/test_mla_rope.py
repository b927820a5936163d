"""MultiHeadLatentAttention with a decoupled RoPE part (d_rope > 0): explicit path against the scores written out
per head with the NumPy RoPE, absorbed path equal to the explicit one, a cache of d_latent + d_rope numbers per
token, and the computed reason why a rotated latent key could not be absorbed."""
import math

import numpy as np
import pytest
import torch

import attnlab as al
from attnlab.torch_ops import MultiHeadLatentAttention
from attnlab.torch_ops.mla import absorbed_query_per_distance

f64 = torch.float64


def by_hand(mla, x):
    """Per head: (q_h . k_h + rope(q^R_h) . rope(k^R)) / sqrt(d_head + d_rope), causal, values c W_UV_h."""
    H, d_h, d_r = mla.n_heads, mla.d_head, mla.d_rope
    x = x[0].detach().numpy()
    T = x.shape[0]
    W = {name: getattr(mla, name).weight.detach().numpy().T for name in ("w_q", "w_dkv", "w_uk", "w_uv", "w_o",
                                                                         "w_qr", "w_kr")}
    c = x @ W["w_dkv"]
    k_r = al.position.rope(x @ W["w_kr"], np.arange(T), mla.rope_base)          # (T, d_rope), shared
    heads = []
    for h in range(H):
        cols, rcols = slice(h * d_h, (h + 1) * d_h), slice(h * d_r, (h + 1) * d_r)
        q, k, v = x @ W["w_q"][:, cols], c @ W["w_uk"][:, cols], c @ W["w_uv"][:, cols]
        q_r = al.position.rope(x @ W["w_qr"][:, rcols], np.arange(T), mla.rope_base)
        scores = (q @ k.T + q_r @ k_r.T) / math.sqrt(d_h + d_r)
        weights = np.exp(scores - scores.max(-1, keepdims=True)) * al.masks.causal(T)   # forbidden keys: 0
        heads.append(weights / weights.sum(-1, keepdims=True) @ v)
    return np.concatenate(heads, -1) @ W["w_o"]                                 # (T, d_model)


@pytest.mark.parametrize("d_rope", [2, 4])
def test_explicit_and_absorbed_equal_the_scores_by_hand(d_rope):
    torch.manual_seed(0)
    mla = MultiHeadLatentAttention(12, 3, d_latent=5, d_rope=d_rope, rope_base=50.0).to(f64)
    x = torch.randn(1, 9, 12, dtype=f64)
    causal = al.masks.causal(9)
    want = by_hand(mla, x)
    with torch.no_grad():
        np.testing.assert_allclose(mla(x, allowed=causal)[0].numpy(), want, atol=1e-12)
        np.testing.assert_allclose(mla(x, allowed=causal, absorbed=True)[0].numpy(), want, atol=1e-12)


@pytest.mark.parametrize("absorbed", [False, True])
def test_through_a_cache_the_rope_key_is_cached(absorbed):
    torch.manual_seed(1)
    mla = MultiHeadLatentAttention(8, 2, d_latent=6, d_rope=4).to(f64)
    x = torch.randn(2, 10, 8, dtype=f64)
    with torch.no_grad():
        full = mla(x, allowed=al.masks.causal(10))
        cache, outs, start = mla.new_cache(), [], 0
        for t in (3, 1, 4, 1, 1):
            outs.append(mla(x[:, start:start + t], cache=cache, absorbed=absorbed))
            start += t
    torch.testing.assert_close(torch.cat(outs, 1), full, rtol=0, atol=1e-12)
    assert mla.cache_bytes_per_token() == (6 + 4) * 8
    assert cache.nbytes == 2 * 10 * mla.cache_bytes_per_token()                # B = 2 sequences of 10 tokens
    assert cache.k_rope.shape == (2, 10, 4)


def test_d_rope_zero_is_todays_mla():
    torch.manual_seed(2)
    a = MultiHeadLatentAttention(8, 2, d_latent=4)
    b = MultiHeadLatentAttention(8, 2, d_latent=4, d_rope=0)
    b.load_state_dict(a.state_dict())
    x = torch.randn(1, 5, 8)
    assert torch.equal(a(x), b(x)) and a.cache_bytes_per_token() == 4 * 4
    with pytest.raises(al.AttentionInputError, match="d_rope"):
        MultiHeadLatentAttention(8, 2, d_latent=4, d_rope=3)


def test_a_rotated_latent_key_would_need_one_absorbed_query_per_distance():
    torch.manual_seed(3)
    w_uk, q, c = torch.randn(6, 4, dtype=f64), torch.randn(4, dtype=f64), torch.randn(6, dtype=f64)
    distances = range(0, 40, 3)
    u = absorbed_query_per_distance(w_uk, q, distances, base=100.0)             # (n, d_latent)
    for row, delta in zip(u, distances):                                        # u_delta . c is the rotated score
        rotated = al.torch_ops.rope(q[None], [0], 100.0) @ al.torch_ops.rope((c @ w_uk)[None], [delta], 100.0).T
        assert torch.allclose(row @ c, rotated[0, 0], atol=1e-12)
    assert torch.allclose(u[0], w_uk @ q)                                        # distance 0: the plain absorption
    spread = (u - u[0]).norm(dim=-1) / u[0].norm()
    assert spread[1:].min() > 0.05                                              # every other distance needs another
