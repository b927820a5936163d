"""Softmax and attention backward checkers: each mistake is named, gradient by gradient.

Every "student" function is written independently, the way a student would write the mistake,
not taken from the package's mistake models; each test asserts the diagnosis it gets.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F

import attnlab as al
from attnlab import checks as C

from .support import assert_diagnosis, assert_not_attempted, np_softmax, stub

# ------------------------------------------------------------------------------------ softmax backward


def hand_backward(q, k, v, g):
    """A student's attention backward, written from the formulas."""
    c = 1 / math.sqrt(q.shape[-1])
    a = np_softmax(q @ np.swapaxes(k, -1, -2) * c)
    da = g @ np.swapaxes(v, -1, -2)
    du = a * (da - (a * da).sum(-1, keepdims=True))
    return du @ k * c, np.swapaxes(du, -1, -2) @ q * c, np.swapaxes(a, -1, -2) @ g


def test_softmax_backward_reference_passes():
    def mine(a, g):
        return a * (g - np.sum(a * g, axis=-1, keepdims=True))

    def autograd(a, g):
        x = torch.log(torch.from_numpy(a)).requires_grad_()
        torch.softmax(x, -1).backward(torch.from_numpy(g))
        return x.grad.numpy()
    assert C.check_softmax_backward(mine).passed
    assert_diagnosis(C.check_softmax_backward(autograd), "forbidden_call", "`torch.Tensor.backward`")


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
    assert C.check_attention_backward(hand_backward).passed
    assert_diagnosis(C.check_attention_backward(al.grad.attention_backward), "forbidden_call",
                     "`attnlab.grad.attention_backward`")
    assert C.check_attention_backward(student_backward).passed
    assert_diagnosis(C.check_attention_backward(autograd_backward), "forbidden_call", "torch.Tensor.backward")


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
                     "not dU^T K")


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


# ------------------------------------------------------------------------------------ new wrong implementations


def test_softmax_backward_as_the_jacobian_diagonal_only():
    """Only the diagonal of diag(a) - a a^T: a (1 - a) g."""
    result = C.check_softmax_backward(lambda a, g: a * (1 - a) * g)
    assert not result.passed and "differs from the reference" in result.message, result


def test_softmax_backward_with_the_full_jacobian_transposed_on_batches():
    """Uses the Jacobian of the first row for every row of a batch."""
    def first_row_jacobian(a, g):
        a2 = a.reshape(-1, a.shape[-1])
        J = np.diag(a2[0]) - np.outer(a2[0], a2[0])
        return (g.reshape(-1, a.shape[-1]) @ J).reshape(a.shape)
    result = C.check_softmax_backward(first_row_jacobian)
    assert not result.passed and "a square 4 x 4 batch of rows" in result.message


def test_softmax_backward_in_float32():
    def float32(a, g):
        a, g = a.astype(np.float32), g.astype(np.float32)
        return a * (g - (a * g).sum(-1, keepdims=True))
    assert_diagnosis(C.check_softmax_backward(float32), "not_float64", "float32")


def test_attention_backward_returning_a_list_of_two():
    result = C.check_attention_backward(lambda q, k, v, g: [q, k])
    assert_diagnosis(result, "not_a_triple", "(dq, dk, dv)")


def test_attention_backward_via_autograd_is_named_as_a_forbidden_call():
    def autograd(q, k, v, g):
        tq, tk, tv = (torch.from_numpy(a).requires_grad_() for a in (q, k, v))
        out = torch.softmax(tq @ tk.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ tv
        out.backward(torch.from_numpy(g))
        return tq.grad.numpy(), tk.grad.numpy(), tv.grad.numpy()
    assert_diagnosis(C.check_attention_backward(autograd), "forbidden_call", "write the computation yourself")


def test_attention_backward_returning_tensors_is_refused():
    def tensors(q, k, v, g):
        return tuple(torch.from_numpy(x) for x in hand_backward(q, k, v, g))
    assert_diagnosis(C.check_attention_backward(tensors), "wrong_type", "NumPy array")


def test_attention_backward_in_float32():
    def float32(q, k, v, g):
        return tuple(x.astype(np.float32) for x in hand_backward(q, k, v, g))
    assert_diagnosis(C.check_attention_backward(float32), "not_float64", "float32")
