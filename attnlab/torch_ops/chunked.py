"""Chunked attention with an online softmax: the FlashAttention idea in plain PyTorch.

The T x S matrix of scores never exists. Queries are taken ``block_q`` rows at a time; for each
query block we sweep over the keys ``block_k`` columns at a time and keep, per query row,

    m    the largest score seen so far                (..., bq)
    l    the sum of exp(score - m) seen so far         (..., bq)
    acc  the sum of exp(score - m) * v seen so far     (..., bq, d_v)

When a new key block raises the maximum from m to m_new, the old sums are rescaled by
exp(m - m_new). After the last block, acc / l is exactly softmax(scores) @ v: nothing is
approximated, only the order of the additions changes.

Causal masking follows absolute positions: query i sits at position i + offset and may read
key j iff j <= i + offset (offset defaults to S - T: the queries are the newest positions).
Key blocks lying wholly in the future of every query in a block are never computed, which
is where causal attention saves half of the work; only blocks crossing the diagonal need a mask.

Backward (FlashAttention-2): the forward saves q, k, v, the output and one number per query
row, the log-sum-exp lse = m + log(l). Backward recomputes each block's weights as
exp(score - lse) and accumulates dq, dk, dv block by block, so forward plus backward need
O(T) memory beyond the inputs instead of O(T * S).
"""
from __future__ import annotations

import numpy as np
import torch
from torch.autograd.function import once_differentiable

from .. import _validate as V
from ..errors import AttentionInputError
from ._checks import check_qkv, empty_row_error, positive_int

# Measured on this book's 2-core CPU (B=1, H=8, d=64, fp32, T=4096; benchmarks/chunked_blocks.py):
# one block of scores for all heads, 8 * 128 * 256 floats = 1 MiB, stays in the L2 caches while
# it is exponentiated, summed and multiplied by V; larger blocks spill to L3, smaller ones pay
# more Python overhead per block.
BLOCK_Q = 128
BLOCK_K = 256


def _key_end(i1: int, S: int, causal: bool, offset: int) -> int:
    """Keys [0, end) are visible to at least one of the queries before row i1."""
    return min(S, i1 + offset) if causal else S


def _future(i0, i1, j0, j1, causal, offset, device):
    """(bq, bk) bool, True where key j is in the future of query i (j > i + offset).

    None when the block holds no such pair, i.e. it lies wholly below the diagonal.
    """
    if not causal or j1 - 1 <= i0 + offset:
        return None
    i = torch.arange(i0, i1, device=device)[:, None] + offset   # (bq, 1) absolute query positions
    j = torch.arange(j0, j1, device=device)                     # (bk,)   absolute key positions
    return j > i                                                 # (bq, bk)


def _block_scores(qs, k_t, j0, j1, future, buf):
    """Scaled scores of a query block against keys j0:j1, future keys set to -inf.

    Written into the front of ``buf``, one flat buffer reused by every block: no allocation per block.
    """
    shape = (qs.shape[0], qs.shape[1], j1 - j0)
    s = torch.bmm(qs, k_t[:, :, j0:j1], out=buf[: shape[0] * shape[1] * shape[2]].view(shape))  # (N, bq, bk)
    if future is not None:
        s.masked_fill_(future, float("-inf"))
    return s


def _flat(x):
    """(..., n, d) -> (N, n, d): one batch axis for torch.bmm (a copy only if x is expanded)."""
    return x.reshape(-1, *x.shape[-2:])


def _forward(q, k, v, scale, causal, offset, block_q, block_k):
    """Online-softmax forward. Returns out (..., T, d_v) and lse (..., T)."""
    T, S = q.shape[-2], k.shape[-2]
    lead = q.shape[:-2]
    q_s = _flat(q * scale)                       # (N, T, d_k), scaled once
    k_t = _flat(k).transpose(1, 2).contiguous()  # (N, d_k, S): rows of K^T contiguous
    v_f = _flat(v)                               # (N, S, d_v)
    out = q_s.new_empty(q_s.shape[:2] + v_f.shape[-1:])  # (N, T, d_v)
    lse = q_s.new_empty(q_s.shape[:2])           # (N, T)
    # one block of scores, reused
    buf = q_s.new_empty(q_s.shape[0] * min(block_q, T) * min(block_k, S))
    for i0 in range(0, T, block_q):
        i1 = min(i0 + block_q, T)
        qs = q_s[:, i0:i1]                       # (N, bq, d_k)
        end = _key_end(i1, S, causal, offset)
        m = l = acc = None
        for j0 in range(0, end, block_k):
            j1 = min(j0 + block_k, end)
            future = _future(i0, i1, j0, j1, causal, offset, q.device)
            s = _block_scores(qs, k_t, j0, j1, future, buf)
            m_block = s.amax(dim=-1)             # (N, bq)
            m_new = m_block if m is None else torch.maximum(m, m_block)
            p = s.sub_(m_new[..., None]).exp_()  # (N, bq, bk), in place
            if m is None:                        # first block: nothing to rescale
                l, acc = p.sum(dim=-1), torch.bmm(p, v_f[:, j0:j1])
            else:
                c = (m - m_new).exp_()           # (N, bq) rescales the old sums
                l = l.mul_(c).add_(p.sum(dim=-1))
                # acc (N, bq, d_v) = c * acc + P V_j
                torch.baddbmm(acc.mul_(c[..., None]), p, v_f[:, j0:j1], out=acc)
            m = m_new
        torch.div(acc, l[..., None], out=out[:, i0:i1])
        torch.add(m, l.log_(), out=lse[:, i0:i1])
    return out.view(*lead, T, -1), lse.view(*lead, T)


def _backward(q, k, v, out, lse, d_out, scale, causal, offset, block_q, block_k):
    """FlashAttention-2 backward: recompute each block's weights from lse, accumulate grads."""
    T, S = q.shape[-2], k.shape[-2]
    q_s, k_f, v_f = _flat(q * scale), _flat(k), _flat(v)        # (N, T, d_k), (N, S, d_k), (N, S, d_v)
    k_t, v_t = k_f.transpose(1, 2).contiguous(), v_f.transpose(1, 2).contiguous()  # (N, d, S)
    d_o, lse_f = _flat(d_out), lse.reshape(-1, T)               # (N, T, d_v), (N, T)
    delta = (d_o * _flat(out)).sum(dim=-1)                      # (N, T) = rowsum(dO * O)
    dq, dk, dv = torch.zeros_like(q_s), torch.zeros_like(k_f), torch.zeros_like(v_f)
    n_block = q_s.shape[0] * min(block_q, T) * min(block_k, S)
    buf, buf_dp = q_s.new_empty(n_block), q_s.new_empty(n_block)  # scores and dL/dP, reused
    for i0 in range(0, T, block_q):
        i1 = min(i0 + block_q, T)
        qs, do, dq_i = q_s[:, i0:i1], d_o[:, i0:i1], dq[:, i0:i1]   # (N, bq, d) views
        end = _key_end(i1, S, causal, offset)
        for j0 in range(0, end, block_k):
            j1 = min(j0 + block_k, end)
            s = _block_scores(qs, k_t, j0, j1, _future(i0, i1, j0, j1, causal, offset, q.device), buf)
            p = s.sub_(lse_f[:, i0:i1, None]).exp_()            # (N, bq, bk) the weights, recomputed
            dv_j, dk_j = dv[:, j0:j1], dk[:, j0:j1]             # (N, bk, d) views, accumulated in place
            torch.baddbmm(dv_j, p.transpose(1, 2), do, out=dv_j)  # (N, bk, d_v) += P^T dO
            dp = torch.bmm(do, v_t[:, :, j0:j1], out=buf_dp[: p.numel()].view(p.shape))  # (N, bq, bk) dL/dP
            ds = p.mul_(dp.sub_(delta[:, i0:i1, None]))         # (N, bq, bk) dL/d(scaled scores)
            torch.baddbmm(dq_i, ds, k_f[:, j0:j1], out=dq_i)    # (N, bq, d_k) += dS K
            torch.baddbmm(dk_j, ds.transpose(1, 2), qs, out=dk_j)  # (N, bk, d_k) += dS^T (scale Q)
    return dq.mul_(scale).view(q.shape), dk.view(k.shape), dv.view(v.shape)


class _ChunkedAttention(torch.autograd.Function):
    """Autograd wrapper: saves lse instead of the weights, recomputes them in backward."""

    @staticmethod
    def forward(ctx, q, k, v, scale, causal, offset, block_q, block_k):
        out, lse = _forward(q, k, v, scale, causal, offset, block_q, block_k)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.config = (scale, causal, offset, block_q, block_k)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, d_out):
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = _backward(q, k, v, out, lse, d_out.contiguous(), *ctx.config)
        return dq, dk, dv, None, None, None, None, None


def chunked_attention(q, k, v, causal=False, offset=None, block_q=BLOCK_Q, block_k=BLOCK_K, scale=None):
    """Exact attention, softmax(q k^T * scale) v, computed block by block.

    q (..., T, d_k), k (..., S, d_k), v (..., S, d_v) -> (..., T, d_v); leading axes broadcast.
    causal: query i may read key j iff j <= i + offset; offset (the absolute position of query
    0) defaults to S - T, bottom-right aligned like ``torch.nn.attention.bias.causal_lower_right``.
    A negative offset leaves the first queries with no key: EmptyVisibilityError.
    Differentiable (once) with O(T) memory; see the module docstring for the algorithm.
    """
    batch, T, S, d_k, _ = check_qkv(q, k, v)
    if not isinstance(causal, (bool, np.bool_)):
        raise AttentionInputError(f"causal must be True or False; got {causal!r}")
    if offset is not None and not causal:
        raise AttentionInputError(f"offset={offset!r} only applies with causal=True (it places the causal diagonal)")
    if offset is None:
        offset = S - T
    elif isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise AttentionInputError(f"offset must be an integer (absolute position of query 0); got {offset!r}")
    block_q, block_k = positive_int("block_q", block_q), positive_int("block_k", block_k)
    scale = V.scale_value(scale, d_k)
    if causal and offset < 0:                                   # query 0 would read keys j <= offset < 0
        raise empty_row_error((0,) * len(batch) + (0,))
    q, k, v = (x.expand(batch + tuple(x.shape[-2:])) for x in (q, k, v))  # (*batch, T or S, d)
    return _ChunkedAttention.apply(q, k, v, scale, bool(causal), int(offset), block_q, block_k)
