"""Scaled dot-product attention in PyTorch: the explicit path and the fast paths, one contract.

``attention`` follows the NumPy reference exactly (masks are boolean, True = may read; padding
queries give zeros; a valid query with nothing to read is an error) and lets you choose how
the numbers are computed:

    "naive"    written like PyTorch's documented reference implementation of SDPA: every
               step visible, the full (..., T, S) weight matrix materialised
    "sdpa"     torch.nn.functional.scaled_dot_product_attention with the boolean mask
    "chunked"  our online-softmax implementation (allowed=None or a causal mask only)
    "auto"     SDPA, but a causal mask is recognised and handed over as structure
               (is_causal / causal_lower_right) so the kernel can skip the future entirely
"""
from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

from .. import _validate as V
from ..errors import AttentionInputError
from ..i18n import _
from ._checks import as_mask, check_qkv, dropout_value, empty_rows
from .chunked import chunked_attention

IMPLS = ("auto", "naive", "sdpa", "chunked")


def default_device() -> torch.device:
    """The best device available here: cuda, then mps (Apple GPUs), then cpu."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


@functools.lru_cache(maxsize=4)
def _causal_triangle(T: int, S: int, device: torch.device) -> torch.Tensor:
    """The (T, S) bottom-right aligned causal mask, allowed[i, j] = j <= i + S - T (cached)."""
    return torch.ones(T, S, dtype=torch.bool, device=device).tril(diagonal=S - T)


def _same_bools(a: torch.Tensor, b: torch.Tensor) -> bool:
    """torch.equal for bool tensors, comparing 8 booleans at a time as one int64 when possible."""
    if a.is_contiguous() and b.is_contiguous() and a.numel() % 8 == 0 and a.storage_offset() % 8 == 0:
        return torch.equal(a.reshape(-1).view(torch.int64), b.reshape(-1).view(torch.int64))  # (numel / 8,)
    return torch.equal(a, b)


def _structural_causal(allowed, T: int, S: int) -> str | None:
    """Which structural form of SDPA's causal masking ``allowed`` is, if any.

    "is_causal"    T == S and allowed is the lower triangle (SDPA's is_causal=True)
    "lower_right"  T < S and allowed[i, j] = j <= i + S - T: queries are the newest positions,
                   as in cached decoding (torch.nn.attention.bias.causal_lower_right)
    None           anything else, including a top-left aligned rectangle (not what a KV cache
                   needs) and T > S (whose first rows see no key)
    Only masks of shape (T, S), possibly with leading axes of size 1, are candidates.
    """
    if allowed is None or T > S or tuple(allowed.shape[-2:]) != (T, S):
        return None
    if any(n != 1 for n in allowed.shape[:-2]):
        return None
    if not _same_bools(allowed.reshape(T, S), _causal_triangle(T, S, allowed.device)):   # (T, S) vs (T, S)
        return None
    return "is_causal" if T == S else "lower_right"


def _naive(q, k, v, allowed, query_valid, empty, scale, dropout_p):
    """The explicit path; returns (out, weights)."""
    scores = q @ k.transpose(-2, -1) * scale                    # (..., T, S)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))    # forbidden: exp(-inf) = 0 exactly
    if empty is not None:
        scores = scores.masked_fill(empty[..., None], 0.0)      # padding rows with no key: any finite value
    weights = torch.softmax(scores, dim=-1)                     # (..., T, S), rows sum to 1
    if query_valid is not None:
        weights = weights.masked_fill(~query_valid[..., None], 0.0)  # padding queries read nothing
    if dropout_p > 0:
        weights = F.dropout(weights, p=dropout_p, training=True)     # kept weights scaled by 1/(1-p)
    return weights @ v, weights                                 # (..., T, d_v), (..., T, S)


def _sdpa(q, k, v, allowed, empty, form, scale, dropout_p):
    """F.scaled_dot_product_attention with a dense bool mask, or a structural causal form."""
    T, S = q.shape[-2], k.shape[-2]
    if form == "is_causal":
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True, scale=scale)
    if form == "lower_right":
        return F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(T, S),
                                              dropout_p=dropout_p, scale=scale)
    if empty is not None:
        allowed = allowed | empty[..., None]                    # padding rows read something; zeroed later
    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=dropout_p, scale=scale)


def attention(q, k, v, allowed=None, query_valid=None, scale=None, dropout_p=0.0, impl="auto",
              return_weights=False):
    """softmax(q k^T * scale) v with visibility masks, on any device, differentiable.

    q (..., T, d_k), k (..., S, d_k), v (..., S, d_v) -> out (..., T, d_v); leading axes broadcast.
    allowed: bool (tensor or NumPy array) broadcastable to (..., T, S); True = query may read key.
    query_valid: bool broadcastable to (..., T); False rows (padding queries) get zero output,
    zero weights and pass zero gradient. A valid query with no allowed key: EmptyVisibilityError.
    scale defaults to 1/sqrt(d_k). dropout_p > 0 drops weights (training-style, always on).
    impl: "auto" | "naive" | "sdpa" | "chunked" (see the module docstring).
    return_weights=True returns (out, weights) from the naive path; weights (..., T, S) are the
    ones actually applied, so with dropout their rows sum to 1 only in expectation.
    """
    batch, T, S, d_k, _d_v = check_qkv(q, k, v)
    allowed = as_mask("allowed", allowed, batch + (T, S), q.device)
    query_valid = as_mask("query_valid", query_valid, batch + (T,), q.device)
    scale = V.scale_value(scale, d_k)
    dropout_p = dropout_value(dropout_p)
    if impl not in IMPLS:
        impls = ", ".join(map(repr, IMPLS))
        raise AttentionInputError(_("impl must be one of {impls}; got {impl!r}").format(impls=impls, impl=impl))
    if return_weights and impl in ("sdpa", "chunked"):
        raise AttentionInputError(
            _("return_weights=True needs the weights, which impl={impl!r} never forms; use impl='naive' or "
              "'auto'").format(impl=impl))

    form = _structural_causal(allowed, T, S) if impl in ("auto", "chunked") else None
    empty = None if form else empty_rows(allowed, query_valid, batch + (T,))
    if return_weights or impl == "naive":
        out, weights = _naive(q, k, v, allowed, query_valid, empty, scale, dropout_p)
        return (out, weights) if return_weights else out
    if impl == "chunked":
        if allowed is not None and form is None:
            raise AttentionInputError(
                _("impl='chunked' handles allowed=None or a causal mask (attnlab.masks.causal(T, S), "
                  "bottom-right aligned, T <= S); allowed of shape {shape} is neither. "
                  "Use impl='sdpa' or 'naive' for general masks").format(shape=V.fmt(allowed.shape)))
        if dropout_p > 0:
            raise AttentionInputError(
                _("impl='chunked' has no dropout; use impl='sdpa' or 'naive' with dropout_p > 0"))
        out = chunked_attention(q, k, v, causal=form is not None, scale=scale)
    else:
        out = _sdpa(q, k, v, allowed, empty, form, scale, dropout_p)
    if query_valid is not None:
        out = out.masked_fill(~query_valid[..., None], 0.0)     # padding queries: zero output, zero grad
    return out
