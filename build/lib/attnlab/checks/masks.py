"""Checkers for the mask builders: causal with an offset, key padding, packed documents.

Masks are boolean "allowed" arrays: True means this query may read this key.
"""
from __future__ import annotations

import numpy as np

from .. import masks
from . import mistakes as M
from . import result as R
from .diagnose import Mistake, run_model
from .runner import Stop, call, checker, to_array

CAUSAL_MASK_MISTAKES = [
    Mistake("top_left", "top-left causal alignment: your triangle starts at key 0 for query 0 and ignores "
            "the offset. Positions are absolute: query i sits at position offset + i and may read every key "
            "j <= offset + i.", M.causal_mask_top_left),
    Mistake("always_bottom_right", "you always align the triangle bottom-right (offset S - T) and ignore "
            "the offset you were given; with keys beyond the queries this lets queries read the future.",
            M.causal_mask_always_bottom_right),
    Mistake("excludes_diagonal", "excluding the diagonal: a query may read its own position (j <= i, not "
            "j < i); otherwise the first query has no key at all.", M.causal_mask_excluding_diagonal),
    Mistake("reads_future", "future leakage: your mask allows j >= i (the upper triangle), so each query "
            "reads the positions after it instead of those before it.", M.causal_mask_reads_future),
    Mistake("offset_wrong_sign", "the offset has the wrong sign: query i sits at position offset + i, so "
            "the rule is j <= i + offset.", M.causal_mask_offset_wrong_sign),
    Mistake("inverted", "mask polarity inverted: True must mean \"may read\". You marked the future as "
            "allowed and the past as forbidden.", M.causal_mask_inverted),
]

PADDING_MISTAKES = [
    Mistake("off_by_one", "off by one: a sequence of length L has valid keys 0, ..., L - 1, so the rule is "
            "j < L (not j <= L).", M.padding_mask_off_by_one),
    Mistake("inverted", "mask polarity inverted: True must mean \"may read\" (a real token), False a "
            "padding position.", M.padding_mask_inverted),
    Mistake("left_aligned", "you padded on the left (valid keys at the end); here the padding is on the "
            "right: keys 0, ..., L - 1 are real.", M.padding_mask_left_aligned),
]

DOCUMENT_MISTAKES = [
    Mistake("with_causal", "you also applied a causal triangle. The document mask alone lets a position read "
            "every position of its own document; intersect it with a causal mask separately when you want "
            "both (`documents & causal`).", M.document_mask_with_causal),
    Mistake("inverted", "mask polarity inverted: True must mean \"same document, may read\".",
            M.document_mask_inverted),
    Mistake("reads_earlier_documents", "you compared document ids with <=, so a position also reads every "
            "earlier document: packed documents must not see each other at all, use ==.",
            M.document_mask_reads_earlier_documents),
]


def _bool_mask(task, out, case, shape, shape_hint=None):
    arr = to_array(task, out, case, "the mask", shape=shape, shape_hint=shape_hint, dtype=None)
    if arr.dtype != bool:
        values = np.unique(arr)
        if np.issubdtype(arr.dtype, np.floating) and np.isneginf(values).any():
            raise Stop(R.failed(task, f"On {case}, you returned an additive mask (0 / -inf). This task wants a "
                                      f"boolean array, True = may read; `al.masks.to_additive` converts it when "
                                      f"you need the additive form.", "additive"))
        raise Stop(R.failed(task, f"On {case}, the mask has dtype {arr.dtype}; return a boolean array "
                                  f"(True = may read), e.g. with `.astype(bool)` or a comparison such as `j <= i`.",
                            "not_boolean"))
    return arr


def _compare_masks(task, case, got, expected, mistakes, args):
    if np.array_equal(got, expected):
        return
    for mistake in mistakes:
        model = run_model(mistake.model, *args)
        if model is not None and np.shape(model) == got.shape and np.array_equal(got, model) \
                and not np.array_equal(model, expected):
            raise Stop(R.failed(task, f"On {case}, the mask matches a classic mistake: {mistake.explanation}",
                                mistake.name))
    where = tuple(int(i) for i in np.argwhere(got != expected)[0])
    raise Stop(R.failed(task, f"On {case}, entry {where} is {bool(got[where])}; it should be "
                              f"{bool(expected[where])}."))


@checker("causal mask")
def check_causal_mask(fn):
    """Check ``fn(T, S, offset)``: a (T, S) boolean mask with allowed[i, j] = (j <= i + offset)."""
    task = "causal mask"
    cases = [
        ("T = S = 4, offset = 0 (training)", 4, 4, 0),
        ("one query at absolute position 8 over S = 9 keys (offset = 8)", 1, 9, 8),
        ("T = 3 queries at positions 4..6 over S = 7 keys (offset = 4)", 3, 7, 4),
        ("T = 3 queries at positions 2..4 over S = 8 keys (offset = 2; keys 5..7 are the future)", 3, 8, 2),
        ("T = 2, S = 5, offset = 0", 2, 5, 0),
    ]
    for case, T, S, offset in cases:
        out = call(task, fn, case, T, S, offset)
        got = _bool_mask(task, out, case, (T, S))
        _compare_masks(task, case, got, masks.causal(T, S, offset), CAUSAL_MASK_MISTAKES, (T, S, offset))
    return R.passed(task, f"All {len(cases)} cases match `al.masks.causal`: square, a single cached query, "
                          f"bottom-right alignment and a cache that already holds future keys.")


def _padding_hint(B, S):
    def hint(shape):
        if tuple(shape) == (B, S):
            return ("add the query axis: (B, 1, S) broadcasts over the T queries of each sequence "
                    "(`mask[:, None, :]`).")
        if tuple(shape) == (B, S, 1):
            return ("a key-padding mask has its size-1 axis in the middle, (B, 1, S): it masks keys (columns), "
                    "and every query row sees the same keys.")
        return None
    return hint


@checker("padding mask")
def check_padding_mask(fn):
    """Check ``fn(lengths, S)``: a (B, 1, S) boolean mask, key j of sequence b real iff j < lengths[b]."""
    task = "padding mask"
    cases = [
        ("lengths [3, 1, 4] with S = 5", np.array([3, 1, 4]), 5),
        ("lengths [5, 5] with S = 5 (no padding)", np.array([5, 5]), 5),
        ("lengths [2, 6, 0] with S = 6 (the last sequence is all padding)", np.array([2, 6, 0]), 6),
    ]
    for case, lengths, S in cases:
        out = call(task, fn, case, lengths, S)
        got = _bool_mask(task, out, case, (len(lengths), 1, S), _padding_hint(len(lengths), S))
        _compare_masks(task, case, got, masks.padding(lengths, S), PADDING_MISTAKES, (lengths, S))
    return R.passed(task, f"All {len(cases)} cases match `al.masks.padding`, shape (B, 1, S) so that it "
                          f"broadcasts over queries.")


@checker("document mask")
def check_document_mask(fn):
    """Check ``fn(doc_ids)``: (..., T, T) boolean, True where two positions share a document."""
    task = "document mask"
    cases = [
        ("doc_ids [0, 0, 1, 1, 1, 2]", np.array([0, 0, 1, 1, 1, 2])),
        ("a batch of two packed rows [[0, 0, 1, 1], [5, 6, 6, 6]]", np.array([[0, 0, 1, 1], [5, 6, 6, 6]])),
        ("one document [7, 7, 7]", np.array([7, 7, 7])),
    ]
    for case, ids in cases:
        T = ids.shape[-1]
        out = call(task, fn, case, ids)
        got = _bool_mask(task, out, case, ids.shape[:-1] + (T, T))
        _compare_masks(task, case, got, masks.documents(ids), DOCUMENT_MISTAKES, (ids,))
    return R.passed(task, f"All {len(cases)} cases match `al.masks.documents`, with and without a batch axis.")
