"""Checkers for the softmax and for dropout on attention weights (chapter 2's tasks)."""
from __future__ import annotations

import numpy as np

from .. import reference as ref
from . import mistakes as M
from . import result as R
from .diagnose import Mistake, close, compare
from .runner import Stop, call, checker, matmul_hint, to_array

SOFTMAX_MISTAKES = [
    Mistake("wrong_axis", "softmax over the wrong axis. You normalised along axis 0, so columns (not "
            "rows) sum to 1. Each query's weights run along the last axis: use `axis=-1`.",
            M.softmax_over_first_axis),
    Mistake("wrong_axis", "softmax over the wrong axis. You normalised along axis -2 (over queries); "
            "each query's weights run along the last axis: use `axis=-1`.", M.softmax_over_second_last_axis),
    Mistake("whole_array", "you normalised the whole array at once (one sum for everything), so only the "
            "grand total is 1. Sum each row separately: `e.sum(axis=-1, keepdims=True)`.",
            M.softmax_over_whole_array),
    Mistake("no_max_subtraction", "no max subtraction (overflow). `np.exp(1000)` is inf and inf/inf is nan; "
            "`np.exp(-1000)` is 0 and 0/0 is nan. Subtract each row's maximum before `np.exp`: the softmax "
            "does not change when one constant is subtracted from a whole row.",
            M.softmax_without_max_subtraction),
    Mistake("global_max", "you subtracted the maximum of the whole array rather than of each row, so rows "
            "far below the global maximum underflow to 0/0 = nan. Use `x.max(axis=-1, keepdims=True)`.",
            M.softmax_global_max),
    Mistake("max_without_keepdims", "`x.max(axis=-1)` without `keepdims=True`: the row maxima broadcast "
            "along the wrong axis (a square input hides the shape error) and each row loses a different "
            "constant per column. Use `x.max(axis=-1, keepdims=True)`.", M.softmax_max_without_keepdims),
    Mistake("sum_without_keepdims", "`e.sum(axis=-1)` without `keepdims=True`: the row sums broadcast along "
            "the wrong axis (a square input hides the shape error), so each column is divided by another "
            "row's sum. Use `e.sum(axis=-1, keepdims=True)`.", M.softmax_sum_without_keepdims),
    Mistake("not_normalised", "the rows are not normalised: after `np.exp` divide by each row's sum.",
            M.softmax_not_normalised),
    Mistake("log_softmax", "you returned log-probabilities (a log-softmax). Return the probabilities.",
            M.softmax_returns_log),
]


def _softmax_cases():
    rng = np.random.default_rng(2)
    return [
        ("a vector of 4 logits", rng.normal(size=4)),
        ("a square 4 x 4 matrix (softmax along each row)", rng.normal(size=(4, 4)) * 2),
        ("a 3 x 5 matrix (softmax along each row)", rng.normal(size=(3, 5)) * 2),
        ("a batch of shape (2, 3, 4)", rng.normal(size=(2, 3, 4)) * 2),
        ("large logits [[1000, 999, 997], [-1000, -1001, -1003]]",
         np.array([[1000.0, 999.0, 997.0], [-1000.0, -1001.0, -1003.0]])),
    ]


@checker("softmax")
def check_softmax(fn):
    """Check ``fn(x)``: a numerically stable softmax along the last axis of a NumPy array."""
    cases = _softmax_cases()
    for case, x in cases:
        out = call("softmax", fn, case, x, error_hint=matmul_hint)
        got = to_array("softmax", out, case, shape=x.shape)
        compare("softmax", case, got, ref.softmax(x), SOFTMAX_MISTAKES, args=(x,))
    return R.passed("softmax", f"All {len(cases)} cases match `al.softmax`: a vector, square and rectangular "
                               f"matrices, a batch, and logits near +-1000 (no overflow).")


DROPOUT_MISTAKES = [
    Mistake("no_rescale", "no rescaling. The kept weights must be divided by the keep probability "
            "1 - p so that the expected weights (and the expected row sum) stay the same.",
            M.dropout_without_rescale),
    Mistake("scaled_by_p", "you divided the kept weights by p, the drop probability; divide by the "
            "keep probability 1 - p.", M.dropout_scaled_by_p),
    Mistake("renormalised", "you renormalised each row after dropping, so every row sums to exactly 1. "
            "That is a different operation: dropout divides by 1 - p, and its row sums equal 1 only in "
            "expectation (chapter 2).", M.dropout_renormalised),
]


@checker("dropout on attention weights")
def check_dropout(fn):
    """Check ``fn(a, p, rng)``: inverted dropout on weights ``a`` with drop probability ``p``.

    Each entry is kept with probability 1 - p (independently) and then divided by 1 - p; the
    random numbers come from the NumPy Generator ``rng``.
    """
    task = "dropout on attention weights"
    rng = np.random.default_rng(5)
    a_small = ref.softmax(rng.normal(size=(3, 4)))
    out = call(task, fn, "p = 0 (nothing is dropped)", a_small, 0.0, np.random.default_rng(0))
    got = to_array(task, out, "p = 0", shape=a_small.shape)
    if np.all(np.nan_to_num(got) == 0):
        raise Stop(R.failed(task, "With p = 0 every weight was dropped: p is the probability of dropping "
                                  "an entry, not of keeping it.", "p_is_keep_probability"))
    if not close(got, a_small):
        raise Stop(R.failed(task, "With p = 0 nothing may be dropped and the weights must come back "
                                  "unchanged."))

    a = ref.softmax(rng.normal(size=(400, 50)))
    p = 0.25
    case = "400 x 50 weights with p = 0.25"
    got = to_array(task, call(task, fn, case, a, p, np.random.default_rng(11)), case, shape=a.shape)
    keep = got != 0
    expected = a * keep / (1 - p)
    if not close(got, expected):
        mistake = next((m for m in DROPOUT_MISTAKES if close(got, m.model(a, keep, p))), None)
        if mistake is not None:
            raise Stop(R.failed(task, f"On {case}: {mistake.explanation}", mistake.name))
        raise Stop(R.failed(task, f"On {case}, the entries you kept are not `a / (1 - p)`: the largest "
                                  f"difference is {np.abs(got - expected).max():.3g}."))
    if (keep == keep[:1]).all():
        raise Stop(R.failed(task, f"On {case}, every row has the same entries dropped: draw one independent "
                                  f"keep/drop decision per weight, shape `a.shape`.", "shared_mask"))
    dropped = 1 - keep.mean()
    spread = 5 * np.sqrt(p * (1 - p) / keep.size)
    if abs(dropped - (1 - p)) < spread:
        raise Stop(R.failed(task, f"On {case}, you dropped {dropped:.1%} of the entries: p is the probability "
                                  f"of dropping, so about {p:.0%} should be zero.", "p_is_keep_probability"))
    if abs(dropped - p) > spread:
        raise Stop(R.failed(task, f"On {case}, you dropped {dropped:.1%} of the entries; about {p:.0%} "
                                  f"should be zero."))
    again = to_array(task, call(task, fn, case, a, p, np.random.default_rng(11)), case, shape=a.shape)
    if not np.array_equal(again, got):
        raise Stop(R.failed(task, "Two calls with generators made from the same seed gave different masks: "
                                  "draw the random numbers from the `rng` argument (e.g. `rng.random(a.shape)`) "
                                  "so that a run can be repeated.", "ignores_rng"))
    shared = np.random.default_rng(3)
    first = to_array(task, call(task, fn, case, a, p, shared), case, shape=a.shape)
    second = to_array(task, call(task, fn, case, a, p, shared), case, shape=a.shape)
    if np.array_equal(first, second):
        raise Stop(R.failed(task, "Two calls with the same generator gave the same mask: do not re-seed "
                                  "inside the function; just draw from `rng`.", "reseeds"))
    sums = got.sum(axis=-1)
    return R.passed(task, f"Kept entries equal a / (1 - p), {dropped:.1%} dropped (p = {p}), masks independent "
                          f"across entries and reproducible from `rng`. Row sums: mean {sums.mean():.3f}, "
                          f"from {sums.min():.2f} to {sums.max():.2f}, equal to 1 only in expectation.")
