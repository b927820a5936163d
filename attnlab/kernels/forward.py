"""FlashAttention-2's forward pass as a Triton kernel: one program per block of queries.

The schedule is the one of ``attnlab.torch_ops.chunked_attention``: a block of BLOCK_Q queries
stays put while the keys stream past it BLOCK_K at a time, and the online softmax keeps, per
query row, the running maximum m, the running sum l and the running output acc. What the kernel
adds is *where* each of these lives on a GPU:

    HBM (slow, large)           q, k, v, the output O, the log-sum-exp LSE: read or written once per tile
    shared memory (per SM)      the current K and V tiles, staged there by tl.load on their way in
    registers (per thread)      the query tile, the block of scores, m, l and acc: never leave the chip

One program instance runs on one streaming multiprocessor (SM); the grid launches
ceil(T / BLOCK_Q) x (batch * heads) of them, and the GPU runs as many at once as fit.

Scores are kept in base 2 (``qk_scale`` = scale * log2 e, then ``exp2``), which is what the GPU's
special-function unit computes; the stored log-sum-exp is converted back to natural log.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .tile_ops import dot


@triton.jit
def online_softmax_step(
    acc, m, l, q, K, V, positions, start, stop, offset, qk_scale, D_K: tl.constexpr,
    D_V: tl.constexpr, PAD_K: tl.constexpr, PAD_V: tl.constexpr, BLOCK_K: tl.constexpr,
    MASKED: tl.constexpr, CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
):
    """Fold one block of keys [start, start + BLOCK_K) into the running (acc, m, l)
    of the query tile.

    ``positions`` (BLOCK_Q,) are the tile's query rows (their position is row + offset);
    keys from ``stop`` on do not exist (past S) or belong to another program (split-KV).
    """
    # (BLOCK_K,) key indices
    keys = start + tl.arange(0, BLOCK_K)
    ck, cv = tl.arange(0, PAD_K), tl.arange(0, PAD_V)
    # K_j and V_j: HBM -> shared memory -> registers. Rows past S and columns past D are
    # zeros.
    k = tl.load(
        K + keys[:, None] * D_K + ck[None, :],
        mask=(keys[:, None] < stop) & (ck[None, :] < D_K),
        other=0.0,
    )
    v = tl.load(
        V + keys[:, None] * D_V + cv[None, :],
        mask=(keys[:, None] < stop) & (cv[None, :] < D_V),
        other=0.0,
    )
    # (BLOCK_Q, BLOCK_K) scores, registers
    s = dot(q, tl.trans(k), PRECISION) * qk_scale
    # only blocks at an edge pay for this
    if MASKED:
        allowed = keys[None, :] < stop
        if CAUSAL:
            # key j visible iff j <= i + offset
            allowed = allowed & (keys[None, :] <= positions[:, None] + offset)
        s = tl.where(allowed, s, -float("inf"))
    # (BLOCK_Q,) running max
    m_new = tl.maximum(m, tl.max(s, axis=1))
    shift = m_new
    if MASKED:
        # a row that has seen no key yet has m = -inf: shift by 0, not inf - inf
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
    # (BLOCK_Q, BLOCK_K) unnormalised weights
    p = tl.exp2(s - shift[:, None])
    # rescales what was summed before
    alpha = tl.exp2(m - shift)
    l = l * alpha + tl.sum(p, axis=1)
    # P in the input dtype, acc in fp32
    acc = acc * alpha[:, None] + dot(p.to(v.dtype), v, PRECISION)
    return acc, m_new, l


@triton.jit
def flash_forward_kernel(
    Q, K, V, O, LSE, T, S, offset, qk_scale, GROUP: tl.constexpr, D_K: tl.constexpr,
    D_V: tl.constexpr, PAD_K: tl.constexpr, PAD_V: tl.constexpr, BLOCK_Q: tl.constexpr,
    BLOCK_K: tl.constexpr, CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
):
    """O = softmax(Q K^T * scale) V and LSE for one block of BLOCK_Q queries of one
    (batch, head).

    Q, O (B*H, T, D), K, V (B*H_kv, S, D), LSE (B*H, T), all contiguous; query head h
    reads key head h // GROUP. Grid: (ceil(T / BLOCK_Q), B*H).
    """
    q_block, head = tl.program_id(0), tl.program_id(1)
    kv_head = head // GROUP
    # pointers to this head's rows
    Q += head * T * D_K
    O += head * T * D_V
    LSE += head * T
    K += kv_head * S * D_K
    V += kv_head * S * D_V
    first = q_block * BLOCK_Q
    # (BLOCK_Q,) query indices
    rows = first + tl.arange(0, BLOCK_Q)
    ck, cv = tl.arange(0, PAD_K), tl.arange(0, PAD_V)
    # Q_i: HBM -> registers, once; it stays there while every key block streams past.
    q = tl.load(
        Q + rows[:, None] * D_K + ck[None, :],
        mask=(rows[:, None] < T) & (ck[None, :] < D_K),
        other=0.0,
    )
    # running max, registers
    m = tl.full([BLOCK_Q], -float("inf"), tl.float32)
    # running sum, registers
    l = tl.zeros([BLOCK_Q], tl.float32)
    # running output, registers, fp32
    acc = tl.zeros([BLOCK_Q, PAD_V], tl.float32)

    # Which key blocks to visit. Without a mask, all of them. With the causal mask, key
    # j is visible to
    # row i iff j <= i + offset: keys from `end` on are in the future of every row of
    # the tile, and
    # their blocks are skipped; blocks before `full` are visible to every row and need
    # no mask.
    if CAUSAL:
        last = tl.minimum(first + BLOCK_Q, T) - 1
        end = tl.minimum(S, last + offset + 1)
        full = tl.maximum(0, tl.minimum(S, first + offset + 1)) // BLOCK_K * BLOCK_K
    else:
        end = S
        # the last, partial block is masked
        full = S // BLOCK_K * BLOCK_K
    # below the diagonal: no mask
    for start in range(0, full, BLOCK_K):
        acc, m, l = online_softmax_step(
            acc, m, l, q, K, V, rows, start, S, offset, qk_scale, D_K, D_V, PAD_K,
            PAD_V, BLOCK_K, False, CAUSAL, PRECISION,
        )
    # across the diagonal or past S
    for start in range(full, end, BLOCK_K):
        acc, m, l = online_softmax_step(
            acc, m, l, q, K, V, rows, start, S, offset, qk_scale, D_K, D_V, PAD_K,
            PAD_V, BLOCK_K, True, CAUSAL, PRECISION,
        )

    # Registers -> HBM, once. A row that saw no key (possible with a negative offset)
    # has l = 0:
    # its output is 0 and its log-sum-exp -inf, never 0/0.
    seen = l > 0
    l_safe = tl.where(seen, l, 1.0)
    out = acc / l_safe[:, None]
    # back to natural log
    lse = tl.where(seen, (m + tl.log2(l_safe)) / 1.4426950408889634, -float("inf"))
    tl.store(
        O + rows[:, None] * D_V + cv[None, :],
        out.to(O.dtype.element_ty),
        mask=(rows[:, None] < T) & (cv[None, :] < D_V),
    )
    tl.store(LSE + rows, lse, mask=rows < T)
