"""Checkers for raw scores q k^T and for single-head attention with an allowed mask (NumPy)."""
from __future__ import annotations

import numpy as np

from .. import masks
from .. import reference as ref
from ..errors import EmptyVisibilityError
from . import mistakes as M
from . import result as R
from .diagnose import Mistake, close, compare, run_model
from .runner import Stop, call, checker, matmul_hint, to_array

SCORES_MISTAKES = [
    Mistake("no_transpose", "Q K instead of Q K^T. Each score is the dot product of a query row with a key "
            "row, so the keys must be transposed: `q @ k^T`. When d_k equals the number of keys the shapes "
            "agree and only the values are wrong (the transpose trap of chapter 1).", M.scores_without_transpose),
    Mistake("scores_transposed", "you computed K Q^T, the transpose of the scores: row i must belong to "
            "query i, so use `q @ k^T`.", M.scores_transposed),
    Mistake("elementwise", "an elementwise product `q * k` is not a matrix of dot products; use `q @ k^T`.",
            M.scores_elementwise),
    Mistake("scaled", "these are scaled scores; this task asks for the raw dot products `q @ k^T` (the "
            "1/sqrt(d_k) comes with the full attention).", M.scores_already_scaled),
]

ATTENTION_MISTAKES = [
    Mistake("no_transpose", "Q K instead of Q K^T (the transpose trap). When d_k equals the number of keys "
            "`q @ k` has the right shape and wrong values; transpose the keys: `q @ np.swapaxes(k, -1, -2)`.",
            M.attention_without_transpose),
    Mistake("scores_transposed", "the scores are K Q^T instead of Q K^T, so the softmax runs over queries. "
            "Row i of the scores must belong to query i.", M.attention_scores_transposed),
    Mistake("wrong_axis", "softmax over the wrong axis: your weights sum to 1 down each column (over "
            "queries). Each query distributes its weight over the keys: normalise along the last axis.",
            M.attention_softmax_over_queries),
    Mistake("no_scale", "missing scaling: the scores must be divided by sqrt(d_k) before the softmax.",
            M.attention_without_scale),
    Mistake("scale_by_d_k", "wrong scaling: you divided by d_k; divide by sqrt(d_k).", M.attention_scale_by_d_k),
    Mistake("scale_multiplied", "wrong scaling: you multiplied by sqrt(d_k); divide by it.",
            M.attention_scale_multiplied),
    Mistake("scale_by_d_v", "wrong scaling: you divided by sqrt(d_v), the value width; the scale uses d_k, "
            "the width of queries and keys.", M.attention_scale_by_d_v),
    Mistake("no_softmax", "the scores were used as weights without a softmax.", M.attention_without_softmax),
    Mistake("no_max_subtraction", "no max subtraction (overflow): large scores make `np.exp` return inf and "
            "the weights nan. Subtract each row's maximum (over the allowed keys) before `np.exp`.",
            M.attention_without_max_subtraction),
]

MASK_MISTAKES = [
    Mistake("mask_after_softmax", "mask applied after the softmax. Zeroing weights after normalising leaves "
            "rows that sum to less than 1 (the forbidden keys already took their share). Put forbidden "
            "scores to -inf before the softmax.", M.attention_mask_after_softmax),
    Mistake("mask_ignored", "the mask is ignored: queries read keys they may not read.", M.attention_mask_ignored),
    Mistake("mask_inverted", "mask polarity inverted: here True means this query MAY read this key (as in "
            "SDPA). You blocked the allowed keys and kept the forbidden ones.", M.attention_mask_inverted),
    Mistake("mask_added", "the boolean mask was added to the scores (True counts as 1), which shifts scores "
            "but forbids nothing. Replace forbidden scores by -inf instead, e.g. "
            "`np.where(allowed, scores, -np.inf)`.", M.attention_mask_added),
]

EMPTY_ROW_MISTAKES = [
    Mistake("fill_minus_1e9", "-1e9 filling (uniform rows): with a large finite penalty a row with no "
            "readable key gets uniform weights over the forbidden keys and reads everything it must not. "
            "A valid query with no readable key is an error: check for it and raise ValueError.",
            M.attention_fill_minus_1e9),
    Mistake("nan_row", "a row with no readable key came out as nan: -inf everywhere gives "
            "-inf - (-inf) = nan. A valid query with no readable key is an error: check "
            "`allowed.any(axis=-1)` and raise ValueError.", M.attention_fill_minus_inf_unguarded),
    Mistake("zero_row", "a valid query with no readable key silently got a zero output, which hides a broken "
            "mask. Raise ValueError instead (padding queries, which may get zeros, are marked separately "
            "in the package with `query_valid`).", M.attention_zero_rows),
]


def _scores_shape_hint(got, T, S):
    def hint(shape):
        if tuple(shape[-2:]) == (S, T):
            return "that is the transpose: scores need one row per query and one column per key, `q @ k^T`."
        return None
    return hint


@checker("scores q k^T")
def check_scores(fn):
    """Check ``fn(q, k)``: the raw dot-product scores ``q @ k^T`` with shape (..., T, S)."""
    task = "scores q k^T"
    rng = np.random.default_rng(1)
    cases = [
        ("the asymmetric example Q = [[1, 2], [0, 1]], K = [[1, 0], [2, 1]]",
         np.array([[1.0, 2.0], [0.0, 1.0]]), np.array([[1.0, 0.0], [2.0, 1.0]])),
        ("T = 2 queries, S = 3 keys, d_k = 4", rng.normal(size=(2, 4)), rng.normal(size=(3, 4))),
        ("a batch: q (2, 3, 4, 5), k (2, 3, 6, 5)", rng.normal(size=(2, 3, 4, 5)), rng.normal(size=(2, 3, 6, 5))),
    ]
    for case, q, k in cases:
        T, S = q.shape[-2], k.shape[-2]
        out = call(task, fn, case, q, k, error_hint=matmul_hint)
        got = to_array(task, out, case, shape=q.shape[:-2] + (T, S), shape_hint=_scores_shape_hint(out, T, S))
        compare(task, case, got, q @ np.swapaxes(k, -1, -2), SCORES_MISTAKES, args=(q, k))
    return R.passed(task, f"All {len(cases)} cases match `q @ k^T`, including the asymmetric example where "
                          f"Q K has the same shape and different values.")


def _attention_cases(with_masks: bool):
    rng = np.random.default_rng(7)
    cases = [
        ("a square case built to expose a missing transpose (T = S = d_k = 3, d_v = 2, asymmetric q and k)",
         rng.normal(size=(3, 3)), rng.normal(size=(3, 3)), rng.normal(size=(3, 2)), None),
        ("a rectangular case (T = 2 queries, S = 5 keys, d_k = 4, d_v = 3)",
         rng.normal(size=(2, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 3)), None),
        ("a batch with a head axis (q: (2, 3, 4, 8), k: (2, 3, 6, 8), v: (2, 3, 6, 5))",
         rng.normal(size=(2, 3, 4, 8)), rng.normal(size=(2, 3, 6, 8)), rng.normal(size=(2, 3, 6, 5)), None),
    ]
    k_big = np.abs(rng.normal(size=(4, 4))) + 0.5
    q_big = np.full((3, 4), 400.0) * np.array([[1.0], [1.5], [-1.0]])
    cases.append(("large scores (about +-1000; `np.exp` overflows without max subtraction)",
                  q_big, k_big, rng.normal(size=(4, 2)), None))
    if with_masks:
        allowed = np.array([[1, 0, 1, 1, 0], [0, 1, 1, 0, 1], [1, 1, 0, 0, 0], [0, 0, 0, 1, 1]], dtype=bool)
        cases += [
            ("a (T = 4, S = 5) mask with forbidden keys in every row",
             rng.normal(size=(4, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2)), allowed),
            ("a key-padding mask of shape (B, 1, S) = (2, 1, 4) (lengths 4 and 2) on a batch of 2",
             rng.normal(size=(2, 3, 3)), rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 2)),
             masks.padding(np.array([4, 2]), 4)),
            ("a causal mask (T = S = 4)",
             rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2)), masks.causal(4)),
        ]
    return cases


def _attention_shape_hint(T, S):
    def hint(shape):
        if tuple(shape[-2:]) == (T, S):
            return "that is the shape of the weights (T, S); multiply them by v to get the output (T, d_v)."
        return None
    return hint


@checker("attention")
def check_attention(fn, *, masks_too: bool = True):
    """Check ``fn(q, k, v, allowed=None)``: softmax(q k^T / sqrt(d_k)) v with a boolean mask.

    ``allowed`` is True where a query may read a key (it broadcasts to (..., T, S)); a query that
    may read no key must raise ValueError. With ``masks_too=False`` only the unmasked cases run
    (``fn(q, k, v)``), for the first version of the function in chapter 1.
    """
    task = "attention"
    cases = _attention_cases(masks_too)
    for case, q, k, v, allowed in cases:
        T, S = q.shape[-2], k.shape[-2]
        args = (q, k, v) if allowed is None else (q, k, v, allowed)
        out = call(task, fn, case, *args, error_hint=matmul_hint)
        shape = np.broadcast_shapes(q.shape[:-2], k.shape[:-2]) + (T, v.shape[-1])
        got = to_array(task, out, case, shape=shape, shape_hint=_attention_shape_hint(T, S))
        mistakes = ATTENTION_MISTAKES + (MASK_MISTAKES if allowed is not None else [])
        compare(task, case, got, ref.attention(q, k, v, allowed=allowed), mistakes, args=args,
                fallback="print the weights for this case and compare them with `al.attention(q, k, v, "
                         "allowed, return_weights=True)`.")
    if not masks_too:
        return R.passed(task, f"All {len(cases)} unmasked cases match `al.attention`: the transpose trap, "
                              f"rectangular shapes, a batch with a head axis and large scores.")
    _check_empty_row(task, fn)
    return R.passed(task, f"All {len(cases) + 1} cases match `al.attention`: the transpose trap, rectangular "
                          f"shapes, batches, large scores, general, padding and causal masks, and a query with "
                          f"no readable key raises ValueError.")


def _check_empty_row(task, fn):
    rng = np.random.default_rng(9)
    q, k, v = rng.normal(size=(3, 2)), rng.normal(size=(4, 2)), rng.normal(size=(4, 3))
    allowed = np.array([[1, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]], dtype=bool)
    case = "a (3, 4) mask whose second row is all False (a valid query that may read no key)"
    try:
        ref.attention(q, k, v, allowed=allowed)
        raise AssertionError("the reference must refuse an empty row")   # pragma: no cover
    except EmptyVisibilityError:
        pass
    out = call(task, fn, case, q, k, v, allowed, expect=(ValueError,),
               error_hint=lambda err: "raise ValueError (or a subclass) for a valid query with no readable key.")
    if isinstance(out, ValueError):
        return
    got = to_array(task, out, case, shape=(3, 3))
    for mistake in EMPTY_ROW_MISTAKES:
        model = run_model(mistake.model, q, k, v, allowed)
        if model is not None and close(got, model):
            raise Stop(R.failed(task, f"On {case}: {mistake.explanation}", mistake.name))
    raise Stop(R.failed(task, f"On {case}, your function returned an output; a valid query with no readable "
                              f"key must raise ValueError."))
