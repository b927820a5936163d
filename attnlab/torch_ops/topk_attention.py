"""Top-k sparse attention: each query reads only the k keys with its largest scores among those it may read.

The selection is a mask in the package's convention (True = may read), so the attention itself is the ordinary
masked attention: ``attention(q, k, v, allowed=topk_mask(q, k, top_k, allowed))``. Learned selectors (DeepSeek's
sparse attention scores keys with a small separate "indexer") choose the k keys more cheaply than from the
full scores, which this reference computes.
"""
from __future__ import annotations

import numbers

import torch

from ..errors import AttentionInputError
from ..i18n import _
from ._checks import as_mask, check_qkv
from .attention import attention


def topk_mask(q, k, top_k, allowed=None):
    """(..., T, S) boolean: for each query, its ``top_k`` highest-scoring allowed keys (all of them if fewer).
    Ties at the k-th score keep the first keys in order."""
    batch, T, S, _d_k, _d_v = check_qkv(q, k, k)
    if isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral) or top_k < 1:
        raise AttentionInputError(_("top_k must be a positive integer; got {top_k!r}").format(top_k=top_k))
    allowed = as_mask("allowed", allowed, batch + (T, S), q.device)
    scores = q @ k.transpose(-2, -1)                                     # (..., T, S): the scale changes no order
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    kept = scores.topk(min(int(top_k), S), dim=-1).indices              # (..., T, top_k)
    mask = torch.zeros(scores.shape, dtype=torch.bool, device=q.device).scatter(-1, kept, True)
    return mask if allowed is None else mask & allowed                   # a row with fewer allowed keys keeps those


def topk_attention(q, k, v, top_k, allowed=None):
    """Attention over each query's top_k allowed keys: q (..., T, d_k), k (..., S, d_k), v (..., S, d_v)."""
    return attention(q, k, v, allowed=topk_mask(q, k, top_k, allowed))
