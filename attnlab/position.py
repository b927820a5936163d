"""Where order enters: position encodings as NumPy float64 references.

- :func:`sinusoidal` -- Vaswani et al.'s fixed table, added to the token embeddings
- :func:`rope` -- rotary position embedding: pairs of features turned by position-dependent angles
- :func:`rope_angles` -- the angles themselves, position * base^(-2i/d) for pair i
- :func:`interleave_permutation` -- the feature order that maps the "half" pairing onto "interleaved"
- :func:`alibi_slopes`, :func:`alibi_bias` -- ALiBi's per-head linear penalty on the score

Two pairings of RoPE are in use. "half" turns feature i with feature i + d/2 (Llama in Hugging Face,
GPT-NeoX: ``rotate_half``); "interleaved" turns feature 2i with 2i + 1 (RoFormer, GPT-J, llama.cpp).
They are the same rotation of differently ordered features:
``rope(x, p, pairing="half")[..., perm] == rope(x[..., perm], p, pairing="interleaved")`` with
``perm = interleave_permutation(d)``. Because q and k are permuted alike, every score q . k is unchanged.
"""
from __future__ import annotations

import numbers

import numpy as np

from . import _validate as V
from .errors import AttentionInputError
from .i18n import _

PAIRINGS = ("half", "interleaved")


def _count(name: str, n, minimum: int = 1) -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < minimum:
        raise AttentionInputError(_("{name} must be an integer >= {minimum}; got {n!r}").format(
            name=name, minimum=minimum, n=n))
    return int(n)


def _even_width(d) -> int:
    d = _count("d", d)
    if d % 2:
        raise AttentionInputError(
            _("the feature width d must be even (features turn in pairs); got d = {d}").format(d=d))
    return d


def _base(base) -> float:
    try:
        value = float(base)
    except (TypeError, ValueError):
        value = float("nan")
    if not np.isfinite(value) or value <= 1.0:
        raise AttentionInputError(_("base must be a finite number > 1; got {base!r}").format(base=base))
    return value


def _pairing(pairing) -> str:
    if pairing not in PAIRINGS:
        raise AttentionInputError(_("pairing must be 'half' or 'interleaved'; got {pairing!r}").format(pairing=pairing))
    return pairing


def positions_array(positions, T: int) -> np.ndarray:
    """``positions`` as a (T,) int64 array; integers only (negative ones turn backwards), one per row."""
    p = np.asarray(positions)
    if p.dtype == bool or not (np.issubdtype(p.dtype, np.integer) or np.issubdtype(p.dtype, np.floating)):
        raise AttentionInputError(_("positions must be integers; got dtype {dtype}").format(dtype=p.dtype))
    if p.ndim != 1 or p.shape[0] != T:
        raise AttentionInputError(_("positions must have shape ({T},), one per row of x; got shape {shape}").format(
            T=T, shape=V.fmt(p.shape)))
    if np.issubdtype(p.dtype, np.floating):
        if not np.all(np.isfinite(p)) or np.any(p != np.round(p)):
            raise AttentionInputError(_("positions must be integers; got {values}").format(values=p[:8].tolist()))
    return p.astype(np.int64)


def sinusoidal(n_positions, d) -> np.ndarray:
    """(n_positions, d) table of Vaswani et al.: PE[p, 2i] = sin(p w_i), PE[p, 2i + 1] = cos(p w_i),
    with w_i = 10000^(-2i/d), so pair i has the wavelength 2 pi 10000^(2i/d)."""
    n, d = _count("n_positions", n_positions), _even_width(d)
    angles = rope_angles(np.arange(n), d, base=10000.0)       # (n, d/2)
    table = np.empty((n, d))
    table[:, 0::2], table[:, 1::2] = np.sin(angles), np.cos(angles)
    return table


def rope_angles(positions, d, base=10000.0) -> np.ndarray:
    """(T, d/2) angles: position p turns pair i by p * base^(-2i/d)."""
    d, base = _even_width(d), _base(base)
    p = positions_array(positions, len(np.atleast_1d(positions)))
    frequencies = base ** (-np.arange(0, d, 2) / d)           # (d/2,), from 1 down to about 1/base
    return p[:, None] * frequencies[None, :]                  # (T, d/2)


def interleave_permutation(d) -> np.ndarray:
    """(d,) feature order from the "half" pairing to "interleaved": [0, d/2, 1, d/2 + 1, ...].

    Pair i of "half" is (i, i + d/2); after ``x[..., perm]`` it sits at (2i, 2i + 1), pair i of
    "interleaved". ``np.argsort(perm)`` goes back. llama.cpp applies this order to the rows of every
    head of W_Q and W_K when it converts a Hugging Face Llama (see attnlab.decoder).
    """
    d = _even_width(d)
    return np.stack([np.arange(d // 2), np.arange(d // 2) + d // 2], axis=1).reshape(d)   # (d/2, 2) -> (d,)


def _split_pairs(x, pairing):
    """The two members of every pair, each (..., T, d/2)."""
    d = x.shape[-1]
    return (x[..., : d // 2], x[..., d // 2:]) if pairing == "half" else (x[..., 0::2], x[..., 1::2])


def _join_pairs(a, b, pairing):
    if pairing == "half":
        return np.concatenate([a, b], axis=-1)                # (..., T, d)
    return np.stack([a, b], axis=-1).reshape(a.shape[:-1] + (2 * a.shape[-1],))   # (..., T, d/2, 2) -> (..., T, d)


def rope(x, positions, base=10000.0, pairing="half") -> np.ndarray:
    """Rotary position embedding: turn each pair (a, b) of x's features by its angle theta,
    (a, b) -> (a cos theta - b sin theta, a sin theta + b cos theta).

    x (..., T, d) with d even; positions (T,) integers, one per row; pair i of the row at position p
    turns by p * base^(-2i/d). pairing "half" or "interleaved" (module docstring). Since a rotation by
    p followed by the transpose of one by q is one by q - p, <rope(q, i), rope(k, j)> depends on j - i only.
    """
    x = np.asarray(x)
    if x.dtype == bool or not (np.issubdtype(x.dtype, np.floating) or np.issubdtype(x.dtype, np.integer)):
        raise AttentionInputError(_("x must hold real numbers; got dtype {dtype}").format(dtype=x.dtype))
    x = x.astype(np.float64)
    if x.ndim < 2:
        raise AttentionInputError(_("x must have shape (..., T, d); got shape {shape}").format(shape=V.fmt(x.shape)))
    if not np.all(np.isfinite(x)):
        raise AttentionInputError(_("x contains a non-finite value (nan or inf)"))
    pairing = _pairing(pairing)
    angles = rope_angles(positions_array(positions, x.shape[-2]), x.shape[-1], base)   # (T, d/2)
    cos, sin = np.cos(angles), np.sin(angles)
    a, b = _split_pairs(x, pairing)                           # (..., T, d/2) each
    return _join_pairs(a * cos - b * sin, a * sin + b * cos, pairing)


def alibi_slopes(n_heads) -> np.ndarray:
    """(n_heads,) ALiBi slopes (Press et al.): for n a power of two, 2^(-8k/n) for k = 1 .. n.

    Otherwise, as in the paper's code: the slopes of the largest power of two n0 below n, then every
    other slope of 2 n0 heads for the rest.
    """
    n = _count("n_heads", n_heads)

    def powers_of_two(m):
        return 2.0 ** (-8.0 * np.arange(1, m + 1) / m)

    n0 = 2 ** int(np.floor(np.log2(n)))
    if n0 == n:
        return powers_of_two(n)
    return np.concatenate([powers_of_two(n0), powers_of_two(2 * n0)[0::2][: n - n0]])


def alibi_bias(n_heads, T, S=None, offset=None) -> np.ndarray:
    """(n_heads, T, S) additive score bias -slope_h * (query position - key position).

    Query row i sits at position offset + i (default offset S - T, as in attnlab.masks.causal); key
    column j at j. The bias is 0 on the query's own key and falls linearly with distance; keys in the
    future get a positive bias, which the causal mask removes.
    """
    slopes = alibi_slopes(n_heads)
    T = _count("T", T)
    S = T if S is None else _count("S", S)
    if offset is None:
        offset = S - T
    elif isinstance(offset, bool) or not isinstance(offset, numbers.Integral):
        raise AttentionInputError(
            _("offset must be an integer (absolute position of query 0); got {offset!r}").format(offset=offset))
    distance = (int(offset) + np.arange(T))[:, None] - np.arange(S)[None, :]   # (T, S) query minus key position
    return -slopes[:, None, None] * distance[None]                              # (H, T, S)
