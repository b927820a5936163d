"""RotaryKVCache against the NumPy reference (al.position.rope, then al.attention with the right mask) and
against StreamingLLM's re-numbering written out by hand (keys kept unrotated, numbered by their place in
the cache at every step)."""
import numpy as np
import pytest
import torch

import attnlab as al
from attnlab.torch_ops import RotaryKVCache

f64 = torch.float64
H, H_KV, D, BASE = 4, 2, 8, 100.0


def stream(cache, q, k, v, chunks):
    """Append k, v in chunks and attend with the chunks' queries; (B, H, T, d) outputs."""
    outs, start = [], 0
    for t in chunks:
        cache.append(k[:, :, start:start + t], v[:, :, start:start + t])
        outs.append(cache.attend(q[:, :, start:start + t]))
        start += t
    return torch.cat(outs, 2)


def reference(q, k, v, allowed, pairing="half"):
    """NumPy: rotate by absolute positions, repeat KV heads for GQA, attend with ``allowed``."""
    T = q.shape[2]
    qr = al.position.rope(q.numpy(), np.arange(T), BASE, pairing)
    kr = np.repeat(al.position.rope(k.numpy(), np.arange(T), BASE, pairing), H // H_KV, axis=1)
    return al.attention(qr, kr, np.repeat(v.numpy(), H // H_KV, axis=1), allowed=allowed)


def data(T, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(1, H, T, D, generator=g, dtype=f64), torch.randn(1, H_KV, T, D, generator=g, dtype=f64),
            torch.randn(1, H_KV, T, D, generator=g, dtype=f64))


@pytest.mark.parametrize("layout", ["contiguous", "paged"])
@pytest.mark.parametrize("pairing", ["half", "interleaved"])
@pytest.mark.parametrize("chunks", [(13,), (1,) * 13, (5, 1, 4, 3)])
def test_chunked_prefill_and_decoding_equal_one_pass(layout, pairing, chunks):
    q, k, v = data(13)
    cache = RotaryKVCache(H_KV, D, layout=layout, block_size=4, base=BASE, pairing=pairing)
    got = stream(cache, q, k, v, chunks)
    np.testing.assert_allclose(got.numpy(), reference(q, k, v, al.masks.causal(13), pairing), atol=1e-12)


def test_keys_are_stored_after_rotation():
    q, k, v = data(9)
    cache = RotaryKVCache(H_KV, D, base=BASE)
    stream(cache, q, k, v, (4, 5))
    stored, _v, positions = cache.keys_values()
    np.testing.assert_allclose(stored.numpy(), al.position.rope(k.numpy(), np.arange(9), BASE), atol=1e-13)
    assert positions.tolist() == list(range(9))


@pytest.mark.parametrize("chunks", [(1,) * 20, (6, 1, 1, 5, 7)])
def test_ring_without_renumbering_is_the_window_and_sinks_mask(chunks):
    T, w, s = 20, 5, 2
    q, k, v = data(T, 1)
    cache = RotaryKVCache(H_KV, D, layout="ring", window=w, n_sinks=s, base=BASE, renumber=False)
    allowed = al.masks.sliding_window(T, w) | (al.masks.causal(T) & (np.arange(T) < s))
    np.testing.assert_allclose(stream(cache, q, k, v, chunks).numpy(), reference(q, k, v, allowed), atol=1e-12)


def streaming_llm(q, k, v, w, s):
    """StreamingLLM by hand, one query at a time: the cache holds the unrotated keys of the sinks and of the last
    w positions, in that order; they are numbered 0, 1, ... by their place in it and the query gets the last number."""
    T, outs = q.shape[2], []
    for p in range(T):
        held = sorted(set(range(min(s, p + 1))) | set(range(max(0, p - w + 1), p + 1)))
        n = len(held)
        kr = al.position.rope(k[:, :, held].numpy(), np.arange(n), BASE)                  # (1, H_kv, n, d)
        qr = al.position.rope(q[:, :, p:p + 1].numpy(), [n - 1], BASE)                  # (1, H, 1, d)
        outs.append(al.attention(qr, np.repeat(kr, H // H_KV, 1), np.repeat(v[:, :, held].numpy(), H // H_KV, 1)))
    return np.concatenate(outs, 2)


@pytest.mark.parametrize("chunks", [(1,) * 24, (7, 1, 9, 1, 6)])
def test_ring_with_renumbering_is_streaming_llm(chunks):
    T, w, s = 24, 6, 3
    q, k, v = data(T, 2)
    cache = RotaryKVCache(H_KV, D, layout="ring", window=w, n_sinks=s, base=BASE)
    got = stream(cache, q, k, v, chunks)
    np.testing.assert_allclose(got.numpy(), streaming_llm(q, k, v, w, s), atol=1e-12)
    plain = stream(RotaryKVCache(H_KV, D, layout="ring", window=w, n_sinks=s, base=BASE, renumber=False),
                   q, k, v, chunks)
    assert torch.allclose(got[:, :, : s + w], plain[:, :, : s + w])           # same until the ring wraps
    assert not torch.allclose(got[:, :, s + w:], plain[:, :, s + w:])         # then only the sinks' distances differ


def test_bad_arguments():
    with pytest.raises(al.AttentionInputError, match="even"):
        RotaryKVCache(2, 5)
    with pytest.raises(al.AttentionInputError, match="renumber"):
        RotaryKVCache(2, 4, layout="ring", window=3, renumber="yes")
    with pytest.raises(al.AttentionInputError, match="pairing"):
        RotaryKVCache(2, 4, pairing="pairs")
