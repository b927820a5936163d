"""Exercise checkers: each passes the reference, says "not attempted" for a stub, and names each mistake.

Every "student" function below is written independently, the way a student would write the
mistake (NumPy or torch), not taken from the package's mistake models; each test asserts the
diagnosis the checker gives for it.
"""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attnlab as al
from attnlab import checks as C


def assert_diagnosis(result, mistake, fragment):
    assert not result.passed, result
    assert result.status == "failed", result
    assert result.mistake == mistake, result
    assert fragment.lower() in result.message.lower(), result.message


def stub(*args, **kwargs):
    raise NotImplementedError


def assert_not_attempted(result):
    assert result.status == "not attempted yet" and not result.passed, result
    assert "NotImplementedError" in result.message


# ------------------------------------------------------------------------------------ result object


def test_result_renders_green_red_and_grey_notes():
    ok = C.check_softmax(al.softmax)
    bad = C.check_softmax(lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True))
    todo = C.check_softmax(stub)
    assert "#2e7d32" in ok._repr_html_() and "passed" in ok._repr_html_()
    assert "#c62828" in bad._repr_html_() and "<code>" in bad._repr_html_()
    assert "#757575" in todo._repr_html_()
    assert str(ok).startswith("\u2714 softmax: passed.") and repr(bad).startswith("\u2718 softmax: failed.")


def test_result_escapes_html_in_messages():
    result = C.check_softmax(lambda x: (_ for _ in ()).throw(ValueError("<script>x</script>")))
    assert "<script>" not in result._repr_html_() and "&lt;script&gt;" in result._repr_html_()


def test_a_non_function_gets_a_message():
    result = C.check_softmax(np.zeros(3))
    assert not result.passed and "Expected a function" in result.message


# ------------------------------------------------------------------------------------ softmax


def test_softmax_reference_passes():
    assert C.check_softmax(al.softmax).passed
    assert C.check_softmax(lambda x: torch.softmax(torch.from_numpy(x), dim=-1).numpy()).passed


def test_softmax_stub_not_attempted():
    assert_not_attempted(C.check_softmax(stub))


def test_softmax_exception_is_one_line_message():
    def broken(x):
        return {}[x.shape]
    result = C.check_softmax(broken)
    assert not result.passed and "raised KeyError" in result.message and "Traceback" not in result.message


def test_softmax_wrong_shape_is_a_message():
    result = C.check_softmax(lambda x: np.exp(x).sum(-1))
    assert not result.passed and "has shape" in result.message and "expected (4)" in result.message


def test_softmax_returning_none_is_a_message():
    def forgot_return(x):
        np.exp(x)
    result = C.check_softmax(forgot_return)
    assert "forget `return`" in result.message


def test_softmax_in_place_change_is_reported():
    def in_place(x):
        x -= x.max(axis=-1, keepdims=True)
        e = np.exp(x)
        return e / e.sum(axis=-1, keepdims=True)
    result = C.check_softmax(in_place)
    assert not result.passed and "in place" in result.message


def test_softmax_wrong_axis():
    def columns(x):
        e = np.exp(x - x.max(axis=0, keepdims=True))
        return e / e.sum(axis=0, keepdims=True)
    assert_diagnosis(C.check_softmax(columns), "wrong_axis", "softmax over the wrong axis")


def test_softmax_whole_array():
    def whole(x):
        e = np.exp(x - np.max(x))
        return e / np.sum(e)
    assert_diagnosis(C.check_softmax(whole), "whole_array", "whole array")


def test_softmax_no_max_subtraction():
    def naive(x):
        e = np.exp(x)
        return e / e.sum(axis=-1, keepdims=True)
    assert_diagnosis(C.check_softmax(naive), "no_max_subtraction", "overflow")


def test_softmax_global_max():
    def global_max(x):
        e = np.exp(x - x.max())
        return e / e.sum(axis=-1, keepdims=True)
    assert_diagnosis(C.check_softmax(global_max), "global_max", "maximum of the whole array")


def test_softmax_max_without_keepdims():
    def no_keepdims(x):
        e = np.exp(x - np.max(x, axis=-1))
        return e / np.sum(e, axis=-1, keepdims=True)
    assert_diagnosis(C.check_softmax(no_keepdims), "max_without_keepdims", "keepdims=True")


def test_softmax_sum_without_keepdims():
    def no_keepdims(x):
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e / np.sum(e, axis=-1)
    assert_diagnosis(C.check_softmax(no_keepdims), "sum_without_keepdims", "keepdims=True")


def test_softmax_not_normalised():
    assert_diagnosis(C.check_softmax(lambda x: np.exp(x - x.max(-1, keepdims=True))), "not_normalised",
                     "not normalised")


def test_softmax_log_softmax():
    assert_diagnosis(C.check_softmax(lambda x: torch.log_softmax(torch.from_numpy(x), -1).numpy()),
                     "log_softmax", "log-probabilities")


# ------------------------------------------------------------------------------------ dropout


def good_dropout(a, p, rng):
    keep = rng.random(a.shape) >= p
    return np.where(keep, a / (1 - p), 0.0)


def test_dropout_reference_passes():
    assert C.check_dropout(good_dropout).passed


def test_dropout_stub_not_attempted():
    assert_not_attempted(C.check_dropout(stub))


def test_dropout_no_rescale():
    assert_diagnosis(C.check_dropout(lambda a, p, rng: a * (rng.random(a.shape) >= p)), "no_rescale", "no rescaling")


def test_dropout_scaled_by_p():
    def by_p(a, p, rng):
        return a * (rng.random(a.shape) >= p) / max(p, 1e-12) if p > 0 else a
    assert_diagnosis(C.check_dropout(by_p), "scaled_by_p", "divided the kept weights by p")


def test_dropout_renormalised():
    def renorm(a, p, rng):
        w = a * (rng.random(a.shape) >= p)
        return w / w.sum(-1, keepdims=True)
    assert_diagnosis(C.check_dropout(renorm), "renormalised", "only in expectation")


def test_dropout_p_as_keep_probability():
    def keep_prob(a, p, rng):
        keep = rng.random(a.shape) < p
        return np.where(keep, a / max(p, 1e-12), 0.0)
    assert_diagnosis(C.check_dropout(keep_prob), "p_is_keep_probability", "probability of dropping")


def test_dropout_one_mask_for_all_rows():
    def shared(a, p, rng):
        keep = rng.random(a.shape[-1]) >= p
        return a * keep / (1 - p)
    assert_diagnosis(C.check_dropout(shared), "shared_mask", "same entries dropped")


def test_dropout_ignoring_rng():
    def global_rng(a, p, rng):
        return a * (np.random.random(a.shape) >= p) / (1 - p)
    assert_diagnosis(C.check_dropout(global_rng), "ignores_rng", "same seed")


def test_dropout_reseeding():
    def reseed(a, p, rng):
        fresh = np.random.default_rng(0)
        return a * (fresh.random(a.shape) >= p) / (1 - p)
    assert_diagnosis(C.check_dropout(reseed), "reseeds", "re-seed")


# ------------------------------------------------------------------------------------ scores


def test_scores_reference_passes():
    assert C.check_scores(lambda q, k: q @ np.swapaxes(k, -1, -2)).passed
    assert C.check_scores(lambda q, k: np.einsum("...td,...sd->...ts", q, k)).passed


def test_scores_stub_not_attempted():
    assert_not_attempted(C.check_scores(stub))


def test_scores_without_transpose():
    assert_diagnosis(C.check_scores(lambda q, k: q @ k), "no_transpose", "Q K instead of Q K^T")


def test_scores_transposed():
    assert_diagnosis(C.check_scores(lambda q, k: k @ np.swapaxes(q, -1, -2)), "scores_transposed", "K Q^T")


def test_scores_elementwise():
    assert_diagnosis(C.check_scores(lambda q, k: q * k), "elementwise", "elementwise")


def test_scores_already_scaled():
    assert_diagnosis(C.check_scores(lambda q, k: q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])), "scaled",
                     "raw dot products")


# ------------------------------------------------------------------------------------ attention


def np_softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def student_attention(q, k, v, allowed=None, *, transpose=True, axis=-1, scale="sqrt_dk", fill=-np.inf,
                      mask="before", guard=True, stable=True):
    """A student's attention with knobs; the defaults are right."""
    d_k = q.shape[-1]
    factor = {"sqrt_dk": 1 / math.sqrt(d_k), "none": 1.0, "dk": 1 / d_k, "times": math.sqrt(d_k),
              "sqrt_dv": 1 / math.sqrt(v.shape[-1])}[scale]
    s = (q @ (np.swapaxes(k, -1, -2) if transpose else k)) * factor
    if allowed is not None:
        allowed = np.broadcast_to(allowed, s.shape)
        if guard and not allowed.any(-1).all():
            raise ValueError("a query may read no key")
        if mask == "before":
            s = np.where(allowed, s, fill)
        elif mask == "invert":
            s = np.where(allowed, fill, s)
        elif mask == "add":
            s = s + allowed
    if stable:
        e = np.exp(s - s.max(axis, keepdims=True))
    else:
        e = np.exp(s)
    w = e / e.sum(axis, keepdims=True)
    if allowed is not None and mask == "after":
        w = w * allowed
    return w @ v


def sdpa_attention(q, k, v, allowed=None):
    """A NumPy-in, NumPy-out wrapper around torch SDPA that refuses empty rows."""
    if allowed is not None and not np.broadcast_to(allowed, q.shape[:-1] + (k.shape[-2],)).any(-1).all():
        raise ValueError("a query may read no key")
    mask = None if allowed is None else torch.from_numpy(np.asarray(allowed))
    return F.scaled_dot_product_attention(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v),
                                          attn_mask=mask).numpy()


def test_attention_reference_passes():
    assert C.check_attention(al.attention).passed
    assert C.check_attention(student_attention).passed
    assert C.check_attention(sdpa_attention).passed


def test_attention_unmasked_version_passes_without_masks():
    def unmasked(q, k, v):
        return np_softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])) @ v
    assert C.check_attention(unmasked, masks_too=False).passed
    result = C.check_attention(unmasked)
    assert not result.passed and "TypeError" in result.message


def test_attention_stub_not_attempted():
    assert_not_attempted(C.check_attention(stub))


def test_attention_batched_k_dot_T_gets_a_hint():
    result = C.check_attention(lambda q, k, v, allowed=None: np_softmax(q @ k.T / math.sqrt(q.shape[-1])) @ v)
    assert not result.passed and "raised ValueError" in result.message and "reverses every axis" in result.message


def test_attention_returning_weights_gets_a_shape_hint():
    result = C.check_attention(lambda q, k, v, allowed=None: np_softmax(q @ np.swapaxes(k, -1, -2)))
    assert not result.passed and "shape of the weights" in result.message


def test_attention_without_transpose():
    assert_diagnosis(C.check_attention(lambda *a: student_attention(*a, transpose=False)), "no_transpose",
                     "Q K instead of Q K^T")


def test_attention_scores_transposed():
    def kq(q, k, v, allowed=None):
        return np_softmax(k @ np.swapaxes(q, -1, -2) / math.sqrt(q.shape[-1])) @ v
    assert_diagnosis(C.check_attention(kq), "scores_transposed", "K Q^T")


def test_attention_softmax_over_queries():
    assert_diagnosis(C.check_attention(lambda *a: student_attention(*a, axis=-2)), "wrong_axis",
                     "softmax over the wrong axis")


def test_attention_missing_scale():
    assert_diagnosis(C.check_attention(lambda *a: student_attention(*a, scale="none")), "no_scale",
                     "missing scaling")


def test_attention_scale_by_d_k():
    assert_diagnosis(C.check_attention(lambda *a: student_attention(*a, scale="dk")), "scale_by_d_k",
                     "divided by d_k")


def test_attention_scale_multiplied():
    assert_diagnosis(C.check_attention(lambda *a: student_attention(*a, scale="times")), "scale_multiplied",
                     "multiplied by sqrt(d_k)")


def test_attention_scale_by_d_v():
    assert_diagnosis(C.check_attention(lambda *a: student_attention(*a, scale="sqrt_dv")), "scale_by_d_v",
                     "sqrt(d_v)")


def test_attention_without_softmax():
    def no_softmax(q, k, v, allowed=None):
        return (q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])) @ v
    assert_diagnosis(C.check_attention(no_softmax), "no_softmax", "without a softmax")


def test_attention_no_max_subtraction():
    assert_diagnosis(C.check_attention(lambda *a: student_attention(*a, stable=False)), "no_max_subtraction",
                     "overflow")


def test_attention_mask_after_softmax():
    assert_diagnosis(C.check_attention(lambda *a: student_attention(*a, mask="after")), "mask_after_softmax",
                     "mask applied after the softmax")


def test_attention_mask_ignored():
    assert_diagnosis(C.check_attention(lambda *a: student_attention(*a, mask="ignore")), "mask_ignored",
                     "mask is ignored")


def test_attention_mask_inverted():
    assert_diagnosis(C.check_attention(lambda *a: student_attention(*a, mask="invert", guard=False)),
                     "mask_inverted", "polarity inverted")


def test_attention_boolean_mask_added_to_scores():
    assert_diagnosis(C.check_attention(lambda *a: student_attention(*a, mask="add")), "mask_added",
                     "added to the scores")


def test_attention_minus_1e9_filling_gives_uniform_rows():
    assert_diagnosis(C.check_attention(lambda *a: student_attention(*a, fill=-1e9, guard=False)),
                     "fill_minus_1e9", "-1e9 filling (uniform rows)")


def test_attention_unguarded_minus_inf_gives_nan():
    assert_diagnosis(C.check_attention(lambda *a: student_attention(*a, guard=False)), "nan_row", "nan")


def test_attention_zero_output_for_an_empty_row():
    def zeros(q, k, v, allowed=None):
        return np.nan_to_num(student_attention(q, k, v, allowed, guard=False))
    assert_diagnosis(C.check_attention(zeros), "zero_row", "zero output")


def test_attention_wrong_exception_type_for_an_empty_row():
    def asserts(q, k, v, allowed=None):
        if allowed is not None:
            assert np.broadcast_to(allowed, q.shape[:-1] + (k.shape[-2],)).any(-1).all(), "empty row"
        return student_attention(q, k, v, allowed)
    result = C.check_attention(asserts)
    assert not result.passed and "AssertionError" in result.message and "raise ValueError" in result.message


# ------------------------------------------------------------------------------------ mask builders


def test_causal_mask_reference_passes():
    def mine(T, S, offset):
        return np.arange(S)[None, :] <= offset + np.arange(T)[:, None]
    assert C.check_causal_mask(mine).passed
    assert C.check_causal_mask(lambda T, S, o: torch.ones(T, S, dtype=torch.bool).tril(o).numpy()).passed


def test_causal_mask_stub_not_attempted():
    assert_not_attempted(C.check_causal_mask(stub))


def test_causal_mask_top_left():
    assert_diagnosis(C.check_causal_mask(lambda T, S, o: np.tril(np.ones((T, S), dtype=bool))), "top_left",
                     "top-left causal alignment")


def test_causal_mask_always_bottom_right():
    assert_diagnosis(C.check_causal_mask(lambda T, S, o: np.tril(np.ones((T, S), dtype=bool), k=S - T)),
                     "always_bottom_right", "bottom-right")


def test_causal_mask_excluding_diagonal():
    assert_diagnosis(C.check_causal_mask(lambda T, S, o: np.tril(np.ones((T, S), dtype=bool), k=o - 1)),
                     "excludes_diagonal", "excluding the diagonal")


def test_causal_mask_inverted_polarity():
    assert_diagnosis(C.check_causal_mask(lambda T, S, o: ~np.tril(np.ones((T, S), dtype=bool), k=o)), "inverted",
                     "polarity inverted")


def test_causal_mask_upper_triangle_reads_future():
    assert_diagnosis(C.check_causal_mask(lambda T, S, o: np.triu(np.ones((T, S), dtype=bool), k=o)),
                     "reads_future", "future leakage")


def test_causal_mask_offset_wrong_sign():
    assert_diagnosis(C.check_causal_mask(lambda T, S, o: np.tril(np.ones((T, S), dtype=bool), k=-o)),
                     "offset_wrong_sign", "wrong sign")


def test_causal_mask_additive_form_is_explained():
    def additive(T, S, o):
        return np.where(np.tril(np.ones((T, S), dtype=bool), k=o), 0.0, -np.inf)
    assert_diagnosis(C.check_causal_mask(additive), "additive", "additive mask")


def test_causal_mask_integer_dtype_is_explained():
    assert_diagnosis(C.check_causal_mask(lambda T, S, o: np.tril(np.ones((T, S), dtype=int), k=o)),
                     "not_boolean", "boolean")


def test_padding_mask_reference_passes():
    assert C.check_padding_mask(lambda L, S: (np.arange(S) < np.asarray(L)[:, None])[:, None, :]).passed


def test_padding_mask_stub_not_attempted():
    assert_not_attempted(C.check_padding_mask(stub))


def test_padding_mask_off_by_one():
    assert_diagnosis(C.check_padding_mask(lambda L, S: (np.arange(S) <= np.asarray(L)[:, None])[:, None, :]),
                     "off_by_one", "off by one")


def test_padding_mask_inverted():
    assert_diagnosis(C.check_padding_mask(lambda L, S: (np.arange(S) >= np.asarray(L)[:, None])[:, None, :]),
                     "inverted", "polarity inverted")


def test_padding_mask_left_aligned():
    assert_diagnosis(C.check_padding_mask(lambda L, S: (np.arange(S) >= S - np.asarray(L)[:, None])[:, None, :]),
                     "left_aligned", "on the left")


def test_padding_mask_without_query_axis_gets_a_shape_hint():
    result = C.check_padding_mask(lambda L, S: np.arange(S) < np.asarray(L)[:, None])
    assert not result.passed and "(B, 1, S)" in result.message and "broadcasts over the T queries" in result.message


def test_padding_mask_additive_form_is_explained():
    def additive(L, S):
        real = (np.arange(S) < np.asarray(L)[:, None])[:, None, :]
        return np.where(real, 0.0, -np.inf)
    assert_diagnosis(C.check_padding_mask(additive), "additive", "additive mask")


def test_padding_mask_integer_dtype_is_explained():
    result = C.check_padding_mask(lambda L, S: (np.arange(S) < np.asarray(L)[:, None])[:, None, :].astype(np.int8))
    assert_diagnosis(result, "not_boolean", "boolean")


def test_document_mask_reference_passes():
    assert C.check_document_mask(lambda ids: np.asarray(ids)[..., :, None] == np.asarray(ids)[..., None, :]).passed


def test_document_mask_stub_not_attempted():
    assert_not_attempted(C.check_document_mask(stub))


def test_document_mask_additive_form_is_explained():
    def additive(ids):
        return np.where(ids[..., :, None] == ids[..., None, :], 0.0, -np.inf)
    assert_diagnosis(C.check_document_mask(additive), "additive", "additive mask")


def test_document_mask_integer_dtype_is_explained():
    assert_diagnosis(C.check_document_mask(lambda ids: (ids[..., :, None] == ids[..., None, :]).astype(int)),
                     "not_boolean", "boolean")


def test_document_mask_with_causal_triangle():
    def with_causal(ids):
        same = ids[..., :, None] == ids[..., None, :]
        return same & np.tril(np.ones(same.shape[-2:], dtype=bool))
    assert_diagnosis(C.check_document_mask(with_causal), "with_causal", "causal triangle")


def test_document_mask_inverted():
    assert_diagnosis(C.check_document_mask(lambda ids: ids[..., :, None] != ids[..., None, :]), "inverted",
                     "polarity inverted")


def test_document_mask_reads_earlier_documents():
    assert_diagnosis(C.check_document_mask(lambda ids: ids[..., :, None] >= ids[..., None, :]),
                     "reads_earlier_documents", "earlier document")


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
    if dropout is not None:
        weights = dropout(weights)
    return weights @ value, weights


def test_causal_attention_reference_passes():
    assert C.check_causal_attention(causal).passed


def test_causal_attention_sdpa_with_lower_right_bias_passes():
    from torch.nn.attention.bias import causal_lower_right

    def via_sdpa(query, key, value, query_offset=0):
        T, S = query.shape[-2], key.shape[-2]
        if query_offset == S - T:
            return F.scaled_dot_product_attention(query, key, value, attn_mask=causal_lower_right(T, S))
        allowed = torch.arange(S)[None, :] <= query_offset + torch.arange(T)[:, None]
        return F.scaled_dot_product_attention(query, key, value, attn_mask=allowed)
    assert C.check_causal_attention(via_sdpa).passed


def test_causal_attention_stub_not_attempted():
    assert_not_attempted(C.check_causal_attention(stub))


def test_causal_attention_without_query_offset_parameter():
    result = C.check_causal_attention(lambda query, key, value: causal(query, key, value)[0])
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
    assert_diagnosis(C.check_causal_attention(lambda *a, **kw: causal(*a, **kw, rule="none")), "future_leakage",
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
    def sneaky(query, key, value, query_offset=0):
        out, w = causal(query, key, value, query_offset)
        return out + 0.0 * key.sum() + (key[..., -1:, :1].sum() - key[..., -1:, :1].sum().detach()) \
            + 1e-3 * (key.abs().max() > 5).float()
    assert_diagnosis(C.check_causal_attention(sneaky), "future_leakage", "changed when only keys and values")


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


# ------------------------------------------------------------------------------------ softmax backward


def test_softmax_backward_reference_passes():
    def mine(a, g):
        return a * (g - np.sum(a * g, axis=-1, keepdims=True))

    def autograd(a, g):
        x = torch.log(torch.from_numpy(a)).requires_grad_()
        torch.softmax(x, -1).backward(torch.from_numpy(g))
        return x.grad.numpy()
    assert C.check_softmax_backward(mine).passed
    assert C.check_softmax_backward(autograd).passed


def test_softmax_backward_stub_not_attempted():
    assert_not_attempted(C.check_softmax_backward(stub))


def test_softmax_backward_without_row_mean():
    assert_diagnosis(C.check_softmax_backward(lambda a, g: a * g), "no_row_mean", "missing the row-mean term")


def test_softmax_backward_unweighted_mean():
    assert_diagnosis(C.check_softmax_backward(lambda a, g: a * (g - g.mean(-1, keepdims=True))), "unweighted_mean",
                     "weighted by a")


def test_softmax_backward_mean_over_wrong_axis():
    assert_diagnosis(C.check_softmax_backward(lambda a, g: a * (g - (a * g).sum(0, keepdims=True))),
                     "mean_wrong_axis", "wrong axis")


def test_softmax_backward_without_leading_a():
    assert_diagnosis(C.check_softmax_backward(lambda a, g: g - (a * g).sum(-1, keepdims=True)), "no_leading_a",
                     "leading factor a")


def test_softmax_backward_sum_without_keepdims():
    assert_diagnosis(C.check_softmax_backward(lambda a, g: a * (g - (a * g).sum(-1))), "sum_without_keepdims",
                     "keepdims")


def test_softmax_backward_sign_flipped():
    assert_diagnosis(C.check_softmax_backward(lambda a, g: a * ((a * g).sum(-1, keepdims=True) - g)), "sign",
                     "sign is flipped")


# ------------------------------------------------------------------------------------ attention backward


def student_backward(q, k, v, g, *, row_mean="weighted", dv_t=True, dk_t=True, dq_t=False, dk_uses="q",
                     scale_q=True, scale_k=True):
    """A student's attention backward with knobs; the defaults are right."""
    c = 1 / math.sqrt(q.shape[-1])
    kt = np.swapaxes(k, -1, -2)
    a = np_softmax(q @ kt * c)
    at = np.swapaxes(a, -1, -2)
    dv = at @ g if dv_t else a @ g
    da = g @ np.swapaxes(v, -1, -2)
    if row_mean == "weighted":
        ds = a * (da - np.sum(a * da, axis=-1, keepdims=True))
    elif row_mean == "plain":
        ds = a * (da - da.mean(axis=-1, keepdims=True))
    elif row_mean == "none":
        ds = a * da
    else:
        ds = da
    dst = np.swapaxes(ds, -1, -2)
    dq = (dst if dq_t else ds) @ k
    dk = (dst if dk_t else ds) @ (q if dk_uses == "q" else k)
    return dq * (c if scale_q else 1.0), dk * (c if scale_k else 1.0), dv


def autograd_backward(q, k, v, g):
    q, k, v = (torch.from_numpy(t).requires_grad_() for t in (q, k, v))
    F.scaled_dot_product_attention(q, k, v).backward(torch.from_numpy(g))
    return q.grad.numpy(), k.grad.numpy(), v.grad.numpy()


def test_attention_backward_reference_passes():
    assert C.check_attention_backward(al.grad.attention_backward).passed
    assert C.check_attention_backward(student_backward).passed
    assert C.check_attention_backward(autograd_backward).passed


def test_attention_backward_stub_not_attempted():
    assert_not_attempted(C.check_attention_backward(stub))


def test_attention_backward_wrong_return_is_a_message():
    result = C.check_attention_backward(lambda q, k, v, g: student_backward(q, k, v, g)[:2])
    assert not result.passed and "(dq, dk, dv)" in result.message


def test_attention_backward_without_row_mean():
    result = C.check_attention_backward(lambda *a: student_backward(*a, row_mean="none"))
    assert_diagnosis(result, "no_row_mean", "missing the row-mean term")
    assert "dq:" in result.message and "dk:" in result.message and "dv:" not in result.message


def test_attention_backward_unweighted_row_mean():
    assert_diagnosis(C.check_attention_backward(lambda *a: student_backward(*a, row_mean="plain")),
                     "unweighted_mean", "weighted by A")


def test_attention_backward_softmax_as_identity():
    assert_diagnosis(C.check_attention_backward(lambda *a: student_backward(*a, row_mean="identity")),
                     "softmax_as_identity", "Jacobian is missing")


def test_attention_backward_untransposed_dv():
    assert_diagnosis(C.check_attention_backward(lambda *a: student_backward(*a, dv_t=False)), "dv_untransposed",
                     "untransposed dV")


def test_attention_backward_untransposed_dk():
    assert_diagnosis(C.check_attention_backward(lambda *a: student_backward(*a, dk_t=False)), "dk_untransposed",
                     "untransposed dK")


def test_attention_backward_dq_with_transposed_ds():
    assert_diagnosis(C.check_attention_backward(lambda *a: student_backward(*a, dq_t=True)), "dq_transposed_ds",
                     "not dS^T K")


def test_attention_backward_dk_from_keys():
    assert_diagnosis(C.check_attention_backward(lambda *a: student_backward(*a, dk_uses="k")), "dk_from_k",
                     "uses the queries")


def test_attention_backward_missing_scale_in_dq_and_dk():
    result = C.check_attention_backward(lambda *a: student_backward(*a, scale_q=False, scale_k=False))
    assert_diagnosis(result, "no_scale", "missing the 1/sqrt(d_k) in dQ and dK")
    assert "dq:" in result.message and "dk:" in result.message


def test_attention_backward_missing_scale_in_dq_only():
    result = C.check_attention_backward(lambda *a: student_backward(*a, scale_q=False))
    assert_diagnosis(result, "no_scale", "dq: missing the 1/sqrt(d_k)")
    assert "dk:" not in result.message


def test_attention_backward_missing_scale_in_dk_only():
    result = C.check_attention_backward(lambda *a: student_backward(*a, scale_k=False))
    assert_diagnosis(result, "no_scale", "dk: missing the 1/sqrt(d_k)")
    assert "dq:" not in result.message


def test_attention_backward_matmul_error_gets_the_shapes_to_aim_for():
    def untransposed_v(q, k, v, g):
        a = np_softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]))
        da = g @ v                                     # should be g @ v^T
        return a, a, da
    result = C.check_attention_backward(untransposed_v)
    assert not result.passed and "raised ValueError" in result.message and "dA = G V^T is (T, S)" in result.message


# ------------------------------------------------------------------------------------ heads


def split(x, n_heads):
    B, T, D = x.shape
    return x.view(B, T, n_heads, D // n_heads).transpose(1, 2)


def merge(x):
    B, H, T, d = x.shape
    return x.transpose(1, 2).reshape(B, T, H * d)


def test_split_and_merge_reference_pass():
    assert C.check_split_heads(split).passed
    assert C.check_merge_heads(merge).passed
    x = torch.randn(2, 3, 12)
    assert torch.equal(merge(split(x, 4)), x)


def test_split_heads_stub_not_attempted():
    assert_not_attempted(C.check_split_heads(stub))
    assert_not_attempted(C.check_merge_heads(stub))


def test_split_heads_reshape_without_transpose():
    assert_diagnosis(C.check_split_heads(lambda x, H: x.reshape(x.shape[0], H, x.shape[1], -1)),
                     "reshape_without_transpose", "mixes positions and heads")


def test_split_heads_interleaved():
    assert_diagnosis(C.check_split_heads(lambda x, H: x.reshape(x.shape[0], x.shape[1], -1, H).permute(0, 3, 1, 2)),
                     "interleaved", "interleaved")


def test_split_heads_missing_transpose_shape_hint():
    result = C.check_split_heads(lambda x, H: x.reshape(x.shape[0], x.shape[1], H, -1))
    assert not result.passed and "transpose(1, 2)" in result.message


def test_merge_heads_reshape_without_transpose():
    assert_diagnosis(C.check_merge_heads(lambda x: x.reshape(x.shape[0], x.shape[2], -1)),
                     "reshape_without_transpose", "mixes positions and heads")


def test_merge_heads_interleaved():
    assert_diagnosis(C.check_merge_heads(lambda x: x.permute(0, 2, 3, 1).reshape(x.shape[0], x.shape[2], -1)),
                     "interleaved", "interleaved")


def test_merge_heads_view_after_transpose_gets_a_hint():
    result = C.check_merge_heads(lambda x: x.transpose(1, 2).view(x.shape[0], x.shape[2], -1))
    assert not result.passed and "contiguous" in result.message


def test_kv_head_map_reference_passes():
    assert C.check_kv_head_map(lambda H, Hkv: [h // (H // Hkv) for h in range(H)]).passed
    assert C.check_kv_head_map(lambda H, Hkv: np.arange(H) * Hkv // H).passed


def test_kv_head_map_modulo():
    assert_diagnosis(C.check_kv_head_map(lambda H, Hkv: [h % Hkv for h in range(H)]), "modulo",
                     "repeat instead of repeat_interleave")


def test_kv_head_map_divided_by_kv_heads():
    assert_diagnosis(C.check_kv_head_map(lambda H, Hkv: [h // Hkv for h in range(H)]), "divide_by_kv_heads",
                     "group size")


def gqa(q, k, v):
    r = q.shape[-3] // k.shape[-3]
    k, v = k.repeat_interleave(r, dim=-3), v.repeat_interleave(r, dim=-3)
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    return w @ v


def test_gqa_reference_passes():
    assert C.check_gqa_attention(gqa).passed
    assert C.check_gqa_attention(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)).passed


def test_gqa_stub_not_attempted():
    assert_not_attempted(C.check_gqa_attention(stub))


def test_gqa_repeat_instead_of_repeat_interleave():
    def tiled(q, k, v):
        r = q.shape[-3] // k.shape[-3]
        return F.scaled_dot_product_attention(q, k.repeat(1, r, 1, 1), v.repeat(1, r, 1, 1))
    assert_diagnosis(C.check_gqa_attention(tiled), "repeat_not_interleave", "repeat instead of repeat_interleave")


def test_gqa_missing_scale():
    def unscaled(q, k, v):
        r = q.shape[-3] // k.shape[-3]
        return F.scaled_dot_product_attention(q, k.repeat_interleave(r, -3), v.repeat_interleave(r, -3), scale=1.0)
    assert_diagnosis(C.check_gqa_attention(unscaled), "no_scale", "missing scaling")


def test_gqa_without_expanding_kv_gets_a_hint():
    result = C.check_gqa_attention(lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1), -1) @ v)
    assert not result.passed and "repeat_interleave" in result.message


def mha_by_hand(x, mha, *, transpose=True, in_bias=True, out_bias=True, scale=True, out_proj=True,
                split_right=True):
    """A student's hand-written nn.MultiheadAttention forward with knobs; the defaults are right."""
    B, T, d = x.shape
    H = mha.num_heads
    ws = mha.in_proj_weight.chunk(3)
    bs = mha.in_proj_bias.chunk(3) if in_bias else (0.0, 0.0, 0.0)
    q, k, v = ((x @ (w.T if transpose else w)) + b for w, b in zip(ws, bs))
    heads = (lambda t: split(t, H)) if split_right else (lambda t: t.reshape(B, H, T, d // H))
    q, k, v = heads(q), heads(k), heads(v)
    a = torch.softmax(q @ k.transpose(-2, -1) / (math.sqrt(d // H) if scale else 1.0), dim=-1)
    o = merge(a @ v)
    if not out_proj:
        return o
    wo = mha.out_proj.weight.T if transpose else mha.out_proj.weight
    return o @ wo + (mha.out_proj.bias if out_bias else 0.0)


def test_mha_from_torch_reference_passes():
    assert C.check_mha_from_torch(mha_by_hand).passed
    assert C.check_mha_from_torch(lambda x, m: m(x, x, x, need_weights=False)[0]).passed


def test_mha_from_torch_stub_not_attempted():
    assert_not_attempted(C.check_mha_from_torch(stub))


def test_mha_from_torch_untransposed_weights():
    assert_diagnosis(C.check_mha_from_torch(lambda x, m: mha_by_hand(x, m, transpose=False)),
                     "untransposed_weights", "(out_features, in_features)")


def test_mha_from_torch_missing_input_bias():
    assert_diagnosis(C.check_mha_from_torch(lambda x, m: mha_by_hand(x, m, in_bias=False)), "missing_in_bias",
                     "in_proj_bias")


def test_mha_from_torch_missing_output_bias():
    assert_diagnosis(C.check_mha_from_torch(lambda x, m: mha_by_hand(x, m, out_bias=False)), "missing_out_bias",
                     "out_proj.bias")


def test_mha_from_torch_split_without_transpose():
    assert_diagnosis(C.check_mha_from_torch(lambda x, m: mha_by_hand(x, m, split_right=False)),
                     "reshape_without_transpose", "mixes positions and heads")


def test_mha_from_torch_missing_scale():
    assert_diagnosis(C.check_mha_from_torch(lambda x, m: mha_by_hand(x, m, scale=False)), "no_scale",
                     "head width")


def test_mha_from_torch_missing_output_projection():
    assert_diagnosis(C.check_mha_from_torch(lambda x, m: mha_by_hand(x, m, out_proj=False)),
                     "no_output_projection", "output projection is missing")


# ------------------------------------------------------------------------------------ chunked attention


def online(q, k, v, block_size, *, rescale_out=True, rescale_sum=True, use_max=True, divide=True):
    """A student's online-softmax loop with knobs; the defaults are right."""
    T = q.shape[0]
    m = np.full(T, -np.inf)
    total = np.zeros(T)
    out = np.zeros((T, v.shape[1]))
    for start in range(0, k.shape[0], block_size):
        kb, vb = k[start:start + block_size], v[start:start + block_size]
        s = q @ kb.T / math.sqrt(q.shape[1])
        new_m = np.maximum(m, s.max(axis=1)) if use_max else np.zeros(T)
        corr = np.exp(m - new_m) if use_max else np.ones(T)
        p = np.exp(s - new_m[:, None])
        total = (total * corr if rescale_sum else total) + p.sum(axis=1)
        out = (out * corr[:, None] if rescale_out else out) + p @ vb
        m = new_m
    return out / total[:, None] if divide else out


def test_chunked_reference_passes():
    assert C.check_chunked_attention(online).passed


def test_chunked_stub_not_attempted():
    assert_not_attempted(C.check_chunked_attention(stub))


def test_chunked_without_rescaling():
    assert_diagnosis(C.check_chunked_attention(lambda *a: online(*a, rescale_out=False, rescale_sum=False)),
                     "no_rescale", "no rescaling when the running maximum grows")


def test_chunked_rescales_sum_only():
    assert_diagnosis(C.check_chunked_attention(lambda *a: online(*a, rescale_out=False)), "rescale_sum_only",
                     "not the running output")


def test_chunked_rescales_output_only():
    assert_diagnosis(C.check_chunked_attention(lambda *a: online(*a, rescale_sum=False)), "rescale_output_only",
                     "not the running sum")


def test_chunked_without_running_max():
    assert_diagnosis(C.check_chunked_attention(lambda *a: online(*a, use_max=False)), "no_max_subtraction",
                     "overflow")


def test_chunked_without_final_division():
    assert_diagnosis(C.check_chunked_attention(lambda *a: online(*a, divide=False)), "no_final_division",
                     "final division")


def test_chunked_average_of_block_softmaxes():
    def averaged(q, k, v, block_size):
        outs = []
        for start in range(0, k.shape[0], block_size):
            s = q @ k[start:start + block_size].T / math.sqrt(q.shape[1])
            outs.append(np_softmax(s) @ v[start:start + block_size])
        return sum(outs) / len(outs)
    assert_diagnosis(C.check_chunked_attention(averaged), "average_of_blocks", "averaged the block outputs")


# ------------------------------------------------------------------------------------ KV-cache bytes


def test_kv_cache_bytes_reference_passes():
    assert C.check_kv_cache_bytes(lambda b, s, L, H, Hkv, d, n: 2 * b * s * L * Hkv * d * n).passed


def test_kv_cache_bytes_stub_not_attempted():
    assert_not_attempted(C.check_kv_cache_bytes(stub))


def test_kv_cache_bytes_without_factor_two():
    assert_diagnosis(C.check_kv_cache_bytes(lambda b, s, L, H, Hkv, d, n: b * s * L * Hkv * d * n), "no_factor_two",
                     "keys AND values")


def test_kv_cache_bytes_with_query_heads():
    assert_diagnosis(C.check_kv_cache_bytes(lambda b, s, L, H, Hkv, d, n: 2 * b * s * L * H * d * n), "query_heads",
                     "query heads")


def test_kv_cache_bytes_in_bits():
    assert_diagnosis(C.check_kv_cache_bytes(lambda b, s, L, H, Hkv, d, n: 16 * b * s * L * Hkv * d * n), "bits",
                     "bits")


def test_kv_cache_bytes_one_layer():
    assert_diagnosis(C.check_kv_cache_bytes(lambda b, s, L, H, Hkv, d, n: 2 * b * s * Hkv * d * n), "one_layer",
                     "layers")


def test_kv_cache_bytes_one_sequence():
    assert_diagnosis(C.check_kv_cache_bytes(lambda b, s, L, H, Hkv, d, n: 2 * s * L * Hkv * d * n), "one_sequence",
                     "batch size")


# ------------------------------------------------------------------------------------ structure


def equivariance_test(f, x, rng):
    for _ in range(5):
        perm = rng.permutation(x.shape[0])
        if not np.allclose(f(x[perm]), f(x)[perm]):
            return False
    return True


def test_equivariance_test_reference_passes():
    assert C.check_equivariance_test(equivariance_test).passed


def test_equivariance_test_stub_not_attempted():
    assert_not_attempted(C.check_equivariance_test(stub))


def test_equivariance_test_checking_invariance():
    def invariance(f, x, rng):
        perm = rng.permutation(x.shape[0])
        return bool(np.allclose(f(x[perm]), f(x)))
    assert_diagnosis(C.check_equivariance_test(invariance), "invariance", "checks invariance")


def test_equivariance_test_inverse_permutation():
    def inverse(f, x, rng):
        perm = np.roll(np.arange(x.shape[0]), 1)   # a cycle: not its own inverse
        return bool(np.allclose(f(x[perm]), f(x)[np.argsort(perm)]))
    assert_diagnosis(C.check_equivariance_test(inverse), "inverse_permutation", "inverse permutation")


def test_equivariance_test_returning_an_array_is_a_message():
    result = C.check_equivariance_test(lambda f, x, rng: np.isclose(f(x), f(x)))
    assert not result.passed and "True or False" in result.message


def test_permute_mask_reference_passes():
    assert C.check_permute_mask(lambda m, p: m[p][:, p]).passed


def test_permute_mask_stub_not_attempted():
    assert_not_attempted(C.check_permute_mask(stub))


def test_permute_mask_rows_only():
    assert_diagnosis(C.check_permute_mask(lambda m, p: m[p]), "rows_only", "only the rows")


def test_permute_mask_columns_only():
    assert_diagnosis(C.check_permute_mask(lambda m, p: m[:, p]), "columns_only", "only the columns")


def test_permute_mask_inverse_permutation():
    def inverse(m, p):
        inv = np.empty_like(p)
        inv[p] = np.arange(len(p))
        return m[inv][:, inv]
    assert_diagnosis(C.check_permute_mask(inverse), "inverse_permutation", "inverse permutation")


def test_permute_mask_unchanged():
    assert_diagnosis(C.check_permute_mask(lambda m, p: m.copy()), "unchanged", "did not move")


# ------------------------------------------------------------------------------------ numeric answers

E = math.e
C2 = 1 / math.sqrt(2)
ALPHA = 1 / (1 + math.exp(C2))


def exact_softmax(row):
    e = [math.exp(x) for x in row]
    return [x / sum(e) for x in e]


# Every answer recomputed here by hand, independently of the package's fingerprints.
R53 = math.exp(C2) / (2 * math.exp(C2) + 1)
S53 = 1 / (2 * math.exp(C2) + 1)
W4 = exact_softmax([2 * C2, C2, C2, C2])
ANSWERS = {
    "qkv.shapes": [[5, 7], [5, 7], [5, 3]],
    "qkv.transpose_trap": [[1 * 1 + 2 * 0, 1 * 2 + 2 * 1], [0, 1]],
    "scaling.var_unscaled": 64 * 4 * 4,
    "scaling.var_scaled": 4 * 4,
    "scaling.std_unscaled_64": math.sqrt(64),
    "scaling.dropout_rowsum_var": (1 - 0.9) / 0.9 * (0.25 + 0.09 + 0.04),
    "masks.keys_visible_5_6": len(range(0, 9)),
    "masks.keys_lost_top_left": 8,
    "worked.padding_example": [math.exp(3) / (math.exp(3) + math.exp(0.5)),
                              math.exp(0.5) / (math.exp(3) + math.exp(0.5)), 0, 0],
    "worked.weights_5_3": [R53, S53, R53],
    "worked.output_5_3": [2 * R53, 2 * S53 + 2 * R53],
    "worked.output_5_3_v3_zero": [R53, 2 * S53],
    "worked.four_token_output0": [W4[0] + W4[2] + 0.5 * W4[3], W4[1] + W4[2] + 0.5 * W4[3]],
    "worked.cross_attention": [[1, 2], [1.5, 1], [0.5, 3]],
    "backprop.dk1_5_5": [0, ALPHA * (1 - ALPHA) / math.sqrt(2)],
    "backprop.probe_J": 15 / 2,
    "backprop.dS": [[3 / 8, -3 / 8], [-3 / 2, 3 / 2]],
    "multihead.params_h8": 4 * 512 ** 2,
    "multihead.params_h64": 4 * 512 ** 2,
    "multihead.kv_ratio_5_11": 8 / 32,
    "multihead.scores_ratio_5_11": 1,
    "multihead.gpt2_head_dim": 768 // 12,
    "cost.kv_bytes_5_7": 3 * 1024 * 1024,
    "cost.kv_ratio_5_7": 6 / 24,
    "cost.attn_bytes_2k": 8 * 1024 ** 2,
    "cost.attn_bytes_8k": 128 * 1024 ** 2,
    "cost.weights_bytes_5_35": 1024 ** 3,
    "cost.flops_interaction": 2 * (2 * 12 * 1024 * 1024 * 64),
    "structure.outputs_5_8": [0.5, E / (1 + E)],
}


def test_every_registered_answer_is_recomputed_here():
    from attnlab.checks.answers import ANSWERS as REGISTRY
    from_the_model = {"pretrained.max_special_share"}     # recomputed in tests/checks/test_pretrained.py
    assert set(REGISTRY) == set(ANSWERS) | from_the_model


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_answer_accepts_the_independently_computed_value(name):
    result = C.check_answer(name, ANSWERS[name])
    assert result.passed, result


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_answer_rejects_a_wrong_value(name):
    wrong = np.asarray(ANSWERS[name], dtype=float) * 1.01 + 0.5
    result = C.check_answer(name, wrong)
    assert not result.passed and result.status == "failed", result


def test_answer_placeholder_is_not_attempted():
    result = C.check_answer("cost.kv_bytes_5_7", ...)
    assert result.status == "not attempted yet" and "Replace `...`" in result.message


def test_answer_known_wrong_value_gets_its_hint():
    result = C.check_answer("cost.kv_bytes_5_7", 2 * 2048 * 24 * 64 * 2)
    assert result.mistake == "known_wrong_answer" and "MHA" in result.message
    result = C.check_answer("qkv.transpose_trap", [[5, 2], [2, 1]])
    assert "transpose trap" in result.message


def test_answer_tolerates_rounding_to_four_digits_only():
    assert C.check_answer("backprop.dk1_5_5", [0, 0.1564]).passed
    assert not C.check_answer("backprop.dk1_5_5", [0, 0.156]).passed


def test_answer_accepts_fractions_and_sympy_numbers():
    import fractions

    import sympy
    assert C.check_answer("backprop.probe_J", fractions.Fraction(15, 2)).passed
    assert C.check_answer("backprop.probe_J", sympy.Rational(15, 2)).passed
    assert C.check_answer("structure.outputs_5_8", [sympy.Rational(1, 2), sympy.E / (1 + sympy.E)]).passed


def test_answer_wrong_shape_and_unknown_name_are_messages():
    assert "shape" in C.check_answer("backprop.dk1_5_5", 0.15).message
    result = C.check_answer("backprop.nonexistent", 1)
    assert not result.passed and "backprop.dk1_5_5" in result.message


def test_answer_integers_must_be_exact():
    assert not C.check_answer("cost.kv_bytes_5_7", 3 * 1024 * 1024 + 0.5).passed


def test_answers_are_not_stored_in_plain_text():
    import inspect

    from attnlab.checks import answers
    source = inspect.getsource(answers)
    for value in ("3145728", "1048576", "0.1563", "0.4011", "134217728"):
        assert value not in source


# ------------------------------------------------------------------------------------ catalogue coverage


def test_every_catalogued_mistake_has_its_own_test():
    """Each (checker, mistake) pair of the catalogue is asserted by a test in this file or tests/checks/."""
    import ast
    import pathlib

    from attnlab.checks.catalogue import CATALOGUE, mistake_names
    here = pathlib.Path(__file__)
    nodes = [node for path in [here, *sorted((here.parent / "checks").glob("test_*.py"))]
             for node in ast.parse(path.read_text()).body]
    covered = set()
    for node in nodes:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            checkers = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and n.attr.startswith("check_")}
            strings = {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
            covered |= {(c, s) for c in checkers for s in strings}
    missing = [(c, m) for c in CATALOGUE for m in mistake_names(c) if (c, m) not in covered]
    assert not missing, missing


def test_catalogue_lists_every_checker():
    from attnlab.checks.catalogue import CATALOGUE
    public = [name for name in C.__all__ if name.startswith("check_")]
    assert sorted(public) == sorted(CATALOGUE)
