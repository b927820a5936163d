"""Checkers for causal attention with a query offset (torch) and for a future-leak test (NumPy).

Causal attention may use PyTorch's SDPA (the sheet suggests comparing with it) but not attnlab's own
attention (:data:`ATTNLAB_ATTENTION`).
"""
from __future__ import annotations

import numpy as np

from .. import masks
from .. import reference as ref
from ..i18n import N_, _
from . import seeds
from .diagnosis import Trial
from .engine import FLOAT32, Mistake, close, describe_difference, error_hint, models, run_model
from .kernels import attend, softmax, swap
from .registry import checker

ATTNLAB_ATTENTION = ("attnlab.torch_ops.attention.attention", "attnlab.reference.attention",
                     "attnlab.torch_ops.chunked.chunked_attention")


def _positions(T, S, offset):
    return offset + np.arange(T)[:, None], np.arange(S)[None, :]


def _causal(q, k, offset):
    i, j = _positions(q.shape[-2], k.shape[-2], offset)
    return j <= i


CAUSAL_MISTAKES: list[Mistake] = []
model = models(CAUSAL_MISTAKES)


@model("top_left", N_("top-left causal alignment with an offset: your mask lets query 0 read only key 0 and ignores "
       "query_offset. Positions are absolute: query i sits at position query_offset + i and may read every key "
       "j <= query_offset + i (with a KV cache the newest query reads the whole cache)."))
def causal_top_left(q, k, v, offset=0):
    T, S = q.shape[-2], k.shape[-2]
    return attend(q, k, v, np.tril(np.ones((T, S), dtype=bool)))


@model("always_bottom_right", N_("you align the mask bottom-right (offset S - T) whatever query_offset says; when the "
       "key tensor already holds later positions, queries read the future. Use query_offset."))
def causal_always_bottom_right(q, k, v, offset=0):
    return attend(q, k, v, _causal(q, k, k.shape[-2] - q.shape[-2]))


@model("excludes_diagonal", N_("excluding the diagonal: a query may read its own position (j <= i, not j < i). The "
       "first query then has no key at all, which gives nan (with -inf) or uniform weights (with -1e9)."))
def causal_excluding_diagonal(q, k, v, offset=0):
    i, j = _positions(q.shape[-2], k.shape[-2], offset)
    return attend(q, k, v, j < i)


@model("excludes_diagonal", N_("excluding the diagonal: a query may read its own position (j <= i, not j < i). The "
       "first query then has no key at all, and -1e9 filling turned its row into uniform weights."))
def causal_excluding_diagonal_1e9(q, k, v, offset=0):
    i, j = _positions(q.shape[-2], k.shape[-2], offset)
    return attend(q, k, v, j < i, fill=-1e9)


@model("future_leakage", N_("future leakage: your mask allows j >= i (the upper triangle), so each query reads the "
       "positions after it. `torch.tril`, not `torch.triu`, keeps the past."))
def causal_reads_future(q, k, v, offset=0):
    i, j = _positions(q.shape[-2], k.shape[-2], offset)
    return attend(q, k, v, j >= i)


@model("no_mask", N_("future leakage: no causal mask is applied, so every query reads every key."))
def causal_no_mask(q, k, v, offset=0):
    return attend(q, k, v)


@model("offset_wrong_sign", N_("query_offset has the wrong sign: query i sits at position query_offset + i, so the "
       "rule is j <= i + query_offset."))
def causal_offset_wrong_sign(q, k, v, offset=0):
    return attend(q, k, v, _causal(q, k, -offset))


@model("mask_after_softmax", N_("mask applied after the softmax: zeroing future weights after normalising leaves rows "
       "that sum to less than 1. Fill the future scores with -inf before the softmax."))
def causal_mask_after_softmax(q, k, v, offset=0):
    return attend(q, k, v, _causal(q, k, offset), mask="after")


@model("no_scale", N_("missing scaling: divide the scores by sqrt(d_k) before the softmax."))
def causal_without_scale(q, k, v, offset=0):
    return attend(q, k, v, _causal(q, k, offset), scale=1.0)


@model("scale_by_d_k", N_("wrong scaling: you divided by d_k; divide by sqrt(d_k)."))
def causal_scale_by_d_k(q, k, v, offset=0):
    return attend(q, k, v, _causal(q, k, offset), scale=1 / q.shape[-1])


@model("mask_inverted", N_("mask polarity inverted: `masked_fill(mask, -inf)` fills where the mask is True, so with "
       "a True = may-read mask you forbade the past and allowed the future (and the last query, which may read "
       "everything, has nothing left: nan). Fill where the mask is False: `masked_fill(~allowed, -inf)`."))
def causal_mask_inverted(q, k, v, offset=0):
    i, j = _positions(q.shape[-2], k.shape[-2], offset)
    return attend(q, k, v, j > i)


@model("wrong_axis", N_("softmax over the wrong axis: normalise over keys (`dim=-1`), not over queries."))
def causal_softmax_over_queries(q, k, v, offset=0):
    return attend(q, k, v, _causal(q, k, offset), axis=-2)


# ---------------------------------------------------------------------------------------------- dropout
# The checker's "dropout" is deterministic: it keeps the entries whose flat index is not a multiple of 3
# and multiplies them by 1.5, so every output is known exactly and every run gives the same verdict.


def keep_pattern(shape) -> np.ndarray:
    return (np.arange(int(np.prod(shape))) % 3 != 0).reshape(shape)


def fake_dropout_numpy(x):
    return x * keep_pattern(x.shape) * 1.5


def _weights(q, k, offset):
    s = q @ swap(k) / np.sqrt(q.shape[-1])
    return softmax(np.where(_causal(q, k, offset), s, -np.inf))


DROPOUT_MISTAKES: list[Mistake] = []
model = models(DROPOUT_MISTAKES)


@model("dropout_ignored", N_("the `dropout` argument is ignored: when it is given, the output must use the dropped "
       "weights, `dropout(weights) @ value`."))
def causal_dropout_ignored(q, k, v, offset=0):
    return _weights(q, k, offset) @ v


@model("dropout_on_output", N_("dropout was applied to the output; it belongs on the weights: "
       "`output = dropout(weights) @ value`."))
def causal_dropout_on_output(q, k, v, offset=0):
    return fake_dropout_numpy(_weights(q, k, offset) @ v)


@model("dropout_on_scores", N_("dropout was applied to the scores before the softmax; it belongs on the weights after "
       "the softmax: `output = dropout(weights) @ value`."))
def causal_dropout_on_scores(q, k, v, offset=0):
    s = np.where(_causal(q, k, offset), q @ swap(k) / np.sqrt(q.shape[-1]), -np.inf)
    return softmax(fake_dropout_numpy(s)) @ v


WEIGHTS_AFTER_DROPOUT = Mistake("weights_after_dropout", N_("the weights you returned are the dropped ones; return "
                                "the probabilities before dropout (each row sums to 1) and use the dropped ones "
                                "only for the output."))
WEIGHTS_WRONG = Mistake("weights_wrong", N_("the output is right but the weights you returned differ from the "
                        "reference."))
FUTURE_WEIGHTS = Mistake("future_weight", N_("a weight on a future key is not exactly 0."))
FUTURE_TEST = Mistake("future_changes_past", N_(
    "the future-perturbation test: changing future keys and values changed an "
                      "earlier output."))
NOT_A_PAIR = Mistake("not_a_pair", N_("the function did not return the pair (output, weights)."))


def _torch():
    import torch
    return torch


def _cases():
    torch = _torch()
    g = seeds.torch_generator(3)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float32)

    big_q = torch.full((3, 4), 300.0) * torch.tensor([[1.0], [2.0], [-1.5]])
    return [
        (N_("square causal self-attention (T = S = 4, query_offset = 0)"), randn(4, 3), randn(4, 3), randn(4, 2), 0),
        (N_("a batch (B = 2, H = 3, T = S = 5, query_offset = 0)"), randn(2, 3, 5, 4), randn(2, 3, 5, 4),
         randn(2, 3, 5, 3), 0),
        (N_("one new query at absolute position 5 reading a cache of S = 6 keys (query_offset = 5)"),
         randn(1, 4), randn(6, 4), randn(6, 2), 5),
        (N_("T = 3 queries at positions 4..6 over S = 7 keys (query_offset = 4)"), randn(3, 4), randn(7, 4),
         randn(7, 2), 4),
        (N_("T = 3 queries at positions 2..4 while the keys already reach position 7 (S = 8, query_offset = 2)"),
         randn(2, 3, 4), randn(2, 8, 4), randn(2, 8, 3), 2),
        (N_("T = 2 queries at positions 1..2 while the keys reach position 5 (S = 6, query_offset = 1)"),
         randn(2, 3), randn(6, 3), randn(6, 2), 1),
        (N_("large scores (about +-1000) with T = 3, S = 4, query_offset = 1"), big_q,
         randn(4, 4).abs() + 0.5, randn(4, 2), 1),
    ]


def _reference(q, k, v, offset):
    """torch's scaled_dot_product_attention in float64 with an explicit absolute-position mask."""
    torch = _torch()
    T, S = q.shape[-2], k.shape[-2]
    allowed = torch.from_numpy(masks.causal(T, S, offset))
    out = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=allowed)
    _unused, weights = ref.attention(q.double().numpy(), k.double().numpy(), v.double().numpy(),
                               allowed=allowed.numpy(), return_weights=True)
    return out.numpy(), weights


def _hint(err):
    if isinstance(err, TypeError) and ("query_offset" in str(err) or "dropout" in str(err)):
        return _("give your function the parameters `query_offset=0, dropout=None`.")
    if "size of tensor" in str(err) or "must match" in str(err) or "shape" in str(err):
        return _("build the mask from both T (queries) and S (keys) and the offset: with a KV cache T != S, so a "
                 "(T, T) triangle does not fit the (T, S) scores.")
    return error_hint(err)


def _run(run, fn, case, q, k, v, offset, **kwargs):
    if offset == 0 and q.shape[-2] == k.shape[-2] and not kwargs:
        out = run.call(fn, case, q, k, v, hint=_hint)
    else:
        out = run.call(fn, case, q, k, v, query_offset=offset, hint=_hint, **kwargs)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        what = _("{n} values").format(n=len(out)) if isinstance(out, (tuple, list)) else _("a single value")
        run.fail(_("On {case}, your function returned {what}; return the pair `(output, weights)`.").format(
            case=_(case), what=what), NOT_A_PAIR.name)
    return out


@checker(N_("causal attention"), CAUSAL_MISTAKES + DROPOUT_MISTAKES + [WEIGHTS_AFTER_DROPOUT, WEIGHTS_WRONG,
                                                                   FUTURE_WEIGHTS, FUTURE_TEST, NOT_A_PAIR],
         forbid=ATTNLAB_ATTENTION)
def check_causal_attention(run, fn):
    """Check ``fn(query, key, value, query_offset=0, dropout=None) -> (output, weights)`` on torch tensors.

    Query row i sits at absolute position ``query_offset + i`` and may read keys j <= query_offset + i.
    The reference is ``torch.nn.functional.scaled_dot_product_attention`` with the mask from
    ``al.masks.causal``, compared to float32 rounding; both results must be torch tensors. A
    deterministic ``dropout`` function is passed twice: the output must use the dropped weights and
    the returned weights must be those before dropout. A last test changes future keys and values
    and requires the past to stay exactly the same.
    """
    cases = _cases()

    def trial(item):
        case, q, k, v, offset = item
        T, S = q.shape[-2], k.shape[-2]
        out, weights = _run(run, fn, case, q, k, v, offset)
        got = run.array(out, case, "the output", shape=tuple(q.shape[:-1]) + (v.shape[-1],), kind="torch",
                        dtype="float")
        expected, expected_w = _reference(q, k, v, offset)
        w = run.array(weights, case, "the weights", shape=tuple(q.shape[:-1]) + (S,), kind="torch", dtype="float")
        if close(got, expected, FLOAT32):
            if (w[..., ~masks.causal(T, S, offset)] != 0).any():
                run.fail(_("On {case}, some weights on future keys are not exactly 0.").format(
                    case=_(case)), FUTURE_WEIGHTS.name)
            if not close(w, expected_w, FLOAT32):
                run.fail(_("On {case}, {explanation}: {value}.").format(
                    case=_(case), explanation=WEIGHTS_WRONG.text[:-1], value=describe_difference(w, expected_w)),
                         WEIGHTS_WRONG.name)
        return Trial(case, got, expected, tuple(t.double().numpy() for t in (q, k, v)) + (offset,))

    run.each_case(cases, trial, CAUSAL_MISTAKES, tol=FLOAT32, name=N_("the output"))
    _dropout_test(run, fn)
    _future_test(run, fn)
    return run.passed(_("All {n_cases} cases match torch's scaled_dot_product_attention with the "
                        "absolute-position mask (square, batched, a cached query, bottom-right and "
                        "future keys in the cache, large scores); a given dropout acts on the "
                        "weights while the returned weights stay those before dropout; and "
                        "changing future keys and values leaves every output bit-identical.").format(
                            n_cases=len(cases)))


def _dropout_test(run, fn):
    torch = _torch()
    g = seeds.torch_generator(12)

    def dropout(t):
        keep = torch.from_numpy(keep_pattern(tuple(t.shape))).to(t.device)
        return t * keep * 1.5

    cases = [(N_("a call with `dropout=` a deterministic stand-in that keeps the entries whose flat index is not a "
                 "multiple of 3 and multiplies them by 1.5 (queries at positions 2..5, S = 6)"),
              torch.randn(2, 4, 3, generator=g), torch.randn(2, 6, 3, generator=g), torch.randn(2, 6, 2, generator=g),
              2),
             (N_("the same stand-in dropout on queries at positions 0..2 with S = 3"),
              torch.randn(3, 5, generator=g), torch.randn(3, 5, generator=g), torch.randn(3, 4, generator=g), 0)]

    def trial(item):
        case, q, k, v, offset = item
        out, weights = _run(run, fn, case, q, k, v, offset, dropout=dropout)
        qd, kd, vd = (t.double().numpy() for t in (q, k, v))
        w_ref = _weights(qd, kd, offset)
        shape = tuple(q.shape[:-1])
        got = run.array(out, case, "the output", shape=shape + (v.shape[-1],), kind="torch", dtype="float")
        w = run.array(weights, case, "the weights", shape=shape + (k.shape[-2],), kind="torch", dtype="float")
        if close(got, fake_dropout_numpy(w_ref) @ vd, FLOAT32):
            if close(w, fake_dropout_numpy(w_ref), FLOAT32):
                run.fail(_("On {case}, {explanation}").format(
                    case=_(case), explanation=WEIGHTS_AFTER_DROPOUT.text), WEIGHTS_AFTER_DROPOUT.name)
            if not close(w, w_ref, FLOAT32):
                run.fail(_("On {case}, {explanation}: {value}.").format(
                    case=_(case), explanation=WEIGHTS_WRONG.text[:-1], value=describe_difference(w, w_ref)),
                         WEIGHTS_WRONG.name)
        return Trial(case, got, fake_dropout_numpy(w_ref) @ vd, (qd, kd, vd, offset))

    run.each_case(cases, trial, DROPOUT_MISTAKES, tol=FLOAT32, name=N_("the output"))


def _future_test(run, fn):
    torch = _torch()
    g = seeds.torch_generator(8)
    q, k, v = (torch.randn(3, 4, generator=g), torch.randn(8, 4, generator=g), torch.randn(8, 3, generator=g))
    offset = 2   # queries at positions 2, 3, 4
    case = N_("the future test (queries at positions 2..4, keys 0..7; keys and values 5..7 replaced)")
    before, _unused = _run(run, fn, case, q, k, v, offset)
    k2, v2 = k.clone(), v.clone()
    k2[5:] = torch.randn(3, 4, generator=g) * 10
    v2[5:] = torch.randn(3, 3, generator=g) * 10
    after, _unused = _run(run, fn, case, q, k2, v2, offset)
    b = run.array(before, case, shape=(3, 3), kind="torch", dtype="float")
    a = run.array(after, case, shape=(3, 3), kind="torch", dtype="float")
    if not np.array_equal(a, b):
        rows = sorted({int(i) for i in np.argwhere(a != b)[:, 0]})
        run.fail(_("On {case}: future leakage. Output rows {rows} changed when only keys and "
                   "values after every query's position changed.").format(case=_(case), rows=rows), FUTURE_TEST.name)


# ----------------------------------------------------------------------------------------------
# A test the student writes: leaks_future(attn, x) -> bool

T_PROBE = 7


def _projections():
    rng = seeds.rng(21)
    return rng.normal(size=(4, 4)), rng.normal(size=(4, 4)), rng.normal(size=(4, 3))


def _self_attention(allowed_rule, *, leak=0.0, fill=-np.inf, quantised_leak=0.0):
    w_q, w_k, w_v = _projections()

    def attn(x):
        T = x.shape[0]
        i, j = np.arange(T)[:, None], np.arange(T)[None, :]
        s = np.where(allowed_rule(i, j), (x @ w_q) @ (x @ w_k).T / 2.0, fill)
        out = softmax(s) @ (x @ w_v)
        if leak:
            out = out + leak * (softmax((x @ w_q) @ (x @ w_k).T / 2.0) @ (x @ w_v))
        if quantised_leak:     # every row also reads the mean of the inputs, rounded to 0.01
            out = out + quantised_leak * np.round(x.mean(axis=0), 2).sum()
        return out
    return attn


def _leak_pairs():
    """Leaks from one later position j into one earlier position i, drawn once with a fixed seed."""
    rng = seeds.rng(44)
    pairs = set()
    while len(pairs) < 3:
        i = int(rng.integers(1, T_PROBE - 2))
        pairs.add((i, int(rng.integers(i + 2, T_PROBE))))
    return sorted(pairs)


TINY_LEAK = N_("causal attention plus a 1e-10 leak from every position")


def _feature_leak(x):
    out = _self_attention(lambda i, j: j <= i)(x)
    nxt = np.vstack([x[1:, 2:3], np.zeros((1, 1))])                     # (T, 1): feature 2 of position t + 1
    return out + 0.1 * nxt


def _probes():
    probes = [
        (N_("causal self-attention"), _self_attention(lambda i, j: j <= i), False),
        (N_("self-attention with no mask"), _self_attention(lambda i, j: np.ones_like(i + j, dtype=bool)), True),
        (N_("attention that also reads one position ahead"), _self_attention(lambda i, j: j <= i + 1), True),
        (N_("causal attention in which only position 0 also reads position 1"),
         _self_attention(lambda i, j: (j <= i) | ((i == 0) & (j == 1))), True),
    ]
    for a, b in _leak_pairs():
        probes.append((_("causal attention in which only position {a} also reads position {b}").format(a=a, b=b),
                       _self_attention(lambda i, j, a=a, b=b: (j <= i) | ((i == a) & (j == b))), True))
    for a in (2, 3):       # a leak into the next position only: a test must try every split point t
        probes.append((_("causal attention in which only position {a} also reads position {b}").format(a=a, b=a + 1),
                       _self_attention(lambda i, j, a=a: (j <= i) | ((i == a) & (j == a + 1))), True))
    probes += [
        (N_("causal attention plus a leak that reads only feature 2 of the next position"), _feature_leak, True),
        (TINY_LEAK, _self_attention(lambda i, j: j <= i, leak=1e-10), True),
        (N_("causal attention plus a leak through the inputs' mean rounded to 0.01"),
         _self_attention(lambda i, j: j <= i, quantised_leak=0.1), True),
        (N_("causal self-attention with -1e9 filling"), _self_attention(lambda i, j: j <= i, fill=-1e9), False),
    ]
    return probes


LEAK_TEST_MISTAKES: list[Mistake] = []
model = models(LEAK_TEST_MISTAKES)


@model("flags_causal", N_("your test reports a leak even for correct causal attention. Either it changes past "
       "positions (which legitimately changes later outputs) or it compares the output rows of the positions it "
       "changed (which always change). Change only positions after t and compare only the rows 0..t."))
def leak_test_changes_the_past(attn, x):
    for t in range(1, x.shape[0]):
        changed = x.copy()
        changed[:t] += 1.0
        if not np.array_equal(attn(x)[t:], attn(changed)[t:]):
            return True
    return False


@model("flags_causal", N_("your test reports a leak even for correct causal attention: it compares the output rows of "
       "the positions it changed, which always change. Compare only the rows 0..t."))
def leak_test_compares_every_row(attn, x):
    changed = x.copy()
    changed[1:] += 1.0
    return not np.array_equal(attn(x), attn(changed))


@model("last_position_only", N_("your test changes only the last position, so it misses a leak from a middle position "
       "into an earlier one. For every t, change all positions after t and compare the outputs at positions 0..t."))
def leak_test_last_position_only(attn, x):
    changed = x.copy()
    changed[-1] += 1.0
    return not np.array_equal(attn(x)[:-1], attn(changed)[:-1])


@model("fixed_position", N_("your test looks at one or a few fixed positions only (one split point t, or the first "
       "positions), so a leak between two other positions passes unseen. For every t from 0 to T - 2, change all "
       "positions after t and compare the rows 0..t."))
def leak_test_one_split(attn, x):
    changed = x.copy()
    changed[1:] += 1.0
    return not np.array_equal(attn(x)[:1], attn(changed)[:1])


@model("tiny_perturbation", N_("your test changes the future inputs by a tiny amount (such as 1e-12), so the change "
       "it causes in a leaky output can round away or fall below the leak's threshold. Change them by an amount "
       "of order 1 (or replace them by new random numbers) and compare exactly."))
def leak_test_tiny_perturbation(attn, x):
    for t in range(x.shape[0] - 1):
        changed = x.copy()
        changed[t + 1:] += 1e-12
        if not np.array_equal(attn(x)[:t + 1], attn(changed)[:t + 1]):
            return True
    return False


@model("tolerance", N_("your test compares with a tolerance (e.g. `np.allclose`, or a largest difference above "
       "1e-9) and misses a tiny leak. Under a correct causal mask the future contributes exactly 0, so the past "
       "must be bit-identical: use `np.array_equal`."))
def leak_test_with_tolerance(attn, x):
    for t in range(x.shape[0] - 1):
        changed = x.copy()
        changed[t + 1:] += 1.0
        if not np.allclose(attn(x)[:t + 1], attn(changed)[:t + 1]):
            return True
    return False


@model("one_feature", N_("your test changes only one feature (column) of the later positions, so a leak through "
       "another feature passes unseen. Change every feature of every position after t (e.g. add 1 to the whole "
       "rows, or draw new random rows)."))
def leak_test_one_feature(attn, x):
    for t in range(x.shape[0] - 1):
        changed = x.copy()
        changed[t + 1:, 0] += 1.0
        if not np.array_equal(attn(x)[:t + 1], attn(changed)[:t + 1]):
            return True
    return False


@model("skips_split_points", N_("your test tries only some split points t (every second one, say), so a leak from "
       "position t + 1 into position t for a t it skips passes unseen. Try every t from 0 to T - 2."))
def leak_test_every_second_split(attn, x):
    for t in range(0, x.shape[0] - 1, 2):
        changed = x.copy()
        changed[t + 1:] += 1.0
        if not np.array_equal(attn(x)[:t + 1], attn(changed)[:t + 1]):
            return True
    return False


@model("excludes_row_t", N_("after changing the positions after t, your test compares the rows before t only: row t "
       "itself must stay the same too (a leak from t + 1 into t is the closest one). Compare the rows 0..t, "
       "`[:t + 1]`."))
def leak_test_excludes_row_t(attn, x):
    for t in range(x.shape[0] - 1):
        changed = x.copy()
        changed[t + 1:] += 1.0
        if not np.array_equal(attn(x)[:t], attn(changed)[:t]):
            return True
    return False


NOT_BOOL = Mistake("not_bool", N_("the test returned something other than True or False."))


@checker(N_("future-leak test"), LEAK_TEST_MISTAKES + [NOT_BOOL])
def check_leak_test(run, fn):
    """Check ``fn(attn, x) -> bool``: True iff future inputs change some earlier output of ``attn``.

    ``attn`` maps an array x of shape (T, d) to outputs (T, d_v), one row per position. The probes
    include leaks between positions drawn with a fixed seed, so a test that only looks at a few
    fixed positions misses some of them.
    """
    x = seeds.rng(4).normal(size=(T_PROBE, 4))
    probes = _probes()
    verdicts = []
    for name, attn, _unused in probes:
        case = _("the probe \"{name}\"").format(name=_(name))
        out = run.call(fn, case, attn, x)
        if not isinstance(out, (bool, np.bool_)):
            run.fail(_("On {case}, your test returned {type}; return True (it leaks) or False.").format(
                case=_(case), type=type(out).__name__),
                     NOT_BOOL.name)
        verdicts.append(bool(out))
    expected = [leaks for _unused, _unused, leaks in probes]
    if verdicts == expected:
        return run.passed(_("Your test gives the right verdict on all {n_expected} probes, "
                            "including leaks between middle positions, a leak of size 1e-10 and "
                            "one through rounded inputs.").format(n_expected=len(expected)))
    for mistake in LEAK_TEST_MISTAKES:
        if [run_model(mistake.model, attn, x) for _unused, attn, _unused in probes] == verdicts:
            run.fail(_("Your verdicts match a classic mistake: {explanation}").format(
                explanation=mistake.text), mistake.name)
    name, _unused, leaks = next(p for p, v in zip(probes, verdicts) if p[2] != v)
    if name == TINY_LEAK and not any(v != p[2] for p, v in zip(probes, verdicts) if p[0] != TINY_LEAK):
        tolerance = next(m for m in LEAK_TEST_MISTAKES if m.name == "tolerance")
        run.fail(_("Your test misses only the leak of size 1e-10: {explanation}").format(
            explanation=tolerance.text), tolerance.name)
    run.fail(_("On the probe \"{name}\" your test said {value}; it should say {leaks}.").format(
        name=_(name), value=not leaks, leaks=leaks))
