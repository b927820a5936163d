"""Checkers for causal attention with a query offset (torch) and for a future-leak test."""
from __future__ import annotations

import numpy as np

from .. import masks
from .. import reference as ref
from . import mistakes as M
from . import result as R
from .diagnose import FLOAT32, Mistake, close, compare, describe_difference
from .runner import Stop, call, checker, matmul_hint, to_array

CAUSAL_MISTAKES = [
    Mistake("top_left", "top-left causal alignment with an offset: your mask lets query 0 read only key 0 "
            "and ignores query_offset. Positions are absolute: query i sits at position query_offset + i and "
            "may read every key j <= query_offset + i (with a KV cache the newest query reads the whole cache).",
            M.causal_top_left),
    Mistake("always_bottom_right", "you align the mask bottom-right (offset S - T) whatever query_offset says; "
            "when the key tensor already holds later positions, queries read the future. Use query_offset.",
            M.causal_always_bottom_right),
    Mistake("excludes_diagonal", "excluding the diagonal: a query may read its own position (j <= i, not j < i). "
            "The first query then has no key at all, which gives nan (with -inf) or uniform weights (with -1e9).",
            M.causal_excluding_diagonal),
    Mistake("excludes_diagonal", "excluding the diagonal: a query may read its own position (j <= i, not j < i). "
            "The first query then has no key at all, and -1e9 filling turned its row into uniform weights.",
            M.causal_excluding_diagonal_1e9),
    Mistake("future_leakage", "future leakage: your mask allows j >= i (the upper triangle), so each query reads "
            "the positions after it. `torch.tril`, not `torch.triu`, keeps the past.", M.causal_reads_future),
    Mistake("future_leakage", "future leakage: no causal mask is applied, so every query reads every key.",
            M.causal_no_mask),
    Mistake("offset_wrong_sign", "query_offset has the wrong sign: query i sits at position query_offset + i, so "
            "the rule is j <= i + query_offset.", M.causal_offset_wrong_sign),
    Mistake("mask_after_softmax", "mask applied after the softmax: zeroing future weights after normalising "
            "leaves rows that sum to less than 1. Fill the future scores with -inf before the softmax.",
            M.causal_mask_after_softmax),
    Mistake("no_scale", "missing scaling: divide the scores by sqrt(d_k) before the softmax.", M.causal_without_scale),
    Mistake("wrong_axis", "softmax over the wrong axis: normalise over keys (`dim=-1`), not over queries.",
            M.causal_softmax_over_queries),
]


def _torch():
    import torch
    return torch


def _cases():
    torch = _torch()
    g = torch.Generator().manual_seed(3)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float32)

    big_q = torch.full((3, 4), 300.0) * torch.tensor([[1.0], [2.0], [-1.5]])
    return [
        ("square causal self-attention (T = S = 4, query_offset = 0)", randn(4, 3), randn(4, 3), randn(4, 2), 0),
        ("a batch (B = 2, H = 3, T = S = 5, query_offset = 0)", randn(2, 3, 5, 4), randn(2, 3, 5, 4),
         randn(2, 3, 5, 3), 0),
        ("one new query at absolute position 5 reading a cache of S = 6 keys (query_offset = 5)",
         randn(1, 4), randn(6, 4), randn(6, 2), 5),
        ("T = 3 queries at positions 4..6 over S = 7 keys (query_offset = 4)", randn(3, 4), randn(7, 4),
         randn(7, 2), 4),
        ("T = 3 queries at positions 2..4 while the keys already reach position 7 (S = 8, query_offset = 2)",
         randn(2, 3, 4), randn(2, 8, 4), randn(2, 8, 3), 2),
        ("large scores (about +-1000) with T = 3, S = 4, query_offset = 1", big_q,
         randn(4, 4).abs() + 0.5, randn(4, 2), 1),
    ]


def _reference(q, k, v, offset):
    """torch's scaled_dot_product_attention in float64 with an explicit bottom-right-aware mask."""
    torch = _torch()
    T, S = q.shape[-2], k.shape[-2]
    allowed = torch.from_numpy(masks.causal(T, S, offset))
    out = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=allowed)
    _, weights = ref.attention(q.double().numpy(), k.double().numpy(), v.double().numpy(),
                               allowed=allowed.numpy(), return_weights=True)
    return out.numpy(), weights


def _unpack(task, out, case):
    if isinstance(out, (tuple, list)):
        if len(out) != 2:
            raise Stop(R.failed(task, f"On {case}, your function returned {len(out)} values; return the output, "
                                      f"or the pair (output, weights)."))
        return out[0], out[1]
    return out, None


def _run(task, fn, case, q, k, v, offset):
    if offset == 0 and q.shape[-2] == k.shape[-2]:
        out = call(task, fn, case, q, k, v, error_hint=_hint)
    else:
        out = call(task, fn, case, q, k, v, query_offset=offset, error_hint=_hint)
    return _unpack(task, out, case)


def _hint(err):
    if isinstance(err, TypeError) and "query_offset" in str(err):
        return "give your function the parameter `query_offset=0`."
    if "size of tensor" in str(err) or "must match" in str(err) or "shape" in str(err):
        return ("build the mask from both T (queries) and S (keys) and the offset: with a KV cache T != S, so a "
                "(T, T) triangle does not fit the (T, S) scores.")
    return matmul_hint(err)


@checker("causal attention")
def check_causal_attention(fn):
    """Check ``fn(query, key, value, query_offset=0)`` on torch tensors.

    Query row i sits at absolute position ``query_offset + i`` and may read keys j <= query_offset + i.
    ``fn`` may return the output or the pair (output, weights); weights are checked when given.
    The reference is ``torch.nn.functional.scaled_dot_product_attention`` with the mask from
    ``al.masks.causal``; a separate test changes future keys and values and requires the past to stay
    exactly the same.
    """
    task = "causal attention"
    cases = _cases()
    for case, q, k, v, offset in cases:
        T, S = q.shape[-2], k.shape[-2]
        out, weights = _run(task, fn, case, q, k, v, offset)
        shape = tuple(q.shape[:-1]) + (v.shape[-1],)
        got = to_array(task, out, case, "the output", shape=shape)
        expected, expected_w = _reference(q, k, v, offset)
        args = tuple(t.double().numpy() for t in (q, k, v)) + (offset,)
        compare(task, case, got, expected, CAUSAL_MISTAKES, args=args, tol=FLOAT32, name="the output")
        if weights is not None:
            w = to_array(task, weights, case, "the weights", shape=tuple(q.shape[:-1]) + (S,))
            if not close(w, expected_w, FLOAT32):
                raise Stop(R.failed(task, f"On {case}, the output is right but the weights you returned differ "
                                          f"from the reference: {describe_difference(w, expected_w)}."))
            if (w[..., ~masks.causal(T, S, offset)] != 0).any():
                raise Stop(R.failed(task, f"On {case}, some weights on future keys are not exactly 0.",
                                    "future_leakage"))
    _future_test(task, fn)
    return R.passed(task, f"All {len(cases)} cases match torch's scaled_dot_product_attention with the "
                          f"absolute-position mask (square, batched, a cached query, bottom-right and "
                          f"future keys in the cache, large scores), and changing future keys and values "
                          f"leaves every output bit-identical.")


def _future_test(task, fn):
    torch = _torch()
    g = torch.Generator().manual_seed(8)
    q, k, v = (torch.randn(3, 4, generator=g), torch.randn(8, 4, generator=g), torch.randn(8, 3, generator=g))
    offset = 2   # queries at positions 2, 3, 4
    case = "the future test (queries at positions 2..4, keys 0..7; keys and values 5..7 replaced)"
    before, _ = _run(task, fn, case, q, k, v, offset)
    k2, v2 = k.clone(), v.clone()
    k2[5:] = torch.randn(3, 4, generator=g) * 10
    v2[5:] = torch.randn(3, 3, generator=g) * 10
    after, _ = _run(task, fn, case, q, k2, v2, offset)
    b = to_array(task, before, case, shape=(3, 3))
    a = to_array(task, after, case, shape=(3, 3))
    if not np.array_equal(a, b):
        rows = sorted({int(i) for i in np.argwhere(a != b)[:, 0]})
        raise Stop(R.failed(task, f"On {case}: future leakage. Output rows {rows} changed when only keys and "
                                  f"values after every query's position changed.", "future_leakage"))


# ----------------------------------------------------------------------------------------------
# A test the student writes: leaks_future(attn, x) -> bool


def _projections():
    rng = np.random.default_rng(21)
    return rng.normal(size=(4, 4)), rng.normal(size=(4, 4)), rng.normal(size=(4, 3))


def _self_attention(allowed_rule, *, leak=0.0, fill=-np.inf):
    w_q, w_k, w_v = _projections()

    def attn(x):
        T = x.shape[0]
        i, j = np.arange(T)[:, None], np.arange(T)[None, :]
        allowed = allowed_rule(i, j)
        s = np.where(allowed, (x @ w_q) @ (x @ w_k).T / 2.0, fill)
        out = _row_softmax(s) @ (x @ w_v)
        if leak:
            out = out + leak * (_row_softmax((x @ w_q) @ (x @ w_k).T / 2.0) @ (x @ w_v))
        return out
    return attn


def _row_softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _probes():
    return [
        ("causal self-attention", _self_attention(lambda i, j: j <= i), False),
        ("self-attention with no mask", _self_attention(lambda i, j: np.ones_like(i + j, dtype=bool)), True),
        ("attention that also reads one position ahead", _self_attention(lambda i, j: j <= i + 1), True),
        ("causal attention in which only position 0 also reads position 1",
         _self_attention(lambda i, j: (j <= i) | ((i == 0) & (j == 1))), True),
        ("causal attention plus a 1e-10 leak from every position", _self_attention(lambda i, j: j <= i,
                                                                                   leak=1e-10), True),
        ("causal self-attention with -1e9 filling", _self_attention(lambda i, j: j <= i, fill=-1e9), False),
    ]


LEAK_TEST_MISTAKES = [
    Mistake("last_position_only", "your test changes only the last position, so it misses a leak from a "
            "middle position into an earlier one. For every t, change all positions after t and compare "
            "the outputs at positions 0..t.", M.leak_test_last_position_only),
    Mistake("tolerance", "your test compares with a tolerance (e.g. `np.allclose`) and misses a tiny leak. "
            "Under a correct causal mask the future contributes exactly 0, so the past must be bit-identical: "
            "use `np.array_equal`.", M.leak_test_with_tolerance),
    Mistake("flags_causal", "your test reports a leak even for correct causal attention. Either it changes "
            "past positions (which legitimately changes later outputs) or it compares the output rows of the "
            "positions it changed (which always change). Change only positions after t and compare only the "
            "rows 0..t.", M.leak_test_changes_the_past),
    Mistake("flags_causal", "your test reports a leak even for correct causal attention: it compares the output "
            "rows of the positions it changed, which always change. Compare only the rows 0..t.",
            M.leak_test_compares_every_row),
]


@checker("future-leak test")
def check_leak_test(fn):
    """Check ``fn(attn, x) -> bool``: True iff future inputs change some earlier output of ``attn``.

    ``attn`` maps an array x of shape (T, d) to outputs (T, d_v), one row per position.
    """
    task = "future-leak test"
    x = np.random.default_rng(4).normal(size=(6, 4))
    verdicts = []
    for name, attn, leaks in _probes():
        case = f"the probe \"{name}\""
        out = call(task, fn, case, attn, x)
        if not isinstance(out, (bool, np.bool_)):
            raise Stop(R.failed(task, f"On {case}, your test returned {type(out).__name__}; return True (it "
                                      f"leaks) or False."))
        verdicts.append(bool(out))
    expected = [leaks for _, _, leaks in _probes()]
    if verdicts == expected:
        return R.passed(task, f"Your test gives the right verdict on all {len(expected)} probes, including a "
                              f"leak from one middle position and a leak of size 1e-10.")
    for mistake in LEAK_TEST_MISTAKES:
        if [mistake.model(attn, x) for _, attn, _ in _probes()] == verdicts:
            raise Stop(R.failed(task, f"Your verdicts match a classic mistake: {mistake.explanation}", mistake.name))
    name, _, leaks = next(p for p, v in zip(_probes(), verdicts) if p[2] != v)
    raise Stop(R.failed(task, f"On the probe \"{name}\" your test said {not leaks}; it should say {leaks}."))
