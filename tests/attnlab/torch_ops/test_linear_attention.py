"""Causal linear attention: the running state equals the quadratic form (same feature map), written out here as
explicit sums over j <= i; its size does not grow with the stream."""
import pytest
import torch

import attnlab as al
from attnlab.torch_ops.linear_attention import LinearAttentionState, elu_plus_one, linear_attention

f64 = torch.float64


def by_sums(q, k, v):
    """out_i = sum_{j<=i} phi(q_i).phi(k_j) v_j / sum_{j<=i} phi(q_i).phi(k_j), one query at a time."""
    fq, fk = elu_plus_one(q), elu_plus_one(k)
    rows = []
    for i in range(q.shape[-2]):
        w = (fq[..., i:i + 1, :] * fk[..., : i + 1, :]).sum(-1)              # (..., i + 1)
        rows.append((w[..., None] * v[..., : i + 1, :]).sum(-2) / w.sum(-1, keepdim=True))
    return torch.stack(rows, -2)


@pytest.mark.parametrize("chunks", [(11,), (1,) * 11, (3, 1, 5, 2)])
def test_running_state_equals_the_quadratic_form(chunks):
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 11, 4, dtype=f64), torch.randn(2, 3, 11, 4, dtype=f64), torch.randn(2, 3, 11, 5,
                                                                                                     dtype=f64)
    quadratic = linear_attention(q, k, v)
    torch.testing.assert_close(quadratic, by_sums(q, k, v), rtol=0, atol=1e-12)
    state, outs, start, sizes = LinearAttentionState(), [], 0, set()
    for t in chunks:
        outs.append(state.step(q[..., start:start + t, :], k[..., start:start + t, :], v[..., start:start + t, :]))
        start += t
        sizes.add(state.nbytes)
    torch.testing.assert_close(torch.cat(outs, -2), quadratic, rtol=0, atol=1e-12)
    assert sizes == {2 * 3 * (4 * 5 + 4) * 8}                       # B H d_k (d_v + 1) float64 numbers, always


def test_not_causal_and_bad_input():
    q = torch.randn(1, 4, 3, dtype=f64)
    full = linear_attention(q, q, q, causal=False)
    w = elu_plus_one(q) @ elu_plus_one(q).transpose(-1, -2)
    torch.testing.assert_close(full, (w / w.sum(-1, keepdim=True)) @ q)
    with pytest.raises(al.AttentionInputError, match="as many queries"):
        linear_attention(q[:, :2], q, q)
