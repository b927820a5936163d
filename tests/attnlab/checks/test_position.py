"""Checkers of chapter 7: students' functions that agree with attnlab.position pass (and a RotaryKVCache behind the
task's interface), attnlab.position called inside them is named a forbidden shortcut, stubs are "not attempted yet",
and every mistake is named on a wrong function written here."""
import numpy as np
import pytest
import torch

import attnlab as al
import attnlab.checks as C
from attnlab.torch_ops import RotaryKVCache

from .support import assert_diagnosis, assert_not_attempted, stub


def student_rope(pairing="half", sign=1, factor=2, base=None, shift=0, by_index=False):
    def rope(x, positions, b):
        d = x.shape[-1]
        p = np.arange(len(positions)) if by_index else np.asarray(positions) + shift
        theta = sign * p[:, None] * (base or b) ** (-factor * np.arange(d // 2) / d)
        a, c = (x[:, : d // 2], x[:, d // 2:]) if pairing == "half" else (x[:, 0::2], x[:, 1::2])
        first, second = a * np.cos(theta) - c * np.sin(theta), a * np.sin(theta) + c * np.cos(theta)
        if pairing == "half":
            return np.concatenate([first, second], 1)
        return np.stack([first, second], -1).reshape(x.shape)
    return rope


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
def test_rope_reference_passes(pairing):
    x, positions = np.random.default_rng(1).normal(size=(5, 6)), np.array([3, 0, 9, 40, 2])
    np.testing.assert_allclose(student_rope(pairing)(x, positions, 500.0),
                               al.position.rope(x, positions, 500.0, pairing), rtol=1e-12, atol=1e-12)
    assert C.check_rope(student_rope(pairing), pairing=pairing).passed
    assert_diagnosis(C.check_rope(lambda x, p, b: al.position.rope(x, p, b, pairing), pairing=pairing),
                     "forbidden_call", "attnlab.position.rope")
    assert_not_attempted(C.check_rope(stub))


def test_rope_mistakes():
    assert_diagnosis(C.check_rope(student_rope("interleaved")), "wrong_pairing", "pair")
    assert_diagnosis(C.check_rope(student_rope("half"), pairing="interleaved"), "wrong_pairing", "pair")
    assert_diagnosis(C.check_rope(student_rope(sign=-1)), "angle_sign", "wrong way")
    assert_diagnosis(C.check_rope(student_rope(factor=-2)), "exponent_sign", "grow")
    assert_diagnosis(C.check_rope(student_rope(factor=1)), "exponent_factor", "factor 2")
    assert_diagnosis(C.check_rope(student_rope(base=10000.0)), "ignores_base", "10000")
    assert_diagnosis(C.check_rope(student_rope(shift=1)), "position_off_by_one", "off by one")
    assert_diagnosis(C.check_rope(student_rope(by_index=True)), "row_index", "positions[t]")
    assert_diagnosis(C.check_rope(student_rope(), pairing="pairs"), "bad_arguments", "pairing")


def good_test(rope):
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(1, 8)), rng.normal(size=(1, 8))
    for i, j in [(3, 5), (10, 12), (-4, 7), (20, 1)]:
        assert np.isclose((rope(q, [i]) * rope(k, [j])).sum(), (q * rope(k, [j - i])).sum())


def test_relative_position_test_checker():
    assert C.check_relative_position_test(good_test).passed
    assert_not_attempted(C.check_relative_position_test(stub))

    def only_from_zero(rope):                     # i = 0 only: both sides are the same expression
        q, k = np.ones((1, 4)), np.arange(4.0)[None]
        for j in range(5):
            assert np.isclose((rope(q, [0]) * rope(k, [j])).sum(), (q * rope(k, [j])).sum())
    assert_diagnosis(C.check_relative_position_test(only_from_zero), "accepts_wrong", "not relative")

    def exact_equality(rope):                     # == instead of isclose fails on rounding
        q, k = np.full((1, 4), 0.1), np.full((1, 4), 0.7)
        return all((rope(q, [i]) * rope(k, [i + 3])).sum() == (q * rope(k, [3])).sum() for i in range(1, 6))
    assert_diagnosis(C.check_relative_position_test(exact_equality), "rejects_correct", "correct RoPE")


def test_alibi_checker():
    assert_diagnosis(C.check_alibi_bias(lambda n, T, S: al.position.alibi_bias(n, T, S)), "forbidden_call",
                     "attnlab.position.alibi_bias")
    assert_not_attempted(C.check_alibi_bias(stub))
    slopes = lambda n: 2.0 ** (-8 * np.arange(1, n + 1) / n)                         # noqa: E731
    distance = lambda T, S, off: (off + np.arange(T))[:, None] - np.arange(S)        # noqa: E731
    np.testing.assert_allclose(-slopes(4)[:, None, None] * distance(3, 7, 4), al.position.alibi_bias(4, 3, 7))
    assert C.check_alibi_bias(lambda n, T, S: -slopes(n)[:, None, None] * distance(T, S, S - T)).passed
    assert_diagnosis(C.check_alibi_bias(lambda n, T, S: slopes(n)[:, None, None] * distance(T, S, S - T)),
                     "bias_sign", "sign")
    assert_diagnosis(C.check_alibi_bias(lambda n, T, S: -slopes(n)[::-1, None, None] * distance(T, S, S - T)),
                     "slopes_reversed", "reverse")
    assert_diagnosis(C.check_alibi_bias(
        lambda n, T, S: -(2.0 ** (-np.arange(1, n + 1) / n))[:, None, None] * distance(T, S, S - T)),
        "slopes_without_8", "the 8")
    assert_diagnosis(C.check_alibi_bias(lambda n, T, S: -slopes(n)[:, None, None] * distance(T, S, 0)),
                     "top_left_offset", "bottom-right")
    assert_diagnosis(C.check_alibi_bias(lambda n, T, S: -slopes(n)[:, None, None] * np.abs(distance(T, S, S - T))),
                     "absolute_distance", "|query position")


class TorchRotaryCache:
    """The reference: attnlab's RotaryKVCache (one head, batch 1), behind the task's NumPy interface."""

    def __init__(self, base):
        self.cache = RotaryKVCache(1, 4, 4, base=base)

    def append(self, k, v):
        self.cache.append(torch.from_numpy(k)[None, None], torch.from_numpy(v)[None, None])

    def attend(self, q):
        return self.cache.attend(torch.from_numpy(q)[None, None])[0, 0].numpy()


def numpy_cache(rotate_query=True, restart=False, twice=False, rotate_values=False, rotate=True):
    """A student's cache with knobs for each mistake."""
    class Cache:
        def __init__(self, base):
            self.base, self.k, self.v = base, np.zeros((0, 4)), np.zeros((0, 4))

        def rope(self, x, start):
            if not rotate:
                return x
            p = np.arange(len(x)) + (0 if restart else start)
            theta = p[:, None] * self.base ** (-2 * np.arange(2) / 4)
            a, b = x[:, :2], x[:, 2:]
            return np.concatenate([a * np.cos(theta) - b * np.sin(theta), a * np.sin(theta) + b * np.cos(theta)], 1)

        def append(self, k, v):
            start = len(self.k)
            kr = self.rope(k, start)
            self.k = np.concatenate([self.k, self.rope(kr, start) if twice else kr])
            self.v = np.concatenate([self.v, self.rope(v, start) if rotate_values else v])

        def attend(self, q):
            t, n = len(q), len(self.k)
            qr = self.rope(q, n - t) if rotate_query else q
            s = qr @ self.k.T / 2.0
            s = np.where(np.arange(n)[None] <= np.arange(n - t, n)[:, None], s, -np.inf)
            w = np.exp(s - s.max(1, keepdims=True))
            return (w / w.sum(1, keepdims=True)) @ self.v
    return Cache


def test_rotary_cache_checker():
    assert C.check_rotary_cache(TorchRotaryCache).passed
    assert C.check_rotary_cache(numpy_cache()).passed
    assert_not_attempted(C.check_rotary_cache(stub))
    assert_diagnosis(C.check_rotary_cache(numpy_cache(rotate=False)), "not_rotating", "nothing is rotated")
    assert_diagnosis(C.check_rotary_cache(numpy_cache(rotate_query=False)), "query_not_rotated", "only the keys")
    assert_diagnosis(C.check_rotary_cache(numpy_cache(restart=True)), "positions_restart", "restart")
    assert_diagnosis(C.check_rotary_cache(numpy_cache(twice=True)), "rotated_twice", "twice")
    assert_diagnosis(C.check_rotary_cache(numpy_cache(rotate_values=True)), "values_rotated", "values are rotated")
