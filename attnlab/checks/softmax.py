"""Checkers for the softmax and for dropout on attention weights (chapter 2's tasks).

Both take and return NumPy arrays; float64 inputs must give float64 results. The softmax is to be
written by hand: a call of a library softmax (attnlab's, SciPy's, PyTorch's) inside the student's
function is named as such (see :data:`SOFTMAX_LIBRARIES`).
"""
from __future__ import annotations

import numpy as np

from .. import reference as ref
from ..i18n import N_, _
from . import seeds
from .diagnosis import Trial
from .engine import FLOAT32, Mistake, close, describe_difference, error_hint, models
from .registry import checker

SOFTMAX_LIBRARIES = ("attnlab.reference.softmax", "attnlab.reference.masked_softmax", "scipy.special.softmax",
                     "torch.softmax", "torch.nn.functional.softmax", "torch.Tensor.softmax", "torch.special.softmax")


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


SOFTMAX_MISTAKES: list[Mistake] = []
model = models(SOFTMAX_MISTAKES)


@model("wrong_axis", N_("softmax over the wrong axis. You normalised along axis 0, so columns (not rows) sum to 1. "
       "Each query's weights run along the last axis: use `axis=-1`."))
def softmax_over_first_axis(x):
    return _softmax(x, axis=0)


@model("wrong_axis", N_("softmax over the wrong axis. You normalised along axis -2 (over queries); each query's "
       "weights run along the last axis: use `axis=-1`."))
def softmax_over_second_last_axis(x):
    return _softmax(x, axis=-2)


@model("whole_array", N_("you normalised the whole array at once (one sum for everything), so only the grand total "
       "is 1. Sum each row separately: `e.sum(axis=-1, keepdims=True)`."))
def softmax_over_whole_array(x):
    e = np.exp(x - x.max())
    return e / e.sum()


@model("subtracts_min", N_("you subtracted each row's minimum, not its maximum. The shift does not change the "
       "softmax, but only the maximum keeps every exponent <= 0: `np.exp(x - x.min())` overflows to inf as soon "
       "as a row spans more than about 709 (float64) or 88 (float32). Use `x.max(axis=-1, keepdims=True)`."))
def softmax_subtracts_min(x):
    e = np.exp(x - x.min(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@model("subtracts_mean", N_("you subtracted each row's mean, not its maximum. The shift does not change the "
       "softmax, but only the maximum keeps every exponent <= 0: entries far above the mean overflow to inf "
       "(beyond about 709 in float64, 88 in float32). Use `x.max(axis=-1, keepdims=True)`."))
def softmax_subtracts_mean(x):
    e = np.exp(x - x.mean(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@model("no_max_subtraction", N_("no max subtraction (overflow). `np.exp(1000)` is inf and inf/inf is nan; "
       "`np.exp(-1000)` is 0 and 0/0 is nan. Subtract each row's maximum before `np.exp`: the softmax does not "
       "change when one constant is subtracted from a whole row."))
def softmax_without_max_subtraction(x):
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


@model("global_max", N_("you subtracted the maximum of the whole array rather than of each row, so rows far below "
       "the global maximum underflow to 0/0 = nan. Use `x.max(axis=-1, keepdims=True)`."))
def softmax_global_max(x):
    e = np.exp(x - x.max())                      # one max for the whole array, not per row
    return e / e.sum(axis=-1, keepdims=True)


@model("max_without_keepdims", N_("`x.max(axis=-1)` without `keepdims=True`: the row maxima broadcast along the "
       "wrong axis (a square input hides the shape error) and each row loses a different constant per column. "
       "Use `x.max(axis=-1, keepdims=True)`."))
def softmax_max_without_keepdims(x):
    e = np.exp(x - x.max(axis=-1))               # (n,) broadcasts along the last axis
    return e / e.sum(axis=-1, keepdims=True)


@model("sum_without_keepdims", N_("`e.sum(axis=-1)` without `keepdims=True`: the row sums broadcast along the wrong "
       "axis (a square input hides the shape error), so each column is divided by another row's sum. Use "
       "`e.sum(axis=-1, keepdims=True)`."))
def softmax_sum_without_keepdims(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1)


@model("not_normalised", N_("the rows are not normalised: after `np.exp` divide by each row's sum."))
def softmax_not_normalised(x):
    return np.exp(x - x.max(axis=-1, keepdims=True))


@model("log_softmax", N_("you returned log-probabilities (a log-softmax). Return the probabilities."))
def softmax_returns_log(x):
    s = x - x.max(axis=-1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=-1, keepdims=True))


def _softmax_cases():
    rng = seeds.rng(2)
    return [
        (N_("a vector of 4 logits"), rng.normal(size=4)),
        (N_("a square 4 x 4 matrix (softmax along each row)"), rng.normal(size=(4, 4)) * 2),
        (N_("a 3 x 5 matrix (softmax along each row)"), rng.normal(size=(3, 5)) * 2),
        (N_("a square 3 x 3 matrix with rows on different scales"), rng.normal(size=(3, 3)) * [[1], [4], [9]]),
        (N_("a batch of shape (2, 3, 4)"), rng.normal(size=(2, 3, 4)) * 2),
        (N_("large logits [[1000, 999, 997], [-1000, -1001, -1003]]"),
         np.array([[1000.0, 999.0, 997.0], [-1000.0, -1001.0, -1003.0]])),
        (N_("one row of large negative logits [[-1000, -1001, -1003, -1002]]"),
         np.array([[-1000.0, -1001.0, -1003.0, -1002.0]])),
        (N_("large logits in a batch [[[1500, 0, 0]], [[-700, -702, -701]]] (the rows are 2200 apart)"),
         np.array([[[1500.0, 0.0, 0.0]], [[-700.0, -702.0, -701.0]]])),
        (N_("rows spanning 1600 and 2000 ([[800, 0, -800], [1000, 10, -1000]]: any shift but the row maximum "
         "overflows)"), np.array([[800.0, 0.0, -800.0], [1000.0, 10.0, -1000.0]])),
        (N_("float32 logits [[100, 0, -100], [60, 59, -60]] (float32 overflows beyond 88)"),
         np.array([[100.0, 0.0, -100.0], [60.0, 59.0, -60.0]], dtype=np.float32)),
    ]


COLUMNS = Mistake("normalised_columns", N_("softmax over the wrong axis: your result sums to 1 down each column "
                  "(axis -2), not along each row. Each row's entries are normalised together: sum with `axis=-1, "
                  "keepdims=True`."))


def _columns_sum_to_one(got, reference, args) -> bool:
    got = np.asarray(got, dtype=float)
    return got.ndim >= 2 and bool(np.allclose(got.sum(axis=-2), 1.0)) and not np.allclose(got.sum(axis=-1), 1.0)


@checker(N_("softmax"), SOFTMAX_MISTAKES + [COLUMNS], forbid=SOFTMAX_LIBRARIES)
def check_softmax(run, fn):
    """Check ``fn(x)``: a numerically stable softmax along the last axis of a NumPy array.

    The result is a NumPy array of the input's shape; float64 logits need a float64 result (a
    float32 one may stay float32). A library softmax called inside ``fn`` is refused.
    """
    cases = _softmax_cases()

    def trial(item):
        case, x = item
        single = x.dtype == np.float32
        got = run.array(run.call(fn, case, x, hint=error_hint), case, shape=x.shape,
                        dtype="float" if single else "float64")
        return Trial(case, got, _softmax(x.astype(np.float64)) if single else ref.softmax(x), (x,))

    run.each_case(cases[:-1], trial, SOFTMAX_MISTAKES, properties=[(COLUMNS, _columns_sum_to_one)])
    run.each_case(cases[-1:], trial, SOFTMAX_MISTAKES, tol=FLOAT32)
    return run.passed(_("All {n_cases} cases match `al.softmax`: a vector, square and rectangular "
                        "matrices, a batch, logits near +-1000, rows that overflow unless their "
                        "maximum is subtracted (float64 and float32).").format(n_cases=len(cases)))


# ---------------------------------------------------------------------------------------------- dropout
# The dropout checker is statistical: with the seeds below a right function gets the same verdict on every
# run, and a right function drawn in another way (rng.binomial, rng.uniform, ...) is refused with the
# probabilities stated at each test (computed from the binomial and chi-square laws in the tests); all of
# them together stay below 3e-6.

DROPOUT_MISTAKES: list[Mistake] = []
model = models(DROPOUT_MISTAKES)


@model("no_rescale", N_("no rescaling. The kept weights must be divided by the keep probability 1 - p so that the "
       "expected weights (and the expected row sum) stay the same."))
def dropout_without_rescale(a, keep, p):
    return a * keep


@model("scaled_by_p", N_("you divided the kept weights by p, the drop probability; divide by the keep probability "
       "1 - p."))
def dropout_scaled_by_p(a, keep, p):
    return a * keep / p


@model("renormalised", N_("you renormalised each row after dropping, so every row sums to exactly 1. That is a "
       "different operation: dropout divides by 1 - p, and its row sums equal 1 only in expectation (chapter 2)."))
def dropout_renormalised(a, keep, p):
    w = a * keep
    total = w.sum(axis=-1, keepdims=True)
    return np.divide(w, total, out=np.zeros_like(w), where=total > 0)


@model("floor_division", N_("you divided with `//`, floor division: `a // (1 - p)` rounds every weight (all below "
       "1) down to 0. Divide with `/`."))
def dropout_floor_division(a, keep, p):
    return np.floor_divide(a * keep, 1 - p)


P_AS_KEEP = Mistake("p_is_keep_probability", N_("p was used as the keep probability instead of the drop "
                    "probability: p is the probability of dropping an entry, so about a fraction p of the "
                    "entries must be zero."))
SHARED_MASK = Mistake("shared_mask", N_("one keep/drop pattern is shared by several rows or by several slices of "
                      "the leading axes (batch, heads): draw one independent decision per weight, an array of "
                      "shape `a.shape` (all axes, not only the last two)."))
WHOLE_ROWS = Mistake("drops_whole_rows", N_("whole rows are dropped or kept at once (one decision per row, e.g. "
                     "`rng.random((T, 1))`). Dropout decides for each weight independently: draw "
                     "`rng.random(a.shape)`."))
EXACT_COUNT = Mistake("exact_count", N_("you drop an exact number of weights (round(p x S) in each row, or "
                      "round(p x N) in the array). Dropout decides for each weight independently, so the number "
                      "dropped varies from row to row and from call to call (a binomial count): draw "
                      "`rng.random(a.shape) >= p` instead of choosing positions."))
CORRELATED = Mistake("correlated_mask", N_("neighbouring entries are dropped together far more often than chance "
                     "allows (the decisions are not independent). Draw one independent uniform number per "
                     "weight: `rng.random(a.shape) >= p`."))
IGNORES_RNG = Mistake("ignores_rng", N_("two calls with generators made from the same seed gave different masks: "
                      "draw the random numbers from the `rng` argument (e.g. `rng.random(a.shape)`) so that a "
                      "run can be repeated."))
RESEEDS = Mistake("reseeds", N_("two calls with the same generator gave the same mask: do not re-seed inside the "
                  "function; just draw from `rng`."))
WRONG_RATE = Mistake("wrong_rate", N_("the fraction of dropped entries is far from p."))
NOT_FINITE = Mistake("not_finite", N_("the result contains nan or inf (a division by zero, by p when p = 0?)."))

P = 0.25


def _draw(run, fn, case, a, p, rng):
    return run.array(run.call(fn, case, a, p, rng), case, shape=a.shape)


@checker(N_("dropout on attention weights"), DROPOUT_MISTAKES + [P_AS_KEEP, SHARED_MASK, WHOLE_ROWS, EXACT_COUNT,
                                                             CORRELATED, WRONG_RATE, IGNORES_RNG, RESEEDS,
                                                             NOT_FINITE])
def check_dropout(run, fn):
    """Check ``fn(a, p, rng)``: inverted dropout on weights ``a`` (a float64 NumPy array of any shape) with drop
    probability ``p``.

    Each entry is kept with probability 1 - p, independently of every other, and then divided
    by 1 - p; the random numbers come from the NumPy Generator ``rng``. Every draw below uses a
    fixed seed, so a function gets the same verdict on every run.
    """
    rng = seeds.rng(5)
    a_small = ref.softmax(rng.normal(size=(3, 4)))
    a = ref.softmax(rng.normal(size=(400, 50)))
    a4 = ref.softmax(rng.normal(size=(2, 3, 40, 50)))
    zero_case, case, case4 = (N_("p = 0 (nothing is dropped)"), N_("400 x 50 weights with p = 0.25"),
                              N_("weights of shape (B, H, T, S) = (2, 3, 40, 50) with p = 0.25"))
    got0 = _draw(run, fn, zero_case, a_small, 0.0, seeds.rng(0))
    got = _draw(run, fn, case, a, P, seeds.rng(11))
    if not close(got0, a_small) or not np.all(np.isfinite(got)):
        _explain_values(run, zero_case, case, a_small, got0, a, got)
    keep = got != 0
    if not close(got, a * keep / (1 - P)):
        _explain_values(run, zero_case, case, a_small, got0, a, got)
    _independence(run, case, keep)
    dropped = 1 - keep.mean()
    spread = 5 * np.sqrt(P * (1 - P) / keep.size)         # 5 standard errors: 5.7e-7 two-sided
    if abs(dropped - P) > spread:
        if abs(dropped - (1 - P)) < spread:
            run.fail(_("On {case}, you dropped {dropped:.1%} of the entries: {explanation}").format(
                case=_(case), dropped=dropped, explanation=P_AS_KEEP.text), P_AS_KEEP.name)
        run.fail(_("On {case}, you dropped {dropped:.1%} of the entries; about {p:.0%} should be "
                   "zero.").format(case=_(case), dropped=dropped, p=P), WRONG_RATE.name)
    again = _draw(run, fn, case, a, P, seeds.rng(11))
    if not np.array_equal(again, got):
        run.fail(IGNORES_RNG.text[0].upper() + IGNORES_RNG.text[1:], IGNORES_RNG.name)
    shared = seeds.rng(3)
    first, second = _draw(run, fn, case, a, P, shared), _draw(run, fn, case, a, P, shared)
    if np.array_equal(first, second):
        run.fail(RESEEDS.text[0].upper() + RESEEDS.text[1:], RESEEDS.name)
    got4 = _draw(run, fn, case4, a4, P, seeds.rng(17))
    keep4 = got4 != 0
    if not close(got4, a4 * keep4 / (1 - P)):
        run.fail(_("On {case}, the entries you kept are not `a / (1 - p)`: the largest difference is "
                   "{value:.3g}.").format(case=_(case4), value=np.nan_to_num(np.abs(got4 - a4 * keep4 / (1 - P)),
                                                                                nan=np.inf).max()))
    _shared_across_slices(run, case4, keep4)
    _independence(run, case4, keep4.reshape(-1, keep4.shape[-1]))
    _exact_totals(run, case, [(k, P) for k in (keep, first != 0, second != 0, keep4)])
    sums = got.sum(axis=-1)
    return run.passed(_("Kept entries equal a / (1 - p), {dropped:.1%} dropped (p = {p}), "
                        "decisions independent within rows, across rows, between neighbours and across "
                        "the batch and head axes, with counts that vary as a binomial count does, "
                        "reproducible from `rng`. Row sums: mean {value:.3f}, from {value2:.2f} to "
                        "{value3:.2f}, equal to 1 only in expectation.").format(
                            dropped=dropped, p=P, value=sums.mean(), value2=sums.min(), value3=sums.max()))


def _explain_values(run, zero_case, case, a_small, got0, a, got):
    """The values are wrong: name the mistake that explains both the p = 0 case and the p = 0.25 one."""
    keep = got != 0
    dropped = 1 - keep.mean()
    if abs(dropped - (1 - P)) < 5 * np.sqrt(P * (1 - P) / keep.size):     # p kept, 1 - p dropped
        zero = float(np.mean(np.nan_to_num(got0) == 0))
        run.fail(_("On {case}, you dropped {dropped:.1%} of the entries (with p = 0: {zero:.0%}): "
                   "{explanation}").format(case=_(case), dropped=dropped, zero=zero, explanation=P_AS_KEEP.text),
                 P_AS_KEEP.name)
    for mistake in DROPOUT_MISTAKES:
        with np.errstate(all="ignore"):
            at_zero, at_p = mistake.model(a_small, np.ones_like(keep[:1, :1]), 0.0), mistake.model(a, keep, P)
        at_zero = np.broadcast_to(at_zero, a_small.shape)
        fits_zero = close(got0, at_zero) or (keep.any() and not np.all(np.isfinite(at_zero)))  # inf: 1 / p at p = 0
        if close(got, at_p) and fits_zero:
            run.fail(_("On {case} (and it fits {other} too): {explanation}").format(
                case=_(case), other=_(zero_case), explanation=mistake.text), mistake.name)
    if not (np.all(np.isfinite(got0)) and np.all(np.isfinite(got))):
        bad = zero_case if not np.all(np.isfinite(got0)) else case
        run.fail(_("On {case}, your result contains nan or inf: a division by zero (by p, which is 0 here?) or "
                   "by a sum that is 0?").format(case=_(bad)), NOT_FINITE.name)
    if not close(got0, a_small):
        run.fail(_("With p = 0 nothing may be dropped and the weights must come back unchanged: {difference}.")
                 .format(difference=describe_difference(got0, a_small)))
    run.fail(_("On {case}, the entries you kept are not `a / (1 - p)`: {difference}.").format(
        case=_(case), difference=describe_difference(got, a * keep / (1 - P))))


def _independence(run, case, keep):
    """Fail unless the keep decisions vary within rows, across rows, between neighbours, and in number."""
    constant_rows = (keep == keep[:, :1]).all(axis=1).mean()
    if constant_rows > 0.5:       # independent entries: P(a row of 50 is constant) is about 5.7e-7
        run.fail(_("On {case}, {constant_rows:.0%} of the rows are dropped or kept as a whole: "
                   "{explanation}").format(
                       case=_(case), constant_rows=constant_rows, explanation=WHOLE_ROWS.text), WHOLE_ROWS.name)
    if (keep == keep[:1]).all():
        run.fail(_("On {case}, every row has the same entries dropped: {explanation}").format(
            case=_(case), explanation=SHARED_MASK.text), SHARED_MASK.name)
    counts = (~keep).sum(axis=1)
    S = keep.shape[1]
    dispersion = counts.var(ddof=1) / (S * P * (1 - P))
    if dispersion < 0.4:          # chi-square with 239 or 399 degrees of freedom: below 2.4e-18
        run.fail(_("On {case}, the number of dropped weights per row hardly varies (from {low} to {high}; its "
                   "variance is {ratio:.2f} of the binomial variance S p (1 - p)): {explanation}").format(
                       case=_(case), low=counts.min(), high=counts.max(), ratio=dispersion,
                       explanation=EXACT_COUNT.text), EXACT_COUNT.name)
    k = keep.astype(float)
    for left, right in ((k[:, :-1], k[:, 1:]), (k[:-1], k[1:])):
        corr = np.corrcoef(left.ravel(), right.ravel())[0, 1]
        if abs(corr) > 5 / np.sqrt(left.size):       # five standard errors of a zero correlation: 5.7e-7
            run.fail(_("On {case}, the keep decisions of neighbouring entries have correlation "
                       "{corr:.2f}: {explanation}").format(
                           case=_(case), corr=corr, explanation=CORRELATED.text), CORRELATED.name)


def _shared_across_slices(run, case, keep4):
    """Fail when two (T, S) slices of the batch and head axes carry the same mask (independent: about 0.62**2000)."""
    slices = keep4.reshape(-1, *keep4.shape[-2:])
    for i in range(len(slices)):
        for j in range(i + 1, len(slices)):
            if np.array_equal(slices[i], slices[j]):
                b1, h1 = np.unravel_index(i, keep4.shape[:2])
                b2, h2 = np.unravel_index(j, keep4.shape[:2])
                run.fail(_("On {case}, the slices [b = {b1}, h = {h1}] and [b = {b2}, h = {h2}] have exactly the same "
                           "entries dropped: {explanation}").format(case=_(case), b1=b1, h1=h1, b2=b2, h2=h2,
                                                                     explanation=SHARED_MASK.text), SHARED_MASK.name)


def _exact_totals(run, case, masks):
    """Fail when every call drops exactly round(p N) weights (independent: at most 0.0084 a call, 2.3e-9 for four)."""
    if all(int((~keep).sum()) == int(round(p * keep.size)) for keep, p in masks):
        run.fail(_("On {case} and three more calls, every call dropped exactly round(p x N) weights: "
                   "{explanation}").format(case=_(case), explanation=EXACT_COUNT.text), EXACT_COUNT.name)
