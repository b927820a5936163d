"""Checkers of chapter 9: merging partial results by log-sum-exp, and split-KV attention.

The right answers are students' NumPy functions that agree with the torch path (attnlab.torch_ops.merge_partials,
split_kv_attention); the torch path itself, called inside a student's function, is a forbidden shortcut and is
named. Each wrong function is written here the way a student would write it, not taken from the checker's models.
"""
import numpy as np
import torch

import attnlab.checks as C
from attnlab import torch_ops
from tests.attnlab.checks.support import assert_diagnosis, assert_not_attempted, stub


def torch_merge(outs, lses):
    out, lse = torch_ops.merge_partials([torch.from_numpy(o) for o in outs], [torch.from_numpy(x) for x in lses])
    return out.numpy(), lse.numpy()


def loop_merge(outs, lses):
    """A student's merge written as the online softmax over chunks, one chunk at a time."""
    m = np.full(lses.shape[1], -np.inf)
    total = np.zeros(lses.shape[1])
    acc = np.zeros(outs.shape[1:])
    for o, lse in zip(outs, lses):
        m_new = np.maximum(m, lse)
        shift = np.where(np.isfinite(m_new), m_new, 0.0)
        c, w = np.exp(m - shift), np.exp(lse - shift)
        total, acc, m = c * total + w, c[:, None] * acc + w[:, None] * o, m_new
    seen = total > 0
    safe = np.where(seen, total, 1.0)
    return np.where(seen[:, None], acc / safe[:, None], 0.0), np.where(seen, m + np.log(safe), -np.inf)


def test_a_right_merge_passes_and_a_stub_is_not_attempted():
    rng = np.random.default_rng(3)
    outs, lses = rng.normal(size=(3, 5, 2)), rng.normal(scale=3, size=(3, 5)) + 700
    outs[:, 4], lses[:, 4] = 0.0, -np.inf                              # row 4 saw no key
    lses[1, 0] = -np.inf
    for got, want in zip(loop_merge(outs, lses), torch_merge(outs, lses)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert C.check_merge_partials(loop_merge).passed
    assert_not_attempted(C.check_merge_partials(stub))


def test_the_torch_merge_inside_a_student_function_is_named():
    assert_diagnosis(C.check_merge_partials(torch_merge), "forbidden_call", "torch_ops.split_kv.merge_partials")


def test_an_average_of_the_partials_is_named():
    def mean(outs, lses):
        return outs.mean(axis=0), np.log(np.exp(lses).sum(axis=0))
    assert_diagnosis(C.check_merge_partials(mean), "no_rescale", "averaged")


def test_keeping_the_best_chunk_is_named():
    def best(outs, lses):
        i = lses.argmax(axis=0)
        return outs[i, np.arange(outs.shape[1])], lses.max(axis=0)
    assert_diagnosis(C.check_merge_partials(best), "max_instead_of_logsumexp", "soft maximum")


def test_a_max_for_the_log_sum_exp_is_named():
    def lse_max(outs, lses):
        out, _ = loop_merge(outs, lses)
        return out, lses.max(axis=0)
    assert_diagnosis(C.check_merge_partials(lse_max), "lse_is_max", "largest lse_s")


def test_a_sum_of_the_log_sum_exps_is_named():
    def lse_sum(outs, lses):
        out, _ = loop_merge(outs, lses)
        return out, lses.sum(axis=0)
    assert_diagnosis(C.check_merge_partials(lse_sum), "lse_is_sum", "adding logs")


def test_weights_that_do_not_add_up_to_one_are_named():
    def undivided(outs, lses):
        m = lses.max(axis=0)
        w = np.exp(lses - m)
        return (w[..., None] * outs).sum(axis=0), m + np.log(w.sum(axis=0))
    assert_diagnosis(C.check_merge_partials(undivided), "no_normalisation", "add up to 1")


def test_exponentiating_the_log_sum_exps_directly_overflows():
    def unshifted(outs, lses):
        w = np.exp(lses)
        return (w[..., None] * outs).sum(axis=0) / w.sum(axis=0)[:, None], np.log(w.sum(axis=0))
    assert_diagnosis(C.check_merge_partials(unshifted), "no_shift", "709")


def test_a_row_of_empty_chunks_that_turns_nan_is_named():
    def forgets_empty(outs, lses):
        m = lses.max(axis=0)
        w = np.exp(lses - m)
        return (w[..., None] * outs).sum(axis=0) / w.sum(axis=0)[:, None], m + np.log(w.sum(axis=0))
    assert_diagnosis(C.check_merge_partials(forgets_empty), "empty_partials", "-inf")


def test_one_array_instead_of_two_and_none_are_explained():
    assert_diagnosis(C.check_merge_partials(lambda outs, lses: loop_merge(outs, lses)[0]), "wrong_type",
                     "must return two arrays")
    assert_diagnosis(C.check_merge_partials(lambda outs, lses: None), "returns_none", "return")
    assert_diagnosis(C.check_merge_partials(lambda outs, lses: tuple(torch.from_numpy(x) for x in
                                                                     loop_merge(outs, lses))),
                     "wrong_type", "NumPy array")


# ---------------------------------------------------------------------------------------------- split-KV


def torch_split(q, k, v, n_splits):
    out, lse = torch_ops.split_kv_attention(*(torch.from_numpy(x) for x in (q, k, v)), n_splits)
    return out.numpy(), lse.numpy()


def student_split(q, k, v, n_splits, *, bounds=None, scale=True, merge=loop_merge):
    """A student's split-KV: near-equal chunks, a partial per chunk (empty ones skipped), the merge."""
    S = k.shape[0]
    bounds = bounds or [s * S // n_splits for s in range(n_splits + 1)]
    outs, lses = [], []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        if hi == lo:
            continue
        u = q @ k[lo:hi].T / (np.sqrt(q.shape[1]) if scale else 1.0)
        m = u.max(axis=1, keepdims=True)
        e = np.exp(u - m)
        outs.append(e @ v[lo:hi] / e.sum(axis=1, keepdims=True))
        lses.append(m[:, 0] + np.log(e.sum(axis=1)))
    return merge(np.array(outs), np.array(lses))


def test_right_split_kv_attention_passes_and_a_stub_is_not_attempted():
    rng = np.random.default_rng(4)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(7, 4)), rng.normal(size=(7, 2))
    for n_splits in (1, 3, 7, 9):
        for got, want in zip(student_split(q, k, v, n_splits), torch_split(q, k, v, n_splits)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert C.check_split_kv_attention(student_split).passed
    assert_diagnosis(C.check_split_kv_attention(torch_split), "forbidden_call", "torch_ops.split_kv.split_kv_attention")
    assert_not_attempted(C.check_split_kv_attention(stub))


def test_chunks_that_drop_the_last_keys_are_named():
    def drops(q, k, v, n_splits):
        size = k.shape[0] // n_splits
        return student_split(q, k, v, n_splits, bounds=[s * size for s in range(n_splits + 1)])
    assert_diagnosis(C.check_split_kv_attention(drops), "drops_keys", "never read")


def test_averaging_the_chunks_is_named():
    def averaged(q, k, v, n_splits):
        return student_split(q, k, v, n_splits, merge=lambda o, lse: (o.mean(axis=0), loop_merge(o, lse)[1]))
    assert_diagnosis(C.check_split_kv_attention(averaged), "no_rescale", "averaged")


def test_unscaled_scores_are_named():
    assert_diagnosis(C.check_split_kv_attention(lambda q, k, v, n: student_split(q, k, v, n, scale=False)),
                     "no_scale", "sqrt(d_k)")


def test_an_empty_chunk_that_raises_or_gives_nan_is_named():
    def raises(q, k, v, n_splits):
        S = k.shape[0]
        parts = []
        for s in range(n_splits):
            u = q @ k[s * S // n_splits:(s + 1) * S // n_splits].T
            parts.append(u.max(axis=1))                       # np.max of an empty chunk raises
        return student_split(q, k, v, n_splits)

    def nan(q, k, v, n_splits):
        out, lse = student_split(q, k, v, n_splits)
        return (out * np.nan if n_splits > k.shape[0] else out), lse
    assert_diagnosis(C.check_split_kv_attention(raises), "empty_chunk", "n_splits > S")
    assert_diagnosis(C.check_split_kv_attention(nan), "empty_chunk", "NaN")


def test_a_shape_error_is_reported_with_its_hint_not_as_an_empty_chunk():
    def broken(q, k, v, n_splits):
        raise ValueError("operands could not be broadcast together with shapes (3,4) (10,4)")
    result = C.check_split_kv_attention(broken)
    assert not result.passed and result.mistake == "" and "could not be broadcast" in result.message
