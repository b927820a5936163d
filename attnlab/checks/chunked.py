"""Checker for chunked attention with an online softmax (FlashAttention's idea, in NumPy).

Besides the values, the checker measures the largest NumPy allocation peak of one call with
``tracemalloc`` (NumPy reports its array buffers to it) on a case where the full T x S matrix of
scores would take 4 MiB and one block of scores 128 KiB: a function that builds the whole matrix
is told so (a correct one stays near 0.5 MiB). The online softmax is to be written by hand: attnlab's
attention and softmax (and its chunked torch path) may not be called (:data:`CHUNKED_LIBRARIES`).
"""
from __future__ import annotations

import numpy as np

from .. import reference as ref
from ..i18n import N_, _
from . import seeds
from .diagnosis import Trial
from .engine import Mistake, error_hint, models
from .kernels import softmax
from .registry import checker

CHUNKED_LIBRARIES = ("attnlab.reference.attention", "attnlab.reference.softmax", "attnlab.reference.masked_softmax",
                     "attnlab.torch_ops.chunked.chunked_attention", "attnlab.torch_ops.attention.attention")


def _online(q, k, v, block, *, rescale_acc=True, rescale_sum=True, use_max=True, divide=True, m_start=-np.inf,
            inverted=False, last_block=True):
    c = 1 / np.sqrt(q.shape[-1])
    T = q.shape[0]
    m = np.full((T, 1), m_start)
    l = np.zeros((T, 1))
    acc = np.zeros((T, v.shape[-1]))
    stop = k.shape[0] if last_block else k.shape[0] - block + 1
    for start in range(0, stop, block):
        s = q @ k[start:start + block].T * c
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True)) if use_max else np.zeros_like(m)
        alpha = (np.exp(m_new - m) if inverted else np.exp(m - m_new)) if use_max else np.ones_like(m)
        p = np.exp(s - m_new)
        l = (l * alpha if rescale_sum else l) + p.sum(axis=-1, keepdims=True)
        acc = (acc * alpha if rescale_acc else acc) + p @ v[start:start + block]
        m = m_new
    return acc / l if divide else acc


CHUNKED_MISTAKES: list[Mistake] = []
model = models(CHUNKED_MISTAKES)


@model("no_rescale", N_("no rescaling when the running maximum grows: the sum and the output accumulated so far were "
       "computed relative to the old maximum m_old and must be multiplied by exp(m_old - m_new) before the new "
       "block is added."))
def chunked_without_rescaling(q, k, v, block_size):
    return _online(q, k, v, block_size, rescale_acc=False, rescale_sum=False)


@model("rescale_sum_only", N_("you rescale the running sum but not the running output: both were accumulated against "
       "the old maximum, so both need the factor exp(m_old - m_new)."))
def chunked_rescales_sum_only(q, k, v, block_size):
    return _online(q, k, v, block_size, rescale_acc=False)


@model("rescale_output_only", N_("you rescale the running output but not the running sum: both need the factor "
       "exp(m_old - m_new)."))
def chunked_rescales_output_only(q, k, v, block_size):
    return _online(q, k, v, block_size, rescale_sum=False)


@model("no_max_subtraction", N_("no running maximum (overflow): without subtracting a maximum, `np.exp` overflows on "
       "large scores. Keep the running maximum m and exponentiate s - m."))
def chunked_without_max(q, k, v, block_size):
    return _online(q, k, v, block_size, use_max=False)


@model("no_final_division", N_("the final division by the running sum is missing: the output is the accumulated sum "
       "of exp(s - m) v divided by the accumulated sum of exp(s - m)."))
def chunked_without_final_division(q, k, v, block_size):
    return _online(q, k, v, block_size, divide=False)


@model("max_starts_at_zero", N_("your running maximum starts at 0 instead of -inf: for a row whose scores are all "
       "below about -745, every `np.exp(s - m)` underflows to 0 and the row ends as 0/0 = nan. Start with "
       "`m = np.full((T, 1), -np.inf)` (and treat exp(-inf - m_new) as 0)."))
def chunked_max_starts_at_zero(q, k, v, block_size):
    return _online(q, k, v, block_size, m_start=0.0)


@model("rescale_inverted", N_("the rescaling factor is inverted: when the maximum grows from m_old to m_new, multiply "
       "what you accumulated by exp(m_old - m_new) (at most 1), not by exp(m_new - m_old)."))
def chunked_rescale_inverted(q, k, v, block_size):
    return _online(q, k, v, block_size, inverted=True)


@model("last_block_dropped", N_("the last, shorter block is skipped: `range(0, S - block_size + 1, block_size)` stops "
       "before it. Visit `range(0, S, block_size)`; the slice `k[start:start + block_size]` is simply shorter at "
       "the end."))
def chunked_last_block_dropped(q, k, v, block_size):
    return _online(q, k, v, block_size, last_block=False)


@model("average_of_blocks", N_("you took a softmax inside each block and averaged the block outputs. Blocks must be "
       "weighted by how much of the row's total exp-mass they hold, which is what the running sum and maximum keep "
       "track of."))
def chunked_average_of_blocks(q, k, v, block_size):
    c = 1 / np.sqrt(q.shape[-1])
    outs = [softmax(q @ k[s:s + block_size].T * c) @ v[s:s + block_size]
            for s in range(0, k.shape[0], block_size)]
    return np.mean(outs, axis=0)


FULL_MATRIX = Mistake("full_matrix", N_("the function builds the whole T x S matrix of scores (or weights) at once, "
                      "which chunked attention exists to avoid. Compute the scores of one block of keys at a time, "
                      "`q @ k[start:start + block_size].T`, and keep only the running maximum, sum and output."))


def _increasing_keys(rng, S, d):
    """Keys whose scores tend to grow with position, so the running maximum changes between blocks."""
    return rng.normal(size=(S, d)) * 0.5 + np.linspace(0.0, 2.5, S)[:, None]


@checker(N_("chunked attention"), CHUNKED_MISTAKES + [FULL_MATRIX], forbid=CHUNKED_LIBRARIES)
def check_chunked_attention(run, fn):
    """Check ``fn(q, k, v, block_size)``: exact attention (no mask) computed over key blocks of ``block_size`` with
    a running maximum and running sum; q (T, d_k), k (S, d_k), v (S, d_v) float64 NumPy arrays, and a float64
    NumPy array back. The largest allocation of one call must stay well below the T x S matrix."""
    rng = seeds.rng(17)
    q = np.abs(rng.normal(size=(3, 4))) + 0.2
    k, v = _increasing_keys(rng, 7, 4), rng.normal(size=(7, 3))
    big_q, low_q, k_pos = q * 300, q * -2000, k - k.min() + 1.5
    cases = [
        (N_("T = 3, S = 7, block_size = 2 (the last block is shorter)"), q, k, v, 2),
        (N_("block_size = 3"), q, k, v, 3),
        (N_("block_size = 1 (one key at a time)"), q, k, v, 1),
        (N_("block_size = 7 (a single block)"), q, k, v, 7),
        (N_("block_size = 10 (larger than S)"), q, k, v, 10),
        (N_("large scores (several hundred; `np.exp` overflows without a maximum), block_size = 2"), big_q, k, v, 2),
        (N_("large scores again, block_size = 3"), big_q, k, v, 3),
        (N_("scores all below -1000 (every `np.exp(s)` underflows), block_size = 2"), low_q, k_pos, v, 2),
        (N_("scores all below -1000 again, block_size = 4"), low_q, k_pos, v, 4),
    ]

    def trial(item):
        case, q_, k_, v_, block = item
        got = run.array(run.call(fn, case, q_, k_, v_, block, hint=error_hint), case, shape=(q_.shape[0], v_.shape[1]))
        return Trial(case, got, ref.attention(q_, k_, v_), (q_, k_, v_, block))

    run.each_case(cases, trial, CHUNKED_MISTAKES)
    T, S, block = 64, 8192, 256
    q_m, k_m, v_m = rng.normal(size=(T, 16)), _increasing_keys(rng, S, 16), rng.normal(size=(S, 16))
    case = _("T = {T}, S = {S}, block_size = {block} (the full matrix would take {mib} MiB)").format(
        T=T, S=S, block=block, mib=T * S * 8 // 2**20)
    memory = {}
    out = run.call(fn, case, q_m, k_m, v_m, block, hint=error_hint, memory=memory)
    peak = memory["peak"]
    got = run.array(out, case, shape=(T, 16))
    run.compare(case, got, ref.attention(q_m, k_m, v_m), CHUNKED_MISTAKES, args=(q_m, k_m, v_m, block))
    budget = T * S * 8 // 2          # half the full matrix; one block of scores is 1/16 of it
    if peak > budget:
        run.fail(_("On {case}, your function held up to {value:.1f} MiB at once, more than half of "
                   "the full {T} x {S} matrix ({value2:.0f} MiB): {explanation}").format(
                       case=_(case), value=peak / 2**20, T=T, S=S, value2=T * S * 8 / 2**20,
                       explanation=FULL_MATRIX.text), FULL_MATRIX.name)
    return run.passed(_("All {value} cases match `al.attention` to float64 rounding, for block "
                        "sizes 1, 2, 3, S and more than S, and for scores large enough to overflow "
                        "a naive exp; on T = {T}, S = {S} your function never held more than "
                        "{value2:.2f} MiB at once (the full matrix: {value3:.0f} MiB).").format(
                            value=len(cases) + 1, T=T, S=S, value2=peak / 2**20, value3=T * S * 8 / 2**20))
