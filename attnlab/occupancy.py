"""How many program instances a kernel launches, and how much of a GPU they keep busy.

A Triton or CUDA kernel is launched as a grid of program instances (CTAs); each runs on one
streaming multiprocessor (SM), which holds ``per_sm`` of them at once (as many as its registers
and shared memory allow). P programs on a GPU with n_sm SMs run in ceil(P / (n_sm per_sm))
waves, and in the last wave some SMs idle. FlashAttention's forward launches one program per
(batch, head, block of queries); one decoding step has one query per head, so it launches only
B * H of them (B * H_kv with the query heads of a group packed together), far fewer than a GPU's
SMs when the batch is small. Split-KV decoding multiplies that by the number of chunks.

The model of a bandwidth-bound step used here: every busy slot streams its share of the memory
bandwidth, so the step takes bytes / (bandwidth * busy fraction), and splitting speeds it up by
the ratio of the busy fractions. It ignores the merge (small), the cost of a partial tile and that
one SM alone can pull more than its share of the bandwidth; benchmarks/gpu_check.py measures it.
"""
from __future__ import annotations

import math

from .errors import AttentionInputError

__all__ = ["busy_fraction", "decode_programs", "flash_programs", "split_kv_speedup", "splits_to_fill", "waves"]


def _positive(**named):
    for name, x in named.items():
        if isinstance(x, bool) or not isinstance(x, int) or x < 1:
            raise AttentionInputError(f"{name} must be a positive integer; got {x!r}")


def flash_programs(B: int, H: int, T: int, block_q: int = 128) -> int:
    """Programs of FlashAttention's forward: one per (batch, head, block of block_q queries)."""
    _positive(B=B, H=H, T=T, block_q=block_q)
    return B * H * math.ceil(T / block_q)


def decode_programs(B: int, H_kv: int, n_splits: int = 1) -> int:
    """Programs of one split-KV decoding step: one per (batch, key head, chunk of the cache); n_splits = 1
    is plain decoding."""
    _positive(B=B, H_kv=H_kv, n_splits=n_splits)
    return B * H_kv * n_splits


def waves(n_programs: int, n_sm: int, per_sm: int = 1) -> int:
    """How many rounds the GPU needs to run n_programs when each SM holds per_sm at once."""
    _positive(n_programs=n_programs, n_sm=n_sm, per_sm=per_sm)
    return math.ceil(n_programs / (n_sm * per_sm))


def busy_fraction(n_programs: int, n_sm: int, per_sm: int = 1) -> float:
    """The share of the GPU's program slots busy over the launch: n_programs / (waves * n_sm * per_sm)."""
    return n_programs / (waves(n_programs, n_sm, per_sm) * n_sm * per_sm)


def splits_to_fill(B: int, H_kv: int, n_sm: int, S: int, block_k: int = 64, per_sm: int = 1) -> int:
    """The most chunks that still run in one wave, floor(n_sm per_sm / (B H_kv)) (one more would start a
    second wave that leaves most slots idle), at least 1, and no more than the cache has blocks of
    block_k keys (a chunk needs at least one)."""
    _positive(B=B, H_kv=H_kv, n_sm=n_sm, S=S, block_k=block_k, per_sm=per_sm)
    return max(1, min(n_sm * per_sm // (B * H_kv), math.ceil(S / block_k)))


def split_kv_speedup(B: int, H_kv: int, n_sm: int, n_splits: int, per_sm: int = 1) -> float:
    """The model's speed-up of a bandwidth-bound decoding step from n_splits chunks: the ratio of the busy
    fractions with n_splits and with one chunk."""
    return (busy_fraction(decode_programs(B, H_kv, n_splits), n_sm, per_sm)
            / busy_fraction(decode_programs(B, H_kv), n_sm, per_sm))
