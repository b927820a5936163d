"""Equivariance-test and mask-permutation checkers: each mistake is named.

Every "student" function is written independently, the way a student would write the mistake,
not taken from the package's mistake models; each test asserts the diagnosis it gets.
"""

import numpy as np

from attnlab import checks as C

from .support import assert_diagnosis, assert_not_attempted, stub

# ------------------------------------------------------------------------------------ structure


def equivariance_test(f, x, rng):
    for _ in range(5):
        perm = rng.permutation(x.shape[0])
        if not np.allclose(f(x[perm]), f(x)[perm]):
            return False
    return True


def test_equivariance_test_reference_passes():
    assert C.check_equivariance_test(equivariance_test).passed


def test_equivariance_test_stub_not_attempted():
    assert_not_attempted(C.check_equivariance_test(stub))


def test_equivariance_test_checking_invariance():
    def invariance(f, x, rng):
        perm = rng.permutation(x.shape[0])
        return bool(np.allclose(f(x[perm]), f(x)))
    assert_diagnosis(C.check_equivariance_test(invariance), "invariance", "checks invariance")


def test_equivariance_test_inverse_permutation():
    def inverse(f, x, rng):
        perm = np.roll(np.arange(x.shape[0]), 1)   # a cycle: not its own inverse
        return bool(np.allclose(f(x[perm]), f(x)[np.argsort(perm)]))
    assert_diagnosis(C.check_equivariance_test(inverse), "inverse_permutation", "inverse permutation")


def test_equivariance_test_returning_an_array_is_a_message():
    result = C.check_equivariance_test(lambda f, x, rng: np.isclose(f(x), f(x)))
    assert not result.passed and "True or False" in result.message


def test_permute_mask_reference_passes():
    assert C.check_permute_mask(lambda m, p: m[p][:, p]).passed


def test_permute_mask_stub_not_attempted():
    assert_not_attempted(C.check_permute_mask(stub))


def test_permute_mask_rows_only():
    assert_diagnosis(C.check_permute_mask(lambda m, p: m[p]), "rows_only", "only the rows")


def test_permute_mask_columns_only():
    assert_diagnosis(C.check_permute_mask(lambda m, p: m[:, p]), "columns_only", "only the columns")


def test_permute_mask_inverse_permutation():
    def inverse(m, p):
        inv = np.empty_like(p)
        inv[p] = np.arange(len(p))
        return m[inv][:, inv]
    assert_diagnosis(C.check_permute_mask(inverse), "inverse_permutation", "inverse permutation")


def test_permute_mask_unchanged():
    assert_diagnosis(C.check_permute_mask(lambda m, p: m.copy()), "unchanged", "did not move")


# ------------------------------------------------------------------------------------ new wrong implementations


def test_equivariance_test_swapping_positions_zero_and_one_only():
    def swap01(f, x, rng):
        perm = np.arange(len(x))
        perm[:2] = perm[1::-1]
        return bool(np.allclose(f(x[perm]), f(x)[perm]))
    assert_diagnosis(C.check_equivariance_test(swap01), "fixed_permutation", "same permutation")


def test_equivariance_test_with_the_reversal_only():
    """One fixed permutation (the reversal): the probes that break the symmetry elsewhere catch it."""
    def reversed_only(f, x, rng):
        return bool(np.allclose(f(x[::-1]), f(x)[::-1]))
    assert_diagnosis(C.check_equivariance_test(reversed_only), "fixed_permutation", "same permutation")


def test_equivariance_test_returning_numpy_bool_passes():
    def numpy_bool(f, x, rng):
        return np.all([np.allclose(f(x[p]), f(x)[p]) for p in (rng.permutation(len(x)) for _ in range(5))])
    assert C.check_equivariance_test(numpy_bool).passed


def test_equivariance_test_returning_a_string_is_refused():
    assert_diagnosis(C.check_equivariance_test(lambda f, x, rng: "True"), "not_bool", "return True or False")


def test_permute_mask_returning_integers_is_refused():
    assert_diagnosis(C.check_permute_mask(lambda allowed, perm: allowed[np.ix_(perm, perm)].astype(int)),
                     "not_boolean", "boolean")


def test_permute_mask_in_place_is_reported():
    def in_place(allowed, perm):
        allowed[:] = allowed[np.ix_(perm, perm)]
        return allowed
    assert_diagnosis(C.check_permute_mask(in_place), "changes_input", "in place")


def test_permute_mask_with_a_transposed_result():
    result = C.check_permute_mask(lambda allowed, perm: allowed[np.ix_(perm, perm)].T)
    assert_diagnosis(result, "transposed", "rows are keys")
