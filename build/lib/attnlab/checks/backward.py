"""Checkers for the softmax backward and the attention backward (NumPy, no mask)."""
from __future__ import annotations

import numpy as np

from .. import grad
from .. import reference as ref
from . import mistakes as M
from . import result as R
from .diagnose import Mistake, close, compare, describe_difference, which_mistake
from .runner import Stop, call, checker, matmul_hint, to_array

SOFTMAX_BACKWARD_MISTAKES = [
    Mistake("no_row_mean", "missing the row-mean term: the gradient is a * (g - sum(a * g)), not a * g. "
            "Raising one score lowers every other weight through the shared denominator; the subtracted "
            "weighted mean is that path, and it makes every row of the result sum to 0.",
            M.softmax_backward_without_row_mean),
    Mistake("unweighted_mean", "the subtracted mean must be weighted by a: use sum(a * g) over the row, not "
            "the plain mean of g.", M.softmax_backward_unweighted_mean),
    Mistake("mean_wrong_axis", "the weighted mean runs over the wrong axis: sum a * g along the last axis "
            "(each row separately), with keepdims=True.", M.softmax_backward_mean_over_wrong_axis),
    Mistake("no_leading_a", "the leading factor a is missing: the gradient is a * (g - sum(a * g)).",
            M.softmax_backward_without_leading_a),
    Mistake("sum_without_keepdims", "`(a * g).sum(axis=-1)` without keepdims=True broadcasts the row sums "
            "along the wrong axis (a square input hides the shape error).", M.softmax_backward_sum_without_keepdims),
    Mistake("sign", "the sign is flipped: the gradient is a * (g - sum(a * g)).", M.softmax_backward_sign_flipped),
]


@checker("softmax backward")
def check_softmax_backward(fn):
    """Check ``fn(a, grad_a)``: the gradient with respect to the logits, given a = softmax(x) along the
    last axis and the upstream gradient dL/da (same shape)."""
    task = "softmax backward"
    rng = np.random.default_rng(12)
    cases = []
    for case, shape in (("a vector of 4 weights", (4,)), ("a square 4 x 4 batch of rows", (4, 4)),
                        ("a 3 x 5 matrix of rows", (3, 5)), ("a batch of shape (2, 3, 4)", (2, 3, 4))):
        cases.append((case, ref.softmax(rng.normal(size=shape)), rng.normal(size=shape)))
    for case, a, g in cases:
        got = to_array(task, call(task, fn, case, a, g, error_hint=matmul_hint), case, shape=a.shape)
        expected = np.einsum("...ij,...j->...i", grad.softmax_jacobian(a), g)   # J is symmetric
        compare(task, case, got, expected, SOFTMAX_BACKWARD_MISTAKES, args=(a, g), name="the gradient")
    return R.passed(task, f"All {len(cases)} cases match the Jacobian product (diag(a) - a a^T) g; every row "
                          f"of your gradient sums to 0.")


def _dq(out):
    return out[0]


def _dk(out):
    return out[1]


def _dv(out):
    return out[2]


_NO_ROW_MEAN = ("missing the row-mean term of the softmax backward: dS = A * (dA - rowsum(A * dA)), not "
                "A * dA. (dV can still be right: it does not pass through the softmax.)")
DQ_MISTAKES = [
    Mistake("no_row_mean", "dq: " + _NO_ROW_MEAN, M.backward_without_row_mean),
    Mistake(
        "unweighted_mean",
        "dq: the row mean in dS must be weighted by A: rowsum(A * dA).",
        M.backward_unweighted_row_mean,
    ),
    Mistake("softmax_as_identity", "dq: the softmax Jacobian is missing (dS = dA).", M.backward_softmax_as_identity),
    Mistake(
        "dq_transposed_ds", "dq: use dS K, not dS^T K (dq has one row per query).", M.backward_dq_with_transposed_ds
    ),
    Mistake(
        "no_scale",
        "dq: missing the 1/sqrt(d_k) in dQ and dK: the scores are scaled, so dQ = dS K / sqrt(d_k).",
        M.backward_without_scale,
    ),
    Mistake("no_scale", "dq: missing the 1/sqrt(d_k): dQ = dS K / sqrt(d_k).", M.backward_without_scale_in_dq),
]
DK_MISTAKES = [
    Mistake("no_row_mean", "dk: " + _NO_ROW_MEAN, M.backward_without_row_mean),
    Mistake("unweighted_mean", "dk: the row mean in dS must be weighted by A: rowsum(A * dA).",
            M.backward_unweighted_row_mean),
    Mistake("softmax_as_identity", "dk: the softmax Jacobian is missing (dS = dA).", M.backward_softmax_as_identity),
    Mistake("dk_untransposed", "dk: untransposed dK. Use dS^T Q (one row per key), not dS Q; with T = S the "
            "shapes agree and only the values are wrong.", M.backward_dk_untransposed),
    Mistake("dk_from_k", "dk: dK = dS^T Q / sqrt(d_k) uses the queries, not the keys.", M.backward_dk_from_k),
    Mistake("no_scale", "dk: missing the 1/sqrt(d_k) in dQ and dK: dK = dS^T Q / sqrt(d_k).", M.backward_without_scale),
    Mistake("no_scale", "dk: missing the 1/sqrt(d_k): dK = dS^T Q / sqrt(d_k).", M.backward_without_scale_in_dk),
]
DV_MISTAKES = [
    Mistake("dv_untransposed", "dv: untransposed dV. Use A^T G (one row per key), not A G; with T = S the "
            "shapes agree and only the values are wrong.", M.backward_dv_untransposed),
]


def _shape_hint(name, T, S):
    def hint(shape):
        if name == "dv" and shape[-2] == T != S:
            return "dV needs one row per key (S rows): dV = A^T G."
        if name == "dk" and shape[-2] == T != S:
            return "dK needs one row per key (S rows): dK = dS^T Q / sqrt(d_k)."
        if name == "dq" and shape[-2] == S != T:
            return "dQ needs one row per query (T rows): dQ = dS K / sqrt(d_k)."
        return None
    return hint


@checker("attention backward")
def check_attention_backward(fn):
    """Check ``fn(q, k, v, grad_out) -> (dq, dk, dv)`` for out = softmax(q k^T / sqrt(d_k)) v (no mask)."""
    task = "attention backward"
    rng = np.random.default_rng(13)
    cases = [
        ("a square case (T = S = 3, d_k = 4, d_v = 2)", (3,), (3,), 4, 2),
        ("a rectangular case (T = 2 queries, S = 5 keys, d_k = 3, d_v = 4)", (2,), (5,), 3, 4),
        ("a batch with a head axis (B = 2, H = 2, T = 3, S = 4, d_k = 5, d_v = 2)", (2, 2, 3), (2, 2, 4), 5, 2),
    ]
    for case, tq, tk, d_k, d_v in cases:
        q, k = rng.normal(size=tq + (d_k,)), rng.normal(size=tk + (d_k,))
        v, g = rng.normal(size=tk + (d_v,)), rng.normal(size=tq + (d_v,))
        out = call(task, fn, case, q, k, v, g, error_hint=_backward_hint)
        if not isinstance(out, (tuple, list)) or len(out) != 3:
            raise Stop(R.failed(task, f"On {case}, return the three gradients as a tuple (dq, dk, dv)."))
        T, S = q.shape[-2], k.shape[-2]
        expected = grad.attention_backward(q, k, v, g)
        problems, names = [], []
        for name, got_raw, exp, pick, mistakes in (("dq", out[0], expected[0], _dq, DQ_MISTAKES),
                                                   ("dk", out[1], expected[1], _dk, DK_MISTAKES),
                                                   ("dv", out[2], expected[2], _dv, DV_MISTAKES)):
            got = to_array(task, got_raw, case, name, shape=exp.shape, shape_hint=_shape_hint(name, T, S))
            if close(got, exp):
                continue
            mistake = which_mistake(got, exp, mistakes, (q, k, v, g), pick=pick)
            if mistake is not None:
                problems.append(mistake.explanation)
                names.append(mistake.name)
            else:
                problems.append(f"{name} differs from the reference: {describe_difference(got, exp)}.")
        if problems:
            raise Stop(R.failed(task, f"On {case}:\n" + "\n".join(problems), ",".join(sorted(set(names)))))
    return R.passed(task, f"All {len(cases)} cases match `al.grad.attention_backward` (itself checked against "
                          f"autograd and finite differences): square, rectangular and batched.")


def _backward_hint(err):
    base = matmul_hint(err)
    return ((base + " ") if base else "") + ("Shapes to aim for: dV = A^T G is (S, d_v), dA = G V^T is (T, S), "
                                             "dQ = dS K is (T, d_k), dK = dS^T Q is (S, d_k).")
