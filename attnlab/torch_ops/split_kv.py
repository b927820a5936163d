"""Split-KV attention (Flash-Decoding) in PyTorch: partial results per chunk of keys, merged by log-sum-exp.

Cut the keys into chunks J_1, ..., J_n. For one query row, chunk s gives a partial result

    lse_s = log sum_{j in J_s} exp(u_j)          o_s = sum_{j in J_s} exp(u_j - lse_s) v_j

(u_j the scaled, masked scores; a chunk with no visible key has lse_s = -inf and o_s = 0). Then

    lse = log sum_s exp(lse_s)                   o = sum_s exp(lse_s - lse) o_s

is exactly attention over all the keys: exp(lse_s - lse) o_s = sum_{j in J_s} exp(u_j - lse) v_j, and
the chunks' sums add up to the whole sum. The merge is the online softmax's rescaling applied to
chunks instead of single keys, so it is exact in any order and grouping. On a GPU the chunks run in
parallel (attnlab.kernels.split_kv_decode); here they run one after another, which shows the
arithmetic.
"""
from __future__ import annotations

import torch

from .. import _validate as V
from ..errors import AttentionInputError
from ..i18n import _
from ._checks import as_mask, check_qkv, empty_rows, positive_int


def partial_attention(q, k, v, allowed=None, scale=None):
    """(o_s, lse_s) of one chunk of keys: attention over the keys of k, v alone.

    q (..., T, d_k), k (..., S_s, d_k), v (..., S_s, d_v); allowed bool broadcastable to (..., T, S_s)
    or None; scale defaults to 1/sqrt(d_k). A row with no visible key gets o_s = 0 and lse_s = -inf
    (never NaN, also in the gradient): a partial result may be empty, the merged one may not.
    """
    batch, T, S, d_k, _d_v = check_qkv(q, k, v)
    allowed = as_mask("allowed", allowed, batch + (T, S), q.device)
    return _partial(q, k, v, allowed, V.scale_value(scale, d_k))


def _partial(q, k, v, allowed, scale):
    """partial_attention without the checks; k, v may have no key at all (an empty chunk)."""
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], () if allowed is None else allowed.shape[:-2])
    T, d_v = q.shape[-2], v.shape[-1]
    if k.shape[-2] == 0:                                               # an empty chunk sees nothing
        return q.new_zeros(*batch, T, d_v), q.new_full((*batch, T), float("-inf"))
    scores = (q @ k.transpose(-2, -1)) * scale                        # (..., T, S_s)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    m = scores.amax(dim=-1, keepdim=True).detach()                     # (..., T, 1), -inf for an empty row
    m = torch.where(torch.isfinite(m), m, 0.0)                         # any shift will do for an empty row
    e = torch.exp(scores - m)                                          # (..., T, S_s), 0 where hidden
    total = e.sum(dim=-1, keepdim=True)                                # (..., T, 1)
    seen = total > 0
    total = torch.where(seen, total, 1.0)
    out = (e @ v) / total                                              # (..., T, d_v)
    lse = torch.where(seen, m + torch.log(total), float("-inf"))       # (..., T, 1)
    return out.expand(*batch, T, d_v), lse.squeeze(-1).expand(*batch, T)


def merge_partials(outs, lses):
    """Merge partial results (o_s, lse_s) of disjoint chunks of keys into (out, lse) of their union.

    outs: a sequence of (..., T, d_v) tensors, lses: the matching (..., T). Exact in any order and
    grouping; a chunk with lse_s = -inf weighs nothing, and if every chunk has, out = 0, lse = -inf.
    """
    if len(outs) != len(lses) or not outs:
        raise AttentionInputError(_("merge_partials needs as many partial outputs as log-sum-exps, at least "
                                    "one; got {n_out} and {n_lse}").format(n_out=len(outs), n_lse=len(lses)))
    lse = torch.stack(list(lses))                                      # (n, ..., T)
    top = lse.amax(dim=0).detach()                                     # (..., T)
    top = torch.where(torch.isfinite(top), top, 0.0)
    w = torch.exp(lse - top)                                           # (n, ..., T), chunk weights, 0 if empty
    total = w.sum(dim=0)                                               # (..., T)
    seen = total > 0
    total_safe = torch.where(seen, total, 1.0)
    out = (w[..., None] * torch.stack(list(outs))).sum(dim=0) / total_safe[..., None]   # (..., T, d_v)
    return out, torch.where(seen, top + torch.log(total_safe), float("-inf"))


def split_bounds(S: int, n_splits: int) -> list[int]:
    """Chunk boundaries 0 = b_0 <= b_1 <= ... <= b_n = S of n_splits near-equal chunks (some are empty
    when n_splits > S): chunk s holds keys b_s <= j < b_{s+1}."""
    return [s * S // n_splits for s in range(n_splits + 1)]


def split_kv_attention(q, k, v, n_splits, allowed=None, scale=None):
    """Attention computed over ``n_splits`` chunks of the keys and merged by log-sum-exp: (out, lse).

    q (..., T, d_k), k (..., S, d_k), v (..., S, d_v); leading axes broadcast. allowed: bool broadcastable
    to (..., T, S), True = may read. out (..., T, d_v) equals attention(q, k, v, allowed) for any
    n_splits >= 1, whether chunks are empty (n_splits > S) or see no key of a row; lse (..., T) =
    log sum_j exp(scale q_i.k_j) over the visible keys. A query that sees no key at all is an error
    (EmptyVisibilityError), as in attention. Differentiable.
    """
    batch, T, S, d_k, _d_v = check_qkv(q, k, v)
    n_splits = positive_int("n_splits", n_splits)
    allowed = as_mask("allowed", allowed, batch + (T, S), q.device)
    empty_rows(allowed, None, batch + (T,))                            # raises for a row with no key
    scale = V.scale_value(scale, d_k)
    bounds = split_bounds(S, n_splits)
    outs, lses = [], []
    for lo, hi in zip(bounds[:-1], bounds[1:]):                        # on a GPU: one program per chunk
        chunk_allowed = None if allowed is None else allowed[..., lo:hi]    # (..., T, hi - lo)
        out_s, lse_s = _partial(q, k[..., lo:hi, :], v[..., lo:hi, :], chunk_allowed, scale)
        outs.append(out_s.expand(*batch, T, out_s.shape[-1]))              # (*batch, T, d_v)
        lses.append(lse_s.expand(*batch, T))                               # (*batch, T)
    return merge_partials(outs, lses)
