"""Checkers for chapter 10: a permutation-equivariance test, and permuting a mask with the tokens (NumPy)."""
from __future__ import annotations

import numpy as np

from .. import masks
from .. import reference as ref
from ..i18n import N_, _
from . import seeds
from .engine import Mistake, models, run_model
from .registry import checker

T_PROBE = 6


def _projections():
    rng = seeds.rng(31)
    return rng.normal(size=(4, 4)) / 2, rng.normal(size=(4, 4)) / 2, rng.normal(size=(4, 3))


def _attention_probe(causal=False, positions=None):
    w_q, w_k, w_v = _projections()

    def f(x):
        T = x.shape[0]
        if positions is not None:
            x = x + np.sin(positions(np.arange(T))[:, None] * np.array([1.0, 0.5, 0.25, 0.125]))
        allowed = masks.causal(T) if causal else None
        return ref.attention(x @ w_q, x @ w_k, x @ w_v, allowed=allowed)
    return f


def _mlp(x):
    w1, _unused, w2 = _projections()
    return np.tanh(x @ w1) @ w2


def _reads_last_row(x):
    """Self-attention whose every output also adds the last input row: only a permutation that moves the last
    position shows that it is not equivariant."""
    return _attention_probe()(x) + x[-1, :3]


def _reads_first_and_last_rows(x):
    """Self-attention plus the first and last input rows: the reversal (and any permutation that swaps or
    keeps the two ends) leaves it unchanged, random permutations do not."""
    return _attention_probe()(x) + (x[0] + x[-1])[:3]


def _probes():
    return [
        (N_("self-attention with shared projections and no positions"), _attention_probe(), True),
        (N_("a position-wise MLP"), _mlp, True),
        (N_("causal self-attention"), _attention_probe(causal=True), False),
        (N_("self-attention after adding a sinusoidal positional encoding"),
         _attention_probe(positions=lambda p: p.astype(float)), False),
        (N_("self-attention with a positional encoding that starts at position 2 (positions 0 and 1 share one)"),
         _attention_probe(positions=lambda p: np.maximum(p - 1, 0).astype(float)), False),
        (N_("self-attention that adds the last input row to every output"), _reads_last_row, False),
        (N_("self-attention that adds the first and the last input rows to every output"), _reads_first_and_last_rows,
         False),
        (N_("sorting the rows by their first feature (invariant, not equivariant)"),
         lambda x: x[np.argsort(x[:, 0], kind="stable")], False),
        (N_("a cumulative sum over positions"), lambda x: np.cumsum(x, axis=0), False),
    ]


EQUIVARIANCE_TEST_MISTAKES: list[Mistake] = []
model = models(EQUIVARIANCE_TEST_MISTAKES)


@model("invariance", N_("your test checks invariance, f(P X) = f(X), instead of equivariance, f(P X) = P f(X): compare "
       "`f(x[perm])` with `f(x)[perm]`. (Sorting the rows is invariant but not equivariant, and self-attention is "
       "equivariant but not invariant.)"))
def equivariance_test_checks_invariance(f, x, rng):
    perm = rng.permutation(x.shape[0])
    return bool(np.allclose(f(x[perm]), f(x)))


@model("inverse_permutation", N_("your test applies the inverse permutation on one side: if the inputs are reordered "
       "with `x[perm]`, the outputs must be reordered the same way, `f(x)[perm]`, not with `np.argsort(perm)`."))
def equivariance_test_inverse_permutation(f, x, rng):
    perm = rng.permutation(x.shape[0])
    while np.array_equal(perm[perm], np.arange(len(perm))):   # an involution would hide the mistake
        perm = rng.permutation(x.shape[0])
    return bool(np.allclose(f(x[perm]), f(x)[np.argsort(perm)]))


@model("fixed_swap", N_("your test always uses the same permutation (swapping positions 0 and 1), so a function that "
       "breaks the symmetry only at other positions passes it. Draw random permutations from `rng` "
       "(`rng.permutation(T)`), several of them."))
def equivariance_test_swaps_first_two(f, x, rng):
    perm = np.arange(x.shape[0])
    perm[[0, 1]] = [1, 0]
    return bool(np.allclose(f(x[perm]), f(x)[perm]))


NOT_BOOL = Mistake("not_bool", N_("the test returned something other than True or False."))


@checker(N_("permutation-equivariance test"), EQUIVARIANCE_TEST_MISTAKES + [NOT_BOOL])
def check_equivariance_test(run, fn):
    """Check ``fn(f, x, rng) -> bool``: True iff f(x[perm]) equals f(x)[perm] for random permutations drawn from
    the NumPy Generator ``rng`` (x has shape (T, d); f maps it to (T, d_out)). Every probe gets a generator with a
    fixed seed, so a test gets the same verdict on every run."""
    x = seeds.rng(8).normal(size=(T_PROBE, 4))
    probes = _probes()
    verdicts = []
    for i, (name, f, _unused) in enumerate(probes):
        case = _("the probe \"{name}\"").format(name=_(name))
        out = run.call(fn, case, f, x, seeds.rng(100 + i))
        if not isinstance(out, (bool, np.bool_)):
            run.fail(_("On {case}, your test returned {type}; return True or False "
                       "(`bool(np.allclose(...))`).").format(case=_(case), type=type(out).__name__), NOT_BOOL.name)
        verdicts.append(bool(out))
    expected = [e for _unused, _unused, e in probes]
    if verdicts == expected:
        return run.passed(_("Your test gives the right verdict on all {n_probes} probes: "
                            "equivariant self-attention and MLP; causal attention, positional "
                            "encodings (one that only differs after position 1), functions that "
                            "read the end rows, sorting and cumulative sums are not.").format(n_probes=len(probes)))
    for mistake in EQUIVARIANCE_TEST_MISTAKES:
        theirs = [run_model(mistake.model, f, x, seeds.rng(100 + i))
                  for i, (_unused, f, _unused) in enumerate(probes)]
        if theirs == verdicts:
            run.fail(_("Your verdicts match a classic mistake: {explanation}").format(
                explanation=mistake.text), mistake.name)
    name, _unused, right = next(p for p, v in zip(probes, verdicts) if p[2] != v)
    hint = (_(" Try several random permutations: a single one can miss a position that breaks the symmetry.")
            if right is False else "")
    run.fail(_("On the probe \"{name}\" your test said {value}; it should say {right}.{hint}").format(
        name=_(name), value=not right, right=right, hint=hint))


PERMUTE_MASK_MISTAKES: list[Mistake] = []
model = models(PERMUTE_MASK_MISTAKES)


@model("rows_only", N_("you permuted only the rows (queries). The keys are the same tokens, so the columns move too: "
       "`allowed[perm][:, perm]`, i.e. P M P^T."))
def permute_mask_rows_only(allowed, perm):
    return allowed[perm]


@model("columns_only", N_("you permuted only the columns (keys). The queries are the same tokens, so the rows move "
       "too: `allowed[perm][:, perm]`, i.e. P M P^T."))
def permute_mask_columns_only(allowed, perm):
    return allowed[:, perm]


@model("inverse_permutation", N_("you used the inverse permutation. Token i of the new order is token perm[i] of the "
       "old one, so new entry (i, j) is old entry (perm[i], perm[j])."))
def permute_mask_inverse(allowed, perm):
    inv = np.argsort(perm)
    return allowed[np.ix_(inv, inv)]


@model("unchanged", N_("the mask did not move with the tokens. Equivariance needs the mask permuted too: "
       "F(P X; P M P^T) = P F(X; M)."))
def permute_mask_unchanged(allowed, perm):
    return allowed


NOT_BOOLEAN = Mistake("not_boolean", N_("the mask is not boolean."))


@checker(N_("permute a mask"), PERMUTE_MASK_MISTAKES + [NOT_BOOLEAN])
def check_permute_mask(run, fn):
    """Check ``fn(allowed, perm)``: the (T, T) boolean NumPy mask that goes with the reordered tokens ``x[perm]``,
    so that attention(x[perm], new mask) equals attention(x, allowed)[perm]."""
    rng = seeds.rng(23)
    random_mask = rng.random((5, 5)) < 0.5
    random_mask[np.arange(5), rng.integers(0, 5, size=5)] = True     # every row may read something
    cases = [
        (N_("a causal mask (T = 5) with perm = [2, 0, 3, 4, 1]"), masks.causal(5), np.array([2, 0, 3, 4, 1])),
        (N_("a random mask (T = 5) with perm = [4, 2, 0, 1, 3]"), random_mask, np.array([4, 2, 0, 1, 3])),
    ]
    x = rng.normal(size=(5, 3))
    for case, allowed, perm in cases:
        got = run.array(run.call(fn, case, allowed, perm), case, "the mask", shape=allowed.shape, dtype="bool")
        if got.dtype != bool:
            run.fail(_("On {case}, return a boolean mask (True = may read); got dtype {dtype}.").format(
                case=_(case), dtype=got.dtype), NOT_BOOLEAN.name)
        run.compare(case, got, allowed[np.ix_(perm, perm)], PERMUTE_MASK_MISTAKES, args=(allowed, perm), tol=None,
                    name=N_("the mask"))
        assert np.allclose(ref.attention(x[perm], x[perm], x[perm], allowed=got),
                           ref.attention(x, x, x, allowed=allowed)[perm])
    return run.passed(_("Both cases give P M P^T, and attention on the reordered tokens with your "
                        "mask equals the reordered attention output."))
