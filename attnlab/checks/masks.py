"""Checkers for the mask builders: causal with an offset, key padding, packed documents.

Masks are boolean NumPy "allowed" arrays: True means this query may read this key. The sheet asks for
the masks built by hand: calling attnlab's own builders (:data:`MASK_LIBRARIES`) is named.
"""
from __future__ import annotations

import numpy as np

from .. import masks
from ..i18n import N_, _
from .diagnosis import Trial
from .engine import Mistake, models
from .registry import checker

MASK_LIBRARIES = ("attnlab.masks.causal", "attnlab.masks.padding", "attnlab.masks.documents",
                  "attnlab.masks.sliding_window", "attnlab.masks.from_additive", "attnlab.masks.from_forbidden")

ADDITIVE = Mistake("additive", N_("an additive mask (0 / -inf) was returned instead of a boolean one."))
NOT_BOOLEAN = Mistake("not_boolean", N_("the mask is not boolean (e.g. 0/1 integers or floats)."))


def _positions(T, S, offset):
    return offset + np.arange(T)[:, None], np.arange(S)[None, :]


CAUSAL_MASK_MISTAKES: list[Mistake] = []
model = models(CAUSAL_MASK_MISTAKES)


@model("top_left", N_("top-left causal alignment: your triangle starts at key 0 for query 0 and ignores the offset. "
       "Positions are absolute: query i sits at position offset + i and may read every key j <= offset + i."))
def causal_mask_top_left(T, S, offset):
    return np.tril(np.ones((T, S), dtype=bool))


@model("top_left", N_("top-left causal alignment when the mask is square: for T == S your triangle starts at key 0 "
       "for query 0 and ignores the offset (a square mask can still belong to queries at later positions). Query i "
       "sits at position offset + i and may read every key j <= offset + i, whatever the shape."))
def causal_mask_top_left_when_square(T, S, offset):
    i, j = _positions(T, S, 0 if T == S else offset)
    return j <= i


@model("always_bottom_right", N_("you always align the triangle bottom-right (offset S - T) and ignore the offset you "
       "were given; with keys beyond the queries this lets queries read the future."))
def causal_mask_always_bottom_right(T, S, offset):
    i, j = _positions(T, S, S - T)
    return j <= i


@model("excludes_diagonal", N_("excluding the diagonal: a query may read its own position (j <= i, not j < i); "
       "otherwise the first query has no key at all."))
def causal_mask_excluding_diagonal(T, S, offset):
    i, j = _positions(T, S, offset)
    return j < i


@model("reads_future", N_("future leakage: your mask allows j >= i (the upper triangle), so each query reads the "
       "positions after it instead of those before it."))
def causal_mask_reads_future(T, S, offset):
    i, j = _positions(T, S, offset)
    return j >= i


@model("offset_wrong_sign", N_("the offset has the wrong sign: query i sits at position offset + i, so the rule is "
       "j <= i + offset."))
def causal_mask_offset_wrong_sign(T, S, offset):
    i, j = _positions(T, S, -offset)
    return j <= i


@model("inverted", N_("mask polarity inverted: True must mean \"may read\". You marked the future as allowed and the "
       "past as forbidden."))
def causal_mask_inverted(T, S, offset):
    i, j = _positions(T, S, offset)
    return j > i


PADDING_MISTAKES: list[Mistake] = []
model = models(PADDING_MISTAKES)


@model("negative_zero_slice", N_("a slice such as `mask[b, -(S - L):] = False` (or `[:, -n_pad:]`) is wrong when "
       "there is no padding: -(S - L) is -0, which is 0, and `[0:]` selects every key. Use the positions instead: "
       "`np.arange(S) < L`."))
def padding_mask_negative_zero_slice(lengths, S):
    mask = np.ones((len(lengths), S), dtype=bool)
    for b, L in enumerate(np.asarray(lengths)):
        mask[b, -(S - int(L)):] = False
    return mask[:, None, :]


@model("off_by_one", N_("off by one: a sequence of length L has valid keys 0, ..., L - 1, so the rule is j < L "
       "(not j <= L)."))
def padding_mask_off_by_one(lengths, S):
    return (np.arange(S)[None, :] <= np.asarray(lengths)[:, None])[:, None, :]


@model("off_by_one", N_("off by one: a sequence of length L has valid keys 0, ..., L - 1, so the rule is j < L "
       "(not j < L - 1, which drops the last real token)."))
def padding_mask_drops_last_token(lengths, S):
    return (np.arange(S)[None, :] < np.asarray(lengths)[:, None] - 1)[:, None, :]


@model("inverted", N_("mask polarity inverted: True must mean \"may read\" (a real token), False a padding position."))
def padding_mask_inverted(lengths, S):
    return (np.arange(S)[None, :] >= np.asarray(lengths)[:, None])[:, None, :]


@model("left_aligned", N_("you padded on the left (valid keys at the end); here the padding is on the right: keys "
       "0, ..., L - 1 are real."))
def padding_mask_left_aligned(lengths, S):
    return (np.arange(S)[None, :] >= S - np.asarray(lengths)[:, None])[:, None, :]


DOCUMENT_MISTAKES: list[Mistake] = []
model = models(DOCUMENT_MISTAKES)


@model("with_causal", N_("you also applied a causal triangle. The document mask alone lets a position read every "
       "position of its own document; intersect it with a causal mask separately when you want both "
       "(`documents & causal`)."))
def document_mask_with_causal(doc_ids):
    ids = np.asarray(doc_ids)
    T = ids.shape[-1]
    return (ids[..., :, None] == ids[..., None, :]) & np.tril(np.ones((T, T), dtype=bool))


@model("inverted", N_("mask polarity inverted: True must mean \"same document, may read\"."))
def document_mask_inverted(doc_ids):
    ids = np.asarray(doc_ids)
    return ids[..., :, None] != ids[..., None, :]


@model("reads_earlier_documents", N_("you compared document ids with <=, so a position also reads every earlier "
       "document: packed documents must not see each other at all, use ==."))
def document_mask_reads_earlier_documents(doc_ids):
    ids = np.asarray(doc_ids)
    return ids[..., None, :] <= ids[..., :, None]


def _bool_mask(run, out, case, shape, shape_hint=None):
    arr = run.array(out, case, "the mask", shape=shape, shape_hint=shape_hint, dtype="bool")
    if arr.dtype != bool:
        if np.issubdtype(arr.dtype, np.floating) and np.isneginf(arr).any():
            run.fail(_("On {case}, you returned an additive mask (0 / -inf). This task wants a "
                       "boolean array, True = may read; `al.masks.to_additive` converts it when "
                       "you need the additive form.").format(case=_(case)),
                     ADDITIVE.name)
        run.fail(_("On {case}, the mask has dtype {dtype}; return a boolean array (True = may "
                   "read), e.g. with `.astype(bool)` or a comparison such as `j <= i`.").format(
                       case=_(case), dtype=arr.dtype), NOT_BOOLEAN.name)
    return arr


@checker(N_("causal mask"), CAUSAL_MASK_MISTAKES + [ADDITIVE, NOT_BOOLEAN], forbid=MASK_LIBRARIES)
def check_causal_mask(run, fn):
    """Check ``fn(T, S, offset)``: a (T, S) boolean NumPy mask with allowed[i, j] = (j <= i + offset)."""
    cases = [
        (N_("T = S = 4, offset = 0 (training)"), 4, 4, 0),
        (N_("one query at absolute position 8 over S = 9 keys (offset = 8)"), 1, 9, 8),
        (N_("T = 3 queries at positions 4..6 over S = 7 keys (offset = 4)"), 3, 7, 4),
        (N_("T = 3 queries at positions 2..4 over S = 8 keys (offset = 2; keys 5..7 are the future)"), 3, 8, 2),
        (N_("T = 2, S = 5, offset = 0"), 2, 5, 0),
        (N_("T = S = 5 with offset = 2 (a square mask whose queries sit at positions 2..6)"), 5, 5, 2),
        (N_("T = S = 3 with offset = 1 (square again, the offset still counts)"), 3, 3, 1),
    ]

    def trial(item):
        case, T, S, offset = item
        got = _bool_mask(run, run.call(fn, case, T, S, offset), case, (T, S))
        return Trial(case, got, masks.causal(T, S, offset), (T, S, offset))

    run.each_case(cases, trial, CAUSAL_MASK_MISTAKES, tol=None, name=N_("the mask"))
    return run.passed(_("All {n_cases} cases match `al.masks.causal`: square (with and without an offset), a "
                        "single cached query, bottom-right alignment and a cache that already holds future "
                        "keys.").format(n_cases=len(cases)))


def _padding_hint(B, S):
    def hint(shape):
        if tuple(shape) == (B, S):
            return _("add the query axis: (B, 1, S) broadcasts over the T queries of each sequence "
                     "(`mask[:, None, :]`).")
        if tuple(shape) == (B, S, 1):
            return _("a key-padding mask has its size-1 axis in the middle, (B, 1, S): it masks keys (columns), and "
                     "every query row sees the same keys.")
        return None
    return hint


@checker(N_("padding mask"), PADDING_MISTAKES + [ADDITIVE, NOT_BOOLEAN], forbid=MASK_LIBRARIES)
def check_padding_mask(run, fn):
    """Check ``fn(lengths, S)``: a (B, 1, S) boolean NumPy mask, key j of sequence b real iff j < lengths[b]."""
    cases = [
        (N_("lengths [3, 1, 4] with S = 5"), np.array([3, 1, 4]), 5),
        (N_("lengths [5, 2, 5] with S = 5 (two sequences without padding)"), np.array([5, 2, 5]), 5),
        (N_("lengths [2, 6, 0] with S = 6 (the last sequence is all padding)"), np.array([2, 6, 0]), 6),
        (N_("lengths [1, 3] with S = 4"), np.array([1, 3]), 4),
    ]

    def trial(item):
        case, lengths, S = item
        B = len(lengths)
        got = _bool_mask(run, run.call(fn, case, lengths, S), case, (B, 1, S), _padding_hint(B, S))
        return Trial(case, got, masks.padding(lengths, S), (lengths, S))

    run.each_case(cases, trial, PADDING_MISTAKES, tol=None, name=N_("the mask"))
    return run.passed(_("All {n_cases} cases match `al.masks.padding`, shape (B, 1, S) so that it "
                        "broadcasts over queries.").format(n_cases=len(cases)))


def _document_hint(ids_shape):
    T = ids_shape[-1]

    def hint(shape):
        if len(ids_shape) > 1 and len(shape) == len(ids_shape) + 1 and tuple(shape[-2:]) != (T, T):
            return _("compare along the last axis only, so that the batch axes stay in front: "
                     "`doc_ids[..., :, None] == doc_ids[..., None, :]` gives (..., T, T).")
        if len(shape) == 2 * len(ids_shape):
            return _("`np.equal.outer` (or comparing with every axis expanded) pairs every batch row with every "
                     "other: compare along the last axis only, `doc_ids[..., :, None] == doc_ids[..., None, :]`.")
        return None
    return hint


@checker(N_("document mask"), DOCUMENT_MISTAKES + [ADDITIVE, NOT_BOOLEAN], forbid=MASK_LIBRARIES)
def check_document_mask(run, fn):
    """Check ``fn(doc_ids)``: (..., T, T) boolean NumPy mask, True where two positions share a document."""
    cases = [
        (N_("doc_ids [0, 0, 1, 1, 1, 2]"), np.array([0, 0, 1, 1, 1, 2])),
        (N_("a batch of two packed rows [[0, 0, 1, 1], [5, 6, 6, 6]]"), np.array([[0, 0, 1, 1], [5, 6, 6, 6]])),
        (N_("one document [7, 7, 7]"), np.array([7, 7, 7])),
        (N_("doc_ids [3, 3, 1, 1, 2] (ids not in increasing order)"), np.array([3, 3, 1, 1, 2])),
    ]

    def trial(item):
        case, ids = item
        T = ids.shape[-1]
        got = _bool_mask(run, run.call(fn, case, ids), case, ids.shape[:-1] + (T, T), _document_hint(ids.shape))
        return Trial(case, got, masks.documents(ids), (ids,))

    run.each_case(cases, trial, DOCUMENT_MISTAKES, tol=None, name=N_("the mask"))
    return run.passed(_("All {n_cases} cases match `al.masks.documents`, with and without a batch "
                        "axis.").format(n_cases=len(cases)))
