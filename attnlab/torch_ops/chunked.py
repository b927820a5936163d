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

Backward: the forward saves q, k, v, the output and one number per query row, the log-sum-exp
lse = m + log(l). Backward recomputes each block's weights as exp(score - lse) and accumulates
dq, dk, dv block by block, so forward plus backward need O(T) memory beyond the inputs instead
of O(T * S). Every pair of blocks (i, j) adds to dQ_i and to dK_j, dV_j, so the loop order
decides which of them stay in fast memory:

    keys outer (FlashAttention-2, the default)   dK_j, dV_j stay in fast memory while the query
        blocks stream past; dQ_i is read and written back in slow memory once per block pair.
    queries outer                                dQ_i stays; dK_j and dV_j, twice as many numbers
        when d_v = d_k, are read and written back once per block pair.

``attnlab.traffic.tiled_backward_bytes`` counts the bytes of both orders.
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


def _row_dots(a, b, block):
    """(N, T) = rowsum(a * b) for a, b (N, T, d), one block of rows at a time: one pass over a and b."""
    out = a.new_empty(a.shape[:2])
    for i0 in range(0, a.shape[1], block):
        torch.linalg.vecdot(a[:, i0:i0 + block], b[:, i0:i0 + block], out=out[:, i0:i0 + block])
    return out


def _score_buffers(q_f, block_q, block_k, S):
    """Two flat buffers of one block of scores each, reused by every block pair: no allocation per block."""
    n = q_f.shape[0] * min(block_q, q_f.shape[1]) * min(block_k, S)
    return q_f.new_empty(n), q_f.new_empty(n)


def _scores(q_i, k_j, scale, future, buf):
    """(N, bq, bk) scaled scores U = scale Q_i K_j^T in the front of ``buf``, future keys set to -inf."""
    shape = (q_i.shape[0], q_i.shape[1], k_j.shape[1])
    s = buf[: shape[0] * shape[1] * shape[2]].view(shape)
    torch.baddbmm(s, q_i, k_j.transpose(1, 2), beta=0, alpha=scale, out=s)   # s is not read: beta = 0
    if future is not None:
        s.masked_fill_(future, float("-inf"))
    return s


def _first_query(j0: int, causal: bool, offset: int, block_q: int) -> int:
    """The first query block that sees key j0 (query i sees key j iff j <= i + offset); 0 without a mask."""
    return max(0, j0 - offset) // block_q * block_q if causal else 0


def _backward_keys_outer(q, k, v, out, lse, d_out, scale, causal, offset,
                         block_q, block_k):
    """FlashAttention-2's backward: key blocks outer, recomputing each block's
    weights from lse.

    K_j, V_j and the accumulators dK_j, dV_j stay in fast memory while the query
    blocks stream past; dQ_i is read, updated and written back in slow memory for
    every block pair.
    """
    T, S = q.shape[-2], k.shape[-2]
    # (N, T, d_k), (N, S, d_k), (N, S, d_v)
    q_f, k_f, v_f = _flat(q), _flat(k), _flat(v)
    d_o, lse_f = _flat(d_out), lse.reshape(-1, T)               # (N, T, d_v), (N, T)
    # (N, T) = rowsum(dO * O)
    delta = _row_dots(d_o, _flat(out), block_q)
    # accumulated in slow memory
    dq = torch.zeros_like(q_f)
    # each block written once
    dk, dv = torch.empty_like(k_f), torch.empty_like(v_f)
    buf_s, buf_dp = _score_buffers(q_f, block_q, block_k, S)
    for j0 in range(0, S, block_k):
        j1 = min(j0 + block_k, S)
        # (N, bk, d): loaded into fast memory once
        k_j, v_j = k_f[:, j0:j1].clone(), v_f[:, j0:j1].clone()
        # accumulators in fast memory
        dk_j, dv_j = torch.zeros_like(k_j), torch.zeros_like(v_j)
        for i0 in range(_first_query(j0, causal, offset, block_q), T, block_q):
            i1 = min(i0 + block_q, T)
            # (N, bq, d) views of slow memory
            q_i, do_i, dq_i = q_f[:, i0:i1], d_o[:, i0:i1], dq[:, i0:i1]
            future = _future(i0, i1, j0, j1, causal, offset, q.device)
            s = _scores(q_i, k_j, scale, future, buf_s)
            # (N, bq, bk) the weights, recomputed
            p = s.sub_(lse_f[:, i0:i1, None]).exp_()
            # (N, bk, d_v) += P^T dO
            torch.baddbmm(dv_j, p.transpose(1, 2), do_i, out=dv_j)
            # (N, bq, bk) dL/dP
            dp_buf = buf_dp[: p.numel()].view(p.shape)
            dp = torch.bmm(do_i, v_j.transpose(1, 2), out=dp_buf)
            # dL/dU for the scaled scores U
            ds = p.mul_(dp.sub_(delta[:, i0:i1, None]))
            # (N, bq, d_k) += scale dS K: slow memory
            torch.baddbmm(dq_i, ds, k_j, alpha=scale, out=dq_i)
            # += scale dS^T Q
            torch.baddbmm(dk_j, ds.transpose(1, 2), q_i, alpha=scale, out=dk_j)
        # written to slow memory once
        dk[:, j0:j1], dv[:, j0:j1] = dk_j, dv_j
    return dq.view(q.shape), dk.view(k.shape), dv.view(v.shape)


def _backward_queries_outer(q, k, v, out, lse, d_out, scale, causal, offset, block_q, block_k):
    """The same gradients with query blocks outer: Q_i, dO_i and the accumulator dQ_i stay in fast
    memory while the key blocks stream past; dK_j and dV_j are read, updated and written back in
    slow memory for every block pair."""
    T, S = q.shape[-2], k.shape[-2]
    q_f, k_f, v_f = _flat(q), _flat(k), _flat(v)                # (N, T, d_k), (N, S, d_k), (N, S, d_v)
    d_o, lse_f = _flat(d_out), lse.reshape(-1, T)               # (N, T, d_v), (N, T)
    delta = _row_dots(d_o, _flat(out), block_q)                 # (N, T) = rowsum(dO * O)
    dk, dv = torch.zeros_like(k_f), torch.zeros_like(v_f)       # accumulated in slow memory
    dq = torch.empty_like(q_f)                                  # each block written once
    buf_s, buf_dp = _score_buffers(q_f, block_q, block_k, S)
    for i0 in range(0, T, block_q):
        i1 = min(i0 + block_q, T)
        q_i, do_i = q_f[:, i0:i1].clone(), d_o[:, i0:i1].clone()  # (N, bq, d): loaded into fast memory once
        lse_i, delta_i = lse_f[:, i0:i1, None].clone(), delta[:, i0:i1, None].clone()  # (N, bq, 1)
        dq_i = torch.zeros_like(q_i)                            # accumulator in fast memory
        end = _key_end(i1, S, causal, offset)
        for j0 in range(0, end, block_k):
            j1 = min(j0 + block_k, end)
            k_j, v_j, dk_j, dv_j = k_f[:, j0:j1], v_f[:, j0:j1], dk[:, j0:j1], dv[:, j0:j1]   # slow memory
            s = _scores(q_i, k_j, scale, _future(i0, i1, j0, j1, causal, offset, q.device), buf_s)
            p = s.sub_(lse_i).exp_()                            # (N, bq, bk) the weights, recomputed
            torch.baddbmm(dv_j, p.transpose(1, 2), do_i, out=dv_j)   # (N, bk, d_v) += P^T dO: slow memory
            dp = torch.bmm(do_i, v_j.transpose(1, 2), out=buf_dp[: p.numel()].view(p.shape))  # (N, bq, bk) dL/dP
            ds = p.mul_(dp.sub_(delta_i))                       # dL/dU for the scaled scores U
            torch.baddbmm(dq_i, ds, k_j, alpha=scale, out=dq_i)      # (N, bq, d_k) += scale dS K
            torch.baddbmm(dk_j, ds.transpose(1, 2), q_i, alpha=scale, out=dk_j)   # += scale dS^T Q: slow memory
        dq[:, i0:i1] = dq_i                                     # written to slow memory once
    return dq.view(q.shape), dk.view(k.shape), dv.view(v.shape)


BACKWARD_ORDERS = {"keys_outer": _backward_keys_outer, "queries_outer": _backward_queries_outer}


class _ChunkedAttention(torch.autograd.Function):
    """Autograd wrapper: saves lse instead of the weights, recomputes them in backward."""

    @staticmethod
    def forward(ctx, q, k, v, scale, causal, offset, block_q, block_k, backward_order):
        out, lse = _forward(q, k, v, scale, causal, offset, block_q, block_k)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.config = (scale, causal, offset, block_q, block_k)
        ctx.backward_order = backward_order
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, d_out):
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = BACKWARD_ORDERS[ctx.backward_order](q, k, v, out, lse, d_out.contiguous(), *ctx.config)
        return dq, dk, dv, None, None, None, None, None, None


def chunked_attention(q, k, v, causal=False, offset=None, block_q=BLOCK_Q, block_k=BLOCK_K, scale=None,
                      backward_order="keys_outer"):
    """Exact attention, softmax(q k^T * scale) v, computed block by block.

    q (..., T, d_k), k (..., S, d_k), v (..., S, d_v) -> (..., T, d_v); leading axes broadcast.
    causal: query i may read key j iff j <= i + offset; offset (the absolute position of query
    0) defaults to S - T, bottom-right aligned like ``torch.nn.attention.bias.causal_lower_right``.
    A negative offset leaves the first queries with no key: EmptyVisibilityError.
    Differentiable (once) with O(T) memory; see the module docstring for the algorithm.
    backward_order: "keys_outer" (FlashAttention-2's) or "queries_outer"; same gradients, different
    traffic.
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
    if backward_order not in BACKWARD_ORDERS:
        raise AttentionInputError(f"backward_order must be one of {', '.join(map(repr, BACKWARD_ORDERS))}; "
                                  f"got {backward_order!r}")
    scale = V.scale_value(scale, d_k)
    if causal and offset < 0:                                   # query 0 would read keys j <= offset < 0
        raise empty_row_error((0,) * len(batch) + (0,))
    q, k, v = (x.expand(batch + tuple(x.shape[-2:])) for x in (q, k, v))  # (*batch, T or S, d)
    return _ChunkedAttention.apply(q, k, v, scale, bool(causal), int(offset), block_q, block_k, backward_order)
