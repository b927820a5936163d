"""Hypothesis property tests of the NumPy reference: shapes, masks, offsets, head groupings, dtypes."""
import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import attnlab as al

SETTINGS = settings(max_examples=40, deadline=None)


@st.composite
def problem(draw):
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    T, S = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    dk, dv = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    seed = draw(st.integers(0, 2**16))
    r = np.random.default_rng(seed)
    q, k, v = (r.normal(size=batch + s).astype(dtype) for s in ((T, dk), (S, dk), (S, dv)))
    kind = draw(st.sampled_from(["none", "causal", "window", "padding", "documents"]))
    offset = draw(st.integers(0, 4))
    if kind == "none":
        allowed = None
    elif kind == "causal":
        allowed = al.masks.causal(T, S, offset=max(S - T, 0) + offset)
    elif kind == "window":
        allowed = al.masks.sliding_window(T, draw(st.integers(1, 4)), S, offset=offset)
    elif kind == "padding":
        allowed = np.arange(S) < draw(st.integers(1, S))          # (S,) broadcasts over queries
    else:
        ids = np.sort(r.integers(0, 3, size=max(T, S)))
        allowed = ids[:T, None] == ids[None, :S]
        allowed[:, 0] = True                                       # every query keeps a key
    # queries that may read no key (a window past the last key) are padding queries
    valid = None if allowed is None else np.broadcast_to(allowed, (T, S)).any(-1)
    return q, k, v, allowed, valid, dtype


@SETTINGS
@given(problem())
def test_rows_sum_to_one_and_forbidden_weights_are_zero(p):
    q, k, v, allowed, valid, dtype = p
    out, w = al.attention(q, k, v, allowed=allowed, query_valid=valid, return_weights=True)
    assert out.shape == np.broadcast_shapes(q.shape[:-2], k.shape[:-2]) + (q.shape[-2], v.shape[-1])
    live = np.ones(q.shape[-2], bool) if valid is None else valid
    np.testing.assert_allclose(w.sum(-1)[..., live], 1.0, rtol=1e-5 if dtype == np.float32 else 1e-12)
    assert (w[..., ~live, :] == 0).all() and (out[..., ~live, :] == 0).all()
    if allowed is not None:
        assert (w[..., ~np.broadcast_to(allowed, w.shape[-2:])] == 0).all()


@SETTINGS
@given(problem())
def test_matches_sdpa(p):
    q, k, v, allowed, valid, dtype = p
    t = lambda a: torch.from_numpy(np.array(a))
    mask = None if allowed is None else t(np.broadcast_to(allowed, (q.shape[-2], k.shape[-2])))
    ref = F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=mask).numpy()
    live = np.ones(q.shape[-2], bool) if valid is None else valid
    tol = 2e-5 if dtype == np.float32 else 1e-12
    ours = al.attention(q, k, v, allowed=allowed, query_valid=valid)
    np.testing.assert_allclose(ours[..., live, :], ref[..., live, :], atol=tol, rtol=tol)


@SETTINGS
@given(T=st.integers(2, 7), cut=st.integers(1, 6), seed=st.integers(0, 1000), offset=st.integers(0, 3))
def test_no_future_leakage_with_offsets(T, cut, seed, offset):
    cut = min(cut, T - 1)
    r = np.random.default_rng(seed)
    S = T + offset                                   # offset cached positions before the queries
    kv = r.normal(size=(S, 3))
    qx = r.normal(size=(T, 3))
    allowed = al.masks.causal(T, S)
    base = al.attention(qx, kv, kv, allowed=allowed)
    kv2 = kv.copy()
    kv2[offset + cut:] += 5.0                        # change keys at absolute positions >= offset + cut
    assert np.array_equal(base[:cut], al.attention(qx, kv2, kv2, allowed=allowed)[:cut])


@SETTINGS
@given(H_kv=st.sampled_from([1, 2, 3]), r_=st.integers(1, 3), T=st.integers(1, 5), seed=st.integers(0, 999))
def test_gqa_equals_mha_with_repeated_kv_weights(H_kv, r_, T, seed):
    H, d_k, d = H_kv * r_, 2, 5
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(T, d))
    wq, wk, wv = rng.normal(size=(d, H * d_k)), rng.normal(size=(d, H_kv * d_k)), rng.normal(size=(d, H_kv * d_k))
    wo = rng.normal(size=(H * d_k, d))
    gqa = al.multi_head_attention(x, x, wq, wk, wv, wo, n_heads=H, n_kv_heads=H_kv)
    # MHA whose head h carries a copy of KV head h // r_: the explicit head map, built independently
    idx = np.concatenate([np.arange(h // r_ * d_k, (h // r_ + 1) * d_k) for h in range(H)])
    mha = al.multi_head_attention(x, x, wq, wk[:, idx], wv[:, idx], wo, n_heads=H)
    np.testing.assert_allclose(gqa, mha, atol=1e-12)


@SETTINGS
@given(T=st.integers(1, 7), seed=st.integers(0, 999))
def test_permutation_equivariance_with_permuted_mask(T, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(T, 3))
    allowed = rng.random((T, T)) < 0.6
    allowed[np.arange(T), np.arange(T)] = True
    p = rng.permutation(T)
    np.testing.assert_allclose(al.attention(x[p], x[p], x[p], allowed=allowed[np.ix_(p, p)]),
                               al.attention(x, x, x, allowed=allowed)[p], atol=1e-13)
