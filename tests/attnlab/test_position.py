"""attnlab.position against independent references: Vaswani's formula written as loops, RoPE as
complex multiplication (Meta's Llama code) and as rotation matrices in SymPy, the relative-position
identity with hypothesis, and ALiBi's slopes as Press et al. print them."""
import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import attnlab as al
from attnlab.position import alibi_bias, alibi_slopes, interleave_permutation, rope, sinusoidal


def test_sinusoidal_is_vaswanis_formula():
    n, d = 50, 16
    want = np.zeros((n, d))
    for pos in range(n):
        for i in range(d // 2):
            want[pos, 2 * i] = math.sin(pos / 10000 ** (2 * i / d))
            want[pos, 2 * i + 1] = math.cos(pos / 10000 ** (2 * i / d))
    np.testing.assert_allclose(sinusoidal(n, d), want, rtol=0, atol=1e-12)


def rope_by_complex_numbers(x, positions, base):
    """Meta's Llama: consecutive features (2i, 2i + 1) are one complex number, multiplied by e^{i p w_i}."""
    d = x.shape[-1]
    z = x[..., 0::2] + 1j * x[..., 1::2]
    w = base ** (-np.arange(0, d, 2) / d)
    z = z * np.exp(1j * np.outer(positions, w))
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


@pytest.mark.parametrize("base", [10000.0, 100000.0, 500.0])
def test_interleaved_pairing_is_complex_multiplication(base):
    rng = np.random.default_rng(0)
    x, positions = rng.normal(size=(2, 7, 12)), np.array([0, 1, 2, 5, 9, 100, 4096])
    np.testing.assert_allclose(rope(x, positions, base, "interleaved"), rope_by_complex_numbers(x, positions, base),
                               rtol=0, atol=1e-12)


def test_half_pairing_is_the_permuted_interleaved_one():
    rng = np.random.default_rng(1)
    x, positions, perm = rng.normal(size=(3, 6, 8)), np.arange(3, 9), interleave_permutation(8)
    assert perm.tolist() == [0, 4, 1, 5, 2, 6, 3, 7]
    np.testing.assert_allclose(rope(x, positions)[..., perm], rope(x[..., perm], positions, pairing="interleaved"),
                               rtol=0, atol=1e-12)
    np.testing.assert_array_equal(perm[np.argsort(perm)], np.arange(8))


def test_rope_is_sympys_block_rotation_matrix():
    """Pair i of the row at position p is turned by the 2 x 2 rotation by p / base^(2i/d), exactly."""
    d, p, base = 6, 3, sp.Integer(100)
    x = sp.Matrix(sp.symbols("x0:6"))
    blocks = []
    for i in range(d // 2):
        t = p * base ** sp.Rational(-2 * i, d)
        blocks.append(sp.Matrix([[sp.cos(t), -sp.sin(t)], [sp.sin(t), sp.cos(t)]]))
    rotated = sp.diag(*blocks) @ x                   # interleaved: pairs (0, 1), (2, 3), (4, 5)
    values = dict(zip(x, [0.3, -1.2, 2.0, 0.7, -0.4, 1.1]))
    want = np.array([float(e.subs(values)) for e in rotated])
    got = rope(np.array([list(values.values())]), [p], base=100, pairing="interleaved")[0]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-14)


def test_relative_identity_proved_for_one_pair():
    """<R_i q, R_j k> = <q, R_{j-i} k> for one pair and symbolic angles: a trigonometric identity."""
    i, j, w, q0, q1, k0, k1 = sp.symbols("i j w q0 q1 k0 k1", real=True)

    def R(t):
        return sp.Matrix([[sp.cos(t), -sp.sin(t)], [sp.sin(t), sp.cos(t)]])

    q, k = sp.Matrix([q0, q1]), sp.Matrix([k0, k1])
    lhs = (R(i * w) @ q).dot(R(j * w) @ k)
    rhs = q.dot(R((j - i) * w) @ k)
    assert sp.simplify(sp.expand_trig(lhs - rhs)) == 0


@settings(max_examples=60, deadline=None)
@given(st.integers(-5000, 5000), st.integers(-5000, 5000), st.sampled_from([2, 4, 8, 64]),
       st.sampled_from(["half", "interleaved"]), st.sampled_from([10000.0, 100000.0]), st.integers(0, 2**16))
def test_relative_position_identity(i, j, d, pairing, base, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(1, d)), rng.normal(size=(1, d))
    lhs = (rope(q, [i], base, pairing) * rope(k, [j], base, pairing)).sum()
    rhs = (q * rope(k, [j - i], base, pairing)).sum()
    assert lhs == pytest.approx(rhs, abs=1e-9 * (1 + abs(rhs)))


def test_rope_keeps_norms_and_position_zero_is_identity():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(5, 10))
    np.testing.assert_allclose(np.linalg.norm(rope(x, np.arange(5) * 37), axis=-1), np.linalg.norm(x, axis=-1))
    np.testing.assert_array_equal(rope(x, np.zeros(5, int)), x)


def test_alibi_slopes_as_printed_by_press_et_al():
    # "For a model with 8 heads, the slopes are 1/2^1, 1/2^2, ..., 1/2^8" (Press et al. 2022, section 3)
    np.testing.assert_allclose(alibi_slopes(8), [1 / 2 ** k for k in range(1, 9)], rtol=1e-15)
    # 16 heads: "we interpolate": 1/2^0.5, 1/2^1, ..., 1/2^8
    np.testing.assert_allclose(alibi_slopes(16), [1 / 2 ** (k / 2) for k in range(1, 17)], rtol=1e-15)
    # 12 heads (not a power of two, the paper's code): the 8-head slopes, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5
    twelve = [1 / 2 ** k for k in range(1, 9)] + [2 ** -0.5, 2 ** -1.5, 2 ** -2.5, 2 ** -3.5]
    np.testing.assert_allclose(alibi_slopes(12), twelve, rtol=1e-15)


def test_alibi_bias_entries_and_offset():
    H, T, S = 4, 3, 5
    bias = alibi_bias(H, T, S)
    slopes = alibi_slopes(H)
    for h in range(H):
        for i in range(T):
            for j in range(S):
                assert bias[h, i, j] == pytest.approx(-slopes[h] * ((S - T + i) - j))
    assert np.all(bias[:, np.arange(T), np.arange(T) + S - T] == 0)          # own position: 0
    np.testing.assert_allclose(alibi_bias(H, T, S, offset=0)[:, :, 0], -slopes[:, None] * np.arange(T))
    np.testing.assert_array_equal(alibi_bias(2, 4), alibi_bias(2, 4, 4, offset=0))


@pytest.mark.parametrize("call, words", [
    (lambda: rope(np.ones((2, 5)), [0, 1]), "even"),
    (lambda: rope(np.ones((3, 4)), [0, 1]), "shape (3,)"),
    (lambda: rope(np.ones((2, 4)), [0.5, 1]), "integers"),
    (lambda: rope(np.ones((2, 4)), ["a", "b"]), "integers"),
    (lambda: rope(np.ones((2, 4)), [0, 1], pairing="pairs"), "pairing"),
    (lambda: rope(np.ones((2, 4)), [0, 1], base=1.0), "base"),
    (lambda: rope(np.array([[np.nan, 1.0]]), [0]), "non-finite"),
    (lambda: rope(np.ones(4), [0]), "shape"),
    (lambda: sinusoidal(3, 5), "even"),
    (lambda: sinusoidal(0, 4), "n_positions"),
    (lambda: alibi_slopes(0), "n_heads"),
    (lambda: alibi_bias(2, 3, 4, offset=0.5), "offset"),
])
def test_bad_input_is_a_clear_value_error(call, words):
    with pytest.raises(ValueError, match=None) as err:
        call()
    assert words in str(err.value)
    assert isinstance(err.value, al.AttentionInputError)
