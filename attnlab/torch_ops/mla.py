"""Multi-head latent attention (DeepSeek-V2): cache one latent vector per token, not H keys and values.

explicit   c = x W_DKV (..., T, d_latent) is all that is cached; per head K_h = c W_UK_h,
           V_h = c W_UV_h, Q_h = x W_Q_h; out = concat_h softmax(Q_h K_h^T / sqrt(d_head)) V_h  W_O
absorbed   Q_h K_h^T = (Q_h W_UK_h^T) c^T: the query moves into the latent space and reads c itself;
           A_h V_h W_O_h = (A_h c) (W_UV_h W_O_h): W_UV folds into the output projection.
           Every head reads the same c, so this is multi-query attention with one key/value head
           of width d_latent; the scale stays 1/sqrt(d_head), the width the scores were defined in.

Decoupled RoPE (d_rope > 0), as DeepSeek-V2: a rotation that depends on the key's position would sit between
W_UK and c, so absorption would need one matrix per distance (:func:`absorbed_query_per_distance` computes
them). Instead the latent part stays unrotated and each head gets a small extra part: a query
q^R_h = rope(x W_QR_h) and one key k^R = rope(x W_KR) shared by all heads and cached beside c. The score is
(q_h . k_h + q^R_h . k^R) / sqrt(d_head + d_rope); absorbed, the query is [q_h W_UK_h^T, q^R_h] and the key
[c, k^R]. d_rope = 0 (the default) is MLA without position.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from .. import _validate as V
from ..cache_size import itemsize
from ..errors import AttentionInputError, KVCacheError
from ..i18n import _
from ._checks import bool_tensor, positive_int, tensor_check
from .attention import attention
from .mha import _with_head_axis
from .rope import rope


class LatentCache:
    """The latents c of every position so far, (B, S, d_latent), and with d_rope > 0 the rotated RoPE keys
    k_rope (B, S, d_rope): one layer's whole MLA cache."""

    def __init__(self, d_latent: int, d_rope: int = 0):
        self.d_latent, self.c, self.k_rope = positive_int("d_latent", d_latent), None, None
        self.d_rope = _rope_width(d_rope)

    def __len__(self) -> int:
        return 0 if self.c is None else self.c.shape[-2]

    @property
    def nbytes(self) -> int:
        return sum(0 if t is None else t.nbytes for t in (self.c, self.k_rope))

    def append(self, c, k_rope=None) -> None:
        """c (B, t, d_latent), the latents of the t >= 1 newest positions; k_rope (B, t, d_rope) their rotated keys."""
        for name, x, width in (("c", c, self.d_latent), ("k_rope", k_rope, self.d_rope)):
            if width == 0 and x is None:
                continue
            tensor_check(name, x)
            if x.dim() != 3 or x.shape[-1] != width or x.shape[:2] != c.shape[:2]:
                raise KVCacheError(_("{name} must have shape (B, t, {width}); got {shape}").format(
                    name=name, width=width, shape=V.fmt(x.shape)))
        if self.c is not None and (c.shape[0], c.dtype, c.device) != (self.c.shape[0], self.c.dtype, self.c.device):
            raise KVCacheError(_("c of shape {shape}, {dtype} on {device} does not match the cache's "
                                 "{mine}, {my_dtype} on {my_device}").format(
                                     shape=V.fmt(c.shape), dtype=c.dtype, device=c.device, mine=V.fmt(self.c.shape),
                                     my_dtype=self.c.dtype, my_device=self.c.device))
        self.c = c if self.c is None else torch.cat([self.c, c], dim=-2)    # (B, S + t, d_latent)
        if self.d_rope:
            self.k_rope = k_rope if self.k_rope is None else torch.cat([self.k_rope, k_rope], dim=-2)


def _rope_width(d_rope) -> int:
    if isinstance(d_rope, bool) or not isinstance(d_rope, int) or d_rope < 0 or d_rope % 2:
        raise AttentionInputError(_("d_rope must be an even integer >= 0 (features turn in pairs); got "
                                    "{d_rope!r}").format(d_rope=d_rope))
    return d_rope


def absorbed_query_per_distance(w_uk, q, distances, base=10000.0, pairing="half"):
    """Why a rotated latent key cannot be absorbed, computed. w_uk (d_latent, d_head) makes one head's keys
    k = c @ w_uk; q (d_head,) a query. If k were rotated by its position, the score of the query at p with the
    key at j would be rope(q, p) . rope(c_j @ w_uk, j) = u_(j-p) . c_j with u_delta = w_uk @ rope(q, -delta):
    returns the (len(distances), d_latent) vectors u_delta. Absorption needs one vector for every key; these
    differ from distance to distance (without the rotation they would all be w_uk @ q)."""
    tensor_check("w_uk", w_uk)
    tensor_check("q", q)
    if w_uk.dim() != 2 or q.shape != w_uk.shape[1:]:
        raise AttentionInputError(_("w_uk must have shape (d_latent, d_head) and q (d_head,); got {w} and {q}").format(
            w=V.fmt(w_uk.shape), q=V.fmt(q.shape)))
    back = [-int(delta) for delta in distances]
    turned = torch.cat([rope(q[None], [b], base, pairing) for b in back])              # (n, d_head): rope(q, -delta)
    return turned @ w_uk.T                                                               # (n, d_latent)


class MultiHeadLatentAttention(nn.Module):
    """MultiHeadLatentAttention(d_model, n_heads, d_latent, d_head=None, bias=False, d_rope=0, rope_base=10000.0).

    forward(x, allowed=None, absorbed=False, cache=None, impl="auto") -> (..., T, d_model). With a
    LatentCache (``new_cache()``), x holds the newest positions: their latents are appended and
    the queries read every cached position, causally by default. ``impl`` as in torch_ops.attention.
    With d_rope > 0 the decoupled RoPE part (module docstring) turns by positions 0 .. T - 1, or after a
    cache's by len(cache) onwards.
    """

    def __init__(self, d_model: int, n_heads: int, d_latent: int, d_head: int | None = None, bias: bool = False,
                 d_rope: int = 0, rope_base: float = 10000.0):
        super().__init__()
        d_model, H = positive_int("d_model", d_model), positive_int("n_heads", n_heads)
        self.d_latent = positive_int("d_latent", d_latent)
        if d_head is None and d_model % H:
            raise AttentionInputError(_("d_model={d_model} is not divisible by n_heads={H}; give d_head "
                                        "explicitly").format(d_model=d_model, H=H))
        self.d_model, self.n_heads = d_model, H
        self.d_head = d_model // H if d_head is None else positive_int("d_head", d_head)
        inner = H * self.d_head
        self.w_q = nn.Linear(d_model, inner, bias=bias)
        self.w_dkv = nn.Linear(d_model, self.d_latent, bias=bias)   # down-projection: the cached latent
        self.w_uk = nn.Linear(self.d_latent, inner, bias=bias)      # up-projections, per head
        self.w_uv = nn.Linear(self.d_latent, inner, bias=bias)
        self.w_o = nn.Linear(inner, d_model, bias=bias)
        self.d_rope, self.rope_base = _rope_width(d_rope), float(rope_base)
        if self.d_rope:
            self.w_qr = nn.Linear(d_model, H * self.d_rope, bias=bias)   # per-head rotated query part
            self.w_kr = nn.Linear(d_model, self.d_rope, bias=bias)       # one rotated key part, shared, cached

    def extra_repr(self) -> str:
        return (f"d_model={self.d_model}, n_heads={self.n_heads}, d_head={self.d_head}, d_latent={self.d_latent}, "
                f"d_rope={self.d_rope}")

    def cache_bytes_per_token(self, dtype=None) -> int:
        """Bytes one token adds to this layer's cache: d_latent + d_rope numbers (dtype: the weights' by default)."""
        return (self.d_latent + self.d_rope) * itemsize(self.w_o.weight.dtype if dtype is None else dtype)

    def new_cache(self) -> LatentCache:
        return LatentCache(self.d_latent, self.d_rope)

    def _split(self, x):
        x = x.view(*x.shape[:-1], self.n_heads, self.d_head)      # (..., T, H, d_head)
        return x.transpose(-3, -2)                                  # (..., H, T, d_head)

    def absorbed_weights(self):
        """(W_q_to_latent (H, d_head, d_latent), W_OV (H, d_latent, d_model),
        constant output bias or None).

        A query row q_h becomes q_h @ W_UK_h^T; an attended latent row o_h becomes
        o_h @ (W_UV_h W_O_h). A key bias adds q_h . b to every score of a row, which the
        softmax ignores; a value bias comes out unchanged (the weights sum to 1) and is
        folded into the output bias.
        """
        H, d_h, d_c = self.n_heads, self.d_head, self.d_latent
        w_uk_t = self.w_uk.weight.view(H, d_h, d_c)  # W_UK_h^T: (H, d_head, d_latent)
        w_uv = self.w_uv.weight.view(H, d_h, d_c)    # (H, d_head, d_latent)
        w_uv = w_uv.transpose(1, 2)                  # W_UV_h: (H, d_latent, d_head)
        w_o = self.w_o.weight.T                      # (H * d_head, d_model)
        w_o = w_o.reshape(H, d_h, self.d_model)      # W_O_h: (H, d_head, d_model)
        bias = None
        if self.w_o.bias is not None:
            value_bias = self.w_uv.bias.view(H, d_h)                # (H, d_head)
            bias = self.w_o.bias + torch.einsum("hd,hdm->m", value_bias, w_o)
        # W_q_to_latent, W_OV (H, d_latent, d_model), output bias (d_model,)
        return w_uk_t, w_uv @ w_o, bias

    def forward(self, x, allowed=None, absorbed=False, cache=None, impl="auto"):
        tensor_check("x", x)
        if x.dim() < 2 or x.shape[-1] != self.d_model:
            raise AttentionInputError(_("x must have shape (..., positions, {d_model}); got {shape}").format(
                d_model=self.d_model, shape=V.fmt(x.shape)))
        if x.dtype != self.w_o.weight.dtype or x.device != self.w_o.weight.device:
            raise AttentionInputError(_("x is {dtype} on {device}; the module's weights are {w_dtype} on "
                                        "{w_device}").format(dtype=x.dtype, device=x.device,
                                                             w_dtype=self.w_o.weight.dtype,
                                                             w_device=self.w_o.weight.device))
        c = self.w_dkv(x)                                           # (..., T, d_latent)
        start = 0 if cache is None else len(cache)
        positions = range(start, start + x.shape[-2])
        k_rope = rope(self.w_kr(x), positions, self.rope_base) if self.d_rope else None   # (..., T, d_rope)
        allowed = bool_tensor("allowed", allowed, x.device)
        if cache is not None:
            cache.append(c, k_rope)
            c, k_rope = cache.c, cache.k_rope                       # (B, S, d_latent), (B, S, d_rope)
            T, S = x.shape[-2], c.shape[-2]
            if allowed is None and T > 1:                           # the new queries are the newest positions
                allowed = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T)   # (T, S)
        allowed = _with_head_axis(allowed, x.dim() - 2, core=2)    # broadcasts against (..., H, T, S)
        q = self._split(self.w_q(x))                                # (..., H, T, d_head)
        scale = 1 / math.sqrt(self.d_head + self.d_rope)            # the scores' own width, not d_latent
        q_rope = None
        if self.d_rope:
            q_rope = self.w_qr(x).view(*x.shape[:-1], self.n_heads, self.d_rope).transpose(-3, -2)  # (..., H, T, d_R)
            q_rope = rope(q_rope, positions, self.rope_base)
        if not absorbed:
            k, v = self._split(self.w_uk(c)), self._split(self.w_uv(c))   # (..., H, S, d_head) each
            if self.d_rope:
                k_heads = k_rope.unsqueeze(-3).expand(*k.shape[:-1], self.d_rope)   # (..., H, S, d_rope): shared
                q, k = torch.cat([q, q_rope], -1), torch.cat([k, k_heads], -1)    # (..., H, T|S, d_head + d_rope)
            out = attention(q, k, v, allowed=allowed, scale=scale, impl=impl)    # (..., H, T, d_head)
            out = out.transpose(-3, -2).reshape(*x.shape[:-1], -1)  # (..., T, H * d_head)
            return self.w_o(out)                                    # (..., T, d_model)
        w_uk_t, w_ov, bias = self.absorbed_weights()
        H, T, S = self.n_heads, x.shape[-2], c.shape[-2]
        q_lat = q @ w_uk_t                                          # (..., H, T, d_latent)
        keys = c
        if self.d_rope:
            q_lat, keys = torch.cat([q_lat, q_rope], -1), torch.cat([c, k_rope], -1)   # width d_latent + d_rope
        q_lat = q_lat.reshape(*q.shape[:-3], 1, H * T, q_lat.shape[-1])   # (..., 1, H * T, width): one KV head
        c, keys = c.unsqueeze(-3), keys.unsqueeze(-3)               # (..., 1, S, d_latent), (..., 1, S, width)
        if allowed is not None:
            lead = torch.broadcast_shapes(allowed.shape[:-3], q.shape[:-3])
            allowed = allowed.expand(*lead, H, T, S).reshape(*lead, 1, H * T, S)   # (..., 1, H * T, S)
        o_lat = attention(q_lat, keys, c, allowed=allowed, scale=scale, impl=impl)   # (..., 1, H * T, d_latent)
        o_lat = o_lat.reshape(*q.shape[:-3], H, T, self.d_latent)  # (..., H, T, d_latent)
        out = torch.einsum("...htc,hcm->...tm", o_lat, w_ov)        # (..., T, d_model), summed over heads
        return out if bias is None else out + bias
