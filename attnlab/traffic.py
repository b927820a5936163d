"""Memory traffic of attention: the bytes a schedule moves through slow memory, counted two ways.

A two-level model of memory: a large slow memory (HBM on a GPU, DRAM here) holds the inputs and
outputs; a small fast memory (SRAM on a GPU, the caches here) holds what one step works on.
Traffic is the number of bytes that cross between the two.

* Formulas: :func:`naive_bytes` for the standard implementation (Dao et al. 2022, Algorithm 0:
  the T x S scores written to slow memory and read back, twice), :func:`tiled_bytes` for the
  block schedule of ``attnlab.torch_ops.chunked_attention`` (queries in the outer loop), and
  :func:`decode_step_bytes` for one step of cached decoding.
* A counter: :class:`TrafficCounter` watches the tensor operations of a real call and adds up
  the bytes of every slice of a large tensor ("slow memory") that an operation reads or writes.
  A slice read again while it is still the last slice touched of its tensor counts once: that
  is the fast memory keeping one tile of each tensor.
"""
from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .errors import AttentionInputError

__all__ = [
    "TrafficCounter", "attention_flops", "decode_step_bytes", "decode_step_flops", "fast_memory_bytes",
    "io_bound", "naive_bytes", "tiled_bytes",
]


def _positive(**named):
    for name, x in named.items():
        if isinstance(x, bool) or not isinstance(x, int) or x < 1:
            raise AttentionInputError(f"{name} must be a positive integer; got {x!r}")


def attention_flops(B, H, T, S, d_k, d_v=None, causal=False):
    """FLOPs of Q K^T and A V (2 per multiply-add); causal counts only the allowed pairs (offset S - T)."""
    d_v = d_k if d_v is None else d_v
    _positive(B=B, H=H, T=T, S=S, d_k=d_k, d_v=d_v)
    pairs = sum(min(S, S - T + i + 1) for i in range(T)) if causal else T * S   # keys j <= i + S - T
    return 2 * B * H * pairs * (d_k + d_v)


def naive_bytes(B, H, T, S, d_k, d_v=None, itemsize=4):
    """Bytes moved by standard attention: read Q, K, V; write the scores, read them; write the weights,
    read them; write O. That is itemsize * B * H * (T d_k + S d_k + S d_v + T d_v + 4 T S)."""
    d_v = d_k if d_v is None else d_v
    _positive(B=B, H=H, T=T, S=S, d_k=d_k, d_v=d_v, itemsize=itemsize)
    return itemsize * B * H * (T * d_k + S * d_k + S * d_v + T * d_v + 4 * T * S)


def tiled_bytes(B, H, T, S, d_k, d_v=None, block_q=128, causal=False, offset=None, itemsize=4):
    """Bytes moved by chunked_attention's forward: each query block is read once, every key and value
    row it may see is read once per query block, and O and the log-sum-exp are written once.

    Only ``block_q`` matters: a query block reads all the keys it sees, whatever ``block_k`` is.
    Non-causal, with T a multiple of block_q: itemsize * B * H * (T (d_k + d_v + 1) + (T / block_q) S (d_k + d_v)).
    """
    d_v = d_k if d_v is None else d_v
    _positive(B=B, H=H, T=T, S=S, d_k=d_k, d_v=d_v, block_q=block_q, itemsize=itemsize)
    offset = S - T if offset is None else offset
    keys_read = sum(min(S, i1 + offset) if causal else S                       # keys [0, end) per block
                    for i1 in (min(i0 + block_q, T) for i0 in range(0, T, block_q)))
    return itemsize * B * H * (T * (d_k + d_v + 1) + keys_read * (d_k + d_v))


def fast_memory_bytes(block_q, block_k, d_k, d_v=None, itemsize=4):
    """Fast memory one head's step needs: a query block, a key and a value block, their scores,
    and the running output, maximum and sum."""
    d_v = d_k if d_v is None else d_v
    _positive(block_q=block_q, block_k=block_k, d_k=d_k, d_v=d_v, itemsize=itemsize)
    return itemsize * (block_q * d_k + block_k * (d_k + d_v) + block_q * block_k + block_q * (d_v + 2))


def io_bound(T, S, d, M):
    """The order of the tiled traffic for fast memory of M numbers (Dao et al. 2022, Theorem 2):
    T S d^2 / M numbers, from blocks of about M / d rows."""
    _positive(T=T, S=S, d=d, M=M)
    return T * S * d * d / M


def decode_step_bytes(B, H, H_kv, S, d_k, d_v=None, itemsize=4):
    """Bytes one decoding step reads and writes: the cache (H_kv heads, S positions), one query and one
    output per query head."""
    d_v = d_k if d_v is None else d_v
    _positive(B=B, H=H, H_kv=H_kv, S=S, d_k=d_k, d_v=d_v, itemsize=itemsize)
    return itemsize * B * (H_kv * S * (d_k + d_v) + H * (d_k + d_v))


def decode_step_flops(B, H, S, d_k, d_v=None):
    """FLOPs of one decoding step: one row of S scores and one weighted sum per query head."""
    return attention_flops(B, H, 1, S, d_k, d_v)


def _tensors(x):
    """The tensors in an argument structure (tensors, lists, tuples, dicts), in order."""
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _tensors(y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from _tensors(y)


def _region(t: torch.Tensor):
    return (t.data_ptr(), tuple(t.shape), tuple(t.stride()))


def _view_bytes(t: torch.Tensor) -> int:
    """Bytes a (possibly strided) view covers: its elements, not its whole storage."""
    return t.numel() * t.element_size()


class TrafficCounter(TorchDispatchMode):
    """Context manager: bytes read from and written to slow memory by the tensor operations in it.

    A tensor is in slow memory when its storage holds at least ``slow_bytes`` bytes; everything
    smaller (a block of scores, the running sums) lives in fast memory and costs nothing. Views
    move nothing. A read counts the bytes of the slice read, unless that slice is still the last
    one read of its storage (the fast memory keeps one tile per tensor); a write counts the slice
    written and evicts the storage's tile.
    """

    def __init__(self, slow_bytes: int):
        super().__init__()
        _positive(slow_bytes=slow_bytes)
        self.slow_bytes = slow_bytes
        self.read = self.written = 0
        self._tile: dict[int, tuple] = {}                      # storage -> region held in fast memory

    def _slow(self, t: torch.Tensor) -> bool:
        return t.untyped_storage().nbytes() >= self.slow_bytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func.is_view:
            return out
        inputs = {k: v for k, v in kwargs.items() if k != "out"}
        for t in _tensors((args, inputs)):
            if self._slow(t):
                key, region = t.untyped_storage().data_ptr(), _region(t)
                if self._tile.get(key) != region:
                    self.read += _view_bytes(t)
                    self._tile[key] = region
        for t in _tensors(out):
            if self._slow(t):
                self.written += _view_bytes(t)
                self._tile.pop(t.untyped_storage().data_ptr(), None)
        return out

    @property
    def total(self) -> int:
        return self.read + self.written

