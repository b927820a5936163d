"""The reference the kernels are checked against, and the rounding-error bounds that say how close is right.

Reference: float64 autograd through an explicit attention (scores, mask from attnlab.masks.causal,
log-sum-exp, weights; rows that see no key give zero output and lse = -inf), on the very inputs the
kernel gets, so that rounding the inputs is no source of error.

Tolerances are derived, not tuned. The kernels accumulate every product and sum in float32 (unit
roundoff u = 2^-24) and round to the input dtype (unit roundoff u_in: 2^-24 for float32, 2^-11 for
float16, 2^-8 for bfloat16) only the tiles they feed to tl.dot (P, dS) and the results they store.
A sum of n terms computed in float32 is off by at most gamma(n) = n u / (1 - n u) times the sum of
the terms' magnitudes (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., section 3.1).
To first order, elementwise, with |X| the entrywise magnitude and P the exact weights:

    scores      E_s   = gamma(d_k + 2) scale |Q||K|^T + 2 u (|s| + max_j |s|)   (product, scale, shift)
    weights     eps_i = 2 max_j E_s,ij + 8 u + gamma(S)       (exponent and normaliser; exp2 within 4 u)
    output      |dO_i| <= (eps_i + u_in + gamma(S) + u) (P|V|)_i + u_in |O_i|
    lse         |dlse_i| <= 2 max_j E_s,ij + 4 u + gamma(S) + 3 u |lse_i|
    backward    the weights recomputed from the stored lse: eps'_i = max_j E_s,ij + |dlse_i| + 4 u;
                delta_i = rowsum(G * O) carries |G||dO| + gamma(d_v) |G||O|; then each product adds its
                gamma(reduction length) |A||B| and each tile cast to the input dtype adds u_in.
    underflow   each weight may also be off by eta absolutely (2^-126, or 2^-25 once cast to float16),
                and each stored number by eta.

Each test asserts |kernel - reference| <= bound entrywise, and (so that the bound has teeth) that
dropping a single visible key from the reference breaks it.
"""
from __future__ import annotations

import numpy as np
import torch

from attnlab import masks

UNIT_ROUNDOFF = {torch.float32: 2.0**-24, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}
U = UNIT_ROUNDOFF[torch.float32]                     # the accumulators' unit roundoff
# Underflow: the absolute error of a number that falls below the normal range. A GPU's exp2 flushes
# results below float32's smallest normal, 2^-126, to zero; a weight cast to float16 for tl.dot is
# rounded to a multiple of float16's smallest subnormal, 2^-24 (error 2^-25).
UNDERFLOW = {torch.float32: 2.0**-126, torch.float16: 2.0**-25, torch.bfloat16: 2.0**-126}


def gamma(n: int) -> float:
    return n * U / (1 - n * U)


def allowed_mask(T, S, causal, offset):
    """(T, S) bool: attnlab.masks.causal's rule (offset as there), or everything."""
    if not causal:
        return torch.ones(T, S, dtype=torch.bool)
    return torch.from_numpy(np.ascontiguousarray(masks.causal(T, S, offset=offset)))


def reference(q, k, v, g, g_lse, causal, offset, scale=None, drop=None):
    """out, lse and the gradients of sum(out * g) + sum(lse * g_lse), in float64, with everything the
    bounds need. k, v may have fewer heads than q (GQA): head h reads key head h // (H / H_kv).
    ``drop``: a (row, key) pair made invisible, to show that the bounds notice one wrong key."""
    q, k, v = (x.detach().double().requires_grad_() for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    ke, ve = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)    # (B, H, S, d)
    T, S, d_k = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = d_k**-0.5 if scale is None else scale
    allowed = allowed_mask(T, S, causal, offset)                                     # (T, S)
    if drop is not None:
        allowed = allowed.clone()
        allowed[drop] = False
    empty = ~allowed.any(dim=-1)                                                     # (T,) rows with no key
    s = (q @ ke.transpose(-2, -1)) * scale                                           # (B, H, T, S)
    lse = torch.logsumexp(s.masked_fill(~allowed, -torch.inf), dim=-1)              # (B, H, T), -inf if empty
    p = torch.exp((s - lse.masked_fill(empty, 0.0)[..., None]).masked_fill(~allowed, -torch.inf))   # 0 if hidden
    out = p @ ve
    grads = torch.autograd.grad((out * g.double()).sum() + (lse.masked_fill(empty, 0.0) * g_lse.double()).sum(),
                                (q, k, v))
    return dict(out=out.detach(), lse=lse.detach(), dq=grads[0], dk=grads[1], dv=grads[2], p=p.detach(),
                s=s.detach(), ke=ke.detach(), ve=ve.detach(), q=q.detach(), scale=scale, group=group)


def bounds(ref, g, g_lse, dtype, truncating=False):
    """Entrywise first-order bounds on |kernel - reference| for out, lse, dq, dk, dv (see the module).

    truncating: casts to bfloat16 round toward zero, which doubles their unit roundoff; Triton's
    interpreter does that (its cast_impl converts float32 to bfloat16 with no rounding mode), a GPU
    rounds to nearest.
    """
    u_in, eta = UNIT_ROUNDOFF[dtype], UNDERFLOW[dtype]
    if truncating and dtype == torch.bfloat16:
        u_in *= 2
    q, ke, ve, p, s, scale = ref["q"], ref["ke"], ref["ve"], ref["p"], ref["s"], ref["scale"]
    g = g.double()
    T, S, d_k, d_v = q.shape[-2], ke.shape[-2], q.shape[-1], ve.shape[-1]
    row_max = s.abs().amax(dim=-1, keepdim=True)
    e_s = gamma(d_k + 2) * scale * (q.abs() @ ke.abs().transpose(-2, -1)) + 2 * U * (s.abs() + row_max)
    e_s_max = e_s.amax(dim=-1)                                                        # (B, H, T)
    eps = 2 * e_s_max + 8 * U + gamma(S)
    pv = p @ ve.abs()
    out = (eps + u_in + gamma(S) + U)[..., None] * pv + u_in * ref["out"].abs() + eta * ve.abs().sum(-2, True)
    lse_abs = torch.where(torch.isfinite(ref["lse"]), ref["lse"].abs(), 0.0)
    lse = 2 * e_s_max + 4 * U + gamma(S) + 3 * U * lse_abs
    eps_b = (e_s_max + lse + 4 * U)[..., None]                                        # recomputed weights
    delta = (g.abs() * out).sum(-1) + gamma(d_v) * (g.abs() * ref["out"].abs()).sum(-1)   # (B, H, T)
    dp = g @ ve.transpose(-2, -1)                                                     # exact dP
    ds = p * (dp - (g * ref["out"]).sum(-1, keepdim=True) + g_lse.double()[..., None])   # exact dS
    d_ds = (p * (gamma(d_v) * (g.abs() @ ve.abs().transpose(-2, -1)) + delta[..., None])
            + (eps_b + 2 * U) * ds.abs() + eta * (dp - (g * ref["out"]).sum(-1, keepdim=True)).abs()
            + u_in * ds.abs() + eta)
    rows = T * ref["group"]                                                           # terms summed into dK, dV
    dv = (eps_b + u_in + gamma(rows)) * p
    dv = dv.transpose(-2, -1) @ g.abs() + eta * g.abs().sum(-2, True)
    dk = scale * (d_ds.transpose(-2, -1) @ q.abs() + (gamma(rows) + U) * ds.abs().transpose(-2, -1) @ q.abs())
    dq = scale * (d_ds @ ke.abs() + (gamma(S) + U) * ds.abs() @ ke.abs())
    B, H = q.shape[:2]
    group = ref["group"]
    fold = lambda x: x.view(B, H // group, group, *x.shape[2:]).sum(2)               # noqa: E731  (B, H_kv, S, d)
    return dict(out=out + eta, lse=lse, dq=dq + u_in * ref["dq"].abs() + eta,
                dk=fold(dk) + u_in * ref["dk"].abs() + eta, dv=fold(dv) + u_in * ref["dv"].abs() + eta)


def worst_ratio(got, ref, bound):
    """max over entries of |got - ref| / bound (rows with lse = -inf must match exactly); <= 1 is right."""
    got, ref = got.double(), ref.double()
    same_inf = torch.isinf(ref) & (got == ref)
    err = torch.where(same_inf, 0.0, (got - ref).abs())
    return (err / bound.clamp_min(1e-300)).max().item()
