"""Checker for chunked attention with an online softmax (FlashAttention's idea, in NumPy)."""
from __future__ import annotations

import numpy as np

from .. import reference as ref
from . import mistakes as M
from . import result as R
from .diagnose import Mistake, compare
from .runner import call, checker, matmul_hint, to_array

CHUNKED_MISTAKES = [
    Mistake("no_rescale", "no rescaling when the running maximum grows: the sum and the output accumulated "
            "so far were computed relative to the old maximum m_old and must be multiplied by "
            "exp(m_old - m_new) before the new block is added.", M.chunked_without_rescaling),
    Mistake("rescale_sum_only", "you rescale the running sum but not the running output: both were "
            "accumulated against the old maximum, so both need the factor exp(m_old - m_new).",
            M.chunked_rescales_sum_only),
    Mistake("rescale_output_only", "you rescale the running output but not the running sum: both need the "
            "factor exp(m_old - m_new).", M.chunked_rescales_output_only),
    Mistake("no_max_subtraction", "no running maximum (overflow): without subtracting a maximum, `np.exp` "
            "overflows on large scores. Keep the running maximum m and exponentiate s - m.",
            M.chunked_without_max),
    Mistake("no_final_division", "the final division by the running sum is missing: the output is the "
            "accumulated sum of exp(s - m) v divided by the accumulated sum of exp(s - m).",
            M.chunked_without_final_division),
    Mistake("average_of_blocks", "you took a softmax inside each block and averaged the block outputs. Blocks "
            "must be weighted by how much of the row's total exp-mass they hold, which is what the running sum "
            "and maximum keep track of.", M.chunked_average_of_blocks),
]


def _increasing_keys(rng, S, d):
    """Keys whose scores tend to grow with position, so the running maximum changes between blocks."""
    return rng.normal(size=(S, d)) * 0.5 + np.linspace(0.0, 2.5, S)[:, None]


@checker("chunked attention")
def check_chunked_attention(fn):
    """Check ``fn(q, k, v, block_size)``: exact attention (no mask) computed over key blocks of
    ``block_size`` with a running maximum and running sum; q (T, d_k), k (S, d_k), v (S, d_v)."""
    task = "chunked attention"
    rng = np.random.default_rng(17)
    q = np.abs(rng.normal(size=(3, 4))) + 0.2
    k, v = _increasing_keys(rng, 7, 4), rng.normal(size=(7, 3))
    big_q = q * 300
    cases = [
        ("T = 3, S = 7, block_size = 2 (the last block is shorter)", q, k, v, 2),
        ("block_size = 3", q, k, v, 3),
        ("block_size = 1 (one key at a time)", q, k, v, 1),
        ("block_size = 7 (a single block)", q, k, v, 7),
        ("block_size = 10 (larger than S)", q, k, v, 10),
        ("large scores (several hundred; `np.exp` overflows without a maximum), block_size = 2", big_q, k, v, 2),
    ]
    for case, q_, k_, v_, block in cases:
        out = call(task, fn, case, q_, k_, v_, block, error_hint=matmul_hint)
        got = to_array(task, out, case, shape=(q_.shape[0], v_.shape[1]))
        compare(task, case, got, ref.attention(q_, k_, v_), CHUNKED_MISTAKES, args=(q_, k_, v_, block))
    return R.passed(task, f"All {len(cases)} cases match `al.attention` to float64 rounding, for block sizes "
                          f"1, 2, 3, S and more than S, and for scores large enough to overflow a naive exp. "
                          f"(The checker cannot see whether you built the T x S matrix: read your code for that.)")
