"""Wrong attempts at sheet 8 (cost and the online softmax), each with the diagnosis it must get."""
import numpy as np

import attnlab as al
import attnlab.checks as C

from .attempts import expect


def test_exercise_8_2_kv_cache_bytes():
    check = C.check_kv_cache_bytes

    def float32(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, nbytes):
        return int(np.float32(2) * batch * seq_len * n_layers * n_kv_heads * head_dim * nbytes)
    expect(check, float32, "8.2 kv_cache_bytes", "a float32 product", "float_product", "floating point")
    expect(check, lambda b, s, L, H, Hkv, d, nb: 2 * b * s * L * Hkv * d, "8.2 kv_cache_bytes",
           "numbers, not bytes", "elements_not_bytes", "bytes_per_element")
    expect(check, lambda b, s, L, H, Hkv, d, nb: 2 * b * s * L * (H // Hkv) * d * nb, "8.2 kv_cache_bytes",
           "n_heads // n_kv_heads", "group_size", "group size")
    expect(check, lambda b, s, L, H, Hkv, d, nb: 2 * b * s * L * Hkv * d * nb // 2, "8.2 kv_cache_bytes",
           "halved for a causal mask", "no_factor_two", "causality does not halve")
    def int32_loop(b, s, L, H, Hkv, d, nb):
        total = 1
        for size in np.array([2, b, s, L, Hkv, d, nb], dtype=np.int32):
            total = total * size                           # an np.int32 from the first step on
        return int(total)
    expect(check, int32_loop, "8.2 kv_cache_bytes", "a product of np.int32 sizes", "int32_overflow", "2**31")
    expect(check, lambda b, s, L, H, Hkv, d, nb: b * L * al.kv_cache_bytes(Hkv, s, d) * nb // 4,
           "8.2 kv_cache_bytes", "attnlab's own function", "forbidden_call", "kv_cache_bytes")


def _online(q, k, v, block, m0=-np.inf, inverted=False):
    c = 1 / np.sqrt(q.shape[-1])
    m = np.full((q.shape[0], 1), m0)
    l = np.zeros((q.shape[0], 1))
    acc = np.zeros((q.shape[0], v.shape[1]))
    for start in range(0, k.shape[0], block):
        s = q @ k[start:start + block].T * c
        m_new = np.maximum(m, s.max(-1, keepdims=True))
        alpha = np.exp(m_new - m) if inverted else np.exp(m - m_new)
        p = np.exp(s - m_new)
        l = l * alpha + p.sum(-1, keepdims=True)
        acc = acc * alpha + p @ v[start:start + block]
        m = m_new
    return acc / l


def test_exercise_8_6_chunked_attention():
    check = C.check_chunked_attention
    expect(check, lambda q, k, v, b: _online(q, k, v, b, m0=0.0), "8.6 chunked_attention",
           "running maximum starts at 0", "max_starts_at_zero", "starts at 0")

    def full_then_blocks(q, k, v, block):
        scores = q @ k.T / np.sqrt(q.shape[-1])            # the whole T x S matrix, then read in blocks
        m = scores.max(-1, keepdims=True)
        e = np.exp(scores - m)
        acc = sum(e[:, s:s + block] @ v[s:s + block] for s in range(0, k.shape[0], block))
        return acc / e.sum(-1, keepdims=True)
    expect(check, full_then_blocks, "8.6 chunked_attention", "the full matrix first", "full_matrix",
           "whole T x S matrix")

    def per_block_reference(q, k, v, block):
        return al.attention(q, k, v)
    expect(check, per_block_reference, "8.6 chunked_attention", "al.attention", "forbidden_call",
           "attnlab.reference.attention")
    expect(check, lambda q, k, v, b: _online(q, k, v, b, inverted=True), "8.6 chunked_attention",
           "exp(m_new - m_old)", "rescale_inverted", "inverted")

    def drops_last(q, k, v, block):
        c = 1 / np.sqrt(q.shape[-1])
        m, l, acc = np.full((q.shape[0], 1), -np.inf), np.zeros((q.shape[0], 1)), 0.0
        for start in range(0, k.shape[0] - block + 1, block):      # whole blocks only
            s = q @ k[start:start + block].T * c
            m_new = np.maximum(m, s.max(-1, keepdims=True))
            p = np.exp(s - m_new)
            l = l * np.exp(m - m_new) + p.sum(-1, keepdims=True)
            acc = acc * np.exp(m - m_new) + p @ v[start:start + block]
            m = m_new
        return acc / l
    expect(check, drops_last, "8.6 chunked_attention", "only whole blocks", "last_block_dropped", "shorter block")
