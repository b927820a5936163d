"""Hand-written gradients against autograd, central finite differences and SymPy."""
import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attnlab as al

rng = np.random.default_rng(2)


def autograd_grads(q, k, v, g, allowed=None, query_valid=None, scale=None):
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    c = scale if scale is not None else 1 / np.sqrt(q.shape[-1])
    s = tq @ tk.transpose(-1, -2) * c
    if allowed is not None:
        s = s.masked_fill(~torch.from_numpy(np.broadcast_to(allowed, s.shape).copy()), float("-inf"))
    a = torch.softmax(s, -1)
    if query_valid is not None:
        a = torch.where(torch.from_numpy(np.asarray(query_valid))[..., None], a, torch.zeros(()))
    (a @ tv * torch.from_numpy(g)).sum().backward()
    return tq.grad.numpy(), tk.grad.numpy(), tv.grad.numpy()


@settings(max_examples=25, deadline=None)
@given(T=st.integers(1, 5), S=st.integers(1, 5), dk=st.integers(1, 4), dv=st.integers(1, 4), causal=st.booleans())
def test_backward_matches_autograd(T, S, dk, dv, causal):
    r = np.random.default_rng(T * 100 + S * 10 + dk)
    q, k, v = r.normal(size=(2, T, dk)), r.normal(size=(2, S, dk)), r.normal(size=(2, S, dv))
    g = r.normal(size=(2, T, dv))
    allowed = al.masks.causal(T, S, offset=max(S - T, 0)) if causal else None
    ours = al.grad.attention_backward(q, k, v, g, allowed=allowed)
    for a, b in zip(ours, autograd_grads(q, k, v, g, allowed)):
        np.testing.assert_allclose(a, b, atol=1e-12)


@pytest.mark.parametrize("eps", [1e-4, 1e-6])
def test_backward_matches_finite_differences_two_steps(eps):
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    g = rng.normal(size=(3, 2))
    allowed = al.masks.causal(3, 5)
    dq, dk, dv = al.grad.attention_backward(q, k, v, g, allowed=allowed)
    loss = lambda q_, k_, v_: float((al.attention(q_, k_, v_, allowed=allowed) * g).sum())
    np.testing.assert_allclose(dq, al.grad.numerical_gradient(lambda x: loss(x, k, v), q, eps), atol=1e-7)
    np.testing.assert_allclose(dk, al.grad.numerical_gradient(lambda x: loss(q, x, v), k, eps), atol=1e-7)
    np.testing.assert_allclose(dv, al.grad.numerical_gradient(lambda x: loss(q, k, x), v, eps), atol=1e-7)


def test_invalid_queries_pass_zero_gradient():
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    valid = np.array([True, True, False, False])
    allowed = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]], dtype=bool)
    g = rng.normal(size=(4, 3))
    dq, dk, dv = al.grad.attention_backward(q, k, v, g, allowed=allowed, query_valid=valid)
    assert (dq[2:] == 0).all() and (dk[2:] == 0).all() and (dv[2:] == 0).all()
    for a, b in zip((dq, dk, dv), autograd_grads(q, k, v, g, allowed | ~valid[:, None], valid)):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_broadcast_inputs_get_summed_gradients():
    q, k, v = rng.normal(size=(3, 2, 4)), rng.normal(size=(1, 5, 4)), rng.normal(size=(1, 5, 2))
    g = rng.normal(size=(3, 2, 2))
    dq, dk, dv = al.grad.attention_backward(q, k, v, g)
    assert dk.shape == k.shape and dv.shape == v.shape
    ref = autograd_grads(q, k, v, g)
    for a, b in zip((dq, dk, dv), ref):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_softmax_jacobian_matches_sympy():
    z = sp.symbols("z0:3")
    s = [sp.exp(zi) / sum(sp.exp(zj) for zj in z) for zi in z]
    J = sp.Matrix(3, 3, lambda i, j: sp.diff(s[i], z[j]))
    vals = {z[0]: 0.3, z[1]: -1.2, z[2]: 2.0}
    a = al.softmax(np.array([0.3, -1.2, 2.0]))
    np.testing.assert_allclose(al.grad.softmax_jacobian(a), np.array(J.subs(vals).evalf(), dtype=float), atol=1e-14)
    np.testing.assert_allclose(al.grad.softmax_jacobian(a).sum(axis=1), 0, atol=1e-16)


def test_numerical_gradient_of_known_function():
    x = np.array([[0.5, -1.0], [2.0, 0.25]])
    np.testing.assert_allclose(al.grad.numerical_gradient(lambda a: (a ** 3).sum(), x), 3 * x ** 2, rtol=1e-8)
    with pytest.raises(ValueError, match="eps"):
        al.grad.numerical_gradient(lambda a: a.sum(), x, eps=0)
