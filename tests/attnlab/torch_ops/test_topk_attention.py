"""Top-k sparse attention through a mask: the NumPy reference with the top-k mask built by sorting each row."""
import numpy as np
import pytest
import torch

import attnlab as al
from attnlab.torch_ops.topk_attention import topk_attention, topk_mask

f64 = torch.float64


def mask_by_sorting(scores, top_k, allowed):
    out = np.zeros_like(allowed)
    for i in range(scores.shape[0]):
        candidates = [j for j in np.argsort(-scores[i], kind="stable") if allowed[i, j]]
        out[i, candidates[:top_k]] = True
    return out


@pytest.mark.parametrize("top_k", [1, 3, 8])
def test_matches_the_reference_with_a_sorted_mask(top_k):
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(6, 4)), rng.normal(size=(8, 4)), rng.normal(size=(8, 3))
    allowed = al.masks.causal(6, 8)
    want_mask = mask_by_sorting(q @ k.T, top_k, allowed)
    got_mask = topk_mask(torch.from_numpy(q), torch.from_numpy(k), top_k, allowed).numpy()
    np.testing.assert_array_equal(got_mask, want_mask)
    got = topk_attention(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v), top_k, allowed)
    np.testing.assert_allclose(got.numpy(), al.attention(q, k, v, allowed=want_mask), atol=1e-12)


def test_all_keys_is_ordinary_attention_and_one_key_is_its_value():
    torch.manual_seed(1)
    q, k, v = torch.randn(2, 5, 4, dtype=f64), torch.randn(2, 7, 4, dtype=f64), torch.randn(2, 7, 3, dtype=f64)
    torch.testing.assert_close(topk_attention(q, k, v, 7), al.torch_ops.attention(q, k, v))
    best = (q @ k.transpose(-1, -2)).argmax(-1)                               # (2, 5)
    torch.testing.assert_close(topk_attention(q, k, v, 1), torch.stack([v[b, best[b]] for b in range(2)]))
    with pytest.raises(al.AttentionInputError, match="top_k"):
        topk_mask(q, k, 0)
