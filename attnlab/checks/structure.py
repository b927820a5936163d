"""Checkers for chapter 10: a permutation-equivariance test, and permuting a mask with the tokens (NumPy)."""
from __future__ import annotations

import numpy as np

from .. import masks
from .. import reference as ref
from ..i18n import N_, _
from . import seeds
from .diagnosis import Trial
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


def _adds_row(j):
    """Self-attention that also adds input row j to every output: equivariant only under a permutation that keeps
    position j in place, so a random permutation reveals it five times in six."""
    def f(x):
        return _attention_probe()(x) + x[j, :3]
    return f


def _small_position_term(x):
    """Self-attention plus 0.01 x the position index: the violation is at most 0.05, so a loose tolerance hides it."""
    return _attention_probe()(x) + 0.01 * np.arange(x.shape[0])[:, None]


def _circular_neighbours(x):
    """Each output mixes its row with the next one, cyclically: equivariant under cyclic shifts, and only those."""
    y = np.tanh(x @ _projections()[2])
    return y + 0.5 * np.roll(y, -1, axis=0)


# Seeds of the generators handed to the "adds row j" probes, found by a greedy search (and asserted by
# tests/attnlab/checks/test_equivariance_probes.py) so that (1) one of the first two draws of rng.permutation(T)
# moves row j, and (2) for a test drawing n permutations, n = 2 .. 30, 40, 50, 64 or 100, some probe's n-th draw
# keeps its row in place while an earlier draw moves it: a test whose verdict comes from its last draw is caught.
ADDS_ROW_SEEDS = {1: 593, 2: 570, 4: 237, 5: 607}


def _probes():
    """(name, f, equivariant?, seed of the generator handed to the test)."""
    probes = [
        (N_("self-attention with shared projections and no positions"), _attention_probe(), True, 100),
        (N_("a position-wise MLP"), _mlp, True, 101),
        (N_("causal self-attention"), _attention_probe(causal=True), False, 102),
        (N_("self-attention after adding a sinusoidal positional encoding"),
         _attention_probe(positions=lambda p: p.astype(float)), False, 103),
        (N_("self-attention with a positional encoding that starts at position 2 (positions 0 and 1 share one)"),
         _attention_probe(positions=lambda p: np.maximum(p - 1, 0).astype(float)), False, 104),
        (N_("self-attention that adds the last input row to every output"), _reads_last_row, False, 105),
        (N_("self-attention that adds the first and the last input rows to every output"), _reads_first_and_last_rows,
         False, 106),
        (N_("sorting the rows by their first feature (invariant, not equivariant)"),
         lambda x: x[np.argsort(x[:, 0], kind="stable")], False, 107),
        (N_("a cumulative sum over positions"), lambda x: np.cumsum(x, axis=0), False, 108),
        (N_("self-attention plus 0.01 times the position index (differences of at most 0.05)"),
         _small_position_term, False, 109),
        (N_("a function that mixes each row with the next one, cyclically (equivariant under cyclic shifts only)"),
         _circular_neighbours, False, 110),
    ]
    for j, seed in ADDS_ROW_SEEDS.items():
        probes.append((_("self-attention that adds input row {j} to every output").format(j=j), _adds_row(j), False,
                       seed))
    return probes


class _Recorder:
    """Wraps a probe: notes every permutation of x the test feeds it (by matching rows) and the generator's state."""

    def __init__(self, f, x):
        self.f, self.x = f, x
        self.perms: list[tuple] = []

    def __call__(self, x_in):
        perm = _as_permutation(np.asarray(x_in), self.x)
        if perm is not None:
            self.perms.append(perm)
        return self.f(x_in)

    def reordered(self) -> list[tuple]:
        """The distinct non-identity permutations tried, in the order of their first use."""
        seen = []
        for perm in self.perms:
            if perm != tuple(range(len(perm))) and perm not in seen:
                seen.append(perm)
        return seen


def _as_permutation(x_in, x):
    if x_in.shape != x.shape:
        return None
    perm = []
    for row in x_in:
        hits = np.flatnonzero((x == row).all(axis=1))
        if len(hits) != 1:
            return None
        perm.append(int(hits[0]))
    return tuple(perm) if len(set(perm)) == len(perm) else None


def _violation(f, x, perm) -> float:
    perm = np.array(perm)
    return float(np.max(np.abs(f(x[perm]) - f(x)[perm])))


def _is_cyclic(perm) -> bool:
    n = len(perm)
    return any(tuple((i + s) % n for i in range(n)) == tuple(perm) for s in range(n))


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


@model("exact_comparison", N_("your test compares exactly (`np.array_equal` or `==`), but a reordered input sums the "
       "same numbers in another order, which can change the last bits: an equivariant function then fails. Compare "
       "with `np.allclose`."))
def equivariance_test_exact(f, x, rng):
    for _unused in range(5):
        perm = rng.permutation(x.shape[0])
        if not np.array_equal(f(x[perm]), f(x)[perm]):
            return False
    return True


@model("fixed_permutation", N_("your test always uses the same permutation (here: the same on every probe), so a "
       "function that breaks the symmetry only at other positions passes it. Draw random permutations from `rng` "
       "(`rng.permutation(T)`), several of them."))
def equivariance_test_swaps_first_two(f, x, rng):
    perm = np.arange(x.shape[0])
    perm[[0, 1]] = [1, 0]
    return bool(np.allclose(f(x[perm]), f(x)[perm]))


@model("one_permutation", N_("your test draws a single random permutation: one permutation can leave in place the "
       "very position that breaks the symmetry. Draw several (at least 5) and require all of them to pass."))
def equivariance_test_one_draw(f, x, rng):
    perm = rng.permutation(x.shape[0])
    return bool(np.allclose(f(x[perm]), f(x)[perm]))


@model("last_draw_only", N_("only your last permutation decides the verdict: an earlier one showed a difference, and "
       "your test returned True all the same (the loop overwrites the result, e.g. `ok = np.allclose(...)` in "
       "each round). Return False as soon as one permutation fails, or combine them with `all(...)`."))
def equivariance_test_last_draw(f, x, rng):
    ok = True
    for _unused in range(5):
        perm = rng.permutation(x.shape[0])
        ok = bool(np.allclose(f(x[perm]), f(x)[perm]))
    return ok


@model("ignores_rng", N_("your test does not draw from the generator `rng` it is given (its state did not change), "
       "so its permutations change from run to run, or never change. Draw them with `rng.permutation(T)`."))
def equivariance_test_global_random(f, x, rng):
    state = np.random.get_state()
    np.random.seed(1234)                       # the test's own randomness, not rng: the model is repeatable
    try:
        return all(np.allclose(f(x[p]), f(x)[p]) for p in (np.random.permutation(x.shape[0]) for _unused in range(5)))
    finally:
        np.random.set_state(state)


@model("loose_tolerance", N_("your tolerance is too loose (e.g. `atol=0.1`): it hides a real difference between "
       "f(P X) and P f(X). The defaults of `np.allclose` (rtol 1e-5, atol 1e-8) are what an order of summation can "
       "change; anything larger is a different function."))
def equivariance_test_loose(f, x, rng):
    return all(np.allclose(f(x[p]), f(x)[p], atol=0.1) for p in (rng.permutation(x.shape[0]) for _unused in range(5)))


@model("cyclic_shifts", N_("your test only tries cyclic shifts (`np.roll`), a small family of permutations: a function "
       "that mixes each position with its neighbour, cyclically, passes every shift and still is not "
       "permutation-equivariant. Draw general permutations, `rng.permutation(T)`."))
def equivariance_test_cyclic(f, x, rng):
    T = x.shape[0]
    shifts = [np.roll(np.arange(T), int(s)) for s in rng.integers(1, T, size=5)]
    return all(np.allclose(f(x[p]), f(x)[p]) for p in shifts)


NOT_BOOL = Mistake("not_bool", N_("the test returned something other than True or False."))
NEVER_PERMUTES = Mistake("never_permutes", N_("your test never calls f on reordered rows of x: equivariance compares "
                         "f(x[perm]) with f(x)[perm]."))
SAW_IT = Mistake("ignored_difference", N_("one of your permutations showed a clear difference and your test still "
                 "returned True."))
TOO_FEW = Mistake("too_few_permutations", N_("none of your permutations happened to reveal a function that is not "
                  "equivariant: draw more of them (at least 5)."))
STRUCTURE = [NEVER_PERMUTES, SAW_IT, TOO_FEW]


@checker(N_("permutation-equivariance test"), EQUIVARIANCE_TEST_MISTAKES + STRUCTURE + [NOT_BOOL])
def check_equivariance_test(run, fn):
    """Check ``fn(f, x, rng) -> bool``: True iff f(x[perm]) equals f(x)[perm] for random permutations drawn from
    the NumPy Generator ``rng`` (x has shape (T, d); f maps it to (T, d_out)). Every probe gets a generator with a
    fixed seed, so a test gets the same verdict on every run; every permutation the test feeds a probe is recorded,
    so that a wrong verdict can be explained by what the test actually tried."""
    x = seeds.rng(8).normal(size=(T_PROBE, 4))
    probes = _probes()
    verdicts, records, draws = [], [], []
    for name, f, _unused, seed in probes:
        case = _("the probe \"{name}\"").format(name=_(name))
        rng = seeds.rng(seed)
        before = rng.bit_generator.state
        recorder = _Recorder(f, x)
        out = run.call(fn, case, recorder, x, rng)
        if not isinstance(out, (bool, np.bool_)):
            run.fail(_("On {case}, your test returned {type}; return True or False "
                       "(`bool(np.allclose(...))`).").format(case=_(case), type=type(out).__name__), NOT_BOOL.name)
        verdicts.append(bool(out))
        records.append(recorder)
        draws.append(rng.bit_generator.state != before)
    expected = [e for _unused, _unused, e, _unused in probes]
    if verdicts != expected:
        _explain_verdicts(run, x, probes, verdicts)
    _structure(run, [r.reordered() for r in records], draws)
    if verdicts != expected:
        _explain_probe(run, x, probes, verdicts, records)
    if verdicts == expected:
        return run.passed(_("Your test gives the right verdict on all {n_probes} probes: "
                            "equivariant self-attention and MLP; causal attention, positional "
                            "encodings (one that only differs after position 1), functions that "
                            "read one row, sorting, cumulative sums, a violation of 0.05 and a "
                            "cyclic mixing are not.").format(n_probes=len(probes)))


def _explain_verdicts(run, x, probes, verdicts):
    """A wrong verdict: is it what a test computing the wrong thing returns (a model with the same verdicts)?"""
    for mistake in EQUIVARIANCE_TEST_MISTAKES[:3]:
        theirs = [run_model(mistake.model, f, x, seeds.rng(seed)) for _u, f, _e, seed in probes]
        if theirs == verdicts:
            run.fail(_("Your verdicts match a classic mistake: {explanation}").format(explanation=mistake.text),
                     mistake.name)


def _structure(run, tried, draws):
    """What the test tried, whatever its verdicts: the sheet asks for several random permutations from rng."""
    if not any(tried):
        run.fail(_capital(NEVER_PERMUTES.text), NEVER_PERMUTES.name)
    if len({tuple(t) for t in tried if t}) == 1:
        _named(run, "fixed_permutation")
    if all(_is_cyclic(p) for t in tried for p in t):
        _named(run, "cyclic_shifts")
    if not any(draws):
        _named(run, "ignores_rng")
    if max(len(t) for t in tried) == 1:
        _named(run, "one_permutation")


def _explain_probe(run, x, probes, verdicts, records):
    """The first probe with a wrong verdict, explained by the permutations the test tried on it."""
    index = next(i for i, (v, p) in enumerate(zip(verdicts, probes)) if v != p[2])
    name, f, right, _seed = probes[index]
    perms = records[index].reordered()
    if right is False:
        sizes = [_violation(f, x, p) for p in perms]
        shown = [i for i, size in enumerate(sizes) if size > 1e-6]
        if shown and sizes[-1] <= 1e-6:
            _named(run, "last_draw_only", name, len(perms), shown[0] + 1, max(sizes))
        if shown and max(sizes) < 0.5:
            _named(run, "loose_tolerance", name, len(perms), shown[0] + 1, max(sizes))
        if shown:
            run.fail(_("On the probe \"{name}\", your permutation number {k} of {n} changes the output by up to "
                       "{size:.3g}, yet your test said True: {explanation}").format(
                           name=_(name), k=shown[0] + 1, n=len(perms), size=max(sizes), explanation=SAW_IT.text),
                     SAW_IT.name)
        fixed = [i for i in range(x.shape[0]) if all(p[i] == i for p in perms)]
        still = (_(" Every one of them leaves position {positions} in place, where this function breaks the "
                   "symmetry: draw general permutations, `rng.permutation(T)`.").format(
                       positions=", ".join(str(i) for i in fixed)) if fixed else "")
        run.fail(_("On the probe \"{name}\", your test said True after {n} permutations: {explanation}").format(
            name=_(name), n=len(perms), explanation=TOO_FEW.text) + still, TOO_FEW.name)
    run.fail(_("On the probe \"{name}\" your test said {value}; it should say {right}. That function is "
               "equivariant: check which side of your comparison is reordered, and compare with "
               "`np.allclose`.").format(name=_(name), value=not right, right=right))


def _named(run, key, probe="", n=0, k=0, size=0.0):
    mistake = next(m for m in EQUIVARIANCE_TEST_MISTAKES if m.name == key)
    where = (_("On the probe \"{name}\" (your permutation number {k} of {n} changes the output by up to "
               "{size:.3g}): ").format(name=_(probe), k=k, n=n, size=size) if probe else "")
    run.fail(where + _capital(mistake.text), mistake.name)


def _capital(text: str) -> str:
    if any("\u4e00" <= ch <= "\u9fff" for ch in text[:40]):
        return text
    return text[:1].upper() + text[1:]


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


@model("p_m_p", N_("you permuted the rows with perm and the columns with its inverse (P M P, e.g. `P @ M @ P` with a "
       "permutation matrix, or `allowed[perm][:, np.argsort(perm)]`). Rows and columns are the same tokens and move "
       "the same way: P M P^T, `allowed[np.ix_(perm, perm)]`."))
def permute_mask_p_m_p(allowed, perm):
    return allowed[perm][:, np.argsort(perm)]


@model("transposed", N_("your mask is transposed (rows are keys): `allowed[perm][:, perm]` keeps the rows as queries. "
       "Did you index `allowed.T`, or build P^T M P?"))
def permute_mask_transposed(allowed, perm):
    return allowed[np.ix_(perm, perm)].T


NOT_BOOLEAN = Mistake("not_boolean", N_("the mask is not boolean."))


def _permute_hint(T):
    def hint(shape):
        if tuple(shape) == (T,):
            return _("`allowed[perm, perm]` pairs the two index arrays entry by entry and picks T entries; to take "
                     "every (row, column) pair use `allowed[np.ix_(perm, perm)]` or `allowed[perm][:, perm]`.")
        return None
    return hint


@checker(N_("permute a mask"), PERMUTE_MASK_MISTAKES + [NOT_BOOLEAN])
def check_permute_mask(run, fn):
    """Check ``fn(allowed, perm)``: the (T, T) boolean NumPy mask that goes with the reordered tokens ``x[perm]``,
    so that attention(x[perm], new mask) equals attention(x, allowed)[perm]."""
    rng = seeds.rng(23)
    random_mask = rng.random((5, 5)) < 0.5
    random_mask[np.arange(5), rng.integers(0, 5, size=5)] = True     # every row may read something
    window = masks.sliding_window(6, 3)
    cases = [
        (N_("a causal mask (T = 5) with perm = [2, 0, 3, 4, 1]"), masks.causal(5), np.array([2, 0, 3, 4, 1])),
        (N_("a random mask (T = 5) with perm = [4, 2, 0, 1, 3]"), random_mask, np.array([4, 2, 0, 1, 3])),
        (N_("a sliding-window mask (T = 6) with perm = [5, 3, 0, 4, 1, 2]"), window, np.array([5, 3, 0, 4, 1, 2])),
    ]

    def trial(item):
        case, allowed, perm = item
        got = run.array(run.call(fn, case, allowed, perm), case, "the mask", shape=allowed.shape, dtype="bool",
                        shape_hint=_permute_hint(len(perm)))
        if got.dtype != bool:
            run.fail(_("On {case}, return a boolean mask (True = may read); got dtype {dtype}.").format(
                case=_(case), dtype=got.dtype), NOT_BOOLEAN.name)
        return Trial(case, got, allowed[np.ix_(perm, perm)], (allowed, perm))

    run.each_case(cases, trial, PERMUTE_MASK_MISTAKES, tol=None, name=N_("the mask"))
    x = rng.normal(size=(5, 3))
    for _case, allowed, perm in cases[:2]:
        assert np.allclose(ref.attention(x[perm], x[perm], x[perm], allowed=allowed[np.ix_(perm, perm)]),
                           ref.attention(x, x, x, allowed=allowed)[perm])
    return run.passed(_("All {n_cases} cases give P M P^T, and attention on the reordered tokens with your "
                        "mask equals the reordered attention output.").format(n_cases=len(cases)))
