"""What every kernel launch needs: where the kernels run, the inputs checked, tile widths, block sizes."""
from __future__ import annotations

import math

import numpy as np
import torch
import triton

from .. import _validate as V
from ..errors import AttentionInputError
from ..i18n import _
from ..torch_ops._checks import finite_check, same_kind, tensor_check

INTERPRETED = bool(triton.knobs.runtime.interpret)
"""True when this module's kernels were made for Triton's CPU interpreter (TRITON_INTERPRET=1 when
they were defined), False when Triton compiles them for a GPU."""

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
LOG2_E = math.log2(math.e)          # exp(x) = exp2(x log2 e): the kernels work in base 2, as GPUs do


def interpreted() -> bool:
    """Whether the kernels run in Triton's interpreter (on the CPU) rather than compiled for a GPU."""
    return INTERPRETED


def check_device(device: torch.device) -> None:
    """The interpreter runs on CPU tensors; compiled kernels need CUDA tensors."""
    if INTERPRETED and device.type != "cpu":
        raise AttentionInputError(_("attnlab.kernels runs in Triton's CPU interpreter here (TRITON_INTERPRET=1); "
                                    "its tensors must be on the CPU, got {device}").format(device=device))
    if not INTERPRETED and device.type != "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError(_("attnlab.kernels: there is no GPU, and TRITON_INTERPRET was not 1 when the "
                                 "kernels were defined, so they were built for a GPU. Unset TRITON_INTERPRET (or "
                                 "set it to 1) before importing attnlab.kernels"))
        raise AttentionInputError(_("attnlab.kernels compiles its kernels for the GPU; its tensors must be on "
                                    "a CUDA device, got {device}").format(device=device))


def check_heads(q, k, v) -> tuple[int, int, int, int, int, int]:
    """q (B, H, T, d_k), k (B, H_kv, S, d_k), v (B, H_kv, S, d_v) in one kernel dtype, on the kernels'
    device, finite. Returns (B, H, T, S, d_k, d_v)."""
    named = {"q": q, "k": k, "v": v}
    for name, x in named.items():
        tensor_check(name, x)
        if x.dim() != 4:
            raise AttentionInputError(_("{name} must have 4 axes (batch, heads, positions, width); got shape "
                                        "{shape}").format(name=name, shape=V.fmt(x.shape)))
    same_kind(named)
    if q.dtype not in DTYPES:
        raise AttentionInputError(_("attnlab.kernels computes in float32, float16 or bfloat16; got {dtype} (use "
                                    "attnlab.torch_ops.chunked_attention for float64)").format(dtype=q.dtype))
    check_device(q.device)
    (B, H, T, d_k), (B_k, H_kv, S, d_k2), (B_v, H_v, S_v, d_v) = q.shape, k.shape, v.shape
    if (B_k, H_kv, d_k2) != (B, H_kv, d_k) or (B_v, H_v, S_v) != (B, H_kv, S) or H % H_kv or T * S == 0:
        raise AttentionInputError(_("q (B, H, T, d_k), k (B, H_kv, S, d_k) and v (B, H_kv, S, d_v) must agree, "
                                    "with H a multiple of H_kv and T, S >= 1; got q {q}, k {k}, v {v}").format(
                                        q=V.fmt(q.shape), k=V.fmt(k.shape), v=V.fmt(v.shape)))
    if max(d_k, d_v) > 256:
        raise AttentionInputError(_("head widths up to 256 fit a tile; got d_k = {d_k}, d_v = {d_v}").format(
            d_k=d_k, d_v=d_v))
    finite_check(named)
    return B, H, T, S, d_k, d_v


def causal_offset(causal, offset, T: int, S: int) -> int:
    """The absolute position of query 0 (as in attnlab.masks.causal); S - T by default."""
    if not isinstance(causal, (bool, np.bool_)):
        raise AttentionInputError(_("causal must be True or False; got {causal!r}").format(causal=causal))
    if offset is not None and not causal:
        raise AttentionInputError(_("offset={offset!r} only applies with causal=True (it places the causal "
                                    "diagonal)").format(offset=offset))
    if offset is None:
        return S - T
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise AttentionInputError(_("offset must be an integer (absolute position of query 0); got {offset!r}")
                                  .format(offset=offset))
    return int(offset)


def tile_width(d: int) -> int:
    """A head width as a tile holds it: the next power of two, at least 16 (what tl.dot accepts);
    the extra columns are loaded as zeros and never stored."""
    return max(16, triton.next_power_of_2(d))


def block_size(name: str, value, default: int) -> int:
    """A block size: a power of two, at least 16 (``tl.arange`` and ``tl.dot`` need both)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 16 or value & (value - 1):
        raise AttentionInputError(_("{name} must be a power of two, at least 16; got {value!r}").format(
            name=name, value=value))
    return int(value)


def dot_precision(dtype) -> str:
    """How tile_ops.dot multiplies tiles of ``dtype``: float32 in full float32 ("ieee"), not in the GPU's
    default tf32, which keeps only 10 bits of each input's mantissa; float16 and bfloat16 tiles go to
    the tensor cores as they are ("tf32" does not apply to them), except bfloat16 in the interpreter
    ("bf16 as fp32", see tile_ops.dot)."""
    if dtype == torch.float32:
        return "ieee"
    return "bf16 as fp32" if INTERPRETED and dtype == torch.bfloat16 else "tf32"


def warps(*tile_sides: int) -> int:
    """Warps per program: 4 for tiles up to 64 x 64 on a side, 8 beyond (more registers for the accumulators)."""
    return 4 if max(tile_sides) <= 64 else 8
