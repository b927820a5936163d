"""Wrong attempts at sheet 3 (masks), each with the diagnosis it must get."""
import math

import numpy as np
import torch

import attnlab.checks as C

from .attempts import expect


def test_exercise_3_1_causal_mask():
    check = C.check_causal_mask

    def square_ignores_offset(T, S, offset):
        if T == S:
            return np.tril(np.ones((T, S), dtype=bool))
        return np.arange(S)[None, :] <= np.arange(T)[:, None] + offset
    expect(check, square_ignores_offset, "3.1 causal_mask", "offset ignored when T == S", "top_left",
           "when the mask is square")
    expect(check, lambda T, S, offset: np.tril(np.ones((T, S), dtype=bool), k=offset - 1), "3.1 causal_mask",
           "tril with k = offset - 1", "excludes_diagonal", "its own position")
    expect(check, lambda T, S, offset: np.tril(np.ones((T, S), dtype=bool), k=S - T), "3.1 causal_mask",
           "tril with k = S - T", "always_bottom_right", "bottom-right")
    expect(check, lambda T, S, offset: (np.arange(S)[None, :] <= np.arange(T)[:, None] + offset).astype(int),
           "3.1 causal_mask", "0/1 integers", "not_boolean", "boolean")
    expect(check, lambda T, S, offset: np.tri(T, S, -offset, dtype=bool), "3.1 causal_mask", "np.tri with -offset",
           "offset_wrong_sign", "wrong sign")


def test_exercise_3_3_padding_mask():
    check = C.check_padding_mask
    expect(check, lambda lengths, S: (np.arange(S) < np.asarray(lengths)[:, None])[:, :, None], "3.3 padding_mask",
           "the size-1 axis last", "wrong_shape", "in the middle")
    expect(check, lambda lengths, S: np.arange(S)[None, None, :] < np.asarray(lengths)[:, None, None] - 1,
           "3.3 padding_mask", "j < L - 1", "off_by_one", "last real token")

    def float_mask(lengths, S):
        mask = np.zeros((len(lengths), 1, S))
        for b, L in enumerate(lengths):
            mask[b, 0, :L] = 1
        return mask
    expect(check, float_mask, "3.3 padding_mask", "a float 0/1 mask", "not_boolean", "boolean")
    expect(check, lambda lengths, S: (np.arange(S)[::-1][None, :] < np.asarray(lengths)[:, None])[:, None, :],
           "3.3 padding_mask", "positions counted from the end", "left_aligned", "padded on the left")


def test_exercise_3_4_document_mask():
    check = C.check_document_mask
    expect(check, lambda ids: ids[:, None] == ids[None, :], "3.4 document_mask", "no batch axis", "wrong_shape",
           "last axis only")
    expect(check, lambda ids: np.equal.outer(ids, ids), "3.4 document_mask", "np.equal.outer", "wrong_shape",
           "np.equal.outer")
    expect(check, lambda ids: (ids[..., :, None] == ids[..., None, :]).astype(np.int8), "3.4 document_mask",
           "int8 mask", "not_boolean", "boolean")
    expect(check, lambda ids: ids[..., :, None] >= ids[..., None, :], "3.4 document_mask", ">= between ids",
           "reads_earlier_documents", "earlier document")


def _scores(q, k):
    return q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])


def test_exercise_3_5_attention():
    check = C.check_attention

    def max_then_mask(q, k, v, allowed=None):
        s = _scores(q, k)
        if allowed is not None and not np.broadcast_to(allowed, s.shape).any(-1).all():
            raise ValueError("a query may read no key")
        e = np.exp(s - s.max(-1, keepdims=True))
        if allowed is not None:
            e = e * allowed
        return e / e.sum(-1, keepdims=True) @ v
    expect(check, max_then_mask, "3.5 attention", "max over all keys, mask after exp", "max_over_forbidden",
           "forbidden ones included")

    def fill_1e30(q, k, v, allowed=None):
        s = _scores(q, k)
        if allowed is not None:
            s = np.where(allowed, s, -1e30)
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True) @ v
    expect(check, fill_1e30, "3.5 attention", "-1e30 fill, no empty-row check", "fill_minus_1e9", "uniform")

    def all_instead_of_any(q, k, v, allowed=None):
        s = _scores(q, k)
        if allowed is not None:
            if not np.broadcast_to(allowed, s.shape).all(-1).all():
                raise ValueError("a query may read no key")
            s = np.where(allowed, s, -np.inf)
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True) @ v
    expect(check, all_instead_of_any, "3.5 attention", "`.all` for the empty-row test", "refuses_valid_rows",
           "`allowed.any(axis=-1)`")

    def zero_fill(q, k, v, allowed=None):
        s = _scores(q, k)
        if allowed is not None:
            if not np.broadcast_to(allowed, s.shape).any(-1).all():
                raise ValueError("a query may read no key")
            s = np.where(allowed, s, 0.0)
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True) @ v
    expect(check, zero_fill, "3.5 attention", "forbidden scores set to 0", "mask_multiplied", "becomes 0")


def _causal_weights(query, key, query_offset):
    T, S = query.shape[-2], key.shape[-2]
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
    allowed = torch.arange(S)[None, :] <= torch.arange(T)[:, None] + query_offset
    return torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1), scores, allowed


def test_exercise_3_6_causal_attention():
    check = C.check_causal_attention

    def bottom_right(query, key, value, query_offset=0, dropout=None):
        T, S = query.shape[-2], key.shape[-2]
        allowed = torch.tril(torch.ones(T, S, dtype=torch.bool), diagonal=S - T)
        scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
        w = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        return (dropout(w) if dropout else w) @ value, w
    expect(check, bottom_right, "3.6 causal_attention", "tril with diagonal = S - T", "always_bottom_right",
           "bottom-right")

    def dropped_weights(query, key, value, query_offset=0, dropout=None):
        w, _s, _a = _causal_weights(query, key, query_offset)
        if dropout is not None:
            w = dropout(w)
        return w @ value, w
    expect(check, dropped_weights, "3.6 causal_attention", "returns the dropped weights", "weights_after_dropout",
           "before dropout")

    def fills_allowed(query, key, value, query_offset=0, dropout=None):
        _w, scores, allowed = _causal_weights(query, key, query_offset)
        w = torch.softmax(scores.masked_fill(allowed, float("-inf")), dim=-1)
        return (dropout(w) if dropout else w) @ value, w
    expect(check, fills_allowed, "3.6 causal_attention", "masked_fill where allowed", "mask_inverted",
           "masked_fill")

    def by_d_k(query, key, value, query_offset=0, dropout=None):
        _w, scores, allowed = _causal_weights(query, key, query_offset)
        w = torch.softmax((scores / math.sqrt(query.shape[-1])).masked_fill(~allowed, float("-inf")), dim=-1)
        return (dropout(w) if dropout else w) @ value, w
    expect(check, by_d_k, "3.6 causal_attention", "divided by d_k", "scale_by_d_k", "divide by sqrt(d_k)")

    def sdpa_is_causal(query, key, value, query_offset=0, dropout=None):
        w, _s, _a = _causal_weights(query, key, query_offset)
        out = torch.nn.functional.scaled_dot_product_attention(query, key, value, is_causal=True)
        return (dropout(w) @ value if dropout else out), w
    expect(check, sdpa_is_causal, "3.6 causal_attention", "SDPA's is_causal (top-left)", "top_left",
           "top-left")
