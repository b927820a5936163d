"""attnlab.traffic: the bytes counted by TrafficCounter in chunked_attention's forward and in both orders of
its backward equal the closed-form formulas exactly; the MLA decode formulas; the counter's rules.
"""
import pytest
import sympy as sp
import torch

from attnlab import traffic
from attnlab.errors import AttentionInputError
from attnlab.torch_ops import chunked


@pytest.fixture(autouse=True, scope="module")
def _one_thread(torch_one_thread):
    """Every test in this module runs torch on one thread (see conftest)."""


def qkv(N, T, S, d, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, N, n, d, generator=g, dtype=torch.float64) for n in (T, S, S)]


def counted(fn, slow_bytes):
    with torch.no_grad(), traffic.TrafficCounter(slow_bytes) as counter:
        fn()
    return counter.total


# (T, S, causal, offset, block_q, block_k): slow memory is every tensor at least as large as the
# log-sum-exp (N T numbers); every block of scores, of K or V and every accumulator is smaller.
# In every case a key block is seen by at least two query blocks and a query block sees at least two key
# blocks, so no tile stays in fast memory from one turn of the outer loop to the next: the formulas assume
# none does (a kernel's programs share nothing). The square causal case cannot have both.
CASES = [(128, 160, False, None, 4, 16), (128, 160, False, None, 16, 4), (80, 160, True, None, 4, 16),
         (100, 160, True, 100, 16, 4), (96, 128, True, 64, 8, 8), (101, 131, False, None, 8, 8)]
N, D = 2, 4


@pytest.mark.parametrize("T,S,causal,offset,block_q,block_k", CASES)
def test_backward_traffic_of_both_orders_equals_the_formula(T, S, causal, offset, block_q, block_k):
    q, k, v = qkv(N, T, S, D)
    off = (S - T if offset is None else offset) if causal else 0
    out, lse = chunked._forward(q, k, v, 0.5, causal, off, block_q, block_k)
    d_out = torch.randn_like(out)
    slow = N * T * 8
    assert N * max(block_q, D) * max(block_k, D) * 8 < slow
    for order, backward in chunked.BACKWARD_ORDERS.items():
        measured = counted(lambda backward=backward: backward(q, k, v, out, lse, d_out, 0.5, causal, off, block_q,
                                                              block_k), slow)
        assert measured == traffic.tiled_backward_bytes(1, N, T, S, D, block_q=block_q, block_k=block_k,
                                                        causal=causal, offset=offset, order=order, itemsize=8)


@pytest.mark.parametrize("T,S,causal,offset,block_q,block_k", CASES)
def test_forward_traffic_is_the_formula_plus_two_copies(T, S, causal, offset, block_q, block_k):
    """Before its loop the forward scales Q once and lays K^T out contiguously: 2 (T + S) d_k numbers."""
    q, k, v = qkv(N, T, S, D)
    off = (S - T if offset is None else offset) if causal else 0
    measured = counted(lambda: chunked._forward(q, k, v, 0.5, causal, off, block_q, block_k), N * T * 8)
    formula = traffic.tiled_bytes(1, N, T, S, D, block_q=block_q, causal=causal, offset=offset, itemsize=8)
    assert measured - formula == 8 * N * 2 * (T + S) * D


def test_backward_formulas_in_closed_form_without_a_mask():
    B, H, T, S, d, bq, bk, n = sp.symbols("B H T S d b_q b_k n", positive=True, integer=True)
    keys_outer = n * B * H * (2 * T * d + T + T * d + 4 * S * d + (S / bk) * T * (4 * d + 2))
    queries_outer = n * B * H * (2 * T * d + T + 2 * S * d + T * (3 * d + 2) + (T / bq) * S * 6 * d)
    values = {B: 2, H: 3, T: 64, S: 96, d: 8, bq: 16, bk: 32, n: 2}
    assert traffic.tiled_backward_bytes(2, 3, 64, 96, 8, block_q=16, block_k=32, itemsize=2) == \
        keys_outer.subs(values)
    assert traffic.tiled_backward_bytes(2, 3, 64, 96, 8, block_q=16, block_k=32, order="queries_outer",
                                        itemsize=2) == queries_outer.subs(values)
    # at equal blocks and long sequences, keys outer moves (4 d + 2) / (6 d) of queries outer
    big = [traffic.tiled_backward_bytes(1, 1, 2**16, 2**16, 64, block_q=128, block_k=128, order=o)
           for o in ("keys_outer", "queries_outer")]
    assert big[0] / big[1] == pytest.approx((4 * 64 + 2) / (6 * 64), rel=0.01)


def test_causal_skips_blocks_in_both_orders():
    full, causal = (traffic.tiled_backward_bytes(1, 1, 4096, 4096, 64, causal=c) for c in (False, True))
    assert causal < 0.6 * full


def test_counter_rules():
    x, tile = torch.zeros(64, 64, dtype=torch.float64), torch.ones(8, 64, dtype=torch.float64)
    slow = tile.nbytes + 1                                                           # x is slow, tile fast
    assert counted(lambda: (x[:8].sum(), x[:8].t().sum()), slow) == tile.nbytes      # a transposed tile is held
    assert counted(lambda: x[:8].copy_(tile), slow) == tile.nbytes                   # copy_: written, not read
    assert counted(lambda: (torch.empty_like(x), x.new_empty(64, 64)), slow) == 0    # allocation moves nothing
    assert counted(lambda: torch.zeros_like(x), slow) == x.nbytes                    # zeroing writes


def test_mla_decode_formulas():
    B, H, S, dc, dr = 2, 128, 4096, 512, 64
    assert traffic.mla_decode_step_flops(B, H, S, dc, dr) == 2 * B * H * S * (dc + dr) + 2 * B * H * S * dc
    assert traffic.mla_decode_step_bytes(B, H, S, dc, dr, itemsize=2) == 2 * B * (S * (dc + dr) + H * (2 * dc + dr))
    with pytest.raises(AttentionInputError, match="d_rope"):
        traffic.mla_decode_step_flops(1, 1, 1, 8, -1)
    with pytest.raises(AttentionInputError, match="order"):
        traffic.tiled_backward_bytes(1, 1, 4, 4, 2, order="diagonal")
