"""Wrong attempts at sheet 5 (backpropagation), each with the diagnosis it must get."""
import math

import numpy as np
import torch

import attnlab.checks as C

from .attempts import expect


def softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_exercise_5_2_softmax_backward():
    check = C.check_softmax_backward

    def jacobian_rows(a, g):
        rows = a.reshape(-1, a.shape[-1])
        out = [(np.diag(r) - np.outer(r, r)) @ h for r, h in zip(rows, g.reshape(rows.shape))]
        return np.array(out).reshape(a.shape)
    expect(check, jacobian_rows, "5.2 softmax_backward", "one Jacobian per row", "builds_jacobian", "Jacobian")
    expect(check, lambda a, g: a * (g - (a * g).sum()), "5.2 softmax_backward", "sum over the whole array",
           "sum_over_all", "whole array")
    expect(check, lambda a, g: a * (g - (a * g).mean(-1, keepdims=True)), "5.2 softmax_backward",
           "mean instead of sum", "mean_not_sum", "mean of a * g")

    def autograd(a, g):
        u = torch.log(torch.from_numpy(a)).requires_grad_()
        (grad,) = torch.autograd.grad(torch.softmax(u, -1), u, torch.from_numpy(g))
        return grad.numpy()
    expect(check, autograd, "5.2 softmax_backward", "torch.autograd.grad", "forbidden_call",
           "torch.autograd.grad")

    def float32(a, g):
        a32, g32 = a.astype(np.float32), g.astype(np.float32)
        return (a32 * (g32 - (a32 * g32).sum(-1, keepdims=True))).astype(np.float64)
    expect(check, float32, "5.2 softmax_backward", "float32 inside", "computed_in_float32", "float32")


def _forward(q, k, v):
    c = 1 / math.sqrt(q.shape[-1])
    return c, softmax(q @ np.swapaxes(k, -1, -2) * c)


def test_exercise_5_3_attention_backward():
    check = C.check_attention_backward

    def autograd(q, k, v, g):
        t = [torch.from_numpy(x).requires_grad_() for x in (q, k, v)]
        out = torch.softmax(t[0] @ t[1].transpose(-2, -1) / math.sqrt(q.shape[-1]), -1) @ t[2]
        out.backward(torch.from_numpy(g))
        return tuple(x.grad.numpy() for x in t)
    expect(check, autograd, "5.3 attention_backward", "autograd", "forbidden_call", "torch.Tensor.backward")

    def dot_T(q, k, v, g):
        c, a = _forward(q, k, v)
        da = g @ v.T
        du = a * (da - (a * da).sum(-1, keepdims=True))
        return du @ k * c, du.T @ q * c, a.T @ g
    expect(check, dot_T, "5.3 attention_backward", ".T on batched arrays", "", "swapaxes")

    def row_mean_axis(q, k, v, g):
        c, a = _forward(q, k, v)
        da = g @ np.swapaxes(v, -1, -2)
        du = a * (da - (a * da).sum(-2, keepdims=True))
        return du @ k * c, np.swapaxes(du, -1, -2) @ q * c, np.swapaxes(a, -1, -2) @ g
    expect(check, row_mean_axis, "5.3 attention_backward", "the row mean over axis -2", "mean_wrong_axis",
           "wrong axis")

    def swapped(q, k, v, g):
        c, a = _forward(q, k, v)
        da = g @ np.swapaxes(v, -1, -2)
        du = a * (da - (a * da).sum(-1, keepdims=True))
        return np.swapaxes(du, -1, -2) @ q * c, du @ k * c, np.swapaxes(a, -1, -2) @ g
    expect(check, swapped, "5.3 attention_backward", "returns (dk, dq, dv)", "wrong_order", "(dk, dq, dv)")

    def float32(q, k, v, g):
        q32, k32, v32, g32 = (x.astype(np.float32) for x in (q, k, v, g))
        c, a = _forward(q32, k32, v32)
        da = g32 @ np.swapaxes(v32, -1, -2)
        du = a * (da - (a * da).sum(-1, keepdims=True))
        grads = du @ k32 * c, np.swapaxes(du, -1, -2) @ q32 * c, np.swapaxes(a, -1, -2) @ g32
        return tuple(x.astype(np.float64) for x in grads)
    expect(check, float32, "5.3 attention_backward", "float32 inside", "computed_in_float32", "float32")
