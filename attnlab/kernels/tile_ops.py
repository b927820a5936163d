"""Operations on tiles shared by the kernels."""
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def dot(a, b, PRECISION: tl.constexpr):
    """a @ b for two tiles, accumulated in float32.

    PRECISION is tl.dot's input_precision ("ieee" for float32 tiles, "tf32" otherwise, where it does not
    apply), or "bf16 as fp32": bfloat16 tiles multiplied as float32, which gives the same numbers (the
    product of two bfloat16 numbers is exact in float32). The launchers choose it in Triton's
    interpreter, whose tl.dot multiplies the bit patterns of bfloat16 tiles (triton-lang/triton#11584).
    """
    if PRECISION == "bf16 as fp32":
        return tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    else:
        return tl.dot(a, b, input_precision=PRECISION)
