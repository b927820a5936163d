"""The blockwise backward of chapter 5's "Going deeper" (chapters/05_backprop.md), checked against autograd.

The block equations, implemented here from their statement and nothing else:
P_ij = exp(U_ij - lse_i), dV_j += P_ij^T dO_i, dU_ij = P_ij * (dO_i V_j^T - delta_i) with
delta = rowsum(dO * O), dQ_i += c dU_ij K_j, dK_j += c dU_ij^T Q_i. The reference is torch's
autograd through scaled_dot_product_attention; attnlab.torch_ops.chunked_attention, which the
chapter runs beside it, is checked against the same reference.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnlab.torch_ops import chunked_attention


def _block_equations(Q, K, V, dO, allowed, block_q, block_k):
    c = 1 / np.sqrt(Q.shape[-1])
    U = np.where(allowed, c * Q @ K.T, -np.inf)                       # (T, S), used only for O and lse
    m = U.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(U - m).sum(-1, keepdims=True)))[:, 0]    # (T,)
    O = np.exp(U - lse[:, None]) @ V
    delta = (dO * O).sum(-1)
    dQ, dK, dV = np.zeros_like(Q), np.zeros_like(K), np.zeros_like(V)
    for j in range(0, K.shape[0], block_k):
        J = slice(j, j + block_k)
        for i in range(0, Q.shape[0], block_q):
            I = slice(i, i + block_q)
            U_ij = np.where(allowed[I, J], c * Q[I] @ K[J].T, -np.inf)
            P = np.exp(U_ij - lse[I, None])
            dV[J] += P.T @ dO[I]
            dU = P * (dO[I] @ V[J].T - delta[I, None])
            dQ[I] += c * dU @ K[J]
            dK[J] += c * dU.T @ Q[I]
    return dQ, dK, dV


def _autograd(Q, K, V, dO, allowed):
    q, k, v = (torch.tensor(x, requires_grad=True) for x in (Q, K, V))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.tensor(allowed))
    (out * torch.tensor(dO)).sum().backward()
    return q.grad.numpy(), k.grad.numpy(), v.grad.numpy()


@pytest.mark.parametrize(("T", "S", "block_q", "block_k", "causal"),
                         [(5, 7, 2, 3, False), (6, 6, 4, 4, True), (3, 8, 1, 5, True), (7, 4, 3, 2, False)])
def test_the_block_equations_give_autograd_s_gradients(T, S, block_q, block_k, causal):
    rng = np.random.default_rng(T * 100 + S)
    Q, K = rng.normal(size=(T, 3)), rng.normal(size=(S, 3))
    V, dO = rng.normal(size=(S, 2)), rng.normal(size=(T, 2))
    i, j = np.indices((T, S))
    allowed = j <= i + (S - T) if causal else np.ones((T, S), dtype=bool)   # bottom-right causal
    for mine, want in zip(_block_equations(Q, K, V, dO, allowed, block_q, block_k), _autograd(Q, K, V, dO, allowed)):
        np.testing.assert_allclose(mine, want, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("order", ["keys_outer", "queries_outer"])
def test_chunked_attention_s_backward_matches_autograd_at_the_chapter_s_blocks(order):
    rng = np.random.default_rng(5)
    Q, K = rng.normal(size=(5, 3)), rng.normal(size=(7, 3))
    V, dO = rng.normal(size=(7, 2)), rng.normal(size=(5, 2))
    q, k, v = (torch.tensor(x, requires_grad=True) for x in (Q, K, V))
    out = chunked_attention(q, k, v, block_q=2, block_k=3, backward_order=order)
    (out * torch.tensor(dO)).sum().backward()
    for got, want in zip((q.grad, k.grad, v.grad), _autograd(Q, K, V, dO, np.ones((5, 7), dtype=bool))):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-13)
