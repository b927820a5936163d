"""Chunked-attention checker: each online-softmax mistake is named.

Every "student" function is written independently, the way a student would write the mistake,
not taken from the package's mistake models; each test asserts the diagnosis it gets.
"""
import math

import numpy as np

from attnlab import checks as C

from .support import assert_diagnosis, assert_not_attempted, np_softmax, stub

# ------------------------------------------------------------------------------------ chunked attention


def online(q, k, v, block_size, *, rescale_out=True, rescale_sum=True, use_max=True, divide=True):
    """A student's online-softmax loop with knobs; the defaults are right."""
    T = q.shape[0]
    m = np.full(T, -np.inf)
    total = np.zeros(T)
    out = np.zeros((T, v.shape[1]))
    for start in range(0, k.shape[0], block_size):
        kb, vb = k[start:start + block_size], v[start:start + block_size]
        s = q @ kb.T / math.sqrt(q.shape[1])
        new_m = np.maximum(m, s.max(axis=1)) if use_max else np.zeros(T)
        corr = np.exp(m - new_m) if use_max else np.ones(T)
        p = np.exp(s - new_m[:, None])
        total = (total * corr if rescale_sum else total) + p.sum(axis=1)
        out = (out * corr[:, None] if rescale_out else out) + p @ vb
        m = new_m
    return out / total[:, None] if divide else out


def test_chunked_reference_passes():
    assert C.check_chunked_attention(online).passed


def test_chunked_stub_not_attempted():
    assert_not_attempted(C.check_chunked_attention(stub))


def test_chunked_without_rescaling():
    assert_diagnosis(C.check_chunked_attention(lambda *a: online(*a, rescale_out=False, rescale_sum=False)),
                     "no_rescale", "no rescaling when the running maximum grows")


def test_chunked_rescales_sum_only():
    assert_diagnosis(C.check_chunked_attention(lambda *a: online(*a, rescale_out=False)), "rescale_sum_only",
                     "not the running output")


def test_chunked_rescales_output_only():
    assert_diagnosis(C.check_chunked_attention(lambda *a: online(*a, rescale_sum=False)), "rescale_output_only",
                     "not the running sum")


def test_chunked_without_running_max():
    assert_diagnosis(C.check_chunked_attention(lambda *a: online(*a, use_max=False)), "no_max_subtraction",
                     "overflow")


def test_chunked_without_final_division():
    assert_diagnosis(C.check_chunked_attention(lambda *a: online(*a, divide=False)), "no_final_division",
                     "final division")


def test_chunked_average_of_block_softmaxes():
    def averaged(q, k, v, block_size):
        outs = []
        for start in range(0, k.shape[0], block_size):
            s = q @ k[start:start + block_size].T / math.sqrt(q.shape[1])
            outs.append(np_softmax(s) @ v[start:start + block_size])
        return sum(outs) / len(outs)
    assert_diagnosis(C.check_chunked_attention(averaged), "average_of_blocks", "averaged the block outputs")


# ------------------------------------------------------------------------------------ new wrong implementations


def test_chunked_building_the_full_matrix_is_named():
    def full(q, k, v, block_size):
        s = q @ k.T / math.sqrt(q.shape[1])                 # the whole T x S matrix
        return np_softmax(s) @ v
    assert_diagnosis(C.check_chunked_attention(full), "full_matrix", "whole T x S matrix")


def test_chunked_concatenating_block_scores_is_named():
    def concatenated(q, k, v, block_size):
        blocks = [q @ k[i:i + block_size].T for i in range(0, k.shape[0], block_size)]
        s = np.concatenate(blocks, axis=1) / math.sqrt(q.shape[1])
        return np_softmax(s) @ v
    assert_diagnosis(C.check_chunked_attention(concatenated), "full_matrix", "more than half")


def test_chunked_with_a_running_max_but_no_correction_of_old_blocks():
    def uncorrected(q, k, v, block_size):
        return online(q, k, v, block_size, rescale_out=False, rescale_sum=False)
    assert_diagnosis(C.check_chunked_attention(uncorrected), "no_rescale", "exp(m_old - m_new)")


def test_chunked_in_float32_is_refused():
    assert_diagnosis(C.check_chunked_attention(lambda q, k, v, b: online(q, k, v, b).astype(np.float32)),
                     "not_float64", "float32")


def test_chunked_that_never_finishes_comes_back_with_the_time_limit():
    def endless(q, k, v, block_size):
        start = 0
        while start < k.shape[0]:
            pass                                           # forgot start += block_size
        return q
    result = C.check_chunked_attention(endless, timeout=0.5)
    assert_diagnosis(result, "time_limit", "ran longer than 0.5 s")
    assert "condition never becomes false" in result.message
