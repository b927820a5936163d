"""Multi-head attention as an nn.Module (MHA, and GQA/MQA with fewer key/value heads).

Inputs are batch-first, (..., T, d_model), like nn.MultiheadAttention(batch_first=True).
Each head attends in its own d_k = d_model // n_heads dimensional subspace; the heads'
outputs are concatenated and mixed by w_o. With n_kv_heads < n_heads, query head h shares
key/value head h // (n_heads // n_kv_heads) with the other heads of its group.
"""
from __future__ import annotations

import torch
from torch import nn

from .. import _validate as V
from ..errors import AttentionInputError
from ..i18n import N_, _
from ._checks import bool_tensor, same_kind, tensor_check
from .attention import attention


def _with_head_axis(mask, batch_ndim: int, core: int):
    """Give a mask without a head axis one, so it broadcasts against (..., H, T[, S]).

    Same rule as the NumPy reference: a mask with exactly the batch rank of the input
    (``batch_ndim`` leading axes plus ``core`` trailing ones), e.g. a key-padding mask
    (B, 1, S) or query_valid (B, T), gets a head axis of size 1 before its ``core`` axes:
    (B, 1, 1, S), (B, 1, T). Lower-rank masks ((T, S) for every batch and head) and masks that
    already carry a head axis, (B, H, T, S), are left alone.
    """
    if mask is not None and batch_ndim > 0 and mask.ndim == batch_ndim + core:
        mask = mask.unsqueeze(-core - 1)
    return mask


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate projections w_q, w_k, w_v and output w_o.

    MultiHeadAttention(d_model, n_heads, n_kv_heads=None, bias=False, d_kv=None)
    w_q: d_model -> H * d_k;  w_k, w_v: d_kv (default d_model) -> H_kv * d_k;  w_o: H * d_k -> d_model.
    forward(x_q, x_kv=None, allowed=None, query_valid=None, need_weights=False, impl="auto")
    returns (out (..., T, d_model), weights (..., H, T, S) per head, or None).
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None, bias: bool = False,
                 d_kv: int | None = None):
        super().__init__()
        H, H_kv = V.head_counts(n_heads, n_kv_heads)
        for name, n in (("d_model", d_model), ("d_kv", d_model if d_kv is None else d_kv)):
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise AttentionInputError(_("{name} must be a positive integer; got {n!r}").format(name=name, n=n))
        if d_model % H:
            raise AttentionInputError(
                _("d_model={d_model} must be divisible by n_heads={H}: each head gets d_k = d_model // n_heads "
                  "features").format(d_model=d_model, H=H))
        self.d_model, self.n_heads, self.n_kv_heads = d_model, H, H_kv
        self.d_kv = d_model if d_kv is None else d_kv
        self.d_k = d_model // H
        self.group = H // H_kv                                  # query heads per key/value head
        self.w_q = nn.Linear(d_model, H * self.d_k, bias=bias)
        self.w_k = nn.Linear(self.d_kv, H_kv * self.d_k, bias=bias)
        self.w_v = nn.Linear(self.d_kv, H_kv * self.d_k, bias=bias)
        self.w_o = nn.Linear(H * self.d_k, d_model, bias=bias)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, n_kv_heads={self.n_kv_heads}, d_k={self.d_k}"

    def _check(self, x_q, x_kv) -> None:
        w = self.w_q.weight
        for name, x, width in (("x_q", x_q, self.d_model), ("x_kv", x_kv, self.d_kv)):
            tensor_check(name, x)
            if x.dim() < 2 or x.shape[-1] != width:
                raise AttentionInputError(
                    _("{name} must have shape (..., positions, {width}) (batch first); got {shape}").format(
                        name=name, width=width, shape=V.fmt(x.shape)))
        same_kind({"x_q": x_q, "x_kv": x_kv, N_("the module's weights"): w})
        V.broadcast(x_q.shape[:-2], x_kv.shape[:-2], what=N_("leading (batch) axes of x_q and x_kv"))

    def _split(self, x, heads):
        """(..., T, heads * d_k) -> (..., heads, T, d_k)."""
        x = x.view(*x.shape[:-1], heads, self.d_k)             # (..., T, heads, d_k)
        return x.transpose(-3, -2)                              # (..., heads, T, d_k)

    def forward(self, x_q, x_kv=None, allowed=None, query_valid=None,
                need_weights=False, impl="auto"):
        """Attend from x_q (..., T, d_model) to x_kv (..., S, d_kv);
        x_kv=None is self-attention.

        allowed broadcasts against the weights (..., H, T, S) as SDPA's attn_mask does:
        (T, S) applies to every batch and head, a key-padding mask (B, 1, S) becomes
        (B, 1, 1, S). query_valid broadcasts against (..., H, T): a (B, T) mask becomes
        (B, 1, T).
        """
        x_kv = x_q if x_kv is None else x_kv
        self._check(x_q, x_kv)
        q = self._split(self.w_q(x_q), self.n_heads)            # (..., H, T, d_k)
        k = self._split(self.w_k(x_kv), self.n_kv_heads)        # (..., H_kv, S, d_k)
        v = self._split(self.w_v(x_kv), self.n_kv_heads)        # (..., H_kv, S, d_k)
        if self.group > 1:                      # query head h reads KV head h // group
            k = k.repeat_interleave(self.group, dim=-3)         # (..., H, S, d_k)
            v = v.repeat_interleave(self.group, dim=-3)         # (..., H, S, d_k)
        batch_ndim = max(x_q.dim(), x_kv.dim()) - 2
        allowed = bool_tensor("allowed", allowed, x_q.device)
        allowed = _with_head_axis(allowed, batch_ndim, core=2)
        query_valid = bool_tensor("query_valid", query_valid, x_q.device)
        query_valid = _with_head_axis(query_valid, batch_ndim, core=1)
        res = attention(q, k, v, allowed=allowed, query_valid=query_valid, impl=impl,
                        return_weights=need_weights)
        # (..., H, T, d_k) and the weights (..., H, T, S) or None
        out, weights = res if need_weights else (res, None)
        out = out.transpose(-3, -2)                             # (..., T, H, d_k)
        out = out.reshape(*out.shape[:-2], self.n_heads * self.d_k)  # (..., T, H * d_k)
        return self.w_o(out), weights                           # (..., T, d_model)

    @classmethod
    def from_torch(cls, m: nn.MultiheadAttention) -> "MultiHeadAttention":
        """A copy of ``m``'s weights in our layout, checked to compute the same function.

        nn.MultiheadAttention keeps the three input projections stacked in in_proj_weight
        (3 * E, E) (or separately when kdim != embed_dim). Our forward is always batch-first;
        if ``m.batch_first`` is False, transposing the inputs is the caller's business. ``m``'s
        dropout is not copied (ours has none): the two agree in eval mode.
        Raises AttentionInputError for features we do not model (add_bias_kv, add_zero_attn,
        kdim != vdim) and if the copy differs from ``m`` on a random input.
        """
        if not isinstance(m, nn.MultiheadAttention):
            raise AttentionInputError(_("from_torch expects an nn.MultiheadAttention; got {type}").format(
                type=type(m).__name__))
        if m.bias_k is not None or m.add_zero_attn or m.kdim != m.vdim:
            raise AttentionInputError(
                _("from_torch supports nn.MultiheadAttention without add_bias_kv / add_zero_attn and with "
                  "kdim == vdim; got add_bias_kv={bias_kv}, add_zero_attn={zero_attn}, kdim={kdim}, "
                  "vdim={vdim}").format(bias_kv=m.bias_k is not None, zero_attn=m.add_zero_attn, kdim=m.kdim,
                                         vdim=m.vdim))
        E = m.embed_dim
        ref = m.out_proj.weight
        new = cls(E, m.num_heads, bias=m.in_proj_bias is not None, d_kv=None if m.kdim == E else m.kdim)
        new = new.to(device=ref.device, dtype=ref.dtype)
        if m._qkv_same_embed_dim:
            w_q, w_k, w_v = m.in_proj_weight.chunk(3)          # each (E, E), nn.Linear layout (out, in)
        else:
            w_q, w_k, w_v = m.q_proj_weight, m.k_proj_weight, m.v_proj_weight
        with torch.no_grad():
            for ours, w in ((new.w_q, w_q), (new.w_k, w_k), (new.w_v, w_v), (new.w_o, m.out_proj.weight)):
                ours.weight.copy_(w)
            if m.in_proj_bias is not None:
                for ours, b in zip((new.w_q, new.w_k, new.w_v), m.in_proj_bias.chunk(3)):
                    ours.bias.copy_(b)
                new.w_o.bias.copy_(m.out_proj.bias)
        new._check_matches(m)
        return new

    @torch.no_grad()
    def _check_matches(self, m: nn.MultiheadAttention) -> None:
        """Run both modules on one random input (eval mode, no dropout); raise if they differ."""
        w = self.w_o.weight
        g = torch.Generator(device="cpu").manual_seed(0)
        x_q = torch.randn(2, 5, self.d_model, generator=g, dtype=w.dtype).to(w.device)   # (B, T, E)
        x_kv = torch.randn(2, 6, self.d_kv, generator=g, dtype=w.dtype).to(w.device)     # (B, S, kdim)
        was_training = m.training
        m.eval()
        try:
            if m.batch_first:
                expected, _weights = m(x_q, x_kv, x_kv, need_weights=False)
            else:                                               # nn.MHA wants (T, B, E) here
                expected, _weights = m(x_q.transpose(0, 1), x_kv.transpose(0, 1), x_kv.transpose(0, 1),
                                       need_weights=False)
                expected = expected.transpose(0, 1)             # (B, T, E)
        finally:
            m.train(was_training)
        got, _weights = self(x_q, x_kv)
        tol = {torch.float64: 1e-10, torch.float32: 1e-4}.get(w.dtype, 1e-2)
        err = (got - expected).abs().max().item()
        if not err <= tol * (1.0 + expected.abs().max().item()):
            raise AttentionInputError(
                _("from_torch: the copied module differs from the nn.MultiheadAttention on a random input "
                  "(max |difference| = {err:.3g}); the source module is not plain multi-head attention").format(
                      err=err))
