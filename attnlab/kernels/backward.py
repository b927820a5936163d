"""FlashAttention-2's backward pass as two Triton kernels, recomputing the weights from the log-sum-exp.

With scores U = scale Q K^T, weights P = exp(U - lse) and delta = rowsum(dO * O) (computed
before the kernels, one number per query), the gradients are, block by block,

    dV_j += P_ij^T dO_i          dP_ij = dO_i V_j^T          dS_ij = P_ij * (dP_ij - delta_i)
    dK_j += scale dS_ij^T Q_i    dQ_i += scale dS_ij K_j

Every block pair (i, j) adds to dK_j, dV_j and to dQ_i. Whichever loop is outer keeps its own
accumulators in registers and must read-modify-write the others in HBM once per block pair. So:

* :func:`flash_dkdv_kernel` puts the key blocks outer: one program per key block holds K_j, V_j
  and its dK_j, dV_j in registers while the query blocks stream past; dK_j, dV_j go to HBM once.
* :func:`flash_dq_kernel` puts the query blocks outer for dQ: one program per query block holds
  Q_i, dO_i and dQ_i while the key blocks stream past.

FlashAttention-2 itself computes dQ inside the key-outer loop and adds each dQ_i contribution to
HBM with atomic additions; two kernels instead recompute P_ij and dP_ij once more (seven block
products in all instead of five) and need no atomics, so the result is deterministic. Triton's
own fused-attention tutorial makes the same choice.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .tile_ops import dot


@triton.jit
def flash_dkdv_kernel(
    Q, K, V, DO, LSE, DELTA, DK, DV, T, S, offset, qk_scale, scale, GROUP: tl.constexpr,
    D_K: tl.constexpr, D_V: tl.constexpr, PAD_K: tl.constexpr, PAD_V: tl.constexpr,
    BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr, CAUSAL: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """dK_j and dV_j for one block of BLOCK_K keys of one (batch, key head): key blocks
    outer.

    Q, DO (B*H, T, D), K, V, DK, DV (B*H_kv, S, D), LSE and DELTA (B*H, T) float32, all
    contiguous.
    Grid: (ceil(S / BLOCK_K), B*H_kv).
    """
    k_block, kv_head = tl.program_id(0), tl.program_id(1)
    K += kv_head * S * D_K
    V += kv_head * S * D_V
    DK += kv_head * S * D_K
    DV += kv_head * S * D_V
    # (BLOCK_K,) key indices
    keys = k_block * BLOCK_K + tl.arange(0, BLOCK_K)
    ck, cv = tl.arange(0, PAD_K), tl.arange(0, PAD_V)
    # K_j, V_j: HBM -> registers, once. dK_j, dV_j: float32 accumulators in registers.
    k = tl.load(
        K + keys[:, None] * D_K + ck[None, :],
        mask=(keys[:, None] < S) & (ck[None, :] < D_K),
        other=0.0,
    )
    v = tl.load(
        V + keys[:, None] * D_V + cv[None, :],
        mask=(keys[:, None] < S) & (cv[None, :] < D_V),
        other=0.0,
    )
    dk = tl.zeros([BLOCK_K, PAD_K], tl.float32)
    dv = tl.zeros([BLOCK_K, PAD_V], tl.float32)

    # Causal: query i sees key j iff j <= i + offset, so the query blocks before the
    # one holding row first_key - offset see none of these keys and are skipped.
    first = 0
    if CAUSAL:
        first = tl.maximum(0, k_block * BLOCK_K - offset) // BLOCK_Q * BLOCK_Q
    # the query heads sharing this key head: their gradients add up (GQA)
    for g in range(GROUP):
        head = kv_head * GROUP + g
        for start in range(first, T, BLOCK_Q):
            # (BLOCK_Q,) query indices
            rows = start + tl.arange(0, BLOCK_Q)
            valid = rows < T
            # Q_i, dO_i, lse_i, delta_i: HBM -> registers, once per (key block, query
            # block) pair.
            q = tl.load(
                Q + (head * T + rows[:, None]) * D_K + ck[None, :],
                mask=valid[:, None] & (ck[None, :] < D_K),
                other=0.0,
            )
            do = tl.load(
                DO + (head * T + rows[:, None]) * D_V + cv[None, :],
                mask=valid[:, None] & (cv[None, :] < D_V),
                other=0.0,
            )
            # base 2
            lse = (
                tl.load(LSE + head * T + rows, mask=valid, other=0.0)
                * 1.4426950408889634
            )
            delta = tl.load(DELTA + head * T + rows, mask=valid, other=0.0)
            # The block transposed, keys x queries, so that P^T and dS^T come out
            # directly.
            # (BLOCK_K, BLOCK_Q)
            s_t = dot(k, tl.trans(q), PRECISION) * qk_scale
            allowed = (keys[:, None] < S) & valid[None, :]
            if CAUSAL:
                allowed = allowed & (keys[:, None] <= rows[None, :] + offset)
            # P^T, recomputed
            p_t = tl.where(allowed, tl.exp2(s_t - lse[None, :]), 0.0)
            # dV_j += P^T dO_i
            dv += dot(p_t.to(do.dtype), do, PRECISION)
            # dP^T = V_j dO_i^T
            dp_t = dot(v, tl.trans(do), PRECISION)
            # dS^T
            ds_t = p_t * (dp_t - delta[None, :])
            # dK_j += dS^T Q_i
            dk += dot(ds_t.to(q.dtype), q, PRECISION)
    # Registers -> HBM, once per key block.
    tl.store(
        DK + keys[:, None] * D_K + ck[None, :],
        (dk * scale).to(DK.dtype.element_ty),
        mask=(keys[:, None] < S) & (ck[None, :] < D_K),
    )
    tl.store(
        DV + keys[:, None] * D_V + cv[None, :],
        dv.to(DV.dtype.element_ty),
        mask=(keys[:, None] < S) & (cv[None, :] < D_V),
    )


@triton.jit
def flash_dq_kernel(
    Q, K, V, DO, LSE, DELTA, DQ, T, S, offset, qk_scale, scale, GROUP: tl.constexpr,
    D_K: tl.constexpr, D_V: tl.constexpr, PAD_K: tl.constexpr, PAD_V: tl.constexpr,
    BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr, CAUSAL: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """dQ_i for one block of BLOCK_Q queries of one (batch, head): query blocks outer.

    Layouts as in :func:`flash_dkdv_kernel`; DQ like Q. Grid: (ceil(T / BLOCK_Q), B*H).
    """
    q_block, head = tl.program_id(0), tl.program_id(1)
    kv_head = head // GROUP
    K += kv_head * S * D_K
    V += kv_head * S * D_V
    rows = q_block * BLOCK_Q + tl.arange(0, BLOCK_Q)
    valid = rows < T
    ck, cv = tl.arange(0, PAD_K), tl.arange(0, PAD_V)
    # Q_i, dO_i, lse_i, delta_i: HBM -> registers, once. dQ_i: a float32 accumulator in
    # registers.
    q = tl.load(
        Q + (head * T + rows[:, None]) * D_K + ck[None, :],
        mask=valid[:, None] & (ck[None, :] < D_K),
        other=0.0,
    )
    do = tl.load(
        DO + (head * T + rows[:, None]) * D_V + cv[None, :],
        mask=valid[:, None] & (cv[None, :] < D_V),
        other=0.0,
    )
    lse = tl.load(LSE + head * T + rows, mask=valid, other=0.0) * 1.4426950408889634
    delta = tl.load(DELTA + head * T + rows, mask=valid, other=0.0)
    dq = tl.zeros([BLOCK_Q, PAD_K], tl.float32)

    end = S
    # the forward's causal block skip
    if CAUSAL:
        # past the last row's keys
        end = tl.minimum(S, tl.minimum(q_block * BLOCK_Q + BLOCK_Q, T) + offset)
    for start in range(0, end, BLOCK_K):
        keys = start + tl.arange(0, BLOCK_K)
        # K_j, V_j: HBM -> registers, once per (query block, key block) pair.
        k = tl.load(
            K + keys[:, None] * D_K + ck[None, :],
            mask=(keys[:, None] < S) & (ck[None, :] < D_K),
            other=0.0,
        )
        v = tl.load(
            V + keys[:, None] * D_V + cv[None, :],
            mask=(keys[:, None] < S) & (cv[None, :] < D_V),
            other=0.0,
        )
        # (BLOCK_Q, BLOCK_K)
        s = dot(q, tl.trans(k), PRECISION) * qk_scale
        allowed = keys[None, :] < S
        if CAUSAL:
            allowed = allowed & (keys[None, :] <= rows[:, None] + offset)
        # P, recomputed
        p = tl.where(allowed, tl.exp2(s - lse[:, None]), 0.0)
        # dP = dO_i V_j^T
        dp = dot(do, tl.trans(v), PRECISION)
        ds = p * (dp - delta[:, None])
        # dQ_i += dS K_j
        dq += dot(ds.to(k.dtype), k, PRECISION)
    tl.store(
        DQ + (head * T + rows[:, None]) * D_K + ck[None, :],
        (dq * scale).to(DQ.dtype.element_ty),
        mask=valid[:, None] & (ck[None, :] < D_K),
    )
