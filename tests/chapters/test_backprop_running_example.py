"""The running example's gradients, as chapter 5 (chapters/05_backprop.md) works them by hand.

Loss: L = first coordinate of she's output, in the pronoun head. The expected values are typed
from the mathematics (E = e^(2 sqrt 2); she's weights (E, 1, 1, 1)/(E + 3); the first coordinates
of the values (1, 0, 1, 1/2)), and compared with torch's autograd through SDPA and with
attnlab.grad.attention_backward.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

import attnlab as al

ex = al.example
E = np.exp(2 * np.sqrt(2))
SHE = 2
a = np.array([E, 1, 1, 1]) / (E + 3)           # she's weights on Mia, said, she, won
r = np.array([1, 0, 1, 0.5])                    # first coordinates of the values
L = (E + 1.5) / (E + 3)
dU = a * (r - L)                                # she's row of the score gradient


def _autograd():
    q, k, v = (torch.tensor(np.array(m), requires_grad=True) for m in ex.qkv(ex.PRONOUN))
    out = F.scaled_dot_product_attention(q, k, v)
    out[SHE, 0].backward()
    return float(out[SHE, 0].detach()), q.grad.numpy(), k.grad.numpy(), v.grad.numpy()


def test_the_loss_and_the_upstream_gradient():
    loss, *_ = _autograd()
    np.testing.assert_allclose(loss, L, rtol=1e-15)
    dO = np.zeros((4, 2))
    dO[SHE, 0] = 1
    np.testing.assert_array_equal(ex.upstream_gradient(), dO)
    O, _ = ex.attention(ex.PRONOUN)
    assert ex.loss(O) == O[SHE, 0]


def test_dq_dk_dv_by_hand_match_autograd_and_attnlab():
    _, dq, dk, dv = _autograd()
    want_dq = np.zeros((4, 2))
    want_dq[SHE, 0] = np.sqrt(2) * dU[0]         # c dU_she,Mia k_Mia with k_Mia = (2, 0), c = 1/sqrt 2
    want_dk = np.stack([np.sqrt(2) * dU, np.zeros(4)], axis=1)   # c dU_she,j q_she, q_she = (2, 0)
    want_dv = np.stack([a, np.zeros(4)], axis=1)                  # A^T dO: she's weights, coordinate 1
    for got, want in [(dq, want_dq), (dk, want_dk), (dv, want_dv)]:
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-16)
    mine = al.grad.attention_backward(*ex.qkv(ex.PRONOUN), ex.upstream_gradient())
    for got, want in zip(mine, (want_dq, want_dk, want_dv)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-16)


def test_signs_and_the_closed_form_of_dq():
    assert abs(dU.sum()) < 1e-15                                   # the row sums to zero
    assert dU[0] > 0 and dU[2] > 0 and dU[1] < 0 and dU[3] < 0      # above / below the average L
    np.testing.assert_allclose(np.sqrt(2) * dU[0], 3 * np.sqrt(2) * E / (2 * (E + 3) ** 2), rtol=1e-14)
