"""attnlab.torch_ops.attention: every impl against torch's own SDPA, invariants, bad input."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.attention.bias import causal_lower_right

import attnlab as al
from attnlab.errors import AttentionInputError, EmptyVisibilityError
from attnlab.torch_ops import attention, default_device
from attnlab.torch_ops.attention import _structural_causal

IMPLS = ["naive", "sdpa", "chunked", "auto"]
DTYPES = [torch.float32, torch.float64]
TOL = {torch.float32: dict(atol=2e-5, rtol=1e-4), torch.float64: dict(atol=1e-12, rtol=1e-10)}


@pytest.fixture(autouse=True, scope="module")
def _one_thread(torch_one_thread):
    """Every test in this module runs torch on one thread (see conftest)."""


def qkv(batch, T, S, d_k=8, d_v=5, dtype=torch.float64, device="cpu", seed=0, grad=False):
    """Random q (*batch, T, d_k), k (*batch, S, d_k), v (*batch, S, d_v)."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*batch, n, d, generator=g, dtype=dtype).to(device).requires_grad_(grad)
            for n, d in ((T, d_k), (S, d_k), (S, d_v))]


def tril(T, S, device="cpu"):
    """Bottom-right aligned causal mask, allowed[i, j] = j <= i + S - T (built without attnlab)."""
    return torch.ones(T, S, dtype=torch.bool, device=device).tril(S - T)


def random_allowed(shape, seed=0, device="cpu"):
    """Random bool mask whose every row allows at least one key."""
    g = torch.Generator().manual_seed(seed)
    m = torch.rand(shape, generator=g) < 0.5
    m.scatter_(-1, torch.randint(shape[-1], shape[:-1] + (1,), generator=g), True)
    return m.to(device)


def test_default_device_prefers_cuda_then_mps_then_cpu():
    d = default_device()
    assert isinstance(d, torch.device)
    if torch.cuda.is_available():
        assert d.type == "cuda"
    elif not torch.backends.mps.is_available():
        assert d.type == "cpu"
    assert torch.ones(2, device=d).sum().item() == 2


CASES = [(impl, kind) for impl in IMPLS for kind in ("none", "causal", "causal_rect", "random")
         if not (impl == "chunked" and kind == "random")]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("impl,kind", CASES)
def test_matches_sdpa(impl, kind, dtype, device):
    T, S = 6, (9 if kind == "causal_rect" else 6)
    q, k, v = qkv((2, 3), T, S, dtype=dtype, device=device)
    mask = {"none": None, "causal": tril(T, S, device), "causal_rect": tril(T, S, device),
            "random": random_allowed((2, 1, T, S), device=device)}[kind]
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(attention(q, k, v, allowed=mask, impl=impl), expected, **TOL[dtype])


@pytest.mark.parametrize("impl", IMPLS)
def test_gradients_match_sdpa(impl, device):
    q, k, v = qkv((2,), 5, 7, device=device, grad=True)
    mask = tril(5, 7, device)
    grad_out = torch.randn(2, 5, 5, dtype=torch.float64, device=device)
    ours = torch.autograd.grad(attention(q, k, v, allowed=mask, impl=impl), (q, k, v), grad_out)
    ref = torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, attn_mask=mask), (q, k, v), grad_out)
    for a, b in zip(ours, ref):
        torch.testing.assert_close(a, b, **TOL[torch.float64])


@pytest.mark.parametrize("impl", IMPLS)
def test_shared_kv_head_broadcasts(impl, device):
    """MQA by broadcasting: k and v with one head serve all query heads."""
    q, _, _ = qkv((2, 4), 5, 5, device=device)
    _, k, v = qkv((2, 1), 5, 5, device=device, seed=1)
    expected = F.scaled_dot_product_attention(q, k.expand(2, 4, 5, 8), v.expand(2, 4, 5, 5), is_causal=True)
    torch.testing.assert_close(attention(q, k, v, allowed=tril(5, 5, device), impl=impl), expected)


@pytest.mark.parametrize("impl", IMPLS)
def test_grouped_heads_match_sdpa_enable_gqa(impl, device):
    """Repeating KV head g for the query heads of its group (h // r == g) is SDPA's GQA."""
    q, _, _ = qkv((2, 6), 4, 7, device=device)
    _, k, v = qkv((2, 2), 4, 7, device=device, seed=1)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=tril(4, 7, device), enable_gqa=True)
    got = attention(q, k.repeat_interleave(3, dim=-3), v.repeat_interleave(3, dim=-3), allowed=tril(4, 7, device),
                    impl=impl)
    torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("impl", ["naive", "sdpa", "auto"])
def test_matches_numpy_reference_with_padding_rows(impl, device):
    q, k, v = qkv((2,), 5, 6, device=device)
    allowed = random_allowed((2, 5, 6), seed=3)
    allowed[0, 1] = False                                   # a padding query that may read nothing
    valid = torch.ones(2, 5, dtype=torch.bool)
    valid[0, 1] = valid[1, 4] = False
    expected = al.attention(*(x.cpu().numpy() for x in (q, k, v)), allowed=allowed.numpy(), query_valid=valid.numpy())
    got = attention(q, k, v, allowed=allowed, query_valid=valid, impl=impl)
    np.testing.assert_allclose(got.cpu().numpy(), expected, atol=1e-12)


def test_weights_rows_sum_to_one_and_forbidden_are_exactly_zero(device):
    q, k, v = qkv((3,), 6, 7, dtype=torch.float32, device=device)
    allowed = random_allowed((3, 6, 7), device=device)
    valid = torch.tensor([True, True, False, True, True, False], device=device)
    out, w = attention(q, k, v, allowed=allowed, query_valid=valid, return_weights=True)
    assert w.shape == (3, 6, 7)
    torch.testing.assert_close(w[:, valid].sum(-1), torch.ones(3, 4, device=device))
    assert torch.all(w[~allowed] == 0)                      # exactly zero, not small
    assert torch.all(w[:, ~valid] == 0) and torch.all(out[:, ~valid] == 0)
    torch.testing.assert_close(out, w @ v)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("T,S", [(8, 8), (5, 9)])
def test_no_future_leakage(impl, T, S, device):
    """Changing a future query, key or value leaves every earlier output bit-identical."""
    q, k, v = qkv((2, 3), T, S, dtype=torch.float32, device=device)
    t = 3                                                   # queries 0..t keep their outputs
    q2, k2, v2 = q.clone(), k.clone(), v.clone()
    q2[..., t + 1:, :] += 5
    k2[..., t + 1 + S - T:, :] -= 7                         # keys after query t's absolute position
    v2[..., t + 1 + S - T:, :] *= 3
    before = attention(q, k, v, allowed=tril(T, S, device), impl=impl)
    after = attention(q2, k2, v2, allowed=tril(T, S, device), impl=impl)
    assert torch.equal(before[..., :t + 1, :], after[..., :t + 1, :])
    assert not torch.equal(before[..., t + 1:, :], after[..., t + 1:, :])


@pytest.mark.parametrize("impl", IMPLS)
def test_padding_queries_give_zero_output_and_zero_gradient(impl, device):
    q, k, v = qkv((2,), 5, 6, device=device, grad=True)
    if impl == "chunked":
        allowed = tril(5, 6, device)
    else:
        allowed = random_allowed((2, 5, 6), device=device)
        allowed[0, 1] = False                               # fully masked, but a padding query
    valid = torch.ones(2, 5, dtype=torch.bool, device=device)
    valid[0, 1] = valid[1, 3] = False
    grad_out = torch.randn(2, 5, 5, dtype=torch.float64, device=device)
    out = attention(q, k, v, allowed=allowed, query_valid=valid, impl=impl)
    assert torch.all(out[~valid] == 0) and torch.isfinite(out).all()
    grads = torch.autograd.grad(out, (q, k, v), grad_out)
    assert torch.all(grads[0][~valid] == 0)
    # reference: SDPA on a mask where padding rows read anything, multiplied by 0 -> no contribution
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed | ~valid[..., None]) * valid[..., None]
    for a, b in zip(grads, torch.autograd.grad(ref, (q, k, v), grad_out)):
        assert torch.isfinite(a).all()
        torch.testing.assert_close(a, b, **TOL[torch.float64])


@pytest.mark.parametrize("impl", IMPLS)
def test_valid_query_with_no_key_raises(impl, device):
    q, k, v = qkv((2,), 6, 4, device=device)
    allowed = tril(6, 4, device)                            # T > S: queries 0 and 1 see no key
    with pytest.raises(EmptyVisibilityError, match=r"index \(0, 0\)"):
        attention(q, k, v, allowed=allowed, impl=impl)
    if impl != "chunked":
        allowed = random_allowed((2, 6, 4), device=device)
        allowed[1, 2] = False
        with pytest.raises(EmptyVisibilityError, match=r"index \(1, 2\)"):
            attention(q, k, v, allowed=allowed, impl=impl)
        valid = torch.ones(2, 6, dtype=torch.bool, device=device)
        valid[1, 2] = False                                 # the same row as padding is fine
        assert torch.all(attention(q, k, v, allowed=allowed, query_valid=valid, impl=impl)[1, 2] == 0)


def test_dropout_masks_weights_and_backward_reuses_the_mask(device):
    q, k, v = qkv((2,), 6, 6, device=device, grad=True)
    torch.manual_seed(0)
    out, w = attention(q, k, v, dropout_p=0.5, return_weights=True)
    _, plain = attention(q, k, v, return_weights=True)
    kept = w != 0
    assert 0 < kept.float().mean() < 1
    torch.testing.assert_close(w[kept], plain[kept] / 0.5)  # survivors scaled by 1 / (1 - p)
    torch.testing.assert_close(out, w @ v)
    grad_out = torch.randn_like(out)
    (dv,) = torch.autograd.grad(out, (v,), grad_out)
    torch.testing.assert_close(dv, w.transpose(-2, -1) @ grad_out)   # the same dropped weights


@pytest.mark.parametrize("impl", ["sdpa", "auto"])
def test_dropout_on_the_fast_path_is_seeded_and_finite(impl, device):
    q, k, v = qkv((2, 2), 6, 6, device=device)
    torch.manual_seed(1)
    a = attention(q, k, v, allowed=tril(6, 6, device), dropout_p=0.3, impl=impl)
    torch.manual_seed(1)
    b = attention(q, k, v, allowed=tril(6, 6, device), dropout_p=0.3, impl=impl)
    assert torch.equal(a, b) and torch.isfinite(a).all()
    assert not torch.allclose(a, attention(q, k, v, allowed=tril(6, 6, device), impl=impl))


def test_structural_causal_recognises_only_the_bottom_right_triangle():
    assert _structural_causal(tril(6, 6), 6, 6) == "is_causal"
    assert _structural_causal(tril(6, 6)[None, None], 6, 6) == "is_causal"
    assert _structural_causal(tril(3, 7), 3, 7) == "lower_right"
    assert _structural_causal(torch.ones(3, 7, dtype=torch.bool).tril(), 3, 7) is None   # top-left
    assert _structural_causal(tril(7, 3), 7, 3) is None     # T > S: first rows see nothing
    assert _structural_causal(torch.ones(6, 6, dtype=torch.bool), 6, 6) is None
    assert _structural_causal(tril(6, 6).expand(2, 6, 6), 6, 6) is None   # batched masks stay dense
    off_by_one = tril(6, 6).clone()
    off_by_one[5, 0] = False
    assert _structural_causal(off_by_one, 6, 6) is None
    assert _structural_causal(torch.from_numpy(al.masks.causal(4, 9)), 4, 9) == "lower_right"


@pytest.mark.parametrize("T,S", [(6, 6), (3, 7)])
def test_auto_hands_causal_masks_to_sdpa_as_structure(T, S, device):
    """auto with a causal bool mask gives bit for bit what SDPA's structural causal form gives."""
    q, k, v = qkv((1, 2), T, S, dtype=torch.float32, device=device)
    structural = (F.scaled_dot_product_attention(q, k, v, is_causal=True) if T == S
                  else F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(T, S)))
    assert torch.equal(attention(q, k, v, allowed=tril(T, S, device)), structural)
    assert torch.equal(attention(q, k, v, allowed=al.masks.causal(T, S)), structural)   # NumPy masks too


def test_numpy_masks_are_accepted(device):
    q, k, v = qkv((2,), 4, 5, device=device)
    allowed, valid = random_allowed((2, 4, 5)), torch.tensor([True, False, True, True])
    torch.testing.assert_close(attention(q, k, v, allowed=allowed.numpy(), query_valid=valid.numpy()),
                               attention(q, k, v, allowed=allowed.to(device), query_valid=valid.to(device)))


def _bad_cases():
    q, k, v = qkv((2,), 4, 5)
    nan_q = q.clone()
    nan_q[1, 2, 3] = float("nan")
    inf_v = v.clone()
    inf_v[0, 0, 0] = float("inf")
    yield dict(q=q.long()), AttentionInputError, "q must be a floating-point tensor"
    yield dict(k=k.float()), AttentionInputError, "must share one dtype"
    yield dict(q=q.numpy()), AttentionInputError, "q must be a torch.Tensor"
    yield dict(q=q[0, 0]), AttentionInputError, "q must have at least 2 axes"
    yield dict(k=k[..., :3]), AttentionInputError, "share the last axis d_k"
    yield dict(v=v[:, :4]), AttentionInputError, "same number of positions S"
    yield dict(k=torch.cat([k, k, k])), AttentionInputError, "do not broadcast"
    yield dict(q=nan_q), AttentionInputError, r"q contains a non-finite value .* index \(1, 2, 3\)"
    yield dict(v=inf_v), AttentionInputError, "v contains a non-finite value"
    yield dict(allowed=torch.ones(4, 5)), AttentionInputError, "allowed must be a boolean"
    yield dict(allowed=np.zeros((4, 5))), AttentionInputError, "allowed must be a boolean"
    yield dict(allowed=torch.ones(5, 4, dtype=torch.bool)), AttentionInputError, r"allowed of shape \(5, 4\)"
    yield dict(allowed=torch.ones(3, 4, 5, dtype=torch.bool)), AttentionInputError, "does not broadcast to"
    yield dict(allowed=[[True]]), AttentionInputError, "allowed must be a boolean torch tensor or NumPy"
    yield dict(query_valid=torch.ones(4)), AttentionInputError, "query_valid must be a boolean"
    yield dict(query_valid=torch.ones(5, dtype=torch.bool)), AttentionInputError, r"query_valid of shape \(5\) does not"
    yield dict(scale=-1.0), AttentionInputError, "scale must be a finite positive"
    yield dict(impl="flash"), AttentionInputError, "impl must be one of"
    yield dict(dropout_p=1.0), AttentionInputError, "dropout_p must be a probability"
    yield dict(impl="chunked", allowed=random_allowed((4, 5))), AttentionInputError, "impl='chunked' handles"
    yield dict(impl="chunked", dropout_p=0.1), AttentionInputError, "impl='chunked' has no dropout"
    yield dict(impl="sdpa", return_weights=True), AttentionInputError, "return_weights=True needs the weights"


@pytest.mark.parametrize("kwargs,error,message", list(_bad_cases()))
def test_bad_input_is_refused_with_a_message(kwargs, error, message):
    q, k, v = qkv((2,), 4, 5)
    args = {"q": q, "k": k, "v": v, **kwargs}
    with pytest.raises(error, match=message):
        attention(**args)


@settings(max_examples=25, deadline=None)
@given(batch=st.lists(st.integers(1, 3), max_size=2), T=st.integers(1, 7), extra=st.integers(0, 4),
       causal=st.booleans(), impl=st.sampled_from(IMPLS), dtype=st.sampled_from(DTYPES),
       seed=st.integers(0, 2**16))
def test_property_every_impl_matches_sdpa(batch, T, extra, causal, impl, dtype, seed):
    S = T + extra
    q, k, v = qkv(tuple(batch), T, S, d_k=4, d_v=3, dtype=dtype, seed=seed)
    if causal or impl == "chunked":
        mask = tril(T, S)
    else:
        mask = random_allowed(tuple(batch) + (T, S), seed=seed)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(attention(q, k, v, allowed=mask, impl=impl), expected, **TOL[dtype])
