"""Checkers for chapter 8: a permutation-equivariance test, and permuting a mask with the tokens."""
from __future__ import annotations

import numpy as np

from .. import masks
from .. import reference as ref
from . import mistakes as M
from . import result as R
from .diagnose import Mistake, run_model
from .runner import Stop, call, checker, to_array

EQUIVARIANCE_TEST_MISTAKES = [
    Mistake("invariance", "your test checks invariance, f(P X) = f(X), instead of equivariance, "
            "f(P X) = P f(X): compare `f(x[perm])` with `f(x)[perm]`. (Sorting the rows is invariant but not "
            "equivariant, and self-attention is equivariant but not invariant.)",
            M.equivariance_test_checks_invariance),
    Mistake("inverse_permutation", "your test applies the inverse permutation on one side: if the inputs are "
            "reordered with `x[perm]`, the outputs must be reordered the same way, `f(x)[perm]`, not with "
            "`np.argsort(perm)`.", M.equivariance_test_inverse_permutation),
]


def _projections():
    rng = np.random.default_rng(31)
    return rng.normal(size=(4, 4)) / 2, rng.normal(size=(4, 4)) / 2, rng.normal(size=(4, 3))


def _attention_probe(causal=False, positions=False):
    w_q, w_k, w_v = _projections()

    def f(x):
        T = x.shape[0]
        if positions:
            x = x + np.sin(np.arange(T)[:, None] * np.array([1.0, 0.5, 0.25, 0.125]))
        allowed = masks.causal(T) if causal else None
        return ref.attention(x @ w_q, x @ w_k, x @ w_v, allowed=allowed)
    return f


def _mlp(x):
    w1, _, w2 = _projections()
    return np.tanh(x @ w1) @ w2


def _probes():
    return [
        ("self-attention with shared projections and no positions", _attention_probe(), True),
        ("a position-wise MLP", _mlp, True),
        ("causal self-attention", _attention_probe(causal=True), False),
        ("self-attention after adding a sinusoidal positional encoding", _attention_probe(positions=True), False),
        ("sorting the rows by their first feature (invariant, not equivariant)",
         lambda x: x[np.argsort(x[:, 0], kind="stable")], False),
        ("a cumulative sum over positions", lambda x: np.cumsum(x, axis=0), False),
    ]


@checker("permutation-equivariance test")
def check_equivariance_test(fn):
    """Check ``fn(f, x, rng) -> bool``: True iff f(x[perm]) equals f(x)[perm] for random permutations
    drawn from the NumPy Generator ``rng`` (x has shape (T, d); f maps it to (T, d_out))."""
    task = "permutation-equivariance test"
    x = np.random.default_rng(8).normal(size=(6, 4))
    probes = _probes()
    verdicts = []
    for i, (name, f, _) in enumerate(probes):
        case = f"the probe \"{name}\""
        out = call(task, fn, case, f, x, np.random.default_rng(100 + i))
        if not isinstance(out, (bool, np.bool_)):
            raise Stop(R.failed(task, f"On {case}, your test returned {type(out).__name__}; return True or False "
                                      f"(`bool(np.allclose(...))`)."))
        verdicts.append(bool(out))
    expected = [e for _, _, e in probes]
    if verdicts == expected:
        return R.passed(task, f"Your test gives the right verdict on all {len(probes)} probes: equivariant "
                              f"self-attention and MLP; causal attention, positional encodings, sorting and "
                              f"cumulative sums are not.")
    for mistake in EQUIVARIANCE_TEST_MISTAKES:
        theirs = [mistake.model(f, x, np.random.default_rng(100 + i)) for i, (_, f, _) in enumerate(probes)]
        if theirs == verdicts:
            raise Stop(R.failed(task, f"Your verdicts match a classic mistake: {mistake.explanation}", mistake.name))
    name, _, right = next(p for p, v in zip(probes, verdicts) if p[2] != v)
    hint = (" Try several random permutations: a single one can miss a position that breaks the symmetry."
            if right is False else "")
    raise Stop(R.failed(task, f"On the probe \"{name}\" your test said {not right}; it should say {right}.{hint}"))


PERMUTE_MASK_MISTAKES = [
    Mistake("rows_only", "you permuted only the rows (queries). The keys are the same tokens, so the columns "
            "move too: `allowed[perm][:, perm]`, i.e. P M P^T.", M.permute_mask_rows_only),
    Mistake("columns_only", "you permuted only the columns (keys). The queries are the same tokens, so the rows "
            "move too: `allowed[perm][:, perm]`, i.e. P M P^T.", M.permute_mask_columns_only),
    Mistake("inverse_permutation", "you used the inverse permutation. Token i of the new order is token "
            "perm[i] of the old one, so new entry (i, j) is old entry (perm[i], perm[j]).",
            M.permute_mask_inverse),
    Mistake("unchanged", "the mask did not move with the tokens. Equivariance needs the mask permuted too: "
            "F(P X; P M P^T) = P F(X; M).", M.permute_mask_unchanged),
]


@checker("permute a mask")
def check_permute_mask(fn):
    """Check ``fn(allowed, perm)``: the (T, T) mask that goes with the reordered tokens ``x[perm]``, so that
    attention(x[perm], new mask) equals attention(x, allowed)[perm]."""
    task = "permute a mask"
    rng = np.random.default_rng(23)
    random_mask = rng.random((5, 5)) < 0.5
    random_mask[np.arange(5), rng.integers(0, 5, size=5)] = True     # every row may read something
    cases = [
        ("a causal mask (T = 5) with perm = [2, 0, 3, 4, 1]", masks.causal(5), np.array([2, 0, 3, 4, 1])),
        ("a random mask (T = 5) with perm = [4, 2, 0, 1, 3]", random_mask, np.array([4, 2, 0, 1, 3])),
    ]
    x = rng.normal(size=(5, 3))
    for case, allowed, perm in cases:
        got = to_array(task, call(task, fn, case, allowed, perm), case, "the mask", shape=allowed.shape, dtype=None)
        expected = allowed[np.ix_(perm, perm)]
        if got.dtype != bool:
            raise Stop(R.failed(task, f"On {case}, return a boolean mask (True = may read); got dtype {got.dtype}."))
        if np.array_equal(got, expected):
            assert np.allclose(ref.attention(x[perm], x[perm], x[perm], allowed=got),
                               ref.attention(x, x, x, allowed=allowed)[perm])
            continue
        for mistake in PERMUTE_MASK_MISTAKES:
            model = run_model(mistake.model, allowed, perm)
            if model is not None and np.array_equal(got, model):
                raise Stop(R.failed(task, f"On {case}, the mask matches a classic mistake: {mistake.explanation}",
                                    mistake.name))
        where = tuple(int(i) for i in np.argwhere(got != expected)[0])
        raise Stop(R.failed(task, f"On {case}, entry {where} should be {bool(expected[where])}."))
    return R.passed(task, "Both cases give P M P^T, and attention on the reordered tokens with your mask "
                          "equals the reordered attention output.")
