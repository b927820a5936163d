"""FlashAttention-2 from the kernels of :mod:`.forward` and :mod:`.backward`: launches, autograd, checks.

The forward saves q, k, v, the output and one float32 number per query, the log-sum-exp; the
backward computes delta = rowsum(dO * O) - d_lse (one pass over dO and O, here in PyTorch), then
launches the dK/dV kernel (key blocks outer) and the dQ kernel (query blocks outer).
"""
from __future__ import annotations

import torch
import triton
from torch.autograd.function import once_differentiable

from .. import _validate as V
from ._launch import INTERPRETED, LOG2_E, block_size, causal_offset, check_heads, dot_precision, tile_width, warps
from .backward import flash_dkdv_kernel, flash_dq_kernel
from .forward import flash_forward_kernel

# Block sizes (queries, keys) per kernel. On a GPU: the shapes of Triton's fused-attention tutorial
# (the dK/dV kernel streams small query blocks past large key blocks, the dQ kernel the reverse);
# shrunk automatically where a GPU's shared memory cannot hold them. In the interpreter every
# block is one NumPy operation per line of the kernel, so fewer, larger blocks run faster.
GPU_BLOCKS = {"forward": (128, 64), "dkdv": (32, 128), "dq": (128, 32)}
INTERPRETER_BLOCKS = {"forward": (128, 128), "dkdv": (128, 128), "dq": (128, 128)}


def _launch(kernel, grid_of, blocks, *args, **meta):
    """Launch ``kernel`` on grid_of(block_q, block_k); where the blocks do not fit the GPU's shared
    memory (triton's OutOfResources), halve the larger one and try again, down to 16 x 16."""
    block_q, block_k = blocks
    while True:
        try:
            return kernel[grid_of(block_q, block_k)](*args, **meta, BLOCK_Q=block_q, BLOCK_K=block_k,
                                                     num_warps=warps(block_q, block_k, meta["PAD_K"]))
        except triton.runtime.errors.OutOfResources:
            if max(block_q, block_k) == 16:
                raise
            if block_q >= block_k:
                block_q //= 2
            else:
                block_k //= 2


def _blocks(kind: str, block_q, block_k) -> tuple[int, int]:
    default = (INTERPRETER_BLOCKS if INTERPRETED else GPU_BLOCKS)[kind]
    return block_size("block_q", block_q, default[0]), block_size("block_k", block_k, default[1])


def _meta(q, k, v, causal):
    """The compile-time constants of every kernel: head-group size, widths, causal, dot precision."""
    return dict(GROUP=q.shape[1] // k.shape[1], D_K=q.shape[-1], D_V=v.shape[-1], PAD_K=tile_width(q.shape[-1]),
                PAD_V=tile_width(v.shape[-1]), CAUSAL=causal, PRECISION=dot_precision(q.dtype))


def _forward(q, k, v, causal, scale, offset, block_q=None, block_k=None):
    """out (B, H, T, d_v) in q's dtype and lse (B, H, T) in float32, from contiguous q, k, v."""
    B, H, T, _ = q.shape
    S = k.shape[-2]
    out = q.new_empty(B, H, T, v.shape[-1])
    lse = torch.empty(B, H, T, dtype=torch.float32, device=q.device)
    _launch(flash_forward_kernel, lambda bq, bk: (triton.cdiv(T, bq), B * H), _blocks("forward", block_q, block_k),
            q, k, v, out, lse, T, S, offset, scale * LOG2_E, **_meta(q, k, v, causal))
    return out, lse


def _backward(q, k, v, out, lse, d_out, d_lse, causal, scale, offset, block_q=None, block_k=None):
    """dq, dk, dv: delta first, then the dK/dV kernel (keys outer) and the dQ kernel (queries outer)."""
    B, H, T, _ = q.shape
    H_kv, S = k.shape[1], k.shape[2]
    delta = (d_out.float() * out.float()).sum(dim=-1) - d_lse       # (B, H, T) = rowsum(dO * O) - d lse
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    meta = _meta(q, k, v, causal)
    common = (T, S, offset, scale * LOG2_E, scale)
    _launch(flash_dkdv_kernel, lambda bq, bk: (triton.cdiv(S, bk), B * H_kv), _blocks("dkdv", block_q, block_k),
            q, k, v, d_out, lse, delta, dk, dv, *common, **meta)
    _launch(flash_dq_kernel, lambda bq, bk: (triton.cdiv(T, bq), B * H), _blocks("dq", block_q, block_k),
            q, k, v, d_out, lse, delta, dq, *common, **meta)
    return dq, dk, dv


class _FlashAttention(torch.autograd.Function):
    """Autograd wrapper: saves the log-sum-exp instead of the weights; outputs (out, lse)."""

    @staticmethod
    def forward(ctx, q, k, v, causal, scale, offset, block_q, block_k):
        out, lse = _forward(q, k, v, causal, scale, offset, block_q, block_k)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.config = (causal, scale, offset, block_q, block_k)
        return out, lse

    @staticmethod
    @once_differentiable
    def backward(ctx, d_out, d_lse):
        q, k, v, out, lse = ctx.saved_tensors
        d_lse = torch.where(torch.isfinite(lse), d_lse, 0.0)        # a row that saw no key has lse = -inf
        dq, dk, dv = _backward(q, k, v, out, lse, d_out.contiguous(), d_lse, *ctx.config)
        return dq, dk, dv, None, None, None, None, None


def flash_attention_lse(q, k, v, causal=False, scale=None, offset=None, *, block_q=None, block_k=None):
    """FlashAttention-2 in Triton: (out, lse) for q (B, H, T, d_k), k (B, H_kv, S, d_k), v (B, H_kv, S, d_v).

    out (B, H, T, d_v) = softmax(q k^T * scale) v in q's dtype; lse (B, H, T) = log sum_j exp(scale q_i.k_j)
    over the keys row i may read, in float32. scale defaults to 1/sqrt(d_k). causal: query i may read
    key j iff j <= i + offset, offset (the absolute position of query 0, as in attnlab.masks.causal)
    defaulting to S - T. A row that may read no key (a negative offset) gets out = 0, lse = -inf and
    zero gradient: a kernel does not raise per row. Query head h reads key head h // (H // H_kv)
    (GQA; H_kv = H is ordinary multi-head attention).

    Differentiable in q, k, v through both outputs: the backward recomputes the weights from lse.
    float32 (multiplied in full float32), float16 or bfloat16 (accumulated in float32). block_q,
    block_k (powers of two, at least 16) override the block sizes of every kernel.
    """
    B, H, T, S, d_k, _ = check_heads(q, k, v)
    offset = causal_offset(causal, offset, T, S)
    scale = V.scale_value(scale, d_k)
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    return _FlashAttention.apply(q, k, v, bool(causal), scale, offset, block_q, block_k)


def flash_attention(q, k, v, causal=False, scale=None, offset=None, *, block_q=None, block_k=None):
    """FlashAttention-2 in Triton: out (B, H, T, d_v); see :func:`flash_attention_lse`."""
    return flash_attention_lse(q, k, v, causal, scale, offset, block_q=block_q, block_k=block_k)[0]
