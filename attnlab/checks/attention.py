"""Checkers for raw scores q k^T and for single-head attention with an allowed mask (NumPy).

Both take NumPy arrays and must return a float64 NumPy array (a torch tensor or a float32
result is refused with a message: the exercise texts say so). The attention checker refuses a call
of attnlab's own attention (:data:`ATTENTION_LIBRARIES`); PyTorch's SDPA is allowed (exercise 4.5
wraps it).
"""
from __future__ import annotations

import numpy as np

from .. import masks
from .. import reference as ref
from ..errors import EmptyVisibilityError
from ..i18n import N_, _
from . import seeds
from .diagnosis import Trial
from .engine import Mistake, close, error_hint, models, run_model
from .kernels import attend, softmax, swap
from .registry import checker

# attnlab's own attention: the sheets ask for it written by hand (the softmax may come from `al.softmax`)
ATTENTION_LIBRARIES = ("attnlab.reference.attention", "attnlab.reference.scaled_dot_product",
                       "attnlab.reference.masked_softmax", "attnlab.reference.multi_head_attention",
                       "attnlab.exact.attention", "attnlab.torch_ops.attention.attention")

SCORES_MISTAKES: list[Mistake] = []
model = models(SCORES_MISTAKES)


@model("no_transpose", N_("Q K instead of Q K^T. Each score is the dot product of a query row with a key row, so "
       "the keys must be transposed: `q @ k^T`. When d_k equals the number of keys the shapes agree and only the "
       "values are wrong (the transpose trap of chapter 1)."))
def scores_without_transpose(q, k):
    return q @ k


@model("scores_transposed", N_("you computed K Q^T, the transpose of the scores: row i must belong to query i, so "
       "use `q @ k^T`."))
def scores_transposed(q, k):
    return k @ swap(q)


@model("elementwise", N_("an elementwise product `q * k` is not a matrix of dot products; use `q @ k^T`."))
def scores_elementwise(q, k):
    return q * k


@model("scaled", N_("these are scaled scores; this task asks for the raw dot products `q @ k^T` (the 1/sqrt(d_k) "
       "comes with the full attention)."))
def scores_already_scaled(q, k):
    return q @ swap(k) / np.sqrt(q.shape[-1])


def _scores_shape_hint(q_shape, k_shape):
    T, S = q_shape[-2], k_shape[-2]

    def hint(shape):
        if tuple(shape[-2:]) == (S, T):
            return _("that is the transpose: scores need one row per query and one column per key, `q @ k^T`.")
        if len(shape) > len(q_shape):
            return _("your result has more axes than the inputs: `np.dot` (or `np.tensordot`) pairs every batch "
                     "entry of q with every batch entry of k. Use `@` (`np.matmul`), which keeps the batch axes "
                     "aligned.")
        return None
    return hint


@checker(N_("scores q k^T"), SCORES_MISTAKES)
def check_scores(run, fn):
    """Check ``fn(q, k)``: the raw dot-product scores ``q @ k^T`` with shape (..., T, S)."""
    rng = seeds.rng(1)
    cases = [
        (N_("the asymmetric example Q = [[1, 2], [0, 1]], K = [[1, 0], [2, 1]]"),
         np.array([[1.0, 2.0], [0.0, 1.0]]), np.array([[1.0, 0.0], [2.0, 1.0]])),
        (N_("T = 2 queries, S = 3 keys, d_k = 4"), rng.normal(size=(2, 4)), rng.normal(size=(3, 4))),
        (N_("T = S = d_k = 3 (every shape agrees, so only the values can tell)"), rng.normal(size=(3, 3)),
         rng.normal(size=(3, 3))),
        (N_("a batch: q (2, 3, 4, 5), k (2, 3, 6, 5)"), rng.normal(size=(2, 3, 4, 5)), rng.normal(size=(2, 3, 6, 5))),
    ]

    def trial(item):
        case, q, k = item
        T, S = q.shape[-2], k.shape[-2]
        out = run.call(fn, case, q, k, hint=error_hint)
        got = run.array(out, case, shape=q.shape[:-2] + (T, S), shape_hint=_scores_shape_hint(q.shape, k.shape))
        return Trial(case, got, q @ swap(k), (q, k))

    run.each_case(cases, trial, SCORES_MISTAKES)
    return run.passed(_("All {n_cases} cases match `q @ k^T`, including the asymmetric example "
                        "where Q K has the same shape and different values.").format(n_cases=len(cases)))


ATTENTION_MISTAKES: list[Mistake] = []
model = models(ATTENTION_MISTAKES)


@model("no_transpose", N_("Q K instead of Q K^T (the transpose trap). When d_k equals the number of keys `q @ k` has "
       "the right shape and wrong values; transpose the keys: `q @ np.swapaxes(k, -1, -2)`."))
def attention_without_transpose(q, k, v, allowed=None):
    return attend(q, k, v, allowed, scores=q @ k)


@model("scores_transposed", N_("the scores are K Q^T instead of Q K^T, so the softmax runs over queries. Row i of "
       "the scores must belong to query i."))
def attention_scores_transposed(q, k, v, allowed=None):
    a = softmax(k @ swap(q) / np.sqrt(q.shape[-1]))      # (S, T), normalised over queries
    return a @ v


@model("wrong_axis", N_("softmax over the wrong axis: your weights sum to 1 down each column (over queries). Each "
       "query distributes its weight over the keys: normalise along the last axis."))
def attention_softmax_over_queries(q, k, v, allowed=None):
    return attend(q, k, v, allowed, axis=-2)


@model("no_scale", N_("missing scaling: the scores must be divided by sqrt(d_k) before the softmax."))
def attention_without_scale(q, k, v, allowed=None):
    return attend(q, k, v, allowed, scale=1.0)


@model("scale_by_d_k", N_("wrong scaling: you divided by d_k; divide by sqrt(d_k)."))
def attention_scale_by_d_k(q, k, v, allowed=None):
    return attend(q, k, v, allowed, scale=1 / q.shape[-1])


@model("scale_multiplied", N_("wrong scaling: you multiplied by sqrt(d_k); divide by it."))
def attention_scale_multiplied(q, k, v, allowed=None):
    return attend(q, k, v, allowed, scale=np.sqrt(q.shape[-1]))


@model("scale_by_d_v", N_("wrong scaling: you divided by sqrt(d_v), the value width; the scale uses d_k, the width "
       "of queries and keys."))
def attention_scale_by_d_v(q, k, v, allowed=None):
    return attend(q, k, v, allowed, scale=1 / np.sqrt(v.shape[-1]))


@model("no_softmax", N_("the scores were used as weights without a softmax."))
def attention_without_softmax(q, k, v, allowed=None):
    return attend(q, k, v, allowed, fill=0.0, normalise=False)


@model("scale_by_length", N_("wrong scaling: you divided by the square root of the number of keys S; the scale "
       "uses d_k, the width of queries and keys: `1 / np.sqrt(q.shape[-1])`."))
def attention_scale_by_keys(q, k, v, allowed=None):
    return attend(q, k, v, allowed, scale=1 / np.sqrt(k.shape[-2]))


@model("no_max_subtraction", N_("no max subtraction (overflow): large scores make `np.exp` return inf and the weights "
       "nan. Subtract each row's maximum (over the allowed keys) before `np.exp`."))
def attention_without_max_subtraction(q, k, v, allowed=None):
    return attend(q, k, v, allowed, stable=False)


@model("global_max", N_("you subtracted the maximum of the whole array of scores, not of each row: a row far below "
       "the largest score underflows to 0/0 = nan. Use `scores.max(axis=-1, keepdims=True)`."))
def attention_global_max(q, k, v, allowed=None):
    s = q @ swap(k) / np.sqrt(q.shape[-1])
    if allowed is not None:
        s = np.where(np.broadcast_to(allowed, s.shape), s, -np.inf)
    e = np.exp(s - s.max())
    return e / e.sum(axis=-1, keepdims=True) @ v


MASK_MISTAKES: list[Mistake] = []
model = models(MASK_MISTAKES)


@model("mask_after_softmax", N_("mask applied after the softmax. Zeroing weights after normalising leaves rows that "
       "sum to less than 1 (the forbidden keys already took their share). Put forbidden scores to -inf before the "
       "softmax."))
def attention_mask_after_softmax(q, k, v, allowed=None):
    return attend(q, k, v, allowed, mask="after")


@model("mask_ignored", N_("the mask is ignored: queries read keys they may not read."))
def attention_mask_ignored(q, k, v, allowed=None):
    return attend(q, k, v, allowed, mask="ignore")


@model("mask_inverted", N_("mask polarity inverted: here True means this query MAY read this key (as in SDPA). You "
       "blocked the allowed keys and kept the forbidden ones."))
def attention_mask_inverted(q, k, v, allowed=None):
    return attend(q, k, v, allowed, mask="invert")


@model("mask_inverted", N_("mask polarity inverted: here True means this query MAY read this key (as in SDPA). You "
       "blocked the allowed keys and kept the forbidden ones (and a row whose keys are all allowed came out as "
       "zeros, SDPA's answer for a row with nothing to read)."))
def attention_mask_inverted_zero_rows(q, k, v, allowed=None):
    return np.nan_to_num(attend(q, k, v, allowed, mask="invert"), nan=0.0)


@model("mask_added", N_("the boolean mask was added to the scores (True counts as 1), which shifts scores but "
       "forbids nothing. Replace forbidden scores by -inf instead, e.g. `np.where(allowed, scores, -np.inf)`."))
def attention_mask_added(q, k, v, allowed=None):
    return attend(q, k, v, allowed, mask="add")


@model("max_over_forbidden", N_("you subtracted each row's maximum over all keys, forbidden ones included, and "
       "masked afterwards: when a forbidden score is far above the allowed ones (more than about 745), every allowed "
       "`np.exp` underflows to 0 and the row becomes 0/0 = nan. Fill the forbidden scores with -inf first, then "
       "subtract the maximum of what is left."))
def attention_max_over_forbidden(q, k, v, allowed=None):
    s = q @ swap(k) / np.sqrt(q.shape[-1])
    e = np.exp(s - s.max(axis=-1, keepdims=True)) * allowed
    return e / e.sum(axis=-1, keepdims=True) @ v


@model("mask_multiplied", N_("the boolean mask was multiplied into the scores, so a forbidden score becomes 0, not "
       "-inf, and still gets weight after the softmax. Replace forbidden scores by -inf instead: "
       "`np.where(allowed, scores, -np.inf)`."))
def attention_mask_multiplied(q, k, v, allowed=None):
    return attend(q, k, v, allowed, scores=(q @ swap(k)) * allowed, mask="ignore")


EMPTY_ROW_MISTAKES: list[Mistake] = []
model = models(EMPTY_ROW_MISTAKES)


@model("fill_minus_1e9", N_("-1e9 filling (uniform rows): with a large finite penalty a row with no readable key "
       "gets uniform weights over the forbidden keys and reads everything it must not. A valid query with no "
       "readable key is an error: check for it and raise ValueError."))
def attention_fill_minus_1e9(q, k, v, allowed=None):
    return attend(q, k, v, allowed, fill=-1e9)


@model("nan_row", N_("a row with no readable key came out as nan: -inf everywhere gives -inf - (-inf) = nan. A valid "
       "query with no readable key is an error: check `allowed.any(axis=-1)` and raise ValueError."))
def attention_fill_minus_inf_unguarded(q, k, v, allowed=None):
    return attend(q, k, v, allowed, fill=-np.inf)


@model("zero_row", N_("a valid query with no readable key silently got a zero output, which hides a broken mask. "
       "Raise ValueError instead (padding queries, which may get zeros, are marked separately in the package with "
       "`query_valid`)."))
def attention_zero_rows(q, k, v, allowed=None):
    out = attend(q, k, v, allowed, fill=-np.inf)
    return np.nan_to_num(out, nan=0.0)


NO_ERROR = Mistake("empty_row_accepted", N_("a valid query with no readable key returned an output; it must raise "
                   "ValueError."))


def _scores_case(scores):
    """q, k with k = I, so that the scaled scores q k^T / sqrt(d_k) are exactly ``scores`` (T, S = d_k)."""
    scores = np.asarray(scores, dtype=float)
    return scores * np.sqrt(scores.shape[-1]), np.broadcast_to(np.eye(scores.shape[-1]), scores.shape[:-2] +
                                                               (scores.shape[-1],) * 2).copy()


def _attention_cases(with_masks: bool):
    rng = seeds.rng(7)
    cases = [
        (N_("a square case built to expose a missing transpose (T = S = d_k = 3, d_v = 2, asymmetric q and k)"),
         rng.normal(size=(3, 3)), rng.normal(size=(3, 3)), rng.normal(size=(3, 2)), None),
        (N_("a rectangular case (T = 2 queries, S = 5 keys, d_k = 4, d_v = 3)"),
         rng.normal(size=(2, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 3)), None),
        (N_("T = S = 4 queries and keys with d_k = 2 and d_v = 3"),
         rng.normal(size=(4, 2)), rng.normal(size=(4, 2)), rng.normal(size=(4, 3)), None),
        (N_("a batch with a head axis (q: (2, 3, 4, 8), k: (2, 3, 6, 8), v: (2, 3, 6, 5))"),
         rng.normal(size=(2, 3, 4, 8)), rng.normal(size=(2, 3, 6, 8)), rng.normal(size=(2, 3, 6, 5)), None),
    ]
    k_big = np.abs(rng.normal(size=(4, 4))) + 0.5
    q_big = np.full((3, 4), 400.0) * np.array([[1.0], [1.5], [-1.0]])
    cases.append((N_("large scores (about +-1000; `np.exp` overflows without max subtraction)"),
                  q_big, k_big, rng.normal(size=(4, 2)), None))
    cases.append((N_("large scores in a batch of 2 whose sequences are 1500 apart"),
                  np.stack([q_big[:2], -q_big[1:]]) * 1.25, np.stack([k_big, k_big * 2]),
                  rng.normal(size=(2, 4, 3)), None))
    if with_masks:
        allowed = np.array([[1, 0, 1, 1, 0], [0, 1, 1, 0, 1], [1, 1, 0, 0, 0], [0, 0, 0, 1, 1]], dtype=bool)
        q_far, k_far = _scores_case([[800.0, 795.0, 1000.0, -5.0], [2.0, 0.0, 1.0, 900.0], [-1.0, 3.0, 0.0, 2.0]])
        far = np.array([[1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]], dtype=bool)
        q_pad, k_pad = _scores_case([[[1.0, 2.0, 900.0], [0.5, -1.0, 850.0]], [[3.0, 1000.0, 990.0],
                                                                             [0.0, 760.0, 800.0]]])
        cases += [
            (N_("a (T = 4, S = 5) mask with forbidden keys in every row"),
             rng.normal(size=(4, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2)), allowed),
            (N_("a key-padding mask of shape (B, 1, S) = (2, 1, 4) (lengths 4 and 2) on a batch of 2"),
             rng.normal(size=(2, 3, 3)), rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 2)),
             masks.padding(np.array([4, 2]), 4)),
            (N_("a causal mask (T = S = 4)"),
             rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2)), masks.causal(4)),
            (N_("forbidden scores far above the allowed ones (rows of scaled scores [800, 795 | 1000, -5], "
                "[2, 0, 1 | 900], [-1, 3, 0, 2], after | forbidden)"), q_far, k_far, rng.normal(size=(4, 2)), far),
            (N_("padded keys whose scores are 750 to 1000 above the real ones (lengths 2 and 1 of S = 3)"),
             q_pad, k_pad, rng.normal(size=(2, 3, 2)), masks.padding(np.array([2, 1]), 3)),
        ]
    return cases


REFUSES_VALID = Mistake("refuses_valid_rows", N_("your function raised ValueError although every query of this case "
                        "may read at least one key. A row is empty when `allowed.any(axis=-1)` is False for it "
                        "(not when `allowed.all(axis=-1)` is False: most rows forbid some keys)."))


def _attention_shape_hint(T, S):
    def hint(shape):
        if tuple(shape[-2:]) == (T, S):
            return _("that is the shape of the weights (T, S); multiply them by v to get the output (T, d_v).")
        return None
    return hint


@checker(N_("attention"), ATTENTION_MISTAKES + MASK_MISTAKES + EMPTY_ROW_MISTAKES + [NO_ERROR, REFUSES_VALID],
         forbid=ATTENTION_LIBRARIES)
def check_attention(run, fn, *, masks_too: bool = True):
    """Check ``fn(q, k, v, allowed=None)``: softmax(q k^T / sqrt(d_k)) v with a boolean mask.

    Inputs are float64 NumPy arrays and the output must be one too. ``allowed`` is True where a
    query may read a key (it broadcasts to (..., T, S)); a query that may read no key must raise
    ValueError. With ``masks_too=False`` only the unmasked cases run (``fn(q, k, v)``), for the
    first version of the function in chapter 1. attnlab's own attention may not be called.
    """
    cases = _attention_cases(masks_too)

    def trial(item):
        case, q, k, v, allowed = item
        T, S = q.shape[-2], k.shape[-2]
        args = (q, k, v) if allowed is None else (q, k, v, allowed)
        out = run.call(fn, case, *args, hint=error_hint, expect=(ValueError,) if allowed is not None else ())
        if isinstance(out, ValueError):
            run.fail(_("On {case}: {explanation}").format(case=_(case), explanation=REFUSES_VALID.text),
                     REFUSES_VALID.name)
        shape = np.broadcast_shapes(q.shape[:-2], k.shape[:-2]) + (T, v.shape[-1])
        got = run.array(out, case, shape=shape, shape_hint=_attention_shape_hint(T, S))
        return Trial(case, got, ref.attention(q, k, v, allowed=allowed), args)

    fallback = N_("print the weights for this case and compare them with `al.attention(q, k, v, allowed, "
                  "return_weights=True)`.")
    # two families: a mistake is confirmed within its own (a wrong mask says nothing about the unmasked cases)
    run.each_case([c for c in cases if c[-1] is None], trial, ATTENTION_MISTAKES, fallback=fallback)
    run.each_case([c for c in cases if c[-1] is not None], trial, ATTENTION_MISTAKES + MASK_MISTAKES,
                  fallback=fallback)
    if not masks_too:
        return run.passed(_("All {n_cases} unmasked cases match `al.attention`: the transpose "
                            "trap, rectangular shapes, a batch with a head axis and large scores.").format(
                                n_cases=len(cases)))
    _check_empty_row(run, fn)
    return run.passed(_("All {value} cases match `al.attention`: the transpose trap, rectangular "
                        "shapes, batches, large scores, general, padding and causal masks, and a "
                        "query with no readable key raises ValueError.").format(value=len(cases) + 2))


def _empty_row_cases():
    rng = seeds.rng(9)
    q, k, v = rng.normal(size=(3, 2)), rng.normal(size=(4, 2)), rng.normal(size=(4, 3))
    allowed = np.array([[1, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]], dtype=bool)
    qb, kb, vb = rng.normal(size=(2, 2, 3)), rng.normal(size=(2, 5, 3)), rng.normal(size=(2, 5, 2))
    allowed_b = np.ones((2, 2, 5), dtype=bool)
    allowed_b[1, 0] = False
    return [(N_("a (3, 4) mask whose second row is all False (a valid query that may read no key)"),
             (q, k, v, allowed)),
            (N_("a batch of 2 whose query 0 of sequence 1 may read no key"), (qb, kb, vb, allowed_b))]


def _check_empty_row(run, fn):
    """Every empty-row case must raise ValueError; a returned output is matched against the usual fills on both
    cases before one is named."""
    outputs = []
    for case, args in _empty_row_cases():
        try:
            ref.attention(*args[:3], allowed=args[3])
            raise AssertionError(_("the reference must refuse an empty row"))   # pragma: no cover
        except EmptyVisibilityError:
            pass
        out = run.call(fn, case, *args, expect=(ValueError,),
                       hint=lambda err: _("raise ValueError (or a subclass) for a valid query with no readable key."))
        if not isinstance(out, ValueError):
            outputs.append((case, args, run.array(out, case, shape=args[0].shape[:-1] + (args[2].shape[-1],),
                                                  dtype="any")))
    if not outputs:
        return
    for mistake in EMPTY_ROW_MISTAKES:
        if all(_fits(got, run_model(mistake.model, *args)) for _case, args, got in outputs):
            run.fail(_("On {case}: {explanation}").format(case=_(outputs[0][0]), explanation=mistake.text),
                     mistake.name)
    run.fail(_("On {case}, your function returned an output; a valid query with no readable key "
               "must raise ValueError.").format(case=_(outputs[0][0])), NO_ERROR.name)


def _fits(got, model_out) -> bool:
    return model_out is not None and close(got, model_out)
