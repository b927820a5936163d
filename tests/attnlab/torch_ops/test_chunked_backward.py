"""attnlab.torch_ops.chunked_attention's backward in both loop orders (keys outer, FlashAttention-2's
default; queries outer): the same gradients as autograd through the explicit path, the same products.
"""
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from attnlab.errors import AttentionInputError
from attnlab.torch_ops import attention, chunked_attention

ORDERS = ["keys_outer", "queries_outer"]


@pytest.fixture(autouse=True, scope="module")
def _one_thread(torch_one_thread):
    """Every test in this module runs torch on one thread (see conftest)."""


def qkv(T, S, d=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(2, 3, n, d, generator=g, dtype=torch.float64, requires_grad=True) for n in (T, S, S)]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("T,S,causal,offset,block_q,block_k", [
    (7, 7, True, None, 3, 2), (5, 13, True, None, 4, 3), (1, 9, True, None, 4, 4), (5, 9, True, 6, 2, 5),
    (6, 6, True, 0, 1, 1), (7, 11, False, None, 3, 4), (5, 8, False, None, 64, 64), (9, 20, True, 2, 2, 3),
])
def test_gradients_match_autograd(order, T, S, causal, offset, block_q, block_k):
    q, k, v = qkv(T, S)
    got = chunked_attention(q, k, v, causal=causal, offset=offset, block_q=block_q, block_k=block_k,
                            backward_order=order)
    off = S - T if offset is None else offset
    allowed = torch.ones(T, S, dtype=torch.bool).tril(off) if causal else None
    expected = attention(q, k, v, allowed=allowed, impl="naive")
    g = torch.randn_like(got)
    for a, b in zip(torch.autograd.grad(got, (q, k, v), g), torch.autograd.grad(expected, (q, k, v), g)):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-10)


def test_both_orders_do_the_same_five_products():
    """Forward: Q K^T and P V. Backward: recompute Q K^T, then P^T dO, dO V^T, dS K, dS^T Q."""
    flops = {}
    for order in ORDERS:
        q, k, v = qkv(96, 80, d=16)
        with FlopCounterMode(display=False) as counter:
            out = chunked_attention(q, k, v, block_q=32, block_k=16, backward_order=order)
            forward = counter.get_total_flops()
            out.backward(torch.randn_like(out))
        flops[order] = (forward, counter.get_total_flops() - forward)
    one_product = 2 * 2 * 3 * 96 * 80 * 16
    assert flops["keys_outer"] == flops["queries_outer"] == (2 * one_product, 5 * one_product)


def test_unknown_order_is_refused():
    q, k, v = qkv(4, 4)
    with pytest.raises(AttentionInputError, match="backward_order must be one of"):
        chunked_attention(q, k, v, backward_order="diagonal")
