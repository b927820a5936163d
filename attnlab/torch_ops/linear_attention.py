"""Causal linear attention (Katharopoulos et al.): a feature map instead of exp, and a state of fixed size instead
of a growing cache.

With a positive feature map phi, the weights phi(q_i) . phi(k_j) / sum_{j' <= i} phi(q_i) . phi(k_j') replace the
softmax. Then the output of query i is

    out_i = phi(q_i) S_i / (phi(q_i) . z_i),   S_i = sum_{j <= i} phi(k_j)^T v_j (d_k x d_v),
                                              z_i = sum_{j <= i} phi(k_j)

and S, z can be updated one token at a time: a decoder keeps d_k (d_v + 1) numbers per head whatever the length
of the stream. :func:`linear_attention` is the quadratic form (every weight formed, as attention does);
:class:`LinearAttentionState` is the running state. They compute the same numbers; the model is a different
function from softmax attention.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import _validate as V
from ..errors import AttentionInputError
from ..i18n import _
from ._checks import check_qkv


def elu_plus_one(x):
    """Katharopoulos et al.'s feature map: elu(x) + 1 > 0."""
    return F.elu(x) + 1


def linear_attention(q, k, v, feature_map=elu_plus_one, causal=True):
    """Quadratic form: weights phi(q) phi(k)^T (causal: j <= i), each row divided by its sum; q (..., T, d_k),
    k (..., T, d_k), v (..., T, d_v) -> (..., T, d_v)."""
    _batch, T, S, _d_k, _d_v = check_qkv(q, k, v)
    if causal and T != S:
        raise AttentionInputError(_("causal linear attention needs as many queries as keys; got T = {T}, "
                                    "S = {S}").format(T=T, S=S))
    weights = feature_map(q) @ feature_map(k).transpose(-2, -1)          # (..., T, S), all > 0
    if causal:
        weights = weights.tril()                                          # j <= i
    return (weights / weights.sum(-1, keepdim=True)) @ v                 # (..., T, d_v)


class LinearAttentionState:
    """The running state S (..., d_k, d_v) and z (..., d_k) of causal linear attention; ``step`` adds the t newest
    positions and returns their outputs."""

    def __init__(self, feature_map=elu_plus_one):
        self.feature_map, self.S, self.z, self.length = feature_map, None, None, 0

    @property
    def nbytes(self) -> int:
        """Bytes of the state: d_k (d_v + 1) numbers per head, independent of the number of positions."""
        return 0 if self.S is None else self.S.nbytes + self.z.nbytes

    def step(self, q, k, v):
        """q, k (..., t, d_k), v (..., t, d_v) of the t newest positions -> (..., t, d_v)."""
        check_qkv(q, k, v)
        if q.shape[-2] != k.shape[-2]:
            raise AttentionInputError(_("step takes the queries, keys and values of the same t positions; got "
                                        "q {q} and k {k}").format(q=V.fmt(q.shape), k=V.fmt(k.shape)))
        fq, fk = self.feature_map(q), self.feature_map(k)                 # (..., t, d_k)
        if self.S is None:
            self.S = fk.new_zeros(*fk.shape[:-2], fk.shape[-1], v.shape[-1])   # (..., d_k, d_v)
            self.z = fk.new_zeros(*fk.shape[:-2], fk.shape[-1])                # (..., d_k)
        # inside the chunk: running sums up to each position (prefix sums), then the state before it
        S_i = self.S.unsqueeze(-3) + torch.cumsum(fk.unsqueeze(-1) * v.unsqueeze(-2), -3)   # (..., t, d_k, d_v)
        z_i = self.z.unsqueeze(-2) + torch.cumsum(fk, -2)                                   # (..., t, d_k)
        out = (fq.unsqueeze(-2) @ S_i).squeeze(-2) / (fq * z_i).sum(-1, keepdim=True)       # (..., t, d_v)
        self.S, self.z, self.length = S_i[..., -1, :, :], z_i[..., -1, :], self.length + q.shape[-2]
        return out
