"""attnlab.kernels.split_kv_decode: the Triton split-KV (Flash-Decoding) kernels give flash_attention's
numbers for any number of splits, empty and fully masked chunks included, with GQA rows packed per key head.
"""
import importlib.util

import pytest

if importlib.util.find_spec("triton") is None:
    pytest.skip("attnlab.kernels needs Triton: pip install -e .[kernels]", allow_module_level=True)

import torch  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from attnlab import kernels  # noqa: E402
from attnlab.errors import AttentionInputError  # noqa: E402
from attnlab.torch_ops import split_kv_attention  # noqa: E402

from .bounds import allowed_mask  # noqa: E402

DEVICE = "cpu" if kernels.interpreted() else "cuda"
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in exp2:RuntimeWarning")


def inputs(B, H, H_kv, T, S, d, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, T, d, generator=g)
    k, v = (torch.randn(B, H_kv, S, d, generator=g) for _ in range(2))
    return [x.to(DEVICE) for x in (q, k, v)]


def reference(q, k, v, causal, offset):
    """float64 split_kv_attention with one split (plain attention), GQA by repeating the key heads."""
    group = q.shape[1] // k.shape[1]
    T, S = q.shape[-2], k.shape[-2]
    k, v = (x.double().cpu().repeat_interleave(group, dim=1) for x in (k, v))  # (B, H, S, d)
    allowed = allowed_mask(T, S, causal, offset)
    return split_kv_attention(q.double().cpu(), k, v, 1, allowed=allowed)


def assert_close_to_reference(out, lse, expected_out, expected_lse):
    # float32 accumulation over S <= 300 keys: gamma(S) ~ 4e-5 times the magnitudes (see bounds.py)
    torch.testing.assert_close(out.double().cpu(), expected_out, atol=5e-5, rtol=5e-5)
    torch.testing.assert_close(lse.double().cpu(), expected_lse, atol=5e-5, rtol=5e-5)


@pytest.mark.parametrize("n_splits", [1, 3, 13])
def test_any_number_of_splits_gives_attention(n_splits):
    """S = 300 keys in blocks of 32: 13 splits of one block leave 3 chunks empty, and the causal offset
    120 hides 6 more from the query."""
    q, k, v = inputs(2, 4, 2, 1, 300, 32, seed=n_splits)
    with torch.no_grad():
        out, lse = kernels.split_kv_decode(q, k, v, n_splits, causal=True, offset=120, block_k=32)
    assert_close_to_reference(out, lse, *reference(q, k, v, True, 120))


@settings(max_examples=10, deadline=None)
@given(S=st.integers(1, 150), n_splits=st.integers(1, 12), T=st.integers(1, 3), group=st.sampled_from([1, 2, 4]),
       causal=st.booleans(), offset=st.integers(-2, 150), seed=st.integers(0, 2**16))
def test_property_equals_attention(S, n_splits, T, group, causal, offset, seed):
    q, k, v = inputs(1, 2 * group, 2, T, S, 16, seed=seed)
    offset = offset if causal else None
    with torch.no_grad():
        out, lse = kernels.split_kv_decode(q, k, v, n_splits, causal=causal, offset=offset, block_k=16)
    expected_out, expected_lse = reference(q, k, v, causal, offset) if not causal or offset >= 0 else (None, None)
    if expected_out is None:                                           # query 0 (offset < 0) sees no key
        assert not out[..., 0, :].any() and bool(torch.isneginf(lse[..., 0]).all())
        return
    assert_close_to_reference(out, lse, expected_out, expected_lse)


def test_agrees_with_flash_attention_on_every_row():
    q, k, v = inputs(1, 2, 2, 4, 200, 64, seed=3)
    with torch.no_grad():
        split = kernels.split_kv_decode(q, k, v, 7, causal=True, offset=-2, block_k=16)
        flash = kernels.flash_attention_lse(q, k, v, causal=True, offset=-2, block_q=16, block_k=16)
    torch.testing.assert_close(split[0], flash[0], atol=1e-6, rtol=1e-5)
    assert torch.equal(torch.isinf(split[1]), torch.isinf(flash[1]))            # rows 0, 1 see nothing


def test_refuses_autograd_and_bad_splits():
    q, k, v = inputs(1, 2, 2, 1, 20, 16)
    with pytest.raises(AttentionInputError, match="no backward"):
        kernels.split_kv_decode(q.requires_grad_(), k, v, 2)
    with torch.no_grad(), pytest.raises(AttentionInputError, match="n_splits must be a positive integer"):
        kernels.split_kv_decode(q, k, v, 0)
