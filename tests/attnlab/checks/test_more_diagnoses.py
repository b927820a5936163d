"""Diagnoses found from properties or from what a student's test tried, each with an independent wrong function."""
import numpy as np

import attnlab.checks as C
from tests.attnlab.checks.support import assert_diagnosis


def test_dropout_dividing_by_p_gives_inf_at_p_zero():
    def by_p(a, p, rng):
        return a * (rng.random(a.shape) >= p) * (1 - p) / p
    assert_diagnosis(C.check_dropout(by_p), "not_finite", "nan or inf")


def test_equivariance_test_that_never_reorders():
    assert_diagnosis(C.check_equivariance_test(lambda f, x, rng: bool(np.allclose(f(x), f(x)))), "never_permutes",
                     "never calls f on reordered rows")


def test_equivariance_test_that_ignores_a_clear_difference():
    def loose(f, x, rng):
        return all(np.allclose(f(x[p]), f(x)[p], atol=5) for p in (rng.permutation(len(x)) for _ in range(5)))
    assert_diagnosis(C.check_equivariance_test(loose), "ignored_difference", "changes the output by up to")


def test_equivariance_test_whose_permutations_keep_the_last_position():
    def keeps_last(f, x, rng):
        T = len(x)
        perms = [np.r_[rng.permutation(T - 1), T - 1] for _ in range(5)]
        return all(np.allclose(f(x[p]), f(x)[p]) for p in perms)
    result = C.check_equivariance_test(keeps_last)
    assert_diagnosis(result, "too_few_permutations", "leaves position 5 in place")


def test_ring_attend_formula_read_literally_is_accepted_once_j_is_nonnegative():
    """The sheet states j >= 0: p - window < j <= p or j < n_sinks, for j >= 0, is the reference."""
    def literal(q, k, v, pos, p, window, n_sinks):
        keep = (pos >= 0) & (((p - window < pos) & (pos <= p)) | (pos < n_sinks))
        s = k[keep] @ q / np.sqrt(q.shape[-1])
        e = np.exp(s - s.max())
        return e / e.sum() @ v[keep]
    assert C.check_ring_attend(literal).passed
