"""KV caches for decoding, three layouts behind one interface: append the newest keys, attend.

    "contiguous"  K and V of every position so far, (B, H_kv, S, d), grown by concatenation
    "ring"        a fixed buffer: the first ``n_sinks`` positions forever (attention sinks,
                  StreamingLLM) and the last ``window`` positions in slots reused in turn
    "paged"       a pool of blocks of ``block_size`` positions and a block table per sequence
                  (vLLM's PagedAttention): block i of sequence b lives at pool[block_table[b, i]]

Every layout stores keys in some physical order and records the absolute position of each
slot. Attention does not care in which order the keys come, only which ones a query may read
(chapter 10: permuting the keys and values together changes nothing), so ``attend`` is one
attention call over the stored slots with a mask built from those positions: causal, plus the
window and the sinks for "ring". GQA: query head h reads KV head h // (H // H_kv); the r query
heads of a group are stacked along the query axis, so K and V are never copied per head.
"""
from __future__ import annotations

import torch

from .. import _validate as V
from ..errors import AttentionInputError, KVCacheError
from ..i18n import _
from ._checks import finite_check, positive_int, same_kind, tensor_check
from .attention import attention

LAYOUTS = ("contiguous", "ring", "paged")


class KVCache:
    """KVCache(n_kv_heads, d_k, d_v=None, layout="contiguous", window=None, n_sinks=0, block_size=16,
    dtype=None, device=None). See the module docstring; dtype and device default to the first append's."""

    def __init__(self, n_kv_heads, d_k, d_v=None, layout="contiguous", window=None, n_sinks=0, block_size=16,
                 dtype=None, device=None):
        self.n_kv_heads, self.d_k = positive_int("n_kv_heads", n_kv_heads), positive_int("d_k", d_k)
        self.d_v = self.d_k if d_v is None else positive_int("d_v", d_v)
        if layout not in LAYOUTS:
            layouts = ", ".join(map(repr, LAYOUTS))
            raise AttentionInputError(_("layout must be one of {layouts}; got {layout!r}").format(
                layouts=layouts, layout=layout))
        if layout != "ring" and (window is not None or n_sinks):
            raise AttentionInputError(_("window and n_sinks belong to layout='ring'; got layout={layout!r} with "
                                        "window={window!r}, n_sinks={n_sinks!r}").format(
                                            layout=layout, window=window, n_sinks=n_sinks))
        if layout == "ring":
            self.window = positive_int("window", window)
            if isinstance(n_sinks, bool) or not isinstance(n_sinks, int) or n_sinks < 0:
                raise AttentionInputError(_("n_sinks must be an integer >= 0; got {n_sinks!r}").format(n_sinks=n_sinks))
        self.layout, self.n_sinks = layout, int(n_sinks)
        self.block_size = positive_int("block_size", block_size)
        self.dtype, self.device = dtype, None if device is None else torch.device(device)
        self.batch, self._len, self._last_t = None, 0, 0
        self._k = self._v = self._pos = None   # storage and the absolute position of each slot (-1: empty)
        self._table = self._owner = None       # paged: block table (B, blocks), owner of each pool block
        self._ctx = None                       # ring, chunk of t > 1: (k, v, pos) the chunk's queries need

    def __len__(self) -> int:
        return self._len

    def __repr__(self) -> str:
        extra = {"ring": f", window={getattr(self, 'window', None)}, n_sinks={self.n_sinks}",
                 "paged": f", block_size={self.block_size}"}.get(self.layout, "")
        return (f"KVCache(n_kv_heads={self.n_kv_heads}, d_k={self.d_k}, d_v={self.d_v}, "
                f"layout={self.layout!r}{extra}; {self._len} positions, {self.nbytes} bytes)")

    @property
    def nbytes(self) -> int:
        """Bytes of K and V the cache holds now (its storage, whole blocks for "paged")."""
        return 0 if self._k is None else self._k.nbytes + self._v.nbytes

    @property
    def slot_positions(self) -> torch.Tensor | None:
        """Absolute position held by each storage slot, -1 where empty: (slots,); paged (blocks, block_size)."""
        return None if self._pos is None else self._pos.clone()

    @property
    def pools(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Paged layout: the key and value pools, (H_kv, blocks, block_size, d_k) and (..., d_v); None otherwise."""
        return (self._k, self._v) if self.layout == "paged" and self._k is not None else None

    @property
    def block_table(self) -> torch.Tensor | None:
        """Paged layout: (B, logical blocks) physical block ids into the pool; None otherwise."""
        return None if self._table is None else self._table.clone()

    # ------------------------------------------------------------------------------------------
    def _check_new(self, name, x, width, t=None):
        tensor_check(name, x)
        if x.dim() != 4 or x.shape[1] != self.n_kv_heads or x.shape[3] != width or x.shape[2] < 1:
            raise KVCacheError(_("{name} must have shape (B, n_kv_heads={n_kv_heads}, t >= 1, {width}); "
                                 "got {shape}").format(name=name, n_kv_heads=self.n_kv_heads, width=width,
                                                       shape=V.fmt(x.shape)))
        if self.batch is not None and x.shape[0] != self.batch:
            raise KVCacheError(_("{name} has batch {got} but the cache holds {batch} sequences").format(
                name=name, got=x.shape[0], batch=self.batch))
        if t is not None and x.shape[2] != t:
            raise KVCacheError(_("k and v must bring the same number of positions; got {t} and {t_v}").format(
                t=t, t_v=x.shape[2]))
        for attr in ("dtype", "device"):
            mine = getattr(self, attr)
            if mine is not None and getattr(x, attr) != mine:
                raise KVCacheError(_("{name} has {attr} {got} but the cache holds {mine}").format(
                    name=name, attr=attr, got=getattr(x, attr), mine=mine))

    def append(self, k, v) -> None:
        """Store k (B, H_kv, t, d_k) and v (B, H_kv, t, d_v), the t >= 1 newest positions."""
        self._check_new("k", k, self.d_k)
        self._check_new("v", v, self.d_v, t=k.shape[2])
        same_kind({"k": k, "v": v})
        finite_check({"k": k, "v": v})
        if self._k is None:
            self.batch, self.dtype, self.device = k.shape[0], k.dtype, k.device
        start, t = self._len, k.shape[2]
        pos = torch.arange(start, start + t, device=k.device)   # (t,) absolute positions
        self._ctx = None
        if self.layout == "contiguous":
            self._grow(k, v, pos)
        elif self.layout == "ring":
            if t > 1:   # later positions of the chunk may overwrite keys its first queries read: keep both
                self._ctx = (k, v, pos) if self._k is None else (
                    torch.cat([self._k, k], 2), torch.cat([self._v, v], 2), torch.cat([self._pos, pos]))
            self._write_ring(k, v, pos)
        else:
            self._write_paged(k, v, pos)
        self._len, self._last_t = start + t, t

    def _grow(self, k, v, pos):
        if self._k is None:
            self._k, self._v, self._pos = k.clone(), v.clone(), pos.clone()   # written in place later (ring)
        else:
            self._k, self._v = torch.cat([self._k, k], 2), torch.cat([self._v, v], 2)   # (B, H_kv, S + t, d)
            self._pos = torch.cat([self._pos, pos])

    def _write_ring(self, k, v, pos):
        """Fill slots 0, 1, ... up to n_sinks + window; then position p >= n_sinks goes to slot
        n_sinks + (p - n_sinks) % window, overwriting the position `window` places before it."""
        cap, start, t = self.n_sinks + self.window, int(pos[0]), k.shape[2]
        n_grow = max(0, min(start + t, cap) - start)            # positions that still extend the buffer
        if n_grow:
            self._grow(k[:, :, :n_grow], v[:, :, :n_grow], pos[:n_grow])
        first = max(n_grow, t - self.window)                     # of the rest only the last `window` survive
        if first < t:
            slots = self.n_sinks + (pos[first:] - self.n_sinks) % self.window   # (t - first,)
            self._k.index_copy_(2, slots, k[:, :, first:])
            self._v.index_copy_(2, slots, v[:, :, first:])
            self._pos.index_copy_(0, slots, pos[first:])

    def _write_paged(self, k, v, pos):
        """New logical blocks get physical blocks at the end of the pool, sequences interleaved."""
        B, bs, t = k.shape[0], self.block_size, k.shape[2]
        have = 0 if self._table is None else self._table.shape[1]
        need = -(-(int(pos[-1]) + 1) // bs) - have              # logical blocks to allocate per sequence
        if need > 0:
            n_pool = 0 if self._owner is None else self._owner.numel()
            ids = n_pool + torch.arange(need * B, device=k.device).view(need, B).T   # (B, need)
            empty = lambda d: k.new_zeros(self.n_kv_heads, need * B, bs, d)       # noqa: E731  (H_kv, new, bs, d)
            grow = [(empty(self.d_k), empty(self.d_v), torch.full((need * B, bs), -1, device=k.device),
                     torch.arange(B, device=k.device).repeat(need))]
            if self._k is not None:
                grow.insert(0, (self._k, self._v, self._pos, self._owner))
            self._k, self._v, self._pos, self._owner = (torch.cat(parts, dim) for parts, dim
                                                        in zip(zip(*grow), (1, 1, 0, 0)))
            self._table = ids if self._table is None else torch.cat([self._table, ids], 1)
        blocks = self._table[:, pos // bs]                       # (B, t) physical block of each new position
        offsets = (pos % bs).expand(B, t)                        # (B, t) slot inside the block
        self._k[:, blocks, offsets] = k.permute(1, 0, 2, 3)      # pool (H_kv, N, bs, d_k) <- (H_kv, B, t, d_k)
        self._v[:, blocks, offsets] = v.permute(1, 0, 2, 3)
        self._pos[blocks, offsets] = pos.expand(B, t)

    # ------------------------------------------------------------------------------------------
    def _stored(self):
        """Keys, values and slot positions as (B|1, H_kv, slots, d), (B|1, H_kv, slots, d_v), (B|1, slots)."""
        if self._ctx is not None:
            k, v, pos = self._ctx
            return k, v, pos[None]
        if self.layout != "paged":
            return self._k, self._v, self._pos[None]
        H_kv, N, bs = self._k.shape[:3]
        k = self._k.reshape(1, H_kv, N * bs, self.d_k)           # (1, H_kv, N * bs, d_k), a view of the pool
        v = self._v.reshape(1, H_kv, N * bs, self.d_v)           # (1, H_kv, N * bs, d_v)
        mine = self._owner[None, :] == torch.arange(self.batch, device=k.device)[:, None]   # (B, N)
        pos = torch.where(mine[:, :, None], self._pos[None], -1)  # (B, N, bs): other sequences' slots hidden
        return k, v, pos.reshape(self.batch, N * bs)             # (B, N * bs)

    def visible(self, q_pos, key_pos):
        """allowed[..., i, j]: may the query at absolute position q_pos[i] read the slot holding key_pos[..., j]?"""
        p, j = q_pos[:, None], key_pos[..., None, :]             # (t, 1) against (..., 1, slots)
        allowed = (j >= 0) & (j <= p)
        if self.layout == "ring":
            allowed &= (j > p - self.window) | (j < self.n_sinks)
        return allowed                                           # (..., t, slots)

    def attend(self, q):
        """q (B, H, t, d_k), the queries of the t newest positions -> (B, H, t, d_v)."""
        self._check_query(q)
        return self._attend_stored(q, *self._stored())

    def _check_query(self, q):
        tensor_check("q", q)
        if self._k is None:
            raise KVCacheError(_("attend before any append: the cache is empty"))
        if q.dtype != self.dtype or q.device != self.device:
            raise KVCacheError(_("q has dtype {dtype} on {device}; the cache holds {mine} on {my_device}").format(
                dtype=q.dtype, device=q.device, mine=self.dtype, my_device=self.device))
        if q.dim() != 4 or q.shape[0] != self.batch or q.shape[1] % self.n_kv_heads or q.shape[3] != self.d_k:
            raise KVCacheError(_("q must have shape (B={batch}, H, t, d_k={d_k}) with H a multiple of "
                                 "n_kv_heads={n_kv_heads}; got {shape}").format(
                                     batch=self.batch, d_k=self.d_k, n_kv_heads=self.n_kv_heads, shape=V.fmt(q.shape)))
        if q.shape[2] > self._last_t:
            raise KVCacheError(_("q brings {t} queries but the last append brought {last} positions: "
                                 "attend(q) serves the queries of the positions just appended").format(
                                     t=q.shape[2], last=self._last_t))

    def _attend_stored(self, q, k, v, key_pos, scale=None):
        """Attention of the t newest queries q (B, H, t, d) over stored slots k (B|1, H_kv, slots, d), v, with
        key_pos (B|1, slots) their absolute positions; the mask comes from :meth:`visible`."""
        B, H, t, d = q.shape
        r = H // self.n_kv_heads
        q_pos = torch.arange(self._len - t, self._len, device=q.device)        # (t,)
        allowed = self.visible(q_pos, key_pos)                                  # (B|1, t, slots)
        allowed = allowed[:, None, None].expand(-1, 1, r, -1, -1)               # (B|1, 1, r, t, slots)
        allowed = allowed.reshape(allowed.shape[0], 1, r * t, -1)               # (B|1, 1, r * t, slots)
        q = q.reshape(B, self.n_kv_heads, r * t, d)             # (B, H_kv, r * t, d): head g*r + i -> group g
        allowed = None if bool(allowed.all()) else allowed
        out = attention(q, k, v, allowed=allowed, scale=scale)  # (B, H_kv, r * t, d_v)
        return out.view(B, H, t, self.d_v)                      # (B, H_kv, r, t, d_v) -> (B, H, t, d_v)

    def keys_values(self):
        """K, V and positions of the visible-to-someone slots in position order:
        (B, H_kv, n, d) each.

        For "paged" this is the gather through the block table: logical block i of
        sequence b is pool[:, block_table[b, i]], and position p sits in block
        p // block_size at slot p % block_size.
        """
        if self._k is None:
            raise KVCacheError(_("the cache is empty"))
        if self.layout == "paged":
            B, n_blocks = self._table.shape
            H_kv, n_slots = self.n_kv_heads, n_blocks * self.block_size
            k = self._k[:, self._table]                  # (H_kv, B, blocks, bs, d_k)
            v = self._v[:, self._table]                  # (H_kv, B, blocks, bs, d_v)
            # (B, H_kv, blocks * bs, d_k) and (..., d_v): the blocks in logical order
            k = k.permute(1, 0, 2, 3, 4).reshape(B, H_kv, n_slots, self.d_k)
            v = v.permute(1, 0, 2, 3, 4).reshape(B, H_kv, n_slots, self.d_v)
            positions = torch.arange(self._len, device=k.device)
            return k[:, :, :self._len], v[:, :, :self._len], positions
        order = torch.argsort(self._pos)                         # (slots,) oldest first
        return self._k[:, :, order], self._v[:, :, order], self._pos[order]
