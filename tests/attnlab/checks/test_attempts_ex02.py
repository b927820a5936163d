"""Wrong attempts at sheet 2 (scaling, softmax and dropout), each with the diagnosis it must get."""
import numpy as np
import scipy.special

import attnlab.checks as C

from .attempts import expect


def test_exercise_2_3_softmax():
    check = C.check_softmax
    expect(check, lambda x: scipy.special.softmax(x, axis=-1), "2.3 softmax", "scipy's softmax", "forbidden_call",
           "scipy.special.softmax")

    def via_float32(x):
        z = x.astype(np.float32)
        e = np.exp(z - z.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True)).astype(np.float64)
    expect(check, via_float32, "2.3 softmax", "float32 inside", "computed_in_float32", "float32")

    def columns(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(axis=0, keepdims=True)
    expect(check, columns, "2.3 softmax", "row maximum, column sums", "normalised_columns", "down each column")

    def abs_max(x):
        e = np.exp(x - np.abs(x).max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    expect(check, abs_max, "2.3 softmax", "subtracts the largest absolute value", "", "non-finite entries")

    def log_probs(x):
        return x - scipy.special.logsumexp(x, axis=-1, keepdims=True)
    expect(check, log_probs, "2.3 softmax", "log-softmax through logsumexp", "log_softmax", "log-probabilities")


def test_exercise_2_4_dropout():
    check = C.check_dropout

    def exact_per_row(a, p, rng):
        out = np.array(a, dtype=float)
        flat = out.reshape(-1, a.shape[-1])
        for row in flat:
            row[rng.choice(a.shape[-1], int(round(p * a.shape[-1])), replace=False)] = 0.0
        return flat.reshape(a.shape) / (1 - p)
    expect(check, exact_per_row, "2.4 dropout", "round(p S) drops in every row", "exact_count", "binomial")

    def exact_total(a, p, rng):
        keep = np.ones(a.size, dtype=bool)
        keep[rng.permutation(a.size)[:int(round(p * a.size))]] = False
        return a * keep.reshape(a.shape) / (1 - p)
    expect(check, exact_total, "2.4 dropout", "round(p N) drops in the array", "exact_count", "round(p x N)")

    def last_two_axes(a, p, rng):
        keep = rng.random(a.shape[-2:]) >= p
        return a * keep / (1 - p)
    expect(check, last_two_axes, "2.4 dropout", "one (T, S) mask for every batch and head", "shared_mask",
           "b = 0, h = 0")

    def floor(a, p, rng):
        return a * (rng.random(a.shape) >= p) // (1 - p)
    expect(check, floor, "2.4 dropout", "floor division", "floor_division", "`//`")

    def binomial_keep(a, p, rng):
        return a * rng.binomial(1, p, size=a.shape) / (1 - p)
    expect(check, binomial_keep, "2.4 dropout", "binomial(1, p) as the keep mask", "p_is_keep_probability",
           "keep probability")
