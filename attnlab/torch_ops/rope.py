"""Rotary position embedding for tensors: attnlab.position.rope's semantics, autograd, any device.

The angles are computed in float64 and the cosines and sines rounded once to x's dtype, so a float32
rotation is the float64 one rounded, at every position (Hugging Face's Llama computes the angles in
float32, whose error grows with the position).
"""
from __future__ import annotations

import torch

from .. import _validate as V
from ..errors import AttentionInputError
from ..i18n import _
from ..position import _base, _even_width, _pairing, positions_array
from ._checks import finite_check, tensor_check


def _positions(positions, T: int, device) -> torch.Tensor:
    """(T,) int64 positions on ``device`` from a tensor, an array, a range or a list of integers."""
    if isinstance(positions, torch.Tensor):
        positions = positions.detach().cpu().numpy()
    return torch.from_numpy(positions_array(positions, T)).to(device)


def cos_sin(positions, d: int, base: float, dtype, device) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the angles p * base^(-2i/d), each (T, d/2), computed in float64, rounded to ``dtype``."""
    exponent = torch.arange(0, d, 2, dtype=torch.float64, device=device) / d   # (d/2,)
    angles = positions.to(torch.float64)[:, None] * base ** -exponent[None, :]  # (T, d/2)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def rotate(x, cos, sin, pairing: str):
    """Turn the pairs of x (..., T, d) by the angles whose cos and sin are (T, d/2); no checks."""
    d = x.shape[-1]
    if pairing == "half":
        a, b = x[..., : d // 2], x[..., d // 2:]                        # (..., T, d/2) each
        return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)    # (..., T, d)
    a, b = x[..., 0::2], x[..., 1::2]                                   # (..., T, d/2) each
    return torch.stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2)   # (..., T, d/2, 2) -> (..., T, d)


def rope(x, positions, base=10000.0, pairing="half"):
    """x (..., T, d) with d even, positions (T,) integers -> x with pair i of the row at position p
    turned by p * base^(-2i/d); pairing "half" (i with i + d/2) or "interleaved" (2i with 2i + 1)."""
    tensor_check("x", x)
    if x.dim() < 2:
        raise AttentionInputError(_("x must have shape (..., T, d); got shape {shape}").format(shape=V.fmt(x.shape)))
    d, base, pairing = _even_width(x.shape[-1]), _base(base), _pairing(pairing)
    finite_check({"x": x})
    p = _positions(positions, x.shape[-2], x.device)
    cos, sin = cos_sin(p, d, base, x.dtype, x.device)
    return rotate(x, cos, sin, pairing)
