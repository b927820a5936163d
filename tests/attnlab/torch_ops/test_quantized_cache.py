"""KIVI-style quantisation: round trip error bounds (half a step per number), keys per channel in blocks, values
per token, the cache's outputs equal attention over the quantised keys and values built here, and its byte count."""
import numpy as np
import pytest
import torch

import attnlab as al
from attnlab.torch_ops.quantized_cache import QuantizedKVCache, fake_quantize

f64 = torch.float64


@pytest.mark.parametrize("bits", [2, 4, 8])
def test_round_trip_within_half_a_step(bits):
    torch.manual_seed(0)
    x = torch.randn(5, 7, dtype=f64) * torch.tensor([1, 10, 0.1, 3, 1, 1, 50], dtype=f64)   # channels of any size
    per_channel = fake_quantize(x, bits, dim=0)
    step = (x.amax(0) - x.amin(0)) / (2 ** bits - 1)
    assert ((per_channel - x).abs() <= step / 2 + 1e-12).all()
    assert torch.equal(fake_quantize(x[:, :1].expand(5, 3), bits, dim=-1), x[:, :1].expand(5, 3))   # constant rows


def test_cache_reads_kivi_quantised_keys_and_values():
    torch.manual_seed(1)
    B, H, H_kv, T, d, bits, group = 1, 4, 2, 11, 8, 4, 4
    q, k, v = torch.randn(B, H, T, d, dtype=f64), torch.randn(B, H_kv, T, d, dtype=f64), torch.randn(B, H_kv, T, d,
                                                                                                   dtype=f64)
    cache = QuantizedKVCache(H_kv, d, bits=bits, group=group, base=100.0)
    cache.append(k, v)
    got = cache.attend(q)
    kr = al.torch_ops.rope(k, range(T), 100.0)
    blocks = [fake_quantize(kr[:, :, s:s + group], bits, dim=-2) for s in (0, 4)] + [kr[:, :, 8:]]   # 2 blocks + rest
    kq, vq = torch.cat(blocks, 2), torch.stack([fake_quantize(v[:, :, t], bits, dim=-1) for t in range(T)], 2)
    qr = al.torch_ops.rope(q, range(T), 100.0)
    want = al.attention(qr.numpy(), np.repeat(kq.numpy(), 2, 1), np.repeat(vq.numpy(), 2, 1),
                        allowed=al.masks.causal(T))
    np.testing.assert_allclose(got.numpy(), want, atol=1e-12)
    size = 8                                                               # float64
    keys = H_kv * (8 * d * bits // 8 + 2 * d * 2 * size + 3 * d * size)    # codes, 2 blocks of scales/offsets, residual
    values = H_kv * T * (d * bits // 8 + 2 * size)
    assert cache.nbytes == keys + values


def test_bad_bits():
    with pytest.raises(al.AttentionInputError, match="bits"):
        QuantizedKVCache(2, 8, bits=1)
    with pytest.raises(al.AttentionInputError, match="group"):
        QuantizedKVCache(2, 8, group=0)
