"""attnlab.torch_ops.chunked_attention: exact, block-skipping, O(T) memory, correct gradients."""
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils._python_dispatch import TorchDispatchMode

from attnlab.errors import AttentionInputError, EmptyVisibilityError
from attnlab.torch_ops import attention, chunked_attention
from attnlab.torch_ops.chunked import BLOCK_Q


@pytest.fixture(autouse=True, scope="module")
def _one_thread(torch_one_thread):
    """Every test in this module runs torch on one thread (see conftest)."""


def qkv(batch_q, batch_kv, T, S, d=4, dtype=torch.float64, device="cpu", seed=0):
    """q (*batch_q, T, d), k and v (*batch_kv, S, d), all requiring grad."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*batch_q, T, d, generator=g, dtype=dtype)
    k, v = (torch.randn(*batch_kv, S, d, generator=g, dtype=dtype) for _ in range(2))
    return [x.to(device).requires_grad_() for x in (q, k, v)]


def naive(q, k, v, causal, offset=None):
    """The explicit path with allowed[i, j] = j <= i + offset built by torch.tril."""
    T, S = q.shape[-2], k.shape[-2]
    offset = S - T if offset is None else offset
    allowed = torch.ones(T, S, dtype=torch.bool, device=q.device).tril(offset) if causal else None
    return attention(q, k, v, allowed=allowed, impl="naive")


# (batch of q, batch of k/v, T, S, causal, offset, block_q, block_k)
CASES = [
    ((), (), 7, 7, True, None, 3, 2),            # sizes not divisible by the blocks
    ((2, 3), (2, 3), 5, 13, True, None, 4, 3),   # cached decoding: T < S, bottom-right
    ((2,), (2,), 1, 9, True, None, 4, 4),        # one new token reads the whole cache
    ((2,), (2,), 5, 9, True, 6, 2, 5),           # offset beyond S - T: the last rows see everything
    ((2,), (2,), 6, 6, True, 0, 1, 1),           # 1 x 1 blocks
    ((3,), (3,), 6, 6, True, 2, 4, 2),
    ((2, 3), (2, 1), 7, 11, False, None, 3, 4),  # non-causal, shared KV head broadcast
    ((), (), 5, 8, False, None, 64, 64),         # blocks larger than the sequence
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bq_shape,bkv_shape,T,S,causal,offset,block_q,block_k", CASES)
def test_matches_naive_values_and_gradients(bq_shape, bkv_shape, T, S, causal, offset, block_q, block_k, dtype,
                                            device):
    q, k, v = qkv(bq_shape, bkv_shape, T, S, dtype=dtype, device=device)
    got = chunked_attention(q, k, v, causal=causal, offset=offset, block_q=block_q, block_k=block_k)
    expected = naive(q, k, v, causal, offset)
    tol = dict(atol=1e-12, rtol=1e-10) if dtype == torch.float64 else dict(atol=2e-5, rtol=1e-4)
    torch.testing.assert_close(got, expected, **tol)
    grad_out = torch.randn_like(got)
    for a, b in zip(torch.autograd.grad(got, (q, k, v), grad_out), torch.autograd.grad(expected, (q, k, v), grad_out)):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, **tol)


@pytest.mark.parametrize("causal,offset", [(True, None), (True, 4), (False, None)])
def test_gradcheck_float64(causal, offset, device):
    q, k, v = qkv((2,), (2,), 5, 7, d=3, device=device)
    fn = lambda a, b, c: chunked_attention(a, b, c, causal=causal, offset=offset, block_q=2, block_k=3)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (q, k, v))


def test_default_blocks_span_several_blocks(device):
    T = BLOCK_Q * 2 + 37
    q, k, v = qkv((1,), (1,), T, T, device=device)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(chunked_attention(q, k, v, causal=True), expected, atol=1e-12, rtol=1e-10)


class _OpLog(TorchDispatchMode):
    """Watches every tensor operation: the largest tensor produced, and matrix-product flops."""

    def __init__(self):
        super().__init__()
        self.largest = self.matmul_flops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        if func in (torch.ops.aten.mm.default, torch.ops.aten.bmm.default):
            self.matmul_flops += 2 * out.numel() * args[0].shape[-1]
        elif func in (torch.ops.aten.baddbmm.default, torch.ops.aten.baddbmm.out):  # out += b1 @ b2
            self.matmul_flops += 2 * out.numel() * args[1].shape[-1]
        return out


@pytest.mark.parametrize("causal", [True, False])
def test_never_materialises_the_score_matrix(causal):
    B, H, T, d, block = 1, 2, 64, 4, 16
    q, k, v = qkv((B, H), (B, H), T, T, d=d)
    with _OpLog() as forward_and_backward:
        out = chunked_attention(q, k, v, causal=causal, block_q=block, block_k=block)
        out.sum().backward()
    assert forward_and_backward.largest <= B * H * block * block        # one block of scores
    assert forward_and_backward.largest < B * H * T * T // 8           # far from the T x S matrix
    with _OpLog() as explicit:
        naive(q, k, v, causal)
    assert explicit.largest >= B * H * T * T


def test_causal_skips_the_blocks_above_the_diagonal():
    q, k, v = qkv((1, 2), (1, 2), 128, 128, d=8)
    flops = {}
    for causal in (False, True):
        with _OpLog() as log:
            chunked_attention(q, k, v, causal=causal, block_q=16, block_k=16).sum().backward()
        flops[causal] = log.matmul_flops
    # 8 query blocks x 8 key blocks; causal computes 1 + 2 + ... + 8 = 36 of the 64
    assert flops[True] == pytest.approx(flops[False] * 36 / 64, rel=0.01)


def test_negative_offset_leaves_queries_blind():
    q, k, v = qkv((2,), (2,), 4, 6)
    with pytest.raises(EmptyVisibilityError, match=r"index \(0, 0\)"):
        chunked_attention(q, k, v, causal=True, offset=-2)


@pytest.mark.parametrize("kwargs,message", [
    (dict(block_q=0), "block_q must be a positive integer"),
    (dict(block_k=2.5), "block_k must be a positive integer"),
    (dict(offset=1), "offset=1 only applies with causal=True"),
    (dict(causal=True, offset=1.5), "offset must be an integer"),
    (dict(causal="yes"), "causal must be True or False"),
    (dict(scale=0), "scale must be a finite positive"),
])
def test_bad_arguments_are_refused(kwargs, message):
    q, k, v = qkv((), (), 4, 6)
    with pytest.raises(AttentionInputError, match=message):
        chunked_attention(q, k, v, **kwargs)


def test_bad_tensors_are_refused():
    q, k, v = qkv((), (), 4, 6)
    with pytest.raises(AttentionInputError, match="k must be a floating-point tensor"):
        chunked_attention(q, k.int(), v)
    with pytest.raises(AttentionInputError, match="share the last axis d_k"):
        chunked_attention(q, k[:, :3], v)
    with pytest.raises(AttentionInputError, match="q contains a non-finite"):
        chunked_attention(q.detach() / 0, k, v)


@settings(max_examples=30, deadline=None)
@given(batch=st.lists(st.integers(1, 3), max_size=2), T=st.integers(1, 9), extra=st.integers(0, 6),
       offset=st.integers(0, 12), causal=st.booleans(), block_q=st.integers(1, 5), block_k=st.integers(1, 5),
       dtype=st.sampled_from([torch.float32, torch.float64]), seed=st.integers(0, 2**16))
def test_property_matches_naive(batch, T, extra, offset, causal, block_q, block_k, dtype, seed):
    S = T + extra
    offset = offset if causal else None                    # any offset >= 0 leaves every row a key
    q, k, v = qkv(tuple(batch), tuple(batch), T, S, dtype=dtype, seed=seed)
    got = chunked_attention(q, k, v, causal=causal, offset=offset, block_q=block_q, block_k=block_k)
    tol = dict(atol=1e-12, rtol=1e-10) if dtype == torch.float64 else dict(atol=2e-5, rtol=1e-4)
    torch.testing.assert_close(got, naive(q, k, v, causal, offset), **tol)
