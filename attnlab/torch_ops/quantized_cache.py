"""KV-cache quantisation as KIVI does it: keys per channel, values per token, a few bits per number.

A number x of a group is stored as an integer code round((x - lo) / scale) in 0 .. 2^bits - 1, with
scale = (hi - lo) / (2^bits - 1) and the group's lo, hi (asymmetric min-max quantisation). Which numbers form a
group matters: keys have a few channels with large values in every token (outlier channels), so KIVI gives each
channel of a block of ``group`` tokens its own scale (per channel); values have no such channels and are
quantised token by token across their features (per token). The last, incomplete block of keys stays in full
precision until it fills (KIVI's residual).

:class:`QuantizedKVCache` keeps the full-precision keys and values and quantises them where they are read
(codes, scales and offsets never change once a block is complete, so this gives the numbers a cache of codes
would give); ``nbytes`` counts what a cache of packed codes holds: bits / 8 bytes per number, plus one scale and
one offset per group in the cache's dtype, plus the residual keys in full precision.
"""
from __future__ import annotations

import numbers

import torch

from ..errors import AttentionInputError
from ..i18n import _
from .rotary_cache import RotaryKVCache


def quantize(x, bits: int, dim: int):
    """(codes uint8, scale, lo): asymmetric min-max quantisation of x with one scale per slice along ``dim``."""
    levels = 2 ** bits - 1
    lo, hi = x.amin(dim, keepdim=True), x.amax(dim, keepdim=True)
    scale = ((hi - lo) / levels).clamp_min(torch.finfo(x.dtype).tiny)      # a constant slice: any scale works
    codes = ((x - lo) / scale).round().clamp(0, levels).to(torch.uint8)
    return codes, scale, lo


def dequantize(codes, scale, lo):
    return codes.to(scale.dtype) * scale + lo


def fake_quantize(x, bits: int, dim: int):
    """x after a round trip through ``bits``-bit codes (slices along ``dim`` share a scale)."""
    return dequantize(*quantize(x, bits, dim))


def quantize_keys(k, bits: int, group: int):
    """Keys (..., S, d) per channel in blocks of ``group`` positions; the last incomplete block unchanged."""
    S, d = k.shape[-2], k.shape[-1]
    full = S - S % group
    blocks = k[..., :full, :].reshape(*k.shape[:-2], full // group, group, d)    # (..., S // group, group, d)
    blocks = fake_quantize(blocks, bits, dim=-2)                                  # min and max over each block
    return torch.cat([blocks.reshape(*k.shape[:-2], full, d), k[..., full:, :]], -2)


def quantize_values(v, bits: int):
    """Values (..., S, d) per token: each position's d numbers share a scale."""
    return fake_quantize(v, bits, dim=-1)


class QuantizedKVCache(RotaryKVCache):
    """A contiguous RotaryKVCache read through ``bits``-bit quantisation (2 <= bits <= 8): keys per channel in
    blocks of ``group`` positions, values per token (module docstring)."""

    def __init__(self, n_kv_heads, d_k, d_v=None, *, bits=8, group=32, dtype=None, device=None, base=10000.0,
                 pairing="half"):
        super().__init__(n_kv_heads, d_k, d_v, dtype=dtype, device=device, base=base, pairing=pairing)
        for name, value, low in (("bits", bits, 2), ("group", group, 1)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low or (
                    name == "bits" and value > 8):
                raise AttentionInputError(_("{name} must be an integer in [{low}, {high}]; got {value!r}").format(
                    name=name, low=low, high=8 if name == "bits" else "...", value=value))
        self.bits, self.group = int(bits), int(group)

    def _stored(self):
        k, v, pos = super()._stored()
        return quantize_keys(k, self.bits, self.group), quantize_values(v, self.bits), pos

    @property
    def nbytes(self) -> int:
        """Bytes a cache of packed codes would hold now (module docstring)."""
        if self._k is None:
            return 0
        B, H_kv, S, _d = self._k.shape
        size, full = self._k.element_size(), S - S % self.group
        packed = lambda n: -(-n * self.bits // 8)                              # noqa: E731  n codes, whole bytes
        keys = B * H_kv * (packed(full * self.d_k) + (full // self.group) * self.d_k * 2 * size
                           + (S - full) * self.d_k * size)
        values = B * H_kv * S * (packed(self.d_v) + 2 * size)
        return keys + values
