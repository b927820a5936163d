"""Checkers for chapter 7 (where order enters): RoPE in either pairing, a test of the relative-position identity
that the student writes, an ALiBi bias, and a cache that stores keys after rotation.

All tasks are NumPy float64. :func:`_rope` below is RoPE with one knob per classic mistake; the defaults are right.
The sheet asks for the functions written by hand: ``attnlab.position``'s own may not be called
(:data:`POSITION_LIBRARIES`).
"""
from __future__ import annotations

import numpy as np

from ..i18n import N_, _
from . import seeds
from .diagnosis import Trial
from .engine import Mistake, error_hint, models
from .kernels import attend
from .registry import checker


def _rope(x, positions, base=10000.0, pairing="half", *, sign=1.0, exponent=-2.0, shift=0, fixed_base=None):
    """RoPE of x (T, d): pair i of the row at position p turns by sign * (p + shift) * base^(exponent * i / d)."""
    d = x.shape[-1]
    base = base if fixed_base is None else fixed_base
    angles = sign * (np.asarray(positions, dtype=float)[:, None] + shift) * base ** (exponent * np.arange(d // 2) / d)
    cos, sin = np.cos(angles), np.sin(angles)
    if pairing == "half":
        a, b = x[..., : d // 2], x[..., d // 2:]
        return np.concatenate([a * cos - b * sin, a * sin + b * cos], -1)
    a, b = x[..., 0::2], x[..., 1::2]
    return np.stack([a * cos - b * sin, a * sin + b * cos], -1).reshape(x.shape)


OTHER_PAIRING = {"half": "interleaved", "interleaved": "half"}
POSITION_LIBRARIES = ("attnlab.position.rope", "attnlab.position.rope_angles",
                      "attnlab.position.interleave_permutation", "attnlab.position.alibi_slopes",
                      "attnlab.position.alibi_bias")

# ---------------------------------------------------------------------------------------------- RoPE

ROPE_MISTAKES: list[Mistake] = []
model = models(ROPE_MISTAKES)


@model("wrong_pairing", N_("you paired the other features: 'half' turns feature i with i + d/2 (rotate_half), "
       "'interleaved' turns 2i with 2i + 1. Both are RoPE, on differently ordered features; use the one asked."))
def rope_other_pairing(x, positions, base, pairing):
    return _rope(x, positions, base, OTHER_PAIRING[pairing])


@model("angle_sign", N_("the rotation turns the wrong way: (a, b) -> (a cos t - b sin t, a sin t + b cos t), "
       "with the minus sign on the first component."))
def rope_turning_backwards(x, positions, base, pairing):
    return _rope(x, positions, base, pairing, sign=-1.0)


@model("exponent_sign", N_("the frequencies grow instead of shrinking: pair i turns by p * base^(-2i/d), so the "
       "first pair turns fastest (one radian per position) and the last slowest."))
def rope_growing_frequencies(x, positions, base, pairing):
    return _rope(x, positions, base, pairing, exponent=2.0)


@model("exponent_factor", N_("the exponent lacks its factor 2: pair i (of d/2 pairs) turns by p * base^(-2i/d), "
       "written with the feature index 2i, not p * base^(-i/d)."))
def rope_half_exponent(x, positions, base, pairing):
    return _rope(x, positions, base, pairing, exponent=-1.0)


@model("ignores_base", N_("you used 10000 whatever the base: the base is an argument (SmolLM2 uses 100000)."))
def rope_fixed_base(x, positions, base, pairing):
    return _rope(x, positions, base, pairing, fixed_base=10000.0)


@model("position_off_by_one", N_("the positions are off by one: the row at position p turns by p times its "
       "frequency, and position 0 is not turned at all."))
def rope_position_plus_one(x, positions, base, pairing):
    return _rope(x, positions, base, pairing, shift=1)


@model("row_index", N_("you turned row t by t, its index, instead of by positions[t]: with a cache the rows of a "
       "chunk sit at positions that do not start at 0."))
def rope_by_row_index(x, positions, base, pairing):
    return _rope(x, np.arange(len(positions)), base, pairing)


@checker(N_("RoPE"), ROPE_MISTAKES, forbid=POSITION_LIBRARIES)
def check_rope(run, fn, pairing="half"):
    """Check ``fn(x, positions, base)``: x (T, d) float64 with d even, positions (T,) integers -> x with pair i of
    the row at position p turned by the angle p * base^(-2i/d), pairing ``pairing`` ("half" or "interleaved")."""
    if pairing not in OTHER_PAIRING:
        run.fail(_("pairing must be 'half' or 'interleaved'; got {pairing!r}.").format(pairing=pairing),
                 "bad_arguments")
    rng = seeds.rng(70)
    cases = [(N_("T = 4, d = 8, positions 0 .. 3, base 10000"), 4, 8, [0, 1, 2, 3], 10000.0),
             (N_("T = 3, d = 6, positions [7, 8, 9] (a chunk after a cache), base 100"), 3, 6, [7, 8, 9], 100.0),
             (N_("T = 5, d = 4, positions [2, 0, 40, 3, 1000], base 100000"), 5, 4, [2, 0, 40, 3, 1000], 100000.0)]
    inputs = {case: (rng.normal(size=(T, d)), np.array(positions), base) for case, T, d, positions, base in cases}

    def trial(case):
        x, positions, base = inputs[case]
        got = run.array(run.call(fn, case, x, positions, base, hint=error_hint), case, shape=x.shape)
        return Trial(case, got, _rope(x, positions, base, pairing), (x, positions, base, pairing))

    run.each_case([c[0] for c in cases], trial, ROPE_MISTAKES)
    return run.passed(_("All {n} cases turn pair i of the row at position p by p * base^(-2i/d), pairing "
                        "{pairing!r}.").format(n=len(cases), pairing=pairing))


# ---------------------------------------------------------------------------------------------- the identity as a test

REJECTS_CORRECT = Mistake("rejects_correct", N_(
    "your test fails on a correct RoPE. Compare <rope(q, [i]), rope(k, [j])> with <q, rope(k, [j - i])> up to "
    "rounding (np.isclose), for several i and j."))
ACCEPTS_WRONG = Mistake("accepts_wrong", N_("your test passes an encoding that is not relative: its scores depend on "
                        "i and j themselves, not only on j - i. Use several pairs (i, j) with the same j - i, not just "
                        "i = 0 (at i = 0 both sides are the same expression), and random q, k."))


def _additive(x, positions, base=10000.0):
    """Absolute: add a sinusoid of the position to every feature (a position embedding added, not a rotation)."""
    return x + np.sin(np.asarray(positions, dtype=float))[:, None]


def _quadratic(x, positions, base=10000.0):
    """A rotation by p^2 times the frequency: a rotation, but not by an angle proportional to the position."""
    return _rope(x, np.asarray(positions, dtype=float) ** 2, base)


def _scaled(x, positions, base=10000.0):
    """RoPE times (1 + p): the angle is right, the length grows with the position."""
    return _rope(x, positions, base) * (1.0 + np.asarray(positions, dtype=float))[:, None]


WRONG_ENCODINGS = [(N_("an absolute position added to the features"), _additive),
                   (N_("a rotation by p^2 times the frequency"), _quadratic),
                   (N_("RoPE whose vectors grow with the position"), _scaled)]


def _outcome(run, test, rope, case):
    """True if the student's test accepts ``rope`` (returns without an AssertionError and not False)."""
    out = run.call(test, case, rope, expect=(AssertionError,))
    return not isinstance(out, AssertionError) and out is not False


@checker(N_("relative-position test"), [REJECTS_CORRECT, ACCEPTS_WRONG])
def check_relative_position_test(run, test):
    """Check a test ``test(rope)`` the student wrote: ``rope(x, positions, base=10000.0)`` rotates x (T, d); the test
    must accept a correct RoPE (return, or return True) and reject encodings for which <rope(q, [i]), rope(k, [j])>
    is not a function of j - i (raise AssertionError, or return False)."""
    for name, rope in [(N_("a correct RoPE ('half' pairing)"), _rope),
                       (N_("a correct RoPE ('interleaved' pairing)"),
                        lambda x, positions, base=10000.0: _rope(x, positions, base, "interleaved"))]:
        if not _outcome(run, test, rope, name):
            run.fail(_("On {case}: {explanation}").format(case=_(name), explanation=REJECTS_CORRECT.text),
                     REJECTS_CORRECT.name)
    for name, rope in WRONG_ENCODINGS:
        if _outcome(run, test, rope, name):
            run.fail(_("Your test accepts {case}: {explanation}").format(case=_(name), explanation=ACCEPTS_WRONG.text),
                     ACCEPTS_WRONG.name)
    return run.passed(_("Your test accepts RoPE in both pairings and rejects all {n} encodings that are not "
                        "relative.").format(n=len(WRONG_ENCODINGS)))


# ---------------------------------------------------------------------------------------------- ALiBi

ALIBI_MISTAKES: list[Mistake] = []
model = models(ALIBI_MISTAKES)


def _slopes(n, eight=8.0):
    return 2.0 ** (-eight * np.arange(1, n + 1) / n)


def _alibi(n_heads, T, S, *, slopes=None, sign=-1.0, offset=None, absolute=False, future=None):
    slopes = _slopes(n_heads) if slopes is None else slopes
    offset = S - T if offset is None else offset
    distance = (offset + np.arange(T))[:, None] - np.arange(S)[None, :]         # (T, S)
    bias = sign * slopes[:, None, None] * (np.abs(distance) if absolute else distance)[None]   # (H, T, S)
    return bias if future is None else np.where(distance[None] < 0, future, bias)


@model("bias_sign", N_("the sign is flipped: far keys must be penalised, bias = -slope * (query position - key "
       "position), which is <= 0 for every key the causal mask keeps."))
def alibi_positive(n_heads, T, S):
    return _alibi(n_heads, T, S, sign=1.0)


@model("slopes_reversed", N_("the slopes are in reverse order: head 1 gets the steepest slope 2^(-8/n), the last "
       "head the gentlest 2^(-8)."))
def alibi_slopes_reversed(n_heads, T, S):
    return _alibi(n_heads, T, S, slopes=_slopes(n_heads)[::-1])


@model("slopes_without_8", N_("the slopes lack the 8: for n heads they are 2^(-8k/n), k = 1 .. n (2^-1 .. 2^-8 for "
       "8 heads)."))
def alibi_slopes_without_8(n_heads, T, S):
    return _alibi(n_heads, T, S, slopes=_slopes(n_heads, eight=1.0))


@model("top_left_offset", N_("query row i is not at position i when there are more keys than queries: the queries are "
       "the newest positions, S - T + i (bottom-right aligned, as the causal mask and a KV cache)."))
def alibi_top_left(n_heads, T, S):
    return _alibi(n_heads, T, S, offset=0)


@model("absolute_distance", N_("you used |query position - key position|: it matches on every key the causal mask "
       "keeps, but the task asks for -slope * (query position - key position) everywhere (future keys get a positive "
       "bias, which the mask then removes)."))
def alibi_absolute(n_heads, T, S):
    return _alibi(n_heads, T, S, absolute=True)


@model("future_masked", N_("you put -inf on the future keys: the task asks for -slope * (query position - key "
       "position) on every entry, future keys included (a positive bias there); the causal mask removes them later."))
def alibi_future_masked(n_heads, T, S):
    return _alibi(n_heads, T, S, future=-np.inf)


@checker(N_("ALiBi bias"), ALIBI_MISTAKES, forbid=POSITION_LIBRARIES)
def check_alibi_bias(run, fn):
    """Check ``fn(n_heads, T, S)``: the (n_heads, T, S) additive bias -slope_h * (query position - key position), query
    row i at position S - T + i, slopes 2^(-8k/n) for k = 1 .. n (n a power of two)."""
    cases = [(N_("8 heads, T = S = 5"), 8, 5, 5), (N_("4 heads, T = 2 queries after S = 6 keys"), 4, 2, 6),
             (N_("2 heads, T = 3 queries after S = 4 keys"), 2, 3, 4)]
    sizes = {case: (n, T, S) for case, n, T, S in cases}

    def trial(case):
        n, T, S = sizes[case]
        got = run.array(run.call(fn, case, n, T, S, hint=error_hint), case, shape=(n, T, S))
        return Trial(case, got, _alibi(n, T, S), (n, T, S))

    run.each_case([c[0] for c in cases], trial, ALIBI_MISTAKES)
    return run.passed(_("All {n} cases match -slope_h * (query position - key position) with the slopes of Press "
                        "et al.").format(n=len(cases)))


# ---------------------------------------------------------------------------------------------- a rotary cache

CACHE_MISTAKES: list[Mistake] = []
model = models(CACHE_MISTAKES)
CHUNKS_BASE = 100.0


def _stream(q, k, v, chunks, *, key_pos="absolute", query_pos="absolute", rotate_values=False, twice=False,
            axis=-1, causal=True):
    """A rotary cache's outputs over a stream of chunks (one head): keys rotated when appended, queries on arrival."""
    outs, keys, values, start = [], [], [], 0
    for t in chunks:
        rows = slice(start, start + t)
        positions = {"absolute": np.arange(start, start + t), "restart": np.arange(t), "none": np.zeros(t)}
        kr = _rope(k[rows], positions[key_pos], CHUNKS_BASE)
        keys.append(_rope(kr, positions[key_pos], CHUNKS_BASE) if twice else kr)
        values.append(_rope(v[rows], positions[key_pos], CHUNKS_BASE) if rotate_values else v[rows])
        qr = _rope(q[rows], positions[query_pos], CHUNKS_BASE)
        K, V = np.concatenate(keys), np.concatenate(values)
        allowed = np.arange(len(K))[None, :] <= np.arange(start, start + t)[:, None]   # causal, absolute positions
        allowed = allowed if causal else np.ones_like(allowed)
        outs.append(attend(qr, K, V, allowed, axis=axis))
        start += t
    return np.concatenate(outs)


@model("not_rotating", N_("nothing is rotated: without RoPE the scores do not depend on the positions at all. Rotate "
       "each key by its position when it is appended, each query by its position when it arrives."))
def cache_without_rotation(q, k, v, chunks):
    return _stream(q, k, v, chunks, key_pos="none", query_pos="none")


@model("query_not_rotated", N_("only the keys are rotated: the query must be rotated by its own position too, so that "
       "the score depends on the distance between the two."))
def cache_query_not_rotated(q, k, v, chunks):
    return _stream(q, k, v, chunks, query_pos="none")


@model("positions_restart", N_("the positions restart at 0 in every chunk: the t new rows sit at positions len(cache) "
       ".. len(cache) + t - 1 (count what was appended before)."))
def cache_positions_restart(q, k, v, chunks):
    return _stream(q, k, v, chunks, key_pos="restart", query_pos="restart")


@model("rotated_twice", N_("the keys are rotated twice (when stored and again when read): the cache already holds "
       "rotated keys, read them as they are."))
def cache_rotated_twice(q, k, v, chunks):
    return _stream(q, k, v, chunks, twice=True)


@model("values_rotated", N_("the values are rotated too: RoPE turns queries and keys only, the values are averaged "
       "as they are."))
def cache_values_rotated(q, k, v, chunks):
    return _stream(q, k, v, chunks, rotate_values=True)


@model("no_causal_mask", N_("a query reads the keys of later positions in its own chunk: with several positions "
       "appended at once, mask the scores so that the query at position p reads only keys j <= p."))
def cache_without_causal_mask(q, k, v, chunks):
    return _stream(q, k, v, chunks, causal=False)


@model("softmax_over_queries", N_("the softmax runs down the columns, over the queries of a chunk: each query's "
       "weights must sum to 1 over the keys it may read (axis=-1 of the (t, S) scores, not axis=0)."))
def cache_softmax_over_queries(q, k, v, chunks):
    return _stream(q, k, v, chunks, axis=0)


@checker(N_("rotary KV cache"), CACHE_MISTAKES, forbid=POSITION_LIBRARIES)
def check_rotary_cache(run, cls):
    """Check a class ``cls(base)`` with ``append(k, v)`` (k, v (t, 4) of the t next positions, k before rotation:
    store it rotated) and ``attend(q)`` (q (t, 4) of those positions, before rotation -> (t, 4), causal attention
    with scale 1/sqrt(4) over everything appended); pairing "half"."""
    rng = seeds.rng(71)
    cases = [(N_("6 positions appended in chunks of 2, 1, 3"), 6, (2, 1, 3)),
             (N_("5 positions appended one at a time"), 5, (1, 1, 1, 1, 1)),
             (N_("7 positions appended in chunks of 4 and 3"), 7, (4, 3))]
    streams = {case: (rng.normal(size=(T, 4)), rng.normal(size=(T, 4)), rng.normal(size=(T, 4)), chunks)
               for case, T, chunks in cases}

    def trial(case):
        q, k, v, chunks = streams[case]
        cache = run.call(cls, case, CHUNKS_BASE, hint=error_hint)
        outs, start = [], 0
        for t in chunks:
            for method in ("append", "attend"):
                if not callable(getattr(cache, method, None)):
                    run.fail(_("On {case}, the cache has no method `{method}`.").format(case=_(case), method=method),
                             "wrong_type")
            run.call(cache.append, case, k[start:start + t], v[start:start + t], hint=error_hint)
            outs.append(run.array(run.call(cache.attend, case, q[start:start + t], hint=error_hint), case,
                                  shape=(t, 4)))
            start += t
        return Trial(case, np.concatenate(outs), _stream(q, k, v, chunks), (q, k, v, chunks))

    run.each_case([c[0] for c in cases], trial, CACHE_MISTAKES)
    return run.passed(_("All {n} streams match attention with every key rotated once by its absolute "
                        "position.").format(n=len(cases)))
