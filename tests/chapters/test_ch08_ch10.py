"""Chapters 8 and 10: FLOP and memory arithmetic, online softmax, KV cache, equivariance, weights vs contributions.

Every expected value comes from an independent source: torch's FlopCounterMode, exact SymPy
arithmetic, the numbers printed in the source material, or a second implementation.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

import attnlab as al
import attnlab.torch_ops as ops
from attnlab.memory import LiveTensorBytes, peak_bytes

MiB = 2**20


# ----------------------------------------------------------------------------- FLOPs (000, eq. 5.34)

def flops_534(B, T, S, d, H):
    """000 eq. 5.34 and the projection counts above it; one multiply-add = 2 FLOPs."""
    d_k = d_v = d // H
    return {"proj": 2 * B * T * d * d + 4 * B * S * d * d + 2 * B * T * d * d,
            "inter": 2 * B * H * T * S * d_k + 2 * B * H * T * S * d_v}


@pytest.mark.parametrize("B, T, S, d, H", [(1, 16, 16, 32, 4), (2, 10, 7, 64, 4), (3, 5, 9, 24, 3)])
def test_flop_formula_matches_flop_counter_on_plain_torch(B, T, S, d, H):
    """A hand-written MHA in plain torch, counted by FlopCounterMode, gives eq. 5.34 exactly."""
    g = torch.Generator().manual_seed(0)
    x_q, x_kv = torch.randn(B, T, d, generator=g), torch.randn(B, S, d, generator=g)
    w_q, w_k, w_v, w_o = (torch.randn(d, d, generator=g) for _ in range(4))
    d_k = d // H
    with FlopCounterMode(display=False) as proj_counter:
        q, k, v = x_q @ w_q, x_kv @ w_k, x_kv @ w_v
    split = lambda t: t.view(B, -1, H, d_k).transpose(1, 2)         # (B, H, n, d_k)
    q, k, v = split(q), split(k), split(v)
    with FlopCounterMode(display=False) as inter_counter:
        o = torch.softmax(q @ k.transpose(-1, -2) / d_k**0.5, dim=-1) @ v
    with FlopCounterMode(display=False) as out_counter:
        o.transpose(1, 2).reshape(B, T, d) @ w_o
    expected = flops_534(B, T, S, d, H)
    assert proj_counter.get_total_flops() + out_counter.get_total_flops() == expected["proj"]
    assert inter_counter.get_total_flops() == expected["inter"]


def test_flop_formula_matches_counter_on_package_mha():
    B, T, S, d, H = 2, 12, 9, 48, 6
    mha = ops.MultiHeadAttention(d, H)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        mha(torch.randn(B, T, d), torch.randn(B, S, d), impl="naive")
    expected = flops_534(B, T, S, d, H)
    assert counter.get_total_flops() == expected["proj"] + expected["inter"]


def test_crossover_is_at_twice_the_width():
    T, d = sp.symbols("T d", positive=True)
    assert sp.solve(sp.Eq(8 * T * d**2, 4 * T**2 * d), T) == [2 * d]
    for d_num in (64, 768):
        f = flops_534(1, 2 * d_num, 2 * d_num, d_num, 8)
        assert f["proj"] == f["inter"]


def test_source_003_count_is_half_of_000_per_head():
    """003 counts multiply-adds of one head and one sequence: T^2 d + T^2 r."""
    B, H, T, d_k = 2, 4, 11, 8
    f = flops_534(B, T, T, H * d_k, H)
    assert 2 * B * H * (T * T * d_k + T * T * d_k) == f["inter"]


# ----------------------------------------------------------------------------- memory arithmetic

def test_one_gib_example_000_eq_535():
    meta = torch.empty(2, 16, 4096, 4096, dtype=torch.float16, device="meta")
    assert 2 * 16 * 4096**2 * 2 == 1073741824 == 2**30 == meta.numel() * meta.element_size()


def test_source_001_question_3_memory():
    assert torch.empty(2048, 2048, dtype=torch.float16, device="meta").nbytes == 8 * MiB
    assert torch.empty(8192, 8192, dtype=torch.float16, device="meta").nbytes == 128 * MiB
    assert 2000 * 2000 * 2 == 8_000_000 and 8000 * 8000 * 2 == 128_000_000


def test_kv_cache_memory_000_exercise_57():
    assert 2 * 2048 * 6 * 64 * 2 == 3145728 == 3 * MiB
    assert 2 * 2048 * 24 * 64 * 2 == 12 * MiB


@pytest.mark.parametrize("T", [1, 2, 7, 64])
def test_causal_mask_has_t_t_plus_1_over_2_allowed_entries(T):
    assert int(al.masks.causal(T).sum()) == T * (T + 1) // 2


def test_live_tensor_bytes_counts_new_storages_only():
    x = torch.randn(10)                                   # 40 bytes, an input: not counted
    assert peak_bytes(lambda: x.view(2, 5).t())[1] == 0   # a view of an input
    assert peak_bytes(lambda: x.add_(1.0))[1] == 0        # in place on an input
    assert peak_bytes(lambda: x + 1)[1] == x.nbytes       # one new tensor
    with LiveTensorBytes() as m:
        y = torch.empty(1000)                             # 4000 bytes, then freed
        del y
        z = torch.empty(10)
    assert m.peak == 4000 and m.current == 40
    del z


@pytest.mark.parametrize("T", [128, 256])
def test_naive_peak_is_two_score_matrices_plus_output(T):
    """Scores and weights coexist; the rest is the output (fp32, B=1, H=4, d=16)."""
    H, d = 4, 16
    q, k, v = (torch.randn(1, H, T, d) for _ in range(3))
    _, peak = peak_bytes(ops.attention, q, k, v, impl="naive")
    expected = 2 * 4 * H * T * T + 4 * H * T * d
    assert expected <= peak <= expected + 1024           # a few small bookkeeping tensors


def test_causal_mask_does_not_lower_naive_peak():
    T, H, d = 256, 4, 16
    q, k, v = (torch.randn(1, H, T, d) for _ in range(3))
    full = peak_bytes(ops.attention, q, k, v, impl="naive")[1]
    causal = peak_bytes(ops.attention, q, k, v, allowed=al.masks.causal(T), impl="naive")[1]
    assert causal >= full


# ----------------------------------------------------------------------------- online softmax

def _online(u, v, blocks, reference):
    """Blockwise running max / running sum, written independently of the package."""
    m = ell = acc = None
    for b, (j0, j1) in enumerate(blocks):
        m_new = reference(b, m, u[j0:j1])
        p = [sp.exp(u[j] - m_new) for j in range(j0, j1)]
        s_new, a_new = sum(p), sum(pj * v[j] for pj, j in zip(p, range(j0, j1)))
        if m is None:
            ell, acc = s_new, a_new
        else:
            ell, acc = sp.exp(m - m_new) * ell + s_new, sp.exp(m - m_new) * acc + a_new
        m = m_new
    return m, ell, acc


def _partitions(n):
    """All ways to cut range(n) into consecutive non-empty blocks."""
    for cuts in itertools.product([False, True], repeat=n - 1):
        edges = [0] + [i + 1 for i, c in enumerate(cuts) if c] + [n]
        yield list(itertools.pairwise(edges))


def test_online_softmax_equals_softmax_symbolically_for_every_blocking():
    n = 4
    u = sp.symbols(f"u1:{n + 1}", real=True)
    v = sp.symbols(f"v1:{n + 1}", real=True)
    softmax_out = sum(sp.exp(u[j]) * v[j] for j in range(n)) / sum(sp.exp(x) for x in u)
    running_max = lambda b, m, block: sp.Max(*block) if m is None else sp.Max(m, *block)
    for blocks in _partitions(n):
        m, ell, acc = _online(u, v, blocks, running_max)
        assert sp.simplify(acc / ell - softmax_out) == 0, blocks
        assert sp.simplify(sp.exp(m) * ell - sum(sp.exp(x) for x in u)) == 0   # log-sum-exp


def test_online_softmax_works_with_any_reference_values():
    u = sp.symbols("u1:6", real=True)
    v = sp.symbols("v1:6", real=True)
    mu = sp.symbols("mu1:4", real=True)
    _, ell, acc = _online(u, v, [(0, 2), (2, 4), (4, 5)], lambda b, m, block: mu[b])
    target = sum(sp.exp(u[j]) * v[j] for j in range(5)) / sum(sp.exp(x) for x in u)
    assert sp.simplify(acc / ell - target) == 0


@pytest.mark.parametrize("T, S, block_q, block_k", [(33, 33, 8, 5), (7, 40, 4, 16), (64, 64, 64, 64)])
@pytest.mark.parametrize("causal", [False, True])
def test_chunked_attention_equals_numpy_reference(T, S, block_q, block_k, causal):
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 3, n, 8, generator=g, dtype=torch.float64) for n in (T, S, S))
    out = ops.chunked_attention(q, k, v, causal=causal, block_q=block_q, block_k=block_k)
    ref = al.attention(q.numpy(), k.numpy(), v.numpy(), allowed=al.masks.causal(T, S) if causal else None)
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-13)


def test_chunked_fp32_rounding_is_a_few_epsilons():
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(1, 4, 200, 32, generator=g, dtype=torch.float64) for _ in range(3))
    ref = torch.from_numpy(al.attention(q.numpy(), k.numpy(), v.numpy()))
    out = ops.chunked_attention(q.float(), k.float(), v.float(), block_q=16, block_k=16).double()
    assert (out - ref).abs().max().item() < 20 * torch.finfo(torch.float32).eps


# ----------------------------------------------------------------------------- KV cache

def _cached_decode_numpy(X, W_q, W_k, W_v, schedule, mask=al.masks.causal):
    """Single-head causal attention fed in pieces, keys and values cached (NumPy reference)."""
    outs, K, V, start = [], np.zeros((0, W_k.shape[1])), np.zeros((0, W_v.shape[1])), 0
    for n_new in schedule:
        x_new = X[start:start + n_new]
        K, V = np.vstack([K, x_new @ W_k]), np.vstack([V, x_new @ W_v])
        S = K.shape[0]
        outs.append(al.attention(x_new @ W_q, K, V, allowed=mask(n_new, S, S - n_new)))
        start += n_new
    return np.vstack(outs)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=6), st.integers(0, 2**31 - 1))
def test_kv_cache_decoding_equals_full_causal_attention(schedule, seed):
    r = np.random.default_rng(seed)
    T, d = sum(schedule), 5
    X = r.standard_normal((T, d))
    W_q, W_k, W_v = (r.standard_normal((d, d)) for _ in range(3))
    full = al.attention(X @ W_q, X @ W_k, X @ W_v, allowed=al.masks.causal(T))
    np.testing.assert_allclose(_cached_decode_numpy(X, W_q, W_k, W_v, schedule), full, atol=1e-12)


def test_top_left_triangle_breaks_cached_chunks():
    r = np.random.default_rng(5)
    X = r.standard_normal((8, 4))
    W = [r.standard_normal((4, 4)) for _ in range(3)]
    full = al.attention(X @ W[0], X @ W[1], X @ W[2], allowed=al.masks.causal(8))
    wrong = _cached_decode_numpy(X, *W, [5, 3], mask=lambda T, S, off: np.tril(np.ones((T, S), bool)))
    assert np.abs(wrong[5:] - full[5:]).max() > 1e-3
    assert al.masks.causal(1, 9).all()                   # a single new token reads every cached key


def test_kv_cache_flops_match_closed_forms():
    n, d, H = 10, 16, 2
    mha = ops.MultiHeadAttention(d, H).eval()
    x = torch.randn(1, n, d)
    with torch.no_grad(), FlopCounterMode(display=False) as no_cache:
        for t in range(1, n + 1):
            mha(x[:, :t], allowed=al.masks.causal(t), impl="naive")
    assert no_cache.get_total_flops() == sum(8 * t * d * d + 4 * t * t * d for t in range(1, n + 1))
    split = lambda t: t.view(1, -1, H, d // H).transpose(1, 2)
    K = V = None
    with torch.no_grad(), FlopCounterMode(display=False) as cached:
        for t in range(n):
            xt = x[:, t:t + 1]
            q, k_new, v_new = split(mha.w_q(xt)), split(mha.w_k(xt)), split(mha.w_v(xt))
            K = k_new if K is None else torch.cat([K, k_new], dim=-2)
            V = v_new if V is None else torch.cat([V, v_new], dim=-2)
            o = ops.attention(q, K, V, impl="naive")
            mha.w_o(o.transpose(1, 2).reshape(1, 1, d))
    assert cached.get_total_flops() == sum(8 * d * d + 4 * (t + 1) * d for t in range(n))


# ----------------------------------------------------------------------------- permutation equivariance

def _mha_numpy(x, weights, allowed=None, query_valid=None, H=2):
    return al.multi_head_attention(x, x, *weights, n_heads=H, allowed=allowed, query_valid=query_valid)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_permutation_equivariance_with_and_without_permuted_mask(seed):
    r = np.random.default_rng(seed)
    T, d = 6, 4
    x = r.standard_normal((T, d))
    weights = [r.standard_normal((d, d)) for _ in range(4)]
    perm = r.permutation(T)
    np.testing.assert_allclose(_mha_numpy(x[perm], weights), _mha_numpy(x, weights)[perm], atol=1e-12)
    allowed = r.random((T, T)) < 0.5
    allowed[np.arange(T), r.integers(0, T, T)] = True              # every query may read something
    valid = r.random(T) < 0.8
    y = _mha_numpy(x, weights, allowed, valid)
    y_perm = _mha_numpy(x[perm], weights, allowed[perm][:, perm], valid[perm])
    np.testing.assert_allclose(y_perm, y[perm], atol=1e-12)


def test_permutation_equivariance_torch_module():
    torch.manual_seed(0)
    mha = ops.MultiHeadAttention(8, 2).double().eval()
    x = torch.randn(1, 5, 8, dtype=torch.float64)
    perm = torch.tensor([3, 0, 4, 1, 2])
    with torch.no_grad():
        assert torch.allclose(mha(x[:, perm])[0], mha(x)[0][:, perm], atol=1e-13)


def test_causal_mask_breaks_equivariance():
    r = np.random.default_rng(1)
    T, d = 5, 4
    x = r.standard_normal((T, d))
    weights = [r.standard_normal((d, d)) for _ in range(4)]
    perm = np.array([4, 3, 2, 1, 0])
    causal = al.masks.causal(T)
    assert not np.array_equal(causal[perm][:, perm], causal)
    broken = _mha_numpy(x[perm], weights, causal) - _mha_numpy(x, weights, causal)[perm]
    assert np.abs(broken).max() > 1e-3
    kept = _mha_numpy(x[perm], weights, causal[perm][:, perm]) - _mha_numpy(x, weights, causal)[perm]
    assert np.abs(kept).max() < 1e-12


def test_causal_mask_reveals_position_without_positional_signal():
    """Start token b then identical tokens: weight on b is 1 / (1 + i e^{1/sqrt 2})."""
    T = 5
    X = [[0, 1]] + [[1, 0]] * (T - 1)
    _, A = al.exact.attention(X, X, X, allowed=al.masks.causal(T))
    for i in range(1, T):
        assert sp.simplify(A[i, 0] - 1 / (1 + i * sp.exp(1 / sp.sqrt(2)))) == 0
    Xn = np.array(X, float)
    no_mask = al.attention(Xn, Xn, Xn)
    assert np.ptp(no_mask[1:], axis=0).max() < 1e-15                 # identical without the mask


# ----------------------------------------------------------------------------- weights vs contributions

def test_identical_values_make_weights_irrelevant():
    r = np.random.default_rng(2)
    v = np.tile(r.standard_normal((1, 3)), (6, 1))
    k = r.standard_normal((6, 4))
    for q in (10 * k[[1]], 0.01 * k[[1]], r.standard_normal((1, 4))):
        np.testing.assert_allclose(al.attention(q, k, v)[0], v[0], rtol=1e-13)
    dq, _, _ = al.grad.attention_backward(10 * k[[1]], k, v, np.ones((1, 3)))
    assert np.abs(dq).max() < 1e-13


def test_large_weight_on_small_value_contributes_little():
    u1, u2 = sp.symbols("u1 u2", real=True)
    w = [sp.exp(u1) / (sp.exp(u1) + sp.exp(u2)), sp.exp(u2) / (sp.exp(u1) + sp.exp(u2))]
    w = [sp.simplify(x.subs({u1: sp.log(9), u2: 0})) for x in w]
    assert w == [sp.Rational(9, 10), sp.Rational(1, 10)]
    c1 = [w[0] * x for x in (sp.Rational(1, 100), 0)]
    c2 = [w[1] * x for x in (4, 3)]
    assert sp.sqrt(sum(x**2 for x in c1)) == sp.Rational(9, 1000)
    assert sp.sqrt(sum(x**2 for x in c2)) == sp.Rational(1, 2)


def test_source_000_exercise_53_ablation_numbers():
    """Printed in the source: (r, s, r) = (.401112, .197776, .401112); outputs after zeroing v3."""
    X = np.array([[1, 0], [0, 1], [1, 1]], float)
    V = np.array([[1, 0], [0, 2], [1, 2]], float)
    o, a = al.attention(X, X, V, return_weights=True)
    np.testing.assert_allclose(a[0], [0.401112, 0.197776, 0.401112], atol=5e-7)
    np.testing.assert_allclose(o[0], [0.802224, 1.197776], atol=5e-7)
    V0 = V.copy()
    V0[2] = 0
    np.testing.assert_allclose(al.attention(X, X, V0)[0], [0.401112, 0.395552], atol=5e-7)
    np.testing.assert_allclose(o[0] - al.attention(X, X, V0)[0], a[0, 2] * V[2], atol=1e-14)


def test_source_000_exercise_58_counterexamples():
    keys, vals = np.array([[0.0], [1.0]]), np.array([[0.0], [1.0]])
    out0 = al.attention(np.array([[0.0]]), keys, vals, scale=1.0)[0, 0]
    out1 = al.attention(np.array([[1.0]]), keys, vals, scale=1.0)[0, 0]
    assert out0 == pytest.approx(0.5) and out1 == pytest.approx(np.e / (1 + np.e))


def test_heads_are_summed_through_w_o():
    r = np.random.default_rng(3)
    T, d, H = 4, 6, 3
    x = r.standard_normal((T, d))
    w_q, w_k, w_v, w_o = (r.standard_normal((d, d)) for _ in range(4))
    y = al.multi_head_attention(x, x, w_q, w_k, w_v, w_o, n_heads=H)
    d_k = d // H
    total = np.zeros_like(y)
    for h in range(H):
        cols = slice(h * d_k, (h + 1) * d_k)
        o_h = al.attention(x @ w_q[:, cols], x @ w_k[:, cols], x @ w_v[:, cols])
        total += o_h @ w_o[cols]
    np.testing.assert_allclose(total, y, atol=1e-12)


# ----------------------------------------------------------------------------- the recompute trade

@pytest.mark.parametrize("causal", [False, True])
def test_chunked_backward_does_five_products_where_naive_does_four(causal):
    """FlopCounterMode: both forwards do 2 products; the naive backward 4, the recomputing one 5."""
    T = S = 64
    d = 8
    q, k, v = (torch.randn(1, 2, n, d, dtype=torch.float64, requires_grad=True) for n in (T, S, S))
    allowed = torch.ones(T, S, dtype=torch.bool).tril() if causal else None
    counts = {}
    for impl in ("naive", "chunked"):
        with FlopCounterMode(display=False) as counter:
            if impl == "chunked":       # blocks of 1 x 1 compute exactly the allowed pairs, nothing more
                out = ops.chunked_attention(q, k, v, causal=causal, block_q=1, block_k=1 if causal else S)
            else:
                out = ops.attention(q, k, v, allowed=allowed, impl="naive")
            forward = counter.get_total_flops()
            out.backward(torch.ones_like(out))
        counts[impl] = (forward, counter.get_total_flops() - forward)
    full = 2 * 2 * T * S * d                                   # one product over all pairs, 2 heads
    assert counts["naive"] == (2 * full, 4 * full)
    pairs = T * (T + 1) // 2 if causal else T * S
    one = 2 * 2 * pairs * d                                    # one product over the computed pairs
    assert counts["chunked"] == (2 * one, 5 * one)
