"""Memory traffic of attention: the bytes a schedule moves through slow memory, counted two ways.

A two-level model of memory: a large slow memory (HBM on a GPU, DRAM here) holds the inputs and
outputs; a small fast memory (SRAM on a GPU, the caches here) holds what one step works on.
Traffic is the number of bytes that cross between the two.

* Formulas: :func:`naive_bytes` for the standard implementation (Dao et al. 2022, Algorithm 0:
  the T x S scores written to slow memory and read back, twice), :func:`tiled_bytes` for the
  forward block schedule of ``attnlab.torch_ops.chunked_attention`` (queries in the outer loop),
  :func:`tiled_backward_bytes` for its backward in either loop order, and
  :func:`decode_step_bytes` / :func:`mla_decode_step_bytes` for one step of cached decoding.
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
    "io_bound", "mla_decode_step_bytes", "mla_decode_step_flops", "naive_bytes", "tiled_backward_bytes",
    "tiled_bytes",
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


def tiled_backward_bytes(B, H, T, S, d_k, d_v=None, block_q=128, block_k=128, causal=False, offset=None,
                         order="keys_outer", itemsize=4):
    """Bytes moved by chunked_attention's backward in either loop order (``order``: "keys_outer" or
    "queries_outer"). Both first read dO and O once and write delta = rowsum(dO * O) (2 T d_v + T).

    keys_outer: dQ is zeroed (T d_k); each key block loads K_j, V_j and finally stores dK_j, dV_j
    (2 S (d_k + d_v) in all); each visit of a query block to a key block reads Q_i, dO_i, lse_i,
    delta_i and reads and writes dQ_i: (3 d_k + d_v + 2) numbers per query row visited.
    queries_outer: dK, dV are zeroed (S (d_k + d_v)); each query block loads Q_i, dO_i, lse_i, delta_i
    and stores dQ_i (T (2 d_k + d_v + 2) in all); each visit reads K_j, V_j and reads and writes dK_j,
    dV_j: 3 (d_k + d_v) numbers per key row visited.

    Without a mask every query row is visited by ceil(S / block_k) key blocks (keys outer) and every key
    row by ceil(T / block_q) query blocks (queries outer). With the causal mask (offset as in
    attnlab.masks.causal) blocks that see nothing are skipped: a key block is visited by the query
    blocks from the one holding row j0 - offset on; a query block visits the keys before
    min(S, i1 + offset).
    """
    d_v = d_k if d_v is None else d_v
    _positive(B=B, H=H, T=T, S=S, d_k=d_k, d_v=d_v, block_q=block_q, block_k=block_k, itemsize=itemsize)
    offset = S - T if offset is None else offset
    delta = 2 * T * d_v + T
    if order == "keys_outer":
        first = [max(0, j0 - offset) // block_q * block_q if causal else 0 for j0 in range(0, S, block_k)]
        rows_visited = sum(max(0, T - i0) for i0 in first)
        numbers = delta + T * d_k + 2 * S * (d_k + d_v) + rows_visited * (3 * d_k + d_v + 2)
    elif order == "queries_outer":
        keys_visited = sum(min(S, i1 + offset) if causal else S
                           for i1 in (min(i0 + block_q, T) for i0 in range(0, T, block_q)))
        numbers = delta + S * (d_k + d_v) + T * (2 * d_k + d_v + 2) + keys_visited * 3 * (d_k + d_v)
    else:
        raise AttentionInputError(f"order must be 'keys_outer' or 'queries_outer'; got {order!r}")
    return itemsize * B * H * numbers


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


def mla_decode_step_flops(B, H, S, d_latent, d_rope=0):
    """FLOPs of one absorbed MLA decoding step (DeepSeek-V2): per query head, S scores against the cached
    latent and its RoPE key (d_latent + d_rope wide) and one weighted sum of the latents (d_latent wide):
    2 B H S (2 d_latent + d_rope)."""
    _positive(B=B, H=H, S=S, d_latent=d_latent)
    if isinstance(d_rope, bool) or not isinstance(d_rope, int) or d_rope < 0:
        raise AttentionInputError(f"d_rope must be a non-negative integer; got {d_rope!r}")
    return 2 * B * H * S * (2 * d_latent + d_rope)


def mla_decode_step_bytes(B, H, S, d_latent, d_rope=0, itemsize=2):
    """Bytes one absorbed MLA decoding step reads and writes: the cache, one latent and one RoPE key per
    position shared by all heads (S (d_latent + d_rope)), the absorbed queries (H (d_latent + d_rope))
    and the per-head latent outputs (H d_latent)."""
    mla_decode_step_flops(B, H, S, d_latent, d_rope)                 # the same checks
    _positive(itemsize=itemsize)
    return itemsize * B * ((S + H) * (d_latent + d_rope) + H * d_latent)


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
    """Which elements a view covers: its start and its (size, stride) pairs, in any order (a transposed
    view is the same tile) and without axes of size 1 (which add no element)."""
    return (t.data_ptr(), tuple(sorted((n, st) for n, st in zip(t.shape, t.stride()) if n != 1)))


# operations that only write their first argument: it is not read
_OVERWRITE = {torch.ops.aten.copy_.default, torch.ops.aten.fill_.Scalar, torch.ops.aten.fill_.Tensor,
              torch.ops.aten.zero_.default}


def _allocates(func) -> bool:
    """empty, empty_like, new_empty, zeros_like, new_zeros, ...: the tensor arguments give only a shape
    and a dtype (nothing is read); the output is written unless it is left uninitialised (empty)."""
    name = func._schema.name.split("::")[-1]
    return name.startswith(("empty", "new_")) or name.endswith("_like")


def _uninitialised(func) -> bool:
    name = func._schema.name.split("::")[-1]
    return "empty" in name


def _view_bytes(t: torch.Tensor) -> int:
    """Bytes a (possibly strided) view covers: its elements, not its whole storage."""
    return t.numel() * t.element_size()


class TrafficCounter(TorchDispatchMode):
    """Context manager: bytes read from and written to slow memory by the tensor operations in it.

    A tensor is in slow memory when its storage holds at least ``slow_bytes`` bytes; everything
    smaller (a block of scores, the running sums) lives in fast memory and costs nothing. Views
    move nothing. A read counts the bytes of the slice read, unless that slice (in any order of its
    axes) is still the last one read of its storage (the fast memory keeps one tile per tensor); a
    write counts the slice written and evicts the storage's tile. Copying into a slice, filling and
    zeroing write their destination without reading it; allocating (``empty``) moves nothing.
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
        read = args[1:] if func in _OVERWRITE else args
        if _allocates(func):
            read, inputs = (), {}
            if _uninitialised(func):
                return out
        for t in _tensors((read, inputs)):
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

