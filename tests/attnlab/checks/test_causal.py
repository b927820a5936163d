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


# ------------------------------------------------------------------------------------ new wrong implementations


def test_causal_attention_ignoring_dropout():
    def ignores(query, key, value, query_offset=0, dropout=None):
        return causal(query, key, value, query_offset)
    assert_diagnosis(C.check_causal_attention(ignores), "dropout_ignored", "`dropout` argument is ignored")


def test_causal_attention_dropout_on_the_output():
    def on_output(query, key, value, query_offset=0, dropout=None):
        out, w = causal(query, key, value, query_offset)
        return (out if dropout is None else dropout(out)), w
    assert_diagnosis(C.check_causal_attention(on_output), "dropout_on_output", "applied to the output")


def test_causal_attention_dropout_on_the_scores():
    def on_scores(query, key, value, query_offset=0, dropout=None):
        T, S = query.shape[-2], key.shape[-2]
        future = torch.arange(S)[None, :] > query_offset + torch.arange(T)[:, None]
        s = (query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])).masked_fill(future, float("-inf"))
        if dropout is not None:
            s = dropout(s)
        w = torch.softmax(s, dim=-1)
        return w @ value, w
    assert_diagnosis(C.check_causal_attention(on_scores), "dropout_on_scores", "scores before the softmax")


def test_causal_attention_returning_the_dropped_weights():
    """The old reference of this test file: weights = dropout(weights), returned."""
    def dropped(query, key, value, query_offset=0, dropout=None):
        _, w = causal(query, key, value, query_offset)
        if dropout is not None:
            w = dropout(w)
        return w @ value, w
    assert_diagnosis(C.check_causal_attention(dropped), "weights_after_dropout", "before dropout")


def test_causal_attention_returning_scores_as_weights():
    def scores_as_weights(query, key, value, query_offset=0, dropout=None):
        out, _ = causal(query, key, value, query_offset, dropout)
        T, S = query.shape[-2], key.shape[-2]
        future = torch.arange(S)[None, :] > query_offset + torch.arange(T)[:, None]
        return out, (query @ key.transpose(-2, -1)).masked_fill(future, 0.0)
    assert_diagnosis(C.check_causal_attention(scores_as_weights), "weights_wrong", "weights you returned differ")


def test_causal_attention_with_tiny_future_weights():
    """Weights filled with -1e4 before a float32 softmax: future weights are tiny, not exactly 0."""
    def tiny(query, key, value, query_offset=0, dropout=None):
        T, S = query.shape[-2], key.shape[-2]
        future = torch.arange(S)[None, :] > query_offset + torch.arange(T)[:, None]
        s = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
        w = torch.softmax(s - 30.0 * future, dim=-1)
        return (w if dropout is None else dropout(w)) @ value, w
    assert_diagnosis(C.check_causal_attention(tiny), "future_weight", "not exactly 0")


def test_causal_attention_returning_only_the_output():
    def output_only(query, key, value, query_offset=0, dropout=None):
        return causal(query, key, value, query_offset, dropout)[0]
    assert_diagnosis(C.check_causal_attention(output_only), "not_a_pair", "return the pair")


def test_causal_attention_in_numpy_is_refused():
    def numpy_out(query, key, value, query_offset=0, dropout=None):
        out, w = causal(query, key, value, query_offset, dropout)
        return out.numpy(), w.numpy()
    assert_diagnosis(C.check_causal_attention(numpy_out), "wrong_type", "must return a `torch.Tensor`")


def test_causal_attention_with_requires_grad_and_nn_dropout_in_eval_mode_passes():
    def grad_tracking(query, key, value, query_offset=0, dropout=None):
        query = query.clone().requires_grad_()
        return causal(query, key, value, query_offset, dropout)
    assert C.check_causal_attention(grad_tracking).passed


# ------------------------------------------------------------------------------------ leak test: new wrong tests


def test_leak_test_with_one_fixed_split():
    def one_split(attn, x):
        changed = x.copy()
        changed[1:] = -changed[1:]
        return not np.array_equal(attn(x)[:1], attn(changed)[:1])
    assert_diagnosis(C.check_leak_test(one_split), "fixed_position", "one split point")


def test_leak_test_verdicts_do_not_depend_on_the_run():
    def one_split(attn, x):
        changed = x.copy()
        changed[1:] = -changed[1:]
        return not np.array_equal(attn(x)[:1], attn(changed)[:1])
    assert len({str(C.check_leak_test(one_split)) for _ in range(2)}) == 1


def test_leak_test_with_a_tiny_perturbation_and_exact_comparison():
    """A 1e-12 nudge compared with ==: misses the tiny leak, and is not told it uses a tolerance."""
    def nudged(attn, x):
        for t in range(len(x) - 1):
            y = x.copy()
            y[t + 1:] += 1e-12
            if (attn(y)[:t + 1] != attn(x)[:t + 1]).any():
                return True
        return False
    assert_diagnosis(C.check_leak_test(nudged), "tiny_perturbation", "tiny amount")


def test_leak_test_only_perturbing_position_zero_and_one():
    """Changes positions 1 and 2 only (for t = 0, 1): the seeded leaks further on pass unseen."""
    def first_positions(attn, x):
        for t in (0, 1):
            y = x.copy()
            y[t + 1] += 1.0
            if not np.array_equal(attn(y)[:t + 1], attn(x)[:t + 1]):
                return True
        return False
    assert_diagnosis(C.check_leak_test(first_positions), "fixed_position", "first positions")


def test_leak_test_returning_a_number_is_refused():
    def count(attn, x):
        return int(good_leak_test(attn, x))
    assert_diagnosis(C.check_leak_test(count), "not_bool", "return True")
