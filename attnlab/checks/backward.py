"""Checkers for the softmax backward and the attention backward (NumPy, float64, no mask).

Both backward passes are to be derived and written by hand: autograd and attnlab's own gradients
(:data:`GRADIENT_LIBRARIES`) are named when the student's function calls them, and the softmax backward
may not build the Jacobian (measured: the largest allocation of one call stays far below one row's
n x n Jacobian).
"""
from __future__ import annotations

import numpy as np

from .. import grad
from ..i18n import N_, _
from . import seeds
from .diagnosis import Trial, confirm
from .engine import Mistake, close, describe_difference, error_hint, matching_mistakes, models, one_per_name, run_model
from .kernels import softmax, swap
from .registry import checker

GRADIENT_LIBRARIES = ("torch.Tensor.backward", "torch.autograd.grad", "torch.autograd.backward",
                      "torch.autograd.functional.jacobian", "torch.autograd.functional.vjp", "torch.func.grad",
                      "torch.func.vjp", "torch.func.jacrev", "attnlab.grad.softmax_jacobian",
                      "attnlab.grad.attention_backward", "attnlab.grad.numerical_gradient")

SOFTMAX_BACKWARD_MISTAKES: list[Mistake] = []
model = models(SOFTMAX_BACKWARD_MISTAKES)


@model("no_row_mean", N_("missing the row-mean term: the gradient is a * (g - sum(a * g)), not a * g. Raising one "
       "score lowers every other weight through the shared denominator; the subtracted weighted mean is that path, "
       "and it makes every row of the result sum to 0."))
def softmax_backward_without_row_mean(a, g):
    return a * g


@model("unweighted_mean", N_("the subtracted mean must be weighted by a: use sum(a * g) over the row, not the plain "
       "mean of g."))
def softmax_backward_unweighted_mean(a, g):
    return a * (g - g.mean(axis=-1, keepdims=True))


@model("mean_wrong_axis", N_("the weighted mean runs over the wrong axis: sum a * g along the last axis (each row "
       "separately), with keepdims=True."))
def softmax_backward_mean_over_wrong_axis(a, g):
    return a * (g - (a * g).sum(axis=0, keepdims=True))


@model("no_leading_a", N_("the leading factor a is missing: the gradient is a * (g - sum(a * g))."))
def softmax_backward_without_leading_a(a, g):
    return g - (a * g).sum(axis=-1, keepdims=True)


@model("sum_without_keepdims", N_("`(a * g).sum(axis=-1)` without keepdims=True broadcasts the row sums along the "
       "wrong axis (a square input hides the shape error)."))
def softmax_backward_sum_without_keepdims(a, g):
    return a * (g - (a * g).sum(axis=-1))


@model("sign", N_("the sign is flipped: the gradient is a * (g - sum(a * g))."))
def softmax_backward_sign_flipped(a, g):
    return a * ((a * g).sum(axis=-1, keepdims=True) - g)


@model("sum_over_all", N_("the weighted sum runs over the whole array (`(a * g).sum()`), not over each row: every "
       "row must subtract its own sum(a * g), `axis=-1, keepdims=True`."))
def softmax_backward_sum_over_all(a, g):
    return a * (g - (a * g).sum())


@model("mean_not_sum", N_("you subtracted the mean of a * g over the row; the subtracted term is its sum, "
       "sum_j a_j g_j (the weights already sum to 1)."))
def softmax_backward_mean_not_sum(a, g):
    return a * (g - (a * g).mean(axis=-1, keepdims=True))


BUILDS_JACOBIAN = Mistake("builds_jacobian", N_("the function builds the Jacobian (an n x n matrix per row, e.g. "
                          "`np.diag(a) - np.outer(a, a)`), which this exercise asks you to avoid: the product "
                          "J g collapses to a * (g - sum(a * g)), which needs only arrays of the input's shape."))


@checker(N_("softmax backward"), SOFTMAX_BACKWARD_MISTAKES + [BUILDS_JACOBIAN], forbid=GRADIENT_LIBRARIES)
def check_softmax_backward(run, fn):
    """Check ``fn(a, grad_a)``: the gradient with respect to the logits, given a = softmax(x) along the last axis
    and the upstream gradient dL/da (same shape); float64 NumPy arrays in and out, without the Jacobian."""
    rng = seeds.rng(12)
    cases = []
    for case, shape in ((N_("a vector of 4 weights"), (4,)), (N_("a square 4 x 4 batch of rows"), (4, 4)),
                        (N_("a 3 x 5 matrix of rows"), (3, 5)), (N_("a batch of shape (2, 3, 4)"), (2, 3, 4)),
                        (N_("a square 3 x 3 batch of rows"), (3, 3))):
        cases.append((case, softmax(rng.normal(size=shape)), rng.normal(size=shape)))

    def trial(item):
        case, a, g = item
        got = run.array(run.call(fn, case, a, g, hint=error_hint), case, shape=a.shape)
        expected = np.einsum("...ij,...j->...i", grad.softmax_jacobian(a), g)   # J is symmetric
        return Trial(case, got, expected, (a, g))

    run.each_case(cases, trial, SOFTMAX_BACKWARD_MISTAKES, name=N_("the gradient"))
    _no_jacobian(run, fn, rng)
    return run.passed(_("All {n_cases} cases match the Jacobian product (diag(a) - a a^T) g; every "
                        "row of your gradient sums to 0, and no call held a Jacobian.").format(n_cases=len(cases)))


def _no_jacobian(run, fn, rng):
    """8 rows of 512 weights: the input takes 32 KiB, one row's Jacobian 2 MiB, a right answer about 0.1 MiB."""
    a, g = softmax(rng.normal(size=(8, 512))), rng.normal(size=(8, 512))
    case = N_("8 rows of 512 weights (one row's Jacobian would take 2 MiB)")
    memory = {}
    got = run.array(run.call(fn, case, a, g, hint=error_hint, memory=memory), case, shape=a.shape)
    run.compare(case, got, a * (g - (a * g).sum(axis=-1, keepdims=True)), SOFTMAX_BACKWARD_MISTAKES, (a, g),
                name=N_("the gradient"))
    peak = memory["peak"]
    if peak > 2**20:
        run.fail(_("On {case}, your function held {value:.1f} MiB at once: {explanation}").format(
            case=_(case), value=peak / 2**20, explanation=BUILDS_JACOBIAN.text), BUILDS_JACOBIAN.name)


# ---------------------------------------------------------------------------------------------- attention


def _backward(q, k, v, g, *, row_mean=True, weighted_mean=True, jacobian=True,
              dv_transposed=True, dk_transposed=True, dq_ds_transposed=False, dk_from_k=False,
              scale_dq=True, scale_dk=True):
    c = 1 / np.sqrt(q.shape[-1])
    a = softmax(q @ swap(k) * c)
    dv = swap(a) @ g if dv_transposed else a @ g
    da = g @ swap(v)
    if not jacobian:
        ds = da
    elif not row_mean:
        ds = a * da
    elif not weighted_mean:
        ds = a * (da - da.mean(axis=-1, keepdims=True))
    else:
        ds = a * (da - (a * da).sum(axis=-1, keepdims=True))
    dq = (swap(ds) if dq_ds_transposed else ds) @ k
    dk = (swap(ds) if dk_transposed else ds) @ (k if dk_from_k else q)
    return dq * (c if scale_dq else 1), dk * (c if scale_dk else 1), dv


def backward_without_row_mean(q, k, v, g):
    return _backward(q, k, v, g, row_mean=False)


def backward_unweighted_row_mean(q, k, v, g):
    return _backward(q, k, v, g, weighted_mean=False)


def backward_softmax_as_identity(q, k, v, g):
    return _backward(q, k, v, g, jacobian=False)


def backward_dv_untransposed(q, k, v, g):
    return _backward(q, k, v, g, dv_transposed=False)


def backward_dk_untransposed(q, k, v, g):
    return _backward(q, k, v, g, dk_transposed=False)


def backward_dq_with_transposed_ds(q, k, v, g):
    return _backward(q, k, v, g, dq_ds_transposed=True)


def backward_dk_from_k(q, k, v, g):
    return _backward(q, k, v, g, dk_from_k=True)


def backward_without_scale(q, k, v, g):
    return _backward(q, k, v, g, scale_dq=False, scale_dk=False)


def backward_without_scale_in_dq(q, k, v, g):
    return _backward(q, k, v, g, scale_dq=False)


def backward_without_scale_in_dk(q, k, v, g):
    return _backward(q, k, v, g, scale_dk=False)



# One gradient of the triple fails: each list is tried on its own gradient (dq, dk, dv).
def backward_mean_over_wrong_axis(q, k, v, g):
    c = 1 / np.sqrt(q.shape[-1])
    a = softmax(q @ swap(k) * c)
    da = g @ swap(v)
    ds = a * (da - (a * da).sum(axis=-2, keepdims=True))
    return ds @ k * c, swap(ds) @ q * c, swap(a) @ g


DQ_MISTAKES = [
    Mistake("mean_wrong_axis", N_("dq: the weighted row mean of the softmax backward runs over the wrong axis: "
                                  "rowsum(A * dA) sums over the keys, `axis=-1, keepdims=True`."),
            backward_mean_over_wrong_axis),
    Mistake("no_row_mean", N_("dq: missing the row-mean term of the softmax backward: dU = A * (dA - rowsum(A * "
                              "dA)), not A * dA. (dV can still be right: it does not pass through the softmax.)"),
            backward_without_row_mean),
    Mistake("unweighted_mean", N_("dq: the row mean in dU must be weighted by A: rowsum(A * dA)."),
            backward_unweighted_row_mean),
    Mistake("softmax_as_identity", N_("dq: the softmax Jacobian is missing (dU = dA)."), backward_softmax_as_identity),
    Mistake("dq_transposed_ds", N_("dq: use dU K, not dU^T K (dq has one row per query)."),
            backward_dq_with_transposed_ds),
    Mistake("no_scale", N_("dq: missing the 1/sqrt(d_k) in dQ and dK: the scores are scaled, so "
                            "dQ = dU K / sqrt(d_k)."),
            backward_without_scale),
    Mistake("no_scale", N_("dq: missing the 1/sqrt(d_k): dQ = dU K / sqrt(d_k)."), backward_without_scale_in_dq),
]
DK_MISTAKES = [
    Mistake("mean_wrong_axis", N_("dk: the weighted row mean of the softmax backward runs over the wrong axis: "
                                  "rowsum(A * dA) sums over the keys, `axis=-1, keepdims=True`."),
            backward_mean_over_wrong_axis),
    Mistake("no_row_mean", N_("dk: missing the row-mean term of the softmax backward: dU = A * (dA - rowsum(A * "
                              "dA)), not A * dA. (dV can still be right: it does not pass through the softmax.)"),
            backward_without_row_mean),
    Mistake("unweighted_mean", N_("dk: the row mean in dU must be weighted by A: rowsum(A * dA)."),
            backward_unweighted_row_mean),
    Mistake("softmax_as_identity", N_("dk: the softmax Jacobian is missing (dU = dA)."), backward_softmax_as_identity),
    Mistake("dk_untransposed", N_("dk: untransposed dK. Use dU^T Q (one row per key), not dU Q; with T = S the shapes "
            "agree and only the values are wrong."), backward_dk_untransposed),
    Mistake("dk_from_k", N_("dk: dK = dU^T Q / sqrt(d_k) uses the queries, not the keys."), backward_dk_from_k),
    Mistake("no_scale", N_("dk: missing the 1/sqrt(d_k) in dQ and dK: dK = dU^T Q / sqrt(d_k)."),
            backward_without_scale),
    Mistake("no_scale", N_("dk: missing the 1/sqrt(d_k): dK = dU^T Q / sqrt(d_k)."), backward_without_scale_in_dk),
]
DV_MISTAKES = [
    Mistake("dv_untransposed", N_("dv: untransposed dV. Use A^T G (one row per key), not A G; with T = S the shapes "
            "agree and only the values are wrong."), backward_dv_untransposed),
]
NOT_A_TRIPLE = Mistake("not_a_triple", N_("the function did not return the three gradients (dq, dk, dv)."))
WRONG_ORDER = Mistake("wrong_order", N_("the three gradients are right but in another order: return (dq, dk, dv)."))


def _shape_hint(name, T, S):
    def hint(shape):
        if name == "dv" and shape[-2] == T != S:
            return _("dV needs one row per key (S rows): dV = A^T G.")
        if name == "dk" and shape[-2] == T != S:
            return _("dK needs one row per key (S rows): dK = dU^T Q / sqrt(d_k).")
        if name == "dq" and shape[-2] == S != T:
            return _("dQ needs one row per query (T rows): dQ = dU K / sqrt(d_k).")
        return None
    return hint


def _pick(i):
    return lambda out: out[i]


@checker(N_("attention backward"), DQ_MISTAKES + DK_MISTAKES + DV_MISTAKES + [NOT_A_TRIPLE, WRONG_ORDER],
         forbid=GRADIENT_LIBRARIES)
def check_attention_backward(run, fn):
    """Check ``fn(q, k, v, grad_out) -> (dq, dk, dv)`` for out = softmax(q k^T / sqrt(d_k)) v (no mask); float64
    NumPy arrays in and out, without autograd."""
    rng = seeds.rng(13)
    cases = []
    for case, tq, tk, d_k, d_v in (
            (N_("a square case (T = S = 3, d_k = 4, d_v = 2)"), (3,), (3,), 4, 2),
            (N_("a rectangular case (T = 2 queries, S = 5 keys, d_k = 3, d_v = 4)"), (2,), (5,), 3, 4),
            (N_("a batch with a head axis (B = 2, H = 2, T = 3, S = 4, d_k = 5, d_v = 2)"), (2, 2, 3), (2, 2, 4), 5, 2),
            (N_("a second square case (T = S = 4, d_k = 3, d_v = 3)"), (4,), (4,), 3, 3)):
        q, k = rng.normal(size=tq + (d_k,)), rng.normal(size=tk + (d_k,))
        v, g = rng.normal(size=tk + (d_v,)), rng.normal(size=tq + (d_v,))
        cases.append((case, q, k, v, g))
    done: dict = {}

    def triple(i):
        if i not in done:
            case, q, k, v, g = cases[i]
            out = run.call(fn, case, q, k, v, g, hint=_backward_hint)
            if not isinstance(out, (tuple, list)) or len(out) != 3:
                run.fail(_("On {case}, return the three gradients as a tuple (dq, dk, dv).").format(
                    case=_(case)), NOT_A_TRIPLE.name)
            expected = grad.attention_backward(q, k, v, g)
            T, S = q.shape[-2], k.shape[-2]
            got = tuple(run.array(out[j], case, name, shape=expected[j].shape, shape_hint=_shape_hint(name, T, S))
                        for j, name in enumerate(("dq", "dk", "dv")))
            done[i] = (got, expected)
        return done[i]

    def others(i, j):
        for other in [*range(i), *range(i + 1, len(cases))]:
            try:
                got, expected = triple(other)
            except Exception:        # this case fails in another way: it cannot confirm anything
                continue
            yield Trial(cases[other][0], got[j], expected[j], cases[other][1:])

    for i, (case, q, k, v, g) in enumerate(cases):
        got, expected = triple(i)
        problems, names = [], []
        if any(not close(got[j], expected[j]) for j in range(3)):
            _order(run, case, got, expected)
        for j, (name, mistakes) in enumerate((("dq", DQ_MISTAKES), ("dk", DK_MISTAKES), ("dv", DV_MISTAKES))):
            if close(got[j], expected[j]):
                continue
            found = matching_mistakes(got[j], expected[j], mistakes, (q, k, v, g), pick=_pick(j), variants=True)
            survivors = one_per_name(confirm(found, others(i, j), close, run_model, _pick(j)).survivors)
            if len(survivors) == 1:
                problems.append(survivors[0].text)
                names.append(survivors[0].name)
            else:
                problems.append(_("{name} differs from the reference: {difference}.").format(
                    name=name, difference=describe_difference(got[j], expected[j])))
        if problems:
            flat = [np.concatenate([np.ravel(a) for a in arrays]) for arrays in (got, expected)]
            run.single_precision(_("Case: {case}.").format(case=_(case)) + "\n", *flat)
            run.fail(_("On {case}:\n").format(case=_(case)) + "\n".join(problems), ",".join(sorted(set(names))))
    return run.passed(_("All {n_cases} cases match `al.grad.attention_backward` (itself checked "
                        "against autograd and finite differences): square, rectangular and batched.").format(
                            n_cases=len(cases)))


def _order(run, case, got, expected):
    """Fail with ``wrong_order`` when the returned gradients are the right ones in another order."""
    import itertools
    for order in itertools.permutations(range(3)):
        if order != (0, 1, 2) and all(got[j].shape == expected[o].shape and close(got[j], expected[o])
                                      for j, o in enumerate(order)):
            shown = "(" + ", ".join(("dq", "dk", "dv")[o] for o in order) + ")"
            run.fail(_("On {case}, you returned {order}: {explanation}").format(
                case=_(case), order=shown, explanation=WRONG_ORDER.text), WRONG_ORDER.name)


def _backward_hint(err):
    base = error_hint(err)
    return ((base + " ") if base else "") + _("Shapes to aim for: dV = A^T G is (S, d_v), dA = G V^T is (T, S), "
                                              "dQ = dU K is (T, d_k), dK = dU^T Q is (S, d_k).")
