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

# Measured on a 2-core CPU (B=1, H=8, d=64, fp32): 256 x 512 blocks keep each block's scores
# (8 * 256 * 512 floats = 4 MiB) cache-friendly while the matrix products stay large enough.
BLOCK_Q = 256
BLOCK_K = 512


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


def _block_scores(qs, k, j0, j1, future):
    """Scaled scores of a query block against keys j0:j1, future keys set to -inf."""
    s = qs @ k[..., j0:j1, :].transpose(-2, -1)                 # (..., bq, bk)
    if future is not None:
        s.masked_fill_(future, float("-inf"))
    return s


def _forward(q, k, v, scale, causal, offset, block_q, block_k):
    """Online-softmax forward. Returns out (..., T, d_v) and lse (..., T)."""
    T, S = q.shape[-2], k.shape[-2]
    out = q.new_empty(q.shape[:-1] + v.shape[-1:])             # (..., T, d_v)
    lse = q.new_empty(q.shape[:-1])                             # (..., T)
    for i0 in range(0, T, block_q):
        i1 = min(i0 + block_q, T)
        qs = q[..., i0:i1, :] * scale                           # (..., bq, d_k), scaled once
        end = _key_end(i1, S, causal, offset)
        m = l = acc = None
        for j0 in range(0, end, block_k):
            j1 = min(j0 + block_k, end)
            s = _block_scores(qs, k, j0, j1, _future(i0, i1, j0, j1, causal, offset, q.device))
            m_new = s.amax(dim=-1) if m is None else torch.maximum(m, s.amax(dim=-1))  # (..., bq)
            p = s.sub_(m_new[..., None]).exp_()                 # (..., bq, bk), in place
            v_j = v[..., j0:j1, :]                              # (..., bk, d_v)
            if m is None:                                       # first block: nothing to rescale
                l, acc = p.sum(dim=-1), p @ v_j
            else:
                c = (m - m_new).exp_()                          # (..., bq) rescales the old sums
                l = l.mul_(c).add_(p.sum(dim=-1))
                acc = acc.mul_(c[..., None]).add_(p @ v_j)      # (..., bq, d_v)
            m = m_new
        out[..., i0:i1, :] = acc / l[..., None]
        lse[..., i0:i1] = m + l.log()
    return out, lse


def _backward(q, k, v, out, lse, d_out, scale, causal, offset, block_q, block_k):
    """FlashAttention-2 backward: recompute each block's weights from lse, accumulate grads."""
    T, S = q.shape[-2], k.shape[-2]
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    delta = (d_out * out).sum(dim=-1)                           # (..., T) = rowsum(P * dP)
    for i0 in range(0, T, block_q):
        i1 = min(i0 + block_q, T)
        qs = q[..., i0:i1, :] * scale                           # (..., bq, d_k)
        do = d_out[..., i0:i1, :]                               # (..., bq, d_v)
        end = _key_end(i1, S, causal, offset)
        for j0 in range(0, end, block_k):
            j1 = min(j0 + block_k, end)
            s = _block_scores(qs, k, j0, j1, _future(i0, i1, j0, j1, causal, offset, q.device))
            p = s.sub_(lse[..., i0:i1, None]).exp_()            # (..., bq, bk) the weights, recomputed
            dv[..., j0:j1, :] += p.transpose(-2, -1) @ do       # (..., bk, d_v)
            dp = do @ v[..., j0:j1, :].transpose(-2, -1)        # (..., bq, bk) dL/dP
            ds = p.mul_(dp.sub_(delta[..., i0:i1, None]))       # (..., bq, bk) dL/d(scaled scores)
            dq[..., i0:i1, :] += ds @ k[..., j0:j1, :]          # (..., bq, d_k)
            dk[..., j0:j1, :] += ds.transpose(-2, -1) @ qs      # (..., bk, d_k)
    return dq.mul_(scale), dk, dv


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
