"""Causal attention (torch) and future-leak test checkers: each mistake is named.

Every "student" function is written independently, the way a student would write the mistake,
not taken from the package's mistake models; each test asserts the diagnosis it gets.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F

from attnlab import checks as C

from .support import assert_diagnosis, assert_not_attempted, stub

# ------------------------------------------------------------------------------------ causal attention (torch)


def causal(query, key, value, query_offset=0, dropout=None, *, rule="right", fill=float("-inf"),
           after=False, scale=True, dim=-1):
    """A student's causal attention in torch with knobs; the defaults are right."""
    T, S = query.shape[-2], key.shape[-2]
    i = torch.arange(T)[:, None] + query_offset
    j = torch.arange(S)[None, :]
    allowed = {"right": j <= i, "top_left": torch.ones(T, S, dtype=torch.bool).tril(),
               "bottom_right": torch.ones(T, S, dtype=torch.bool).tril(S - T), "strict": j < i,
               "triu": j >= i, "none": torch.ones(T, S, dtype=torch.bool),
               "sign": j <= torch.arange(T)[:, None] - query_offset}[rule]
    scores = query @ key.transpose(-2, -1)
    if scale:
        scores = scores / math.sqrt(query.shape[-1])
    if after:
        weights = torch.softmax(scores, dim=dim) * allowed
    else:
        weights = torch.softmax(scores.masked_fill(~allowed, fill), dim=dim)
    dropped = weights if dropout is None else dropout(weights)
    return dropped @ value, weights


def test_causal_attention_reference_passes():
    assert C.check_causal_attention(causal).passed


def test_causal_attention_sdpa_with_lower_right_bias_passes():
    from torch.nn.attention.bias import causal_lower_right

    def via_sdpa(query, key, value, query_offset=0, dropout=None):
        T, S = query.shape[-2], key.shape[-2]
        weights = causal(query, key, value, query_offset)[1]        # SDPA does not return its weights
        if dropout is not None:
            return dropout(weights) @ value, weights
        if query_offset == S - T:
            return F.scaled_dot_product_attention(query, key, value, attn_mask=causal_lower_right(T, S)), weights
        allowed = torch.arange(S)[None, :] <= query_offset + torch.arange(T)[:, None]
        return F.scaled_dot_product_attention(query, key, value, attn_mask=allowed), weights
    assert C.check_causal_attention(via_sdpa).passed


def test_causal_attention_stub_not_attempted():
    assert_not_attempted(C.check_causal_attention(stub))


def test_causal_attention_without_query_offset_parameter():
    result = C.check_causal_attention(lambda query, key, value: causal(query, key, value))
    assert not result.passed and "query_offset=0" in result.message


def test_causal_attention_top_left_alignment_with_offset():
    assert_diagnosis(C.check_causal_attention(lambda *a, **kw: causal(*a, **kw, rule="top_left")), "top_left",
                     "top-left causal alignment with an offset")


def test_causal_attention_always_bottom_right():
    assert_diagnosis(C.check_causal_attention(lambda *a, **kw: causal(*a, **kw, rule="bottom_right")),
                     "always_bottom_right", "whatever query_offset says")


def test_causal_attention_excluding_diagonal():
    assert_diagnosis(C.check_causal_attention(lambda *a, **kw: causal(*a, **kw, rule="strict")),
                     "excludes_diagonal", "excluding the diagonal")


def test_causal_attention_excluding_diagonal_with_minus_1e9():
    assert_diagnosis(C.check_causal_attention(lambda *a, **kw: causal(*a, **kw, rule="strict", fill=-1e9)),
                     "excludes_diagonal", "uniform weights")


def test_causal_attention_upper_triangle_leaks_future():
    assert_diagnosis(C.check_causal_attention(lambda *a, **kw: causal(*a, **kw, rule="triu")), "future_leakage",
                     "future leakage")


def test_causal_attention_without_mask_leaks_future():
    assert_diagnosis(C.check_causal_attention(lambda *a, **kw: causal(*a, **kw, rule="none")), "no_mask",
                     "no causal mask")


def test_causal_attention_offset_wrong_sign():
    assert_diagnosis(C.check_causal_attention(lambda *a, **kw: causal(*a, **kw, rule="sign")), "offset_wrong_sign",
                     "wrong sign")


def test_causal_attention_mask_after_softmax():
    assert_diagnosis(C.check_causal_attention(lambda *a, **kw: causal(*a, **kw, after=True)), "mask_after_softmax",
                     "mask applied after the softmax")


def test_causal_attention_missing_scale():
    assert_diagnosis(C.check_causal_attention(lambda *a, **kw: causal(*a, **kw, scale=False)), "no_scale",
                     "missing scaling")


def test_causal_attention_softmax_over_queries():
    assert_diagnosis(C.check_causal_attention(lambda *a, **kw: causal(*a, **kw, dim=-2)), "wrong_axis",
                     "wrong axis")


def test_causal_attention_future_test_catches_a_leak_the_values_hide():
    """Right outputs on the battery, but the function peeks at the future when the keys change."""
    def sneaky(query, key, value, query_offset=0, dropout=None):
        out, w = causal(query, key, value, query_offset, dropout)
        return out + 1e-3 * (key.abs().max() > 5).float(), w
    assert_diagnosis(C.check_causal_attention(sneaky), "future_changes_past", "changed when only keys and values")


# ------------------------------------------------------------------------------------ leak test


def good_leak_test(attn, x):
    base = attn(x)
    for t in range(x.shape[0] - 1):
        changed = x.copy()
        changed[t + 1:] = changed[t + 1:] * 3.0 + 1.0
        if not np.array_equal(attn(changed)[:t + 1], base[:t + 1]):
            return True
    return False


def test_leak_test_reference_passes():
    assert C.check_leak_test(good_leak_test).passed


def test_leak_test_stub_not_attempted():
    assert_not_attempted(C.check_leak_test(stub))


def test_leak_test_last_position_only():
    def last_only(attn, x):
        changed = x.copy()
        changed[-1] = 0.0
        return not np.array_equal(attn(changed)[:-1], attn(x)[:-1])
    assert_diagnosis(C.check_leak_test(last_only), "last_position_only", "changes only the last position")


def test_leak_test_with_tolerance():
    def tolerant(attn, x):
        base = attn(x)
        for t in range(x.shape[0] - 1):
            changed = x.copy()
            changed[t + 1:] = 5.0
            if not np.allclose(attn(changed)[:t + 1], base[:t + 1]):
                return True
        return False
    assert_diagnosis(C.check_leak_test(tolerant), "tolerance", "np.array_equal")


def test_leak_test_that_changes_the_past():
    def past(attn, x):
        changed = x.copy()
        changed[0] += 1.0
        return not np.array_equal(attn(changed)[1:], attn(x)[1:])
    assert_diagnosis(C.check_leak_test(past), "flags_causal", "correct causal attention")
