"""KVCache: every layout's attend equals whole-sequence attention under the matching mask.

The oracle is torch_ops.attention (naive path) over the whole stream, with K and V repeated per
query head (repeat_interleave, the GQA rule of chapter 6) and the mask built by attnlab.masks:
causal, sliding_window, or sliding_window plus the sink columns. Streams arrive in random chunks.
"""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attnlab as al
from attnlab.torch_ops import KVCache, attention

SETTINGS = settings(max_examples=60, deadline=None)
f64 = torch.float64


def expected_mask(T, layout, window=None, n_sinks=0, block_size=None):
    causal = al.masks.causal(T)
    if layout != "ring":
        return causal
    sinks = causal & (np.arange(T)[None, :] < n_sinks)               # (T, T): the first n_sinks columns
    return al.masks.sliding_window(T, window) | sinks


def expected_nbytes(cache, B, H_kv, d_k, d_v, n, item=8):
    """The formulas of DESIGN.md, written out independently of the class."""
    per_position = B * H_kv * (d_k + d_v) * item
    if cache.layout == "contiguous":
        return per_position * n
    if cache.layout == "ring":
        return per_position * (min(n, cache.n_sinks) + min(max(n - cache.n_sinks, 0), cache.window))
    return per_position * math.ceil(n / cache.block_size) * cache.block_size


@st.composite
def stream(draw):
    H = draw(st.sampled_from([1, 2, 4, 6]))
    H_kv = draw(st.sampled_from(sorted({H, max(H // 2, 1), 1})))      # GQA ratios 1, 2 and H
    chunks = draw(st.lists(st.integers(1, 6), min_size=1, max_size=8))
    layout = draw(st.sampled_from(["contiguous", "ring", "paged"]))
    kw = {}
    if layout == "ring":
        kw = {"window": draw(st.integers(1, 7)), "n_sinks": draw(st.integers(0, 3))}
    if layout == "paged":
        kw = {"block_size": draw(st.integers(1, 5))}
    B, d_k, d_v = draw(st.integers(1, 2)), draw(st.integers(1, 5)), draw(st.integers(1, 4))
    return H, H_kv, chunks, layout, kw, B, d_k, d_v, draw(st.integers(0, 2**16))


@SETTINGS
@given(stream())
def test_attend_equals_whole_sequence_attention(s):
    H, H_kv, chunks, layout, kw, B, d_k, d_v, seed = s
    g = torch.Generator().manual_seed(seed)
    T = sum(chunks)
    q = torch.randn(B, H, T, d_k, generator=g, dtype=f64)
    k = torch.randn(B, H_kv, T, d_k, generator=g, dtype=f64)
    v = torch.randn(B, H_kv, T, d_v, generator=g, dtype=f64)
    r = H // H_kv
    want = attention(q, k.repeat_interleave(r, 1), v.repeat_interleave(r, 1),   # (B, H, T, d_v)
                     allowed=expected_mask(T, layout, **kw), impl="naive")
    cache = KVCache(H_kv, d_k, d_v, layout=layout, **kw)
    start = 0
    for t in chunks:
        cache.append(k[:, :, start:start + t], v[:, :, start:start + t])
        start += t
        assert len(cache) == start
        assert cache.nbytes == expected_nbytes(cache, B, H_kv, d_k, d_v, start)
        got = cache.attend(q[:, :, start - t:start])                             # (B, H, t, d_v)
        torch.testing.assert_close(got, want[:, :, start - t:start], atol=1e-12, rtol=0)
        last = cache.attend(q[:, :, start - 1:start])                            # fewer queries than appended
        torch.testing.assert_close(last, want[:, :, start - 1:start], atol=1e-12, rtol=0)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 9), st.integers(0, 4), st.lists(st.integers(1, 12), min_size=20, max_size=40))
def test_ring_never_exceeds_its_bound(window, n_sinks, chunks):
    cache = KVCache(2, 3, layout="ring", window=window, n_sinks=n_sinks)
    bound = 1 * 2 * (window + n_sinks) * (3 + 3) * 4
    for t in chunks:
        cache.append(torch.randn(1, 2, t, 3), torch.randn(1, 2, t, 3))
        assert cache.nbytes <= bound
    assert len(cache) == sum(chunks) and cache.nbytes == bound                  # full once the stream is long
    kept = cache.keys_values()[2].tolist()
    n = len(cache)
    assert kept == list(range(min(n_sinks, n))) + list(range(max(n - window, n_sinks), n))


def test_paged_gather_equals_contiguous_and_counts_fragmentation():
    B, H_kv, d, bs = 3, 2, 4, 5
    paged, flat = KVCache(H_kv, d, layout="paged", block_size=bs), KVCache(H_kv, d)
    for t in (4, 1, 7, 1):
        k, v = torch.randn(B, H_kv, t, d, dtype=f64), torch.randn(B, H_kv, t, d, dtype=f64)
        paged.append(k, v)
        flat.append(k, v)
    for a, b in zip(paged.keys_values(), flat.keys_values()):
        assert torch.equal(a, b)
    n = len(paged)                                                               # 13 positions, blocks of 5
    assert paged.block_table.shape == (B, 3) and sorted(paged.block_table.flatten().tolist()) == list(range(9))
    waste = paged.nbytes - flat.nbytes
    assert waste == B * (3 * bs - n) * H_kv * 2 * d * 8                          # two empty slots per sequence


def test_first_chunk_longer_than_the_window():
    """A prefill of 10 positions into a window of 3: the chunk's early queries still see their keys."""
    q, k, v = torch.randn(1, 2, 10, 4, dtype=f64), torch.randn(1, 1, 10, 4, dtype=f64), torch.randn(1, 1, 10, 4,
                                                                                                      dtype=f64)
    cache = KVCache(1, 4, layout="ring", window=3, n_sinks=1)
    cache.append(k, v)
    want = attention(q, k.expand(1, 2, 10, 4), v.expand(1, 2, 10, 4), allowed=expected_mask(10, "ring", 3, 1))
    torch.testing.assert_close(cache.attend(q), want, atol=1e-12, rtol=0)
    assert cache.nbytes == 1 * 1 * 4 * 8 * 8                                     # window + sinks = 4 slots


def test_float32_and_device(device):
    cache = KVCache(2, 8, layout="paged", block_size=4)
    q, k, v = (torch.randn(1, 4, 6, 8, device=device), torch.randn(1, 2, 6, 8, device=device),
               torch.randn(1, 2, 6, 8, device=device))
    cache.append(k, v)
    want = attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), allowed=al.masks.causal(6))
    torch.testing.assert_close(cache.attend(q), want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kwargs, words", [
    ({"layout": "ring", "window": 0}, "window"),
    ({"layout": "ring", "window": -3}, "window"),
    ({"layout": "ring"}, "window"),
    ({"layout": "ring", "window": 4, "n_sinks": -1}, "n_sinks"),
    ({"layout": "paged", "block_size": 0}, "block_size"),
    ({"layout": "circular"}, "layout"),
    ({"window": 4}, "ring"),
])
def test_bad_construction(kwargs, words):
    with pytest.raises(al.AttentionInputError, match=words):
        KVCache(2, 4, **kwargs)


def test_bad_use_gets_named_errors():
    cache = KVCache(2, 4, d_v=3)
    with pytest.raises(al.KVCacheError, match="empty"):
        cache.attend(torch.randn(1, 2, 1, 4))
    with pytest.raises(al.KVCacheError, match="n_kv_heads=2"):
        cache.append(torch.randn(1, 4, 1, 4), torch.randn(1, 4, 1, 3))      # head count
    with pytest.raises(al.KVCacheError, match=r"\(B, n_kv_heads=2, t >= 1, 4\)"):
        cache.append(torch.randn(1, 2, 1, 5), torch.randn(1, 2, 1, 3))      # key width
    cache.append(torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 3))
    with pytest.raises(al.KVCacheError, match="last append brought 3"):
        cache.attend(torch.randn(1, 2, 4, 4))                               # more queries than appended
    with pytest.raises(al.KVCacheError, match="dtype"):
        cache.append(torch.randn(1, 2, 1, 4, dtype=f64), torch.randn(1, 2, 1, 3, dtype=f64))
    with pytest.raises(al.KVCacheError, match="device"):
        cache.append(torch.randn(1, 2, 1, 4, device="meta"), torch.randn(1, 2, 1, 3, device="meta"))
    with pytest.raises(al.KVCacheError, match="batch"):
        cache.append(torch.randn(2, 2, 1, 4), torch.randn(2, 2, 1, 3))
    with pytest.raises(al.KVCacheError, match="multiple of n_kv_heads=2"):
        cache.attend(torch.randn(1, 3, 1, 4))
    with pytest.raises(al.AttentionInputError, match="non-finite"):
        cache.append(torch.full((1, 2, 1, 4), float("nan")), torch.randn(1, 2, 1, 3))
    assert len(cache) == 3                                                  # refused appends stored nothing
