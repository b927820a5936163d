"""Split-KV decoding (Flash-Decoding) as two Triton kernels: partial results per chunk, then a merge.

One decoding step has one query per head. FlashAttention's forward gives each (batch, head,
query block) one program, so a step launches only B * H programs, each streaming the whole cache:
on a GPU with 132 SMs and B * H = 32 most SMs idle while the few busy ones stream the cache
alone. Split-KV cuts the cache into ``n_splits`` chunks and launches B * H_kv * n_splits programs:

1. :func:`split_kv_partial_kernel`: each program runs the online softmax over its chunk only and
   writes a partial output o_s (normalised over the chunk) and its log-sum-exp lse_s;
2. :func:`split_kv_merge_kernel`: one program per (batch, key head) merges the partials with the
   same rescaling, each chunk counting as one "key" of weight exp(lse_s) and value o_s:
   lse = log sum_s exp(lse_s), out = sum_s exp(lse_s - lse) o_s. The merge is exact in any order
   and grouping (see attnlab.torch_ops.split_kv); a chunk with no visible key has lse_s = -inf
   and weight 0.

Grouped-query attention packs the H / H_kv query heads that share a key head into the rows of one
tile, so every key head's cache is read once per step, not once per query head.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from .. import _validate as V
from ..errors import AttentionInputError
from ..i18n import _
from ._launch import INTERPRETED, LOG2_E, block_size, causal_offset, check_heads, dot_precision, tile_width, warps
from .forward import online_softmax_step


@triton.jit
def split_kv_partial_kernel(Q, K, V, PART_O, PART_LSE, ROWS, T, S, chunk, offset, qk_scale,
                            D_K: tl.constexpr, D_V: tl.constexpr, PAD_K: tl.constexpr, PAD_V: tl.constexpr,
                            BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr, CAUSAL: tl.constexpr,
                            PRECISION: tl.constexpr):
    """The partial (o_s, lse_s) of one chunk of keys, for BLOCK_Q packed query rows of one key head.

    Q (B*H_kv, ROWS, D_K) with ROWS = (H / H_kv) * T rows per key head, row r at position r % T;
    K, V (B*H_kv, S, D); PART_O (B*H_kv, n_splits, ROWS, D_V), PART_LSE (B*H_kv, n_splits, ROWS), float32.
    Grid: (n_splits, B*H_kv, ceil(ROWS / BLOCK_Q)).
    """
    split, kv_head, r_block = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    n_splits = tl.num_programs(0)
    rows = r_block * BLOCK_Q + tl.arange(0, BLOCK_Q)                      # packed rows (head in group, query)
    ck, cv = tl.arange(0, PAD_K), tl.arange(0, PAD_V)
    q = tl.load(Q + (kv_head * ROWS + rows[:, None]) * D_K + ck[None, :],
                mask=(rows[:, None] < ROWS) & (ck[None, :] < D_K), other=0.0)
    m = tl.full([BLOCK_Q], -float("inf"), tl.float32)
    l = tl.zeros([BLOCK_Q], tl.float32)
    acc = tl.zeros([BLOCK_Q, PAD_V], tl.float32)
    lo = split * chunk                                                    # this program's keys: [lo, hi)
    hi = tl.minimum(S, lo + chunk)
    for start in range(lo, hi, BLOCK_K):                                  # every block masked: chunks are short
        acc, m, l = online_softmax_step(acc, m, l, q, K + kv_head * S * D_K, V + kv_head * S * D_V, rows % T,
                                        start, hi, offset, qk_scale, D_K, D_V, PAD_K, PAD_V, BLOCK_K, True,
                                        CAUSAL, PRECISION)
    seen = l > 0
    l_safe = tl.where(seen, l, 1.0)
    part = (kv_head * n_splits + split) * ROWS + rows                     # (BLOCK_Q,) index into the partials
    tl.store(PART_O + part[:, None] * D_V + cv[None, :], acc / l_safe[:, None],
             mask=(rows[:, None] < ROWS) & (cv[None, :] < D_V))
    tl.store(PART_LSE + part, tl.where(seen, m + tl.log2(l_safe), -float("inf")), mask=rows < ROWS)  # base 2


@triton.jit
def split_kv_merge_kernel(PART_O, PART_LSE, O, LSE, ROWS, n_splits,
                          D_V: tl.constexpr, PAD_V: tl.constexpr, BLOCK_Q: tl.constexpr):
    """out and lse of BLOCK_Q packed rows of one key head from its n_splits partials: an online softmax
    over the partials. Grid: (B*H_kv, ceil(ROWS / BLOCK_Q))."""
    kv_head, r_block = tl.program_id(0), tl.program_id(1)
    rows = r_block * BLOCK_Q + tl.arange(0, BLOCK_Q)
    cv = tl.arange(0, PAD_V)
    m = tl.full([BLOCK_Q], -float("inf"), tl.float32)                    # largest lse_s so far
    l = tl.zeros([BLOCK_Q], tl.float32)                                   # sum of exp2(lse_s - m)
    acc = tl.zeros([BLOCK_Q, PAD_V], tl.float32)                          # sum of exp2(lse_s - m) o_s
    for split in range(0, n_splits):
        part = (kv_head * n_splits + split) * ROWS + rows
        lse_s = tl.load(PART_LSE + part, mask=rows < ROWS, other=-float("inf"))
        o_s = tl.load(PART_O + part[:, None] * D_V + cv[None, :], mask=(rows[:, None] < ROWS) & (cv[None, :] < D_V),
                      other=0.0)
        m_new = tl.maximum(m, lse_s)
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)             # no key seen yet: avoid inf - inf
        w = tl.exp2(lse_s - shift)                                        # this chunk's weight, 0 if empty
        alpha = tl.exp2(m - shift)
        l = l * alpha + w
        acc = acc * alpha[:, None] + w[:, None] * o_s
        m = m_new
    seen = l > 0
    l_safe = tl.where(seen, l, 1.0)
    tl.store(O + (kv_head * ROWS + rows[:, None]) * D_V + cv[None, :], (acc / l_safe[:, None]).to(O.dtype.element_ty),
             mask=(rows[:, None] < ROWS) & (cv[None, :] < D_V))
    tl.store(LSE + kv_head * ROWS + rows, tl.where(seen, (m + tl.log2(l_safe)) / 1.4426950408889634, -float("inf")),
             mask=rows < ROWS)


def split_kv_decode(q, k, v, n_splits, causal=False, scale=None, offset=None, *, block_k=None):
    """Split-KV attention for decoding: (out, lse) for q (B, H, T, d_k), k (B, H_kv, S, d_k), v (B, H_kv, S, d_v).

    The same numbers as :func:`attnlab.kernels.flash_attention_lse` (causal, offset, scale and rows
    that see no key alike), computed by B * H_kv * n_splits programs that each read one chunk of
    ceil(S / n_splits) keys (rounded up to whole key blocks; chunks past the end are empty), then
    merged by log-sum-exp. Meant for few queries (T = 1 when decoding); the H / H_kv query heads of a
    group share one tile of rows, so keep H / H_kv * T small. Inference only: no autograd.
    """
    B, H, T, S, d_k, d_v = check_heads(q, k, v)
    if isinstance(n_splits, bool) or not isinstance(n_splits, int) or n_splits < 1:
        raise AttentionInputError(_("n_splits must be a positive integer; got {n!r}").format(n=n_splits))
    if torch.is_grad_enabled() and any(x.requires_grad for x in (q, k, v)):
        raise AttentionInputError(_("split_kv_decode is for inference and has no backward; call it under "
                                    "torch.no_grad(), or use flash_attention"))
    offset = causal_offset(causal, offset, T, S)
    scale = V.scale_value(scale, d_k)
    H_kv = k.shape[1]
    rows = H // H_kv * T                                                  # query rows per key head
    block_q = min(tile_width(rows), 128 if INTERPRETED else 64)           # a tile of packed rows
    block_k = block_size("block_k", block_k, 128 if INTERPRETED else 64)
    chunk = triton.cdiv(triton.cdiv(S, n_splits), block_k) * block_k
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()              # (B, H, T, d) is (B*H_kv, rows, d)
    part_o = torch.empty(B * H_kv, n_splits, rows, d_v, dtype=torch.float32, device=q.device)
    part_lse = torch.empty(B * H_kv, n_splits, rows, dtype=torch.float32, device=q.device)
    meta = dict(D_K=d_k, D_V=d_v, PAD_K=tile_width(d_k), PAD_V=tile_width(d_v))
    split_kv_partial_kernel[(n_splits, B * H_kv, triton.cdiv(rows, block_q))](
        q, k, v, part_o, part_lse, rows, T, S, chunk, offset, scale * LOG2_E, **meta, BLOCK_Q=block_q,
        BLOCK_K=block_k, CAUSAL=bool(causal), PRECISION=dot_precision(q.dtype), num_warps=warps(block_q, block_k))
    out = q.new_empty(B, H, T, d_v)
    lse = torch.empty(B, H, T, dtype=torch.float32, device=q.device)
    split_kv_merge_kernel[(B * H_kv, triton.cdiv(rows, block_q))](
        part_o, part_lse, out, lse, rows, n_splits, D_V=d_v, PAD_V=meta["PAD_V"], BLOCK_Q=block_q)
    return out, lse
