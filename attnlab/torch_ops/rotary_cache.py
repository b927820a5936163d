"""A KV cache for a RoPE model: keys are stored after rotation, queries are rotated as they arrive.

``append(k, v)`` and ``attend(q)`` take keys and queries *before* rotation. The key of absolute position p
is rotated by p once, when it is appended, and stored that way (as real caches do: no key is ever
rotated twice). The queries of the t newest positions are rotated by their positions; since
<R_p q, R_j k> = <q, R_{j - p} k>, every score depends only on the distance p - j, whatever the layout.
So chunked prefill (appends of several positions, each chunk continuing at the positions where the last
one stopped) and decoding token by token give the same outputs as one pass over the whole sequence.

Re-numbering inside a ring with sinks (StreamingLLM)
----------------------------------------------------
A ring of ``window`` slots plus ``n_sinks`` sinks holds positions 0 .. n_sinks - 1 and p - window + 1 .. p.
StreamingLLM numbers the keys by their place in the cache, not in the text: the sinks keep 0 .. n_sinks - 1,
the window continues at n_sinks, and the query gets the last number, c(p) = min(p, n_sinks + window - 1).
Inside the window the distances do not change (c(p) - c(j) = p - j); only the sinks are seen from the
distance c(p) - j instead of p - j, which stays below n_sinks + window however long the stream grows, so a
stream never reaches distances the model was not trained on. With keys stored after rotation this takes
no re-rotation of the cache: the query is rotated twice, by p for the window's keys and by c(p) for the
sinks, and one attention call over keys of width 2 d_k reads each key with the right half,

    scores = [R_p q, R_c(p) q] . [k_j 1(j is not a sink), k_j 1(j is a sink)] / sqrt(d_k).

``renumber=False`` keeps absolute positions (the cache then equals a full pass with the window-and-sinks
mask); compare the two to see what re-numbering changes.
"""
from __future__ import annotations

import math

import torch

from ..errors import AttentionInputError
from ..i18n import _
from ..position import _base, _even_width, _pairing
from .kv_cache import KVCache
from .rope import cos_sin, rotate


class RotaryKVCache(KVCache):
    """RotaryKVCache(n_kv_heads, d_k, d_v=None, layout="contiguous", window=None, n_sinks=0, block_size=16,
    dtype=None, device=None, *, base=10000.0, pairing="half", renumber=True).

    A :class:`KVCache` whose ``append(k, v)`` and ``attend(q)`` take keys and queries before rotation
    (module docstring). ``renumber`` matters only for layout "ring" with n_sinks > 0.
    """

    def __init__(self, n_kv_heads, d_k, d_v=None, layout="contiguous", window=None, n_sinks=0, block_size=16,
                 dtype=None, device=None, *, base=10000.0, pairing="half", renumber=True):
        super().__init__(n_kv_heads, d_k, d_v, layout, window, n_sinks, block_size, dtype, device)
        _even_width(d_k)
        self.base, self.pairing = _base(base), _pairing(pairing)
        if not isinstance(renumber, bool):
            raise AttentionInputError(_("renumber must be True or False; got {value!r}").format(value=renumber))
        self.renumber = renumber

    def _rotate(self, x, positions):
        cos, sin = cos_sin(positions, self.d_k, self.base, x.dtype, x.device)   # (t, d_k/2) each
        return rotate(x, cos, sin, self.pairing)

    def append(self, k, v) -> None:
        """k (B, H_kv, t, d_k) before rotation, v (B, H_kv, t, d_v): stored as R_p k at the positions p that follow."""
        self._check_new("k", k, self.d_k)
        start = len(self)
        positions = torch.arange(start, start + k.shape[2], device=k.device)
        super().append(self._rotate(k, positions), v)

    def attend(self, q):
        """q (B, H, t, d_k) before rotation, the queries of the t newest positions -> (B, H, t, d_v)."""
        self._check_query(q)
        t = q.shape[2]
        positions = torch.arange(len(self) - t, len(self), device=q.device)     # (t,)
        k, v, key_pos = self._stored()
        q_abs = self._rotate(q, positions)                                     # (B, H, t, d_k)
        if not (self.layout == "ring" and self.n_sinks and self.renumber):
            return self._attend_stored(q_abs, k, v, key_pos)
        q_sink = self._rotate(q, positions.clamp(max=self.n_sinks + self.window - 1))
        is_sink = ((key_pos >= 0) & (key_pos < self.n_sinks))[:, None, :, None]   # (B|1, 1, slots, 1)
        k2 = torch.cat([k.masked_fill(is_sink, 0.0), k.masked_fill(~is_sink, 0.0)], -1)   # (B|1, H_kv, slots, 2 d_k)
        q2 = torch.cat([q_abs, q_sink], -1)                                    # (B, H, t, 2 d_k)
        return self._attend_stored(q2, k2, v, key_pos, scale=1 / math.sqrt(self.d_k))
