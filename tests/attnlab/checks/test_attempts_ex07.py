"""Wrong attempts at sheet 7 (position), each with the diagnosis it must get."""
import numpy as np

import attnlab as al
import attnlab.checks as C

from .attempts import expect


def _turn(x, angles, first_minus=True):
    """The half pairing turned by ``angles`` (T, d/2); ``first_minus=False`` puts the minus sign below."""
    d = x.shape[-1]
    a, b = x[:, : d // 2], x[:, d // 2:]                         # (T, d/2) each
    cos, sin = np.cos(angles), np.sin(angles)
    if first_minus:
        return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=1)
    return np.concatenate([a * cos + b * sin, -a * sin + b * cos], axis=1)


def _half(x, positions, base=10000.0):
    d = x.shape[-1]
    return _turn(x, np.asarray(positions)[:, None] * base ** (-np.arange(0, d, 2) / d))


def test_exercise_7_1_rope_half():
    check = C.check_rope

    def minus_below(x, positions, base=10000.0):
        d = x.shape[-1]
        return _turn(x, np.asarray(positions)[:, None] * base ** (-np.arange(0, d, 2) / d), first_minus=False)
    expect(check, minus_below, "7.1 rope_half", "the minus sign on the second component", "angle_sign", "wrong way",
           pairing="half")

    def plus_exponent(x, positions, base=10000.0):
        d = x.shape[-1]
        return _turn(x, np.asarray(positions)[:, None] * base ** (np.arange(0, d, 2) / d))
    expect(check, plus_exponent, "7.1 rope_half", "base ** (+2i/d)", "exponent_sign", "grow", pairing="half")

    def pair_index(x, positions, base=10000.0):
        d = x.shape[-1]
        return _turn(x, np.asarray(positions)[:, None] * base ** (-np.arange(d // 2) / d))
    expect(check, pair_index, "7.1 rope_half", "base ** (-i/d)", "exponent_factor", "factor 2", pairing="half")

    def by_row(x, positions, base=10000.0):
        d = x.shape[-1]
        return _turn(x, np.arange(len(x))[:, None] * base ** (-np.arange(0, d, 2) / d))
    expect(check, by_row, "7.1 rope_half", "row t turned by t", "row_index", "positions[t]", pairing="half")
    expect(check, lambda x, positions, base=10000.0: _half(x, positions), "7.1 rope_half", "base left at 10000",
           "ignores_base", "10000", pairing="half")
    expect(check, lambda x, positions, base=10000.0: _half(x, np.asarray(positions) + 1, base), "7.1 rope_half",
           "positions counted from 1", "position_off_by_one", "off by one", pairing="half")
    expect(check, lambda x, positions, base=10000.0: al.position.rope(x, positions, base), "7.1 rope_half",
           "attnlab's own rope", "forbidden_call", "attnlab.position.rope", pairing="half")

    def stacked(x, positions, base=10000.0):
        d = x.shape[-1]
        a, b = x[:, : d // 2], x[:, d // 2:]
        angles = np.asarray(positions)[:, None] * base ** (-np.arange(0, d, 2) / d)
        return np.stack([a * np.cos(angles) - b * np.sin(angles), a * np.sin(angles) + b * np.cos(angles)])
    expect(check, stacked, "7.1 rope_half", "np.stack instead of np.concatenate", "wrong_shape", "shape",
           pairing="half")

    def float_slice(x, positions, base=10000.0):
        half = x.shape[-1] / 2                                   # a float: not a slice index
        angles = np.asarray(positions)[:, None] * base ** (-np.arange(0, x.shape[-1], 2) / x.shape[-1])
        a, b = x[:, :half], x[:, half:]
        return np.concatenate([a * np.cos(angles) - b * np.sin(angles), a * np.sin(angles) + b * np.cos(angles)], 1)
    expect(check, float_slice, "7.1 rope_half", "d / 2 as a slice index", "", "raised TypeError", pairing="half")


def _to_half(d):
    return np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])      # (d,)


def test_exercise_7_2_rope_interleaved():
    check = C.check_rope
    expect(check, lambda x, positions, base=10000.0: _half(x, positions, base), "7.2 rope_interleaved",
           "rope_half unchanged", "wrong_pairing", "pair", pairing="interleaved")

    def not_put_back(x, positions, base=10000.0):
        return _half(x[:, _to_half(x.shape[1])], positions, base)
    expect(check, not_put_back, "7.2 rope_interleaved", "features not put back", "", "other places",
           pairing="interleaved")

    def same_order_back(x, positions, base=10000.0):
        order = _to_half(x.shape[1])
        return _half(x[:, order], positions, base)[:, order]     # the same order again, not its inverse
    expect(check, same_order_back, "7.2 rope_interleaved", "the order applied twice", "", "other places",
           pairing="interleaved")

    def base_dropped(x, positions, base=10000.0):
        order = _to_half(x.shape[1])
        return _half(x[:, order], positions)[:, np.argsort(order)]
    expect(check, base_dropped, "7.2 rope_interleaved", "base not passed to rope_half", "ignores_base", "10000",
           pairing="interleaved")

    def library_order(x, positions, base=10000.0):
        back = al.position.interleave_permutation(x.shape[1])
        return _half(x[:, np.argsort(back)], positions, base)[:, back]
    expect(check, library_order, "7.2 rope_interleaved", "attnlab's interleave_permutation", "forbidden_call",
           "interleave_permutation", pairing="interleaved")


def test_exercise_7_3_relative_position_test():
    check = C.check_relative_position_test

    def from_zero_only(rope):
        rng = np.random.default_rng(1)
        q, k = rng.normal(size=(1, 8)), rng.normal(size=(1, 8))
        for j in range(6):
            assert np.isclose((rope(q, np.array([0])) @ rope(k, np.array([j])).T).item(),
                              (q @ rope(k, np.array([j])).T).item())
    expect(check, from_zero_only, "7.3 test_relative_position", "only i = 0", "accepts_wrong", "i = 0")

    def exact(rope):
        rng = np.random.default_rng(2)
        q, k = rng.normal(size=(1, 8)), rng.normal(size=(1, 8))
        return all((rope(q, np.array([i])) @ rope(k, np.array([i + 3])).T).item()
                   == (q @ rope(k, np.array([3])).T).item() for i in (1, 4, 9))
    expect(check, exact, "7.3 test_relative_position", "== instead of isclose", "rejects_correct", "rounding")

    def i_minus_j(rope):
        rng = np.random.default_rng(3)
        q, k = rng.normal(size=(1, 8)), rng.normal(size=(1, 8))
        for i, j in [(2, 5), (7, 1), (30, 33)]:
            assert np.isclose((rope(q, np.array([i])) @ rope(k, np.array([j])).T).item(),
                              (q @ rope(k, np.array([i - j])).T).item())
    expect(check, i_minus_j, "7.3 test_relative_position", "rope(k, [i - j])", "rejects_correct", "correct RoPE")

    def never_asserts(rope):
        rng = np.random.default_rng(4)
        q, k = rng.normal(size=(1, 8)), rng.normal(size=(1, 8))
        for i, j in [(2, 5), (7, 1), (30, 33)]:
            np.isclose((rope(q, np.array([i])) @ rope(k, np.array([j])).T).item(),
                       (q @ rope(k, np.array([j - i])).T).item())   # computed, never asserted
    expect(check, never_asserts, "7.3 test_relative_position", "np.isclose without assert", "accepts_wrong",
           "not relative")

    def lengths_only(rope):
        rng = np.random.default_rng(5)
        q = rng.normal(size=(1, 8))
        for i in (0, 3, 50):
            assert np.isclose(np.linalg.norm(rope(q, np.array([i]))), np.linalg.norm(q))
    expect(check, lengths_only, "7.3 test_relative_position", "checks that lengths are kept", "accepts_wrong",
           "not relative")

    def scalar_positions(rope):
        rng = np.random.default_rng(6)
        q, k = rng.normal(size=(1, 8)), rng.normal(size=(1, 8))
        assert np.isclose((rope(q, 2) @ rope(k, 5).T).item(), (q @ rope(k, 3).T).item())
    expect(check, scalar_positions, "7.3 test_relative_position", "positions as plain ints", "",
           "raised IndexError")


def _slopes(n):
    return 2.0 ** (-8.0 * np.arange(1, n + 1) / n)               # (H,)


def _distance(T, S, offset):
    return (offset + np.arange(T))[:, None] - np.arange(S)[None, :]      # (T, S)


def test_exercise_7_4_alibi_bias():
    check = C.check_alibi_bias
    expect(check, lambda n, T, S: _slopes(n)[:, None, None] * _distance(T, S, S - T)[None], "7.4 alibi_bias",
           "+slope * distance", "bias_sign", "sign")
    expect(check, lambda n, T, S: -_slopes(n)[:, None, None] * _distance(T, S, 0)[None], "7.4 alibi_bias",
           "query row i at position i", "top_left_offset", "bottom-right")
    expect(check, lambda n, T, S: -_slopes(n)[:, None, None] * np.abs(_distance(T, S, S - T))[None],
           "7.4 alibi_bias", "|distance|", "absolute_distance", "|query position")
    expect(check, lambda n, T, S: -(2.0 ** (-np.arange(1, n + 1) / n))[:, None, None] * _distance(T, S, S - T),
           "7.4 alibi_bias", "slopes 2^(-h/n)", "slopes_without_8", "the 8")
    expect(check, lambda n, T, S: -(2.0 ** (-8.0 * np.arange(n, 0, -1) / n))[:, None, None] * _distance(T, S, S - T),
           "7.4 alibi_bias", "h counted down", "slopes_reversed", "reverse")

    def heads_last(n, T, S):
        return -_distance(T, S, S - T)[:, :, None] * _slopes(n)                # (T, S, H)
    expect(check, heads_last, "7.4 alibi_bias", "heads on the last axis", "wrong_shape", "shape")

    def future_minus_inf(n, T, S):
        distance = _distance(T, S, S - T)
        bias = -_slopes(n)[:, None, None] * distance
        return np.where(distance < 0, -np.inf, bias)             # the future masked here already
    expect(check, future_minus_inf, "7.4 alibi_bias", "-inf on the future keys", "future_masked",
           "future keys included")

    def from_zero(n, T, S):
        slopes = 2.0 ** (-8.0 * np.arange(n) / n)                # h = 0 .. n - 1: the first head unbiased
        return -slopes[:, None, None] * _distance(T, S, S - T)
    expect(check, from_zero, "7.4 alibi_bias", "h from 0 to n - 1", "", "constant factor")
    expect(check, lambda n, T, S: al.position.alibi_bias(n, T, S), "7.4 alibi_bias", "attnlab's own alibi_bias",
           "forbidden_call", "attnlab.position.alibi_bias")


def _cache(*, restart=False, rotate_query=True, rotate_again=False, rotate_values=False, causal=True, rope=None,
           axis=1, mask_by_product=False):
    """A student's RotaryCache; each keyword is one way to get it wrong."""
    rope = rope or _half

    class RotaryCache:
        def __init__(self, base=10000.0):
            self.base, self.keys, self.values = base, [], []

        def append(self, k, v):
            start = 0 if restart else sum(len(x) for x in self.keys)
            positions = np.arange(start, start + len(k))
            self.keys.append(rope(k, positions, self.base))
            self.values.append(rope(v, positions, self.base) if rotate_values else v)

        def attend(self, q):
            K, V = np.concatenate(self.keys), np.concatenate(self.values)        # (S, 4) each
            S, t = len(K), len(q)
            positions = np.arange(S - t, S)
            if rotate_again:
                K = rope(K, np.arange(S), self.base)
            qr = rope(q, np.arange(t) if restart else positions, self.base) if rotate_query else q
            scores = qr @ K.T / 2.0                                              # (t, S)
            allowed = np.arange(S)[None, :] <= positions[:, None]              # (t, S)
            if mask_by_product:
                scores = scores + -np.inf * ~allowed                             # -inf * 0 is NaN
            elif causal:
                scores = np.where(allowed, scores, -np.inf)
            w = np.exp(scores - scores.max(axis=axis, keepdims=True))
            return w / w.sum(axis=axis, keepdims=True) @ V
    return RotaryCache


def test_exercise_7_5_rotary_cache():
    check = C.check_rotary_cache
    expect(check, _cache(restart=True), "7.5 RotaryCache", "positions from 0 in every chunk", "positions_restart",
           "restart")
    expect(check, _cache(rotate_query=False), "7.5 RotaryCache", "the query left as it is", "query_not_rotated",
           "only the keys")
    expect(check, _cache(rotate_again=True), "7.5 RotaryCache", "stored keys rotated again in attend",
           "rotated_twice", "twice")
    expect(check, _cache(rotate_values=True), "7.5 RotaryCache", "values rotated too", "values_rotated",
           "values are rotated")
    expect(check, _cache(causal=False), "7.5 RotaryCache", "no causal mask inside a chunk", "no_causal_mask",
           "its own chunk")
    expect(check, _cache(axis=0), "7.5 RotaryCache", "softmax over axis 0", "softmax_over_queries", "columns")
    expect(check, _cache(mask_by_product=True), "7.5 RotaryCache", "the mask as -inf times a boolean", "",
           "non-finite")
    expect(check, _cache(rope=lambda x, p, base: al.position.rope(x, p, base)), "7.5 RotaryCache",
           "attnlab's own rope", "forbidden_call", "attnlab.position.rope")

    class Flattened:
        def __init__(self, base=10000.0):
            self.base, self.keys, self.values = base, np.zeros(0), np.zeros(0)

        def append(self, k, v):
            start = len(self.keys) // 4
            self.keys = np.append(self.keys, _half(k, np.arange(start, start + len(k)), self.base))   # flattened
            self.values = np.append(self.values, v)

        def attend(self, q):
            return q @ self.keys.T
    expect(check, Flattened, "7.5 RotaryCache", "np.append without an axis", "", "raised ValueError")

    class NoAppend:
        def __init__(self, base=10000.0):
            self.base = base

        def add(self, k, v):
            pass

        def attend(self, q):
            return q
    expect(check, NoAppend, "7.5 RotaryCache", "the method named add", "wrong_type", "no method `append`")
