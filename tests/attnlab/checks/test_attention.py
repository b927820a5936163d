"""Scores and attention checkers: the reference passes, stubs are not attempted, each mistake is named.

Every "student" function is written independently, the way a student would write the mistake,
not taken from the package's mistake models; each test asserts the diagnosis it gets.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F

import attnlab as al
from attnlab import checks as C

from .support import assert_diagnosis, assert_not_attempted, stub

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


# ------------------------------------------------------------------------------------ new wrong implementations


def test_scores_with_k_dot_T_on_batches():
    """`k.T` reverses every axis of a batched array: a shape error with the transpose hint."""
    result = C.check_scores(lambda q, k: q @ k.T)
    assert not result.passed and "np.swapaxes" in result.message


def test_scores_scaled_by_d_k_is_not_raw():
    result = C.check_scores(lambda q, k: q @ np.swapaxes(k, -1, -2) / q.shape[-1])
    assert not result.passed and result.status == "failed" and "differs from the reference" in result.message


def test_scores_as_float32():
    assert_diagnosis(C.check_scores(lambda q, k: (q @ np.swapaxes(k, -1, -2)).astype(np.float32)), "not_float64",
                     "float32")


def test_attention_empty_row_uniform_by_design_gets_no_error():
    """A function that returns something for an empty row that matches no model: told to raise."""
    def ones_for_empty(q, k, v, allowed=None):
        out = student_attention(q, k, v, allowed) if allowed is None or allowed.any(-1).all() else None
        return np.ones(q.shape[:-1] + (v.shape[-1],)) if out is None else out
    assert_diagnosis(C.check_attention(ones_for_empty), "empty_row_accepted", "must raise ValueError")


def test_sdpa_wrapper_returning_a_tensor_is_refused():
    def tensor_out(q, k, v, allowed=None):
        if allowed is not None and not np.broadcast_to(allowed, q.shape[:-1] + (k.shape[-2],)).any(-1).all():
            raise ValueError("empty row")
        mask = None if allowed is None else torch.from_numpy(np.asarray(allowed))
        return F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)), attn_mask=mask)
    assert_diagnosis(C.check_attention(tensor_out), "wrong_type", "`.detach().numpy()`")


def test_sdpa_wrapper_in_float32_is_refused():
    def float32(q, k, v, allowed=None):
        if allowed is not None and not np.broadcast_to(allowed, q.shape[:-1] + (k.shape[-2],)).any(-1).all():
            raise ValueError("empty row")
        mask = None if allowed is None else torch.from_numpy(np.asarray(allowed))
        t = [torch.tensor(a, dtype=torch.float32) for a in (q, k, v)]
        return F.scaled_dot_product_attention(*t, attn_mask=mask).numpy()
    assert_diagnosis(C.check_attention(float32), "not_float64", "your result is float32; compute in float64")


def test_sdpa_wrapper_with_inverted_polarity():
    """nn.MultiheadAttention's convention (True = masked) passed to SDPA."""
    def inverted(q, k, v, allowed=None):
        if allowed is not None and not np.broadcast_to(allowed, q.shape[:-1] + (k.shape[-2],)).any(-1).all():
            raise ValueError("empty row")
        mask = None if allowed is None else torch.from_numpy(~np.asarray(allowed))
        return F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)), attn_mask=mask).numpy()
    assert_diagnosis(C.check_attention(inverted), "mask_inverted", "polarity inverted")


def test_attention_with_a_float_mask_multiplied_in():
    """Multiplying the scores by the mask (forbidden scores become 0, not -inf)."""
    def multiplied(q, k, v, allowed=None):
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        if allowed is not None:
            if not np.broadcast_to(allowed, s.shape).any(-1).all():
                raise ValueError("empty row")
            s = s * allowed
        return np_softmax(s) @ v
    assert_diagnosis(C.check_attention(multiplied), "mask_multiplied", "multiplied into the scores")


def test_attention_through_the_package_reference_is_named_as_a_forbidden_call():
    """The sheets ask for attention written by hand: calling attnlab's reference is named, not passed."""
    assert_diagnosis(C.check_attention(al.attention), "forbidden_call", "`attnlab.reference.attention`")

    def via_al(q, k, v, allowed=None):
        return al.attention(q, k, v, allowed=allowed)
    assert_diagnosis(C.check_attention(via_al, masks_too=False), "forbidden_call", "write the computation yourself")
