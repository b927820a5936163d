"""attnlab.torch_ops.split_kv_attention: partial results merged by log-sum-exp equal attention for any
split of the keys (hypothesis over split points, merge orders and masks), gradients included.
"""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab import masks
from attnlab.errors import AttentionInputError, EmptyVisibilityError
from attnlab.torch_ops import attention, merge_partials, partial_attention, split_kv_attention
from attnlab.torch_ops.split_kv import split_bounds


@pytest.fixture(autouse=True, scope="module")
def _one_thread(torch_one_thread):
    """Every test in this module runs torch on one thread (see conftest)."""


def qkv(batch, T, S, d=4, seed=0, requires_grad=False):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*batch, T, d, generator=g, dtype=torch.float64)
    k, v = (torch.randn(*batch, S, d, generator=g, dtype=torch.float64) for _ in range(2))
    return [x.requires_grad_(requires_grad) for x in (q, k, v)]


def lse_reference(q, k, allowed=None):
    """log sum_j exp(q_i.k_j / sqrt(d)) over the allowed keys, by torch.logsumexp."""
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if allowed is not None:
        scores = scores.masked_fill(~torch.as_tensor(allowed), float("-inf"))
    return torch.logsumexp(scores, dim=-1)


TIGHT = dict(atol=1e-12, rtol=1e-10)


@settings(max_examples=40, deadline=None)
@given(T=st.integers(1, 5), S=st.integers(1, 24), n_splits=st.integers(1, 30), causal=st.booleans(),
       offset=st.integers(0, 6), seed=st.integers(0, 2**16))
def test_equals_attention_for_any_number_of_splits(T, S, n_splits, causal, offset, seed):
    """Including n_splits > S (empty chunks) and causal chunks that a row cannot see."""
    q, k, v = qkv((2,), T, S, seed=seed)
    allowed = masks.causal(T, S, offset=min(offset, S - 1)) if causal else None
    out, lse = split_kv_attention(q, k, v, n_splits, allowed=allowed)
    torch.testing.assert_close(out, attention(q, k, v, allowed=allowed, impl="naive"), **TIGHT)
    torch.testing.assert_close(lse, lse_reference(q, k, allowed), **TIGHT)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), S=st.integers(1, 20), seed=st.integers(0, 2**16))
def test_any_split_points_and_any_merge_order(data, S, seed):
    """Chunks at arbitrary boundaries, some empty, merged in a random order and grouping."""
    q, k, v = qkv((3,), 2, S, seed=seed)
    cuts = sorted(data.draw(st.lists(st.integers(0, S), max_size=6)))
    bounds = [0, *cuts, S]
    visible = torch.rand(2, S, generator=torch.Generator().manual_seed(seed)) < 0.6
    visible[:, 0] = True                                                    # every row sees a key
    parts = [partial_attention(q, k[:, lo:hi], v[:, lo:hi], visible[:, lo:hi]) if hi > lo else None
             for lo, hi in zip(bounds[:-1], bounds[1:])]
    parts = [p for p in parts if p is not None]
    order = data.draw(st.permutations(range(len(parts))))
    split = data.draw(st.integers(1, len(parts)))
    first = merge_partials([parts[i][0] for i in order[:split]], [parts[i][1] for i in order[:split]])
    rest = [parts[i] for i in order[split:]]
    out, lse = merge_partials([first[0]] + [p[0] for p in rest], [first[1]] + [p[1] for p in rest])
    torch.testing.assert_close(out, attention(q, k, v, allowed=visible, impl="naive"), **TIGHT)
    torch.testing.assert_close(lse, lse_reference(q, k, visible), **TIGHT)


@pytest.mark.parametrize("n_splits", [1, 3, 50])
def test_gradients_equal_those_of_attention(n_splits):
    q, k, v = qkv((2, 2), 3, 17, seed=1, requires_grad=True)
    allowed = masks.causal(3, 17, offset=9)                                 # the last chunks are hidden
    out, lse = split_kv_attention(q, k, v, n_splits, allowed=allowed)
    g = torch.randn_like(out)
    ours = torch.autograd.grad((out * g).sum() + lse.sum(), (q, k, v))
    expected_out = attention(q, k, v, allowed=allowed, impl="naive")
    theirs = torch.autograd.grad((expected_out * g).sum() + lse_reference(q, k, allowed).sum(), (q, k, v))
    for a, b in zip(ours, theirs):
        assert bool(torch.isfinite(a).all())
        torch.testing.assert_close(a, b, **TIGHT)


def test_a_chunk_that_sees_nothing_is_zero_with_lse_minus_infinity():
    q, k, v = qkv((), 2, 6, seed=2, requires_grad=True)
    out, lse = partial_attention(q, k, v, allowed=torch.zeros(2, 6, dtype=torch.bool))
    assert not out.any() and bool(torch.isneginf(lse).all())
    out.sum().backward()
    assert not q.grad.any() and not k.grad.any()
    merged, merged_lse = merge_partials([out, out], [lse, lse])
    assert not merged.any() and bool(torch.isneginf(merged_lse).all())


def test_split_bounds_cover_the_keys_once():
    assert split_bounds(10, 3) == [0, 3, 6, 10]
    assert split_bounds(2, 4) == [0, 0, 1, 1, 2]                            # two empty chunks


def test_errors():
    q, k, v = qkv((), 2, 6)
    with pytest.raises(EmptyVisibilityError):
        split_kv_attention(q, k, v, 2, allowed=masks.causal(2, 6, offset=-1))
    with pytest.raises(AttentionInputError, match="n_splits must be a positive integer"):
        split_kv_attention(q, k, v, 0)
    with pytest.raises(AttentionInputError, match="as many partial outputs"):
        merge_partials([], [])
