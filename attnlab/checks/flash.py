"""Checkers for chapter 9 (exact attention without the T x S matrix): merging partial softmax results by
log-sum-exp, and split-KV attention built on that merge.

A partial result of a chunk of keys J_s is, per query row, lse_s = log sum_{j in J_s} exp(u_j) and
o_s = sum_{j in J_s} exp(u_j - lse_s) v_j (u_j the scaled scores). A chunk in which a row sees no key has
lse_s = -inf and o_s = 0. Merging: lse = log sum_s exp(lse_s), o = sum_s exp(lse_s - lse) o_s; a row whose
chunks are all empty gets o = 0 and lse = -inf, never NaN. All tasks are NumPy float64.
"""
from __future__ import annotations

import numpy as np

from .. import reference as ref
from ..i18n import N_, _
from . import seeds
from .diagnosis import Trial
from .engine import Mistake, error_hint, kind_of, models, one_line
from .registry import checker

# the sheet asks for the merge and the split written by hand: attnlab's own may not be called
MERGE_LIBRARIES = ("attnlab.torch_ops.split_kv.merge_partials", "attnlab.torch_ops.split_kv.partial_attention",
                   "attnlab.torch_ops.split_kv.split_kv_attention", "attnlab.kernels.split_kv.split_kv_decode")
SPLIT_LIBRARIES = MERGE_LIBRARIES + ("attnlab.reference.attention", "attnlab.reference.softmax",
                                     "attnlab.reference.masked_softmax", "attnlab.torch_ops.attention.attention",
                                     "attnlab.torch_ops.chunked.chunked_attention")


def _merge(outs, lses, *, weights="exp", divide=True, shift=True, empty_safe=True, lse_rule="logsumexp"):
    """The merge with one knob per classic mistake; the defaults are right. outs (n, T, d_v), lses (n, T)."""
    outs, lses = np.asarray(outs, dtype=float), np.asarray(lses, dtype=float)
    top = lses.max(axis=0) if shift else np.zeros(lses.shape[1:])
    if empty_safe:
        top = np.where(np.isfinite(top), top, 0.0)
    w = {"exp": lambda: np.exp(lses - top), "equal": lambda: np.ones_like(lses),
         "argmax": lambda: (lses == lses.max(axis=0)).astype(float)}[weights]()
    total = w.sum(axis=0)
    seen = total > 0 if empty_safe else np.ones(total.shape, dtype=bool)
    safe = np.where(seen, total, 1.0)
    out = (w[..., None] * outs).sum(axis=0) / (safe[..., None] if divide else 1.0)
    out = np.where(seen[..., None], out, 0.0)
    lse = {"logsumexp": lambda: top + np.log(safe), "max": lambda: lses.max(axis=0),
           "sum": lambda: lses.sum(axis=0)}[lse_rule]()
    return out, np.where(seen, lse, -np.inf)


def _partial(q, k, v, *, scale=True, lse_is_max=False):
    """(o_s, lse_s) of one chunk of keys for every row of q; an empty chunk gives o = 0, lse = -inf."""
    if k.shape[0] == 0:
        return np.zeros((q.shape[0], v.shape[1])), np.full(q.shape[0], -np.inf)
    u = q @ k.T / (np.sqrt(q.shape[1]) if scale else 1.0)
    m = u.max(axis=1, keepdims=True)
    e = np.exp(u - m)
    lse = m if lse_is_max else m + np.log(e.sum(axis=1, keepdims=True))
    return e @ v / e.sum(axis=1, keepdims=True), lse[:, 0]


def _bounds(S, n):
    return [s * S // n for s in range(n + 1)]


def _split_kv(q, k, v, n_splits, *, bounds=None, partial=None, **merge):
    b = _bounds(k.shape[0], n_splits) if bounds is None else bounds
    parts = [_partial(q, k[lo:hi], v[lo:hi], **(partial or {})) for lo, hi in zip(b[:-1], b[1:])]
    return _merge([o for o, _l in parts], [lse for _o, lse in parts], **merge)


# ---------------------------------------------------------------------------------------------- the merge

MERGE_MISTAKES: list[Mistake] = []
model = models(MERGE_MISTAKES)


@model("no_rescale", N_("you averaged the partial outputs. Each chunk must weigh as much as its share of the row's "
       "total exp-mass, exp(lse_s - lse): a chunk of large scores dominates, one of tiny scores hardly counts."))
def merge_by_averaging(outs, lses):
    return _merge(outs, lses, weights="equal")


@model("max_instead_of_logsumexp", N_("you kept only the chunk with the largest log-sum-exp. The merge is a soft "
       "maximum, not a hard one: every chunk contributes exp(lse_s - lse) of its output."))
def merge_by_the_largest(outs, lses):
    return _merge(outs, lses, weights="argmax", lse_rule="max")


@model("lse_is_max", N_("the merged log-sum-exp is the largest lse_s; it is log(sum_s exp(lse_s)), which is larger "
       "than every lse_s unless the other chunks are empty."))
def merge_lse_is_the_max(outs, lses):
    return _merge(outs, lses, lse_rule="max")


@model("lse_is_sum", N_("you added the log-sum-exps. Adding logs multiplies the sums; the chunks' sums of exp(u_j) "
       "add, so lse = log(sum_s exp(lse_s))."))
def merge_lse_is_the_sum(outs, lses):
    return _merge(outs, lses, lse_rule="sum")


@model("no_normalisation", N_("the weights exp(lse_s - m) are not divided by their sum: the output must be "
       "sum_s exp(lse_s - lse) o_s, weights that add up to 1."))
def merge_without_dividing(outs, lses):
    return _merge(outs, lses, divide=False)


@model("no_shift", N_("exp(lse_s) overflows once a log-sum-exp passes about 709: subtract the largest lse_s before "
       "exponentiating, as the online softmax subtracts its running maximum."))
def merge_without_shift(outs, lses):
    return _merge(outs, lses, shift=False, empty_safe=False)   # a row of underflowed weights: 0 / 0


@model("empty_partials", N_("a row whose chunks are all empty (every lse_s = -inf) became NaN: -inf - (-inf) is NaN. "
       "Such a row merges to o = 0 and lse = -inf; shift by 0 where the largest lse_s is -inf."))
def merge_forgetting_empty_partials(outs, lses):
    return _merge(outs, lses, empty_safe=False)


# with the output right, only these explain a wrong log-sum-exp
LSE_MISTAKES = [m for m in MERGE_MISTAKES if m.name in ("lse_is_max", "lse_is_sum", "no_shift", "empty_partials")]


def _two_arrays(run, out, case, T, d_v):
    """The (out, lse) pair a function returned, each checked for type, shape and dtype."""
    if out is None:
        run.array(out, case)                                                 # "did you forget `return`?"
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        run.fail(_("On {case}, your function returned {kind}; it must return two arrays, (out, lse): out (T, d_v) "
                   "and lse (T,).").format(case=_(case), kind=kind_of(out)), "wrong_type")
    return (run.array(out[0], case, N_("the merged output"), shape=(T, d_v)),
            run.array(out[1], case, N_("the merged log-sum-exp"), shape=(T,)))


def _partials(rng, n, T, d_v, shift=0.0):
    """n partial results of T rows: outputs in the hull of some values, log-sum-exps spread over a few units."""
    return rng.normal(size=(n, T, d_v)), rng.normal(scale=2.0, size=(n, T)) + shift


def _all_empty_rows(rng):
    """3 partial results of 3 rows in which rows 0 and 1 saw no key of any chunk."""
    o, lse = _partials(rng, 3, 3, 2)
    o[:, :2], lse[:, :2] = 0.0, -np.inf
    return o, lse


@checker(N_("merging partial results"), MERGE_MISTAKES, forbid=MERGE_LIBRARIES)
def check_merge_partials(run, fn):
    """Check ``fn(outs, lses)``: outs (n, T, d_v) and lses (n, T) float64, the partial results of n disjoint chunks of
    keys -> (out (T, d_v), lse (T,)) of their union, merged by log-sum-exp; empty chunks have lse = -inf, o = 0."""
    rng = seeds.rng(90)
    outs, lses = _partials(rng, 3, 4, 2)
    empty_o, empty_l = _partials(rng, 3, 3, 2)
    empty_o[1, 0], empty_l[1, 0] = 0.0, -np.inf                          # row 0 saw no key of chunk 1
    all_o, all_l = _partials(rng, 2, 3, 2)
    all_o[:, 2], all_l[:, 2] = 0.0, -np.inf                              # row 2 saw no key at all
    cases = [
        (N_("3 chunks, T = 4 rows, d_v = 2"), outs, lses),
        (N_("a single chunk (the merge changes nothing)"), outs[:1], lses[:1]),
        (N_("3 chunks, one of them empty for row 0 (lse = -inf, o = 0)"), empty_o, empty_l),
        (N_("log-sum-exps near 800 (exp overflows without a shift)"), *_partials(rng, 3, 2, 3, shift=800.0)),
        (N_("log-sum-exps near -800 (exp underflows to 0 without a shift)"), *_partials(rng, 2, 3, 2, shift=-800.0)),
        (N_("2 chunks, row 2 empty in both (out = 0, lse = -inf)"), all_o, all_l),
        (N_("3 chunks, rows 0 and 1 empty in all of them"), *_all_empty_rows(rng)),
    ]
    inputs = {case: (o, lse) for case, o, lse in cases}
    outputs = {}

    def result(case):
        """The student's (out, lse) on one case, computed once for both comparisons."""
        if case not in outputs:
            o, lse = inputs[case]
            n, T, d_v = o.shape
            outputs[case] = _two_arrays(run, run.call(fn, case, o, lse, hint=error_hint), case, T, d_v)
        return outputs[case]

    def trial_of(part):
        def trial(case):
            o, lse = inputs[case]
            return Trial(case, result(case)[part], _merge(o, lse)[part], (o, lse), pick=lambda r: r[part])
        return trial

    # rows with no key at all only in the last two cases: a mistake seen on the others is confirmed there,
    # not refuted by a second mistake that only empty rows show; a merge without the shift has failed
    # before them (near +-800), so on them NaN rows mean the empty rows
    late = [m for m in MERGE_MISTAKES if m.name != "no_shift"]
    for names, mistakes in (([c[0] for c in cases[:-2]], MERGE_MISTAKES), ([c[0] for c in cases[-2:]], late)):
        run.each_case(names, trial_of(0), mistakes, name=N_("the merged output"))
        run.each_case(names, trial_of(1), LSE_MISTAKES, name=N_("the merged log-sum-exp"))
    return run.passed(_("All {n} cases merge exactly: weights exp(lse_s - lse) that add up to 1, the log-sum-exp "
                        "of the log-sum-exps, no overflow near lse = 800, and empty chunks and empty rows handled "
                        "without NaN.").format(n=len(cases)))


# ---------------------------------------------------------------------------------------------- split-KV attention

SPLIT_MISTAKES: list[Mistake] = []
split_model = models(SPLIT_MISTAKES)


@split_model("drops_keys", N_("some keys are never read: with chunks of S // n_splits keys the last S % n_splits keys "
             "fall off the end. Cut at s * S // n_splits for s = 0 .. n_splits (chunks of near-equal size), or make "
             "the last chunk take the rest."))
def split_kv_dropping_the_remainder(q, k, v, n_splits):
    size = k.shape[0] // n_splits
    return _split_kv(q, k, v, n_splits, bounds=[s * size for s in range(n_splits + 1)])


@split_model("no_rescale", N_("you averaged the chunks' outputs. Weigh chunk s by exp(lse_s - lse), its share of the "
             "row's total exp-mass."))
def split_kv_averaging(q, k, v, n_splits):
    return _split_kv(q, k, v, n_splits, weights="equal")


@split_model("no_scale", N_("the scores are not divided by sqrt(d_k): the partials, and the log-sum-exp with them, "
             "must use the scaled scores q k^T / sqrt(d_k)."))
def split_kv_unscaled(q, k, v, n_splits):
    return _split_kv(q, k, v, n_splits, partial={"scale": False})


@split_model("chunk_lse_is_max", N_("each chunk's log-sum-exp is its largest score m_s; it is m_s + log(sum_j "
             "exp(u_j - m_s)). Without the log of the sum a chunk of many keys weighs as little as one of a single "
             "key with the same largest score."))
def split_kv_lse_is_the_max(q, k, v, n_splits):
    return _split_kv(q, k, v, n_splits, partial={"lse_is_max": True})


EMPTY_CHUNK = Mistake("empty_chunk", N_("a chunk with no key (n_splits > S) must give o_s = 0 and lse_s = -inf (or "
                      "be skipped), not an error or NaN: np.max of an empty array raises, and 0 / 0 is NaN."))


def _logsumexp(q, k):
    u = q @ k.T / np.sqrt(q.shape[1])
    m = u.max(axis=1, keepdims=True)
    return (m + np.log(np.exp(u - m).sum(axis=1, keepdims=True)))[:, 0]


@checker(N_("split-KV attention"), SPLIT_MISTAKES + [EMPTY_CHUNK], forbid=SPLIT_LIBRARIES)
def check_split_kv_attention(run, fn):
    """Check ``fn(q, k, v, n_splits)``: q (T, d_k), k (S, d_k), v (S, d_v) float64, the keys cut into n_splits chunks
    of near-equal size, partial results merged by log-sum-exp -> (out (T, d_v), lse (T,)) equal to attention and
    to log sum_j exp(q_i . k_j / sqrt(d_k)) for every n_splits >= 1, also n_splits > S (empty chunks)."""
    rng = seeds.rng(91)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(10, 4)) * 1.5, rng.normal(size=(10, 2))
    cases = [(N_("S = 10 keys, n_splits = 1"), 1), (N_("S = 10 keys, n_splits = 2"), 2),
             (N_("S = 10 keys, n_splits = 3 (chunks of 3, 3 and 4 keys)"), 3),
             (N_("S = 10 keys, n_splits = 4 (chunks of 2, 3, 2 and 3 keys)"), 4),
             (N_("S = 10 keys, n_splits = 10 (one key per chunk)"), 10),
             (N_("S = 10 keys, n_splits = 16 (six chunks are empty)"), 16)]
    splits, outputs = dict(cases), {}

    def result(case):
        """The student's (out, lse) on one case, computed once for both comparisons."""
        if case in outputs:
            return outputs[case]
        n = splits[case]
        out = run.call(fn, case, q, k, v, n, hint=error_hint, expect=(ValueError, ZeroDivisionError))
        if isinstance(out, (ValueError, ZeroDivisionError)):
            if n <= k.shape[0] or not (isinstance(out, ZeroDivisionError) or "zero-size" in str(out)):
                hint = error_hint(out)
                run.fail(_("On {case}, your function raised {error}: {text}").format(
                    case=_(case), error=type(out).__name__, text=one_line(out))
                    + (_("\nHint: {hint}").format(hint=hint) if hint else ""))
            run.fail(_("On {case}: {explanation}").format(case=_(case), explanation=EMPTY_CHUNK.text),
                     EMPTY_CHUNK.name)
        got_out, got_lse = _two_arrays(run, out, case, 3, 2)
        if n > k.shape[0] and not (np.isfinite(got_out).all() and np.isfinite(got_lse).all()):
            run.fail(_("On {case}: {explanation}").format(case=_(case), explanation=EMPTY_CHUNK.text),
                     EMPTY_CHUNK.name)
        outputs[case] = got_out, got_lse
        return outputs[case]

    def trial_of(part, reference):
        def trial(case):
            return Trial(case, result(case)[part], reference, (q, k, v, splits[case]), pick=lambda r: r[part])
        return trial

    # empty chunks only in the last case: a mistake seen on the others is confirmed there first
    for names in ([c[0] for c in cases[:-1]], [cases[-1][0]]):
        run.each_case(names, trial_of(0, ref.attention(q, k, v)), SPLIT_MISTAKES)
        run.each_case(names, trial_of(1, _logsumexp(q, k)), SPLIT_MISTAKES, name=N_("the log-sum-exp"))
    return run.passed(_("For n_splits = 1, 2, 3, 4, 10 and 16 your split-KV attention equals attention over all the "
                        "keys, and its log-sum-exp the log-sum-exp of the whole row: the merge is exact for any "
                        "split, empty chunks included."))
