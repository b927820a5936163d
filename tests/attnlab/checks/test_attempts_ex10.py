"""Wrong attempts at sheet 10 (structure), each with the diagnosis it must get."""
import numpy as np

import attnlab.checks as C

from .attempts import expect


def test_exercise_10_1_equivariance_test():
    check = C.check_equivariance_test

    def last_draw(f, x, rng):
        ok = True
        for _ in range(5):
            perm = rng.permutation(len(x))
            ok = np.allclose(f(x[perm]), f(x)[perm])
        return bool(ok)
    expect(check, last_draw, "10.1 is_permutation_equivariant", "only the last of 5 draws counts", "last_draw_only",
           "last permutation")

    def one_draw(f, x, rng):
        perm = rng.permutation(len(x))
        return bool(np.allclose(f(x[perm]), f(x)[perm]))
    expect(check, one_draw, "10.1 is_permutation_equivariant", "one random permutation", "one_permutation",
           "single random permutation")

    def global_random(f, x, rng):
        return all(np.allclose(f(x[p]), f(x)[p]) for p in (np.random.permutation(len(x)) for _ in range(5)))
    expect(check, global_random, "10.1 is_permutation_equivariant", "np.random instead of rng", "ignores_rng",
           "does not draw from the generator")

    def loose(f, x, rng):
        return all(np.allclose(f(x[p]), f(x)[p], atol=0.1) for p in (rng.permutation(len(x)) for _ in range(8)))
    expect(check, loose, "10.1 is_permutation_equivariant", "atol=0.1", "loose_tolerance", "too loose")

    def shifts(f, x, rng):
        return all(np.allclose(f(x[p]), f(x)[p]) for p in (np.roll(np.arange(len(x)), s) for s in range(1, len(x))))
    expect(check, shifts, "10.1 is_permutation_equivariant", "cyclic shifts only", "cyclic_shifts", "np.roll")

    def exact(f, x, rng):
        return all((f(x[p]) == f(x)[p]).all() for p in (rng.permutation(len(x)) for _ in range(5)))
    expect(check, exact, "10.1 is_permutation_equivariant", "exact ==", "exact_comparison", "np.allclose")


def test_exercise_10_2_permute_mask():
    check = C.check_permute_mask
    expect(check, lambda allowed, perm: allowed[perm, perm], "10.2 permute_mask", "allowed[perm, perm]",
           "wrong_shape", "np.ix_")
    expect(check, lambda allowed, perm: allowed.T[perm][:, perm], "10.2 permute_mask", "indexes allowed.T",
           "transposed", "rows are keys")

    def matrices(allowed, perm):
        P = np.eye(len(perm), dtype=int)[perm]
        return (P @ allowed.astype(int) @ P).astype(bool)
    expect(check, matrices, "10.2 permute_mask", "P M P with a permutation matrix", "p_m_p", "P M P^T")
    expect(check, lambda allowed, perm: allowed[np.ix_(perm, perm)].astype(np.uint8), "10.2 permute_mask",
           "uint8", "not_boolean", "boolean")
    expect(check, lambda allowed, perm: allowed[np.ix_(np.argsort(perm), np.argsort(perm))], "10.2 permute_mask",
           "argsort on both sides", "inverse_permutation", "inverse permutation")
