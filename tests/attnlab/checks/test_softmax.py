"""Softmax and dropout checkers: the reference passes, stubs are not attempted, each mistake is named.

Every "student" function is written independently, the way a student would write the mistake,
not taken from the package's mistake models; each test asserts the diagnosis it gets.
"""

import numpy as np
import torch

import attnlab as al
from attnlab import checks as C

from .support import assert_diagnosis, assert_not_attempted, stub

# ------------------------------------------------------------------------------------ softmax


def hand_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def torch_by_hand(x):
    t = torch.from_numpy(x)
    e = torch.exp(t - t.amax(dim=-1, keepdim=True))
    return (e / e.sum(dim=-1, keepdim=True)).numpy()


def test_softmax_reference_passes():
    assert C.check_softmax(hand_softmax).passed
    assert C.check_softmax(torch_by_hand).passed


def test_softmax_from_a_library_is_named_as_a_forbidden_call():
    """The sheet asks for the softmax written by hand: the package's and torch's softmax are named."""
    assert_diagnosis(C.check_softmax(al.softmax), "forbidden_call", "your function called `attnlab.reference.softmax`")
    result = C.check_softmax(lambda x: torch.softmax(torch.from_numpy(x), dim=-1).numpy())
    assert_diagnosis(result, "forbidden_call", "`torch.softmax`")


def test_softmax_stub_not_attempted():
    assert_not_attempted(C.check_softmax(stub))


def test_softmax_exception_is_one_line_message():
    def broken(x):
        return {}[x.shape]
    result = C.check_softmax(broken)
    assert not result.passed and "raised KeyError" in result.message and "Traceback" not in result.message


def test_softmax_wrong_shape_is_a_message():
    result = C.check_softmax(lambda x: np.exp(x).sum(-1))
    assert not result.passed and "has shape" in result.message and "expected (4)" in result.message


def test_softmax_returning_none_is_a_message():
    def forgot_return(x):
        np.exp(x)
    result = C.check_softmax(forgot_return)
    assert "forget `return`" in result.message


def test_softmax_in_place_change_is_reported():
    def in_place(x):
        x -= x.max(axis=-1, keepdims=True)
        e = np.exp(x)
        return e / e.sum(axis=-1, keepdims=True)
    result = C.check_softmax(in_place)
    assert not result.passed and "in place" in result.message


def test_softmax_wrong_axis():
    def columns(x):
        e = np.exp(x - x.max(axis=0, keepdims=True))
        return e / e.sum(axis=0, keepdims=True)
    assert_diagnosis(C.check_softmax(columns), "wrong_axis", "softmax over the wrong axis")


def test_softmax_whole_array():
    def whole(x):
        e = np.exp(x - np.max(x))
        return e / np.sum(e)
    assert_diagnosis(C.check_softmax(whole), "whole_array", "whole array")


def test_softmax_no_max_subtraction():
    def naive(x):
        e = np.exp(x)
        return e / e.sum(axis=-1, keepdims=True)
    assert_diagnosis(C.check_softmax(naive), "no_max_subtraction", "overflow")


def test_softmax_global_max():
    def global_max(x):
        e = np.exp(x - x.max())
        return e / e.sum(axis=-1, keepdims=True)
    assert_diagnosis(C.check_softmax(global_max), "global_max", "maximum of the whole array")


def test_softmax_max_without_keepdims():
    def no_keepdims(x):
        e = np.exp(x - np.max(x, axis=-1))
        return e / np.sum(e, axis=-1, keepdims=True)
    assert_diagnosis(C.check_softmax(no_keepdims), "max_without_keepdims", "keepdims=True")


def test_softmax_sum_without_keepdims():
    def no_keepdims(x):
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e / np.sum(e, axis=-1)
    assert_diagnosis(C.check_softmax(no_keepdims), "sum_without_keepdims", "keepdims=True")


def test_softmax_not_normalised():
    assert_diagnosis(C.check_softmax(lambda x: np.exp(x - x.max(-1, keepdims=True))), "not_normalised",
                     "not normalised")


def test_softmax_log_softmax():
    assert_diagnosis(C.check_softmax(lambda x: torch.log_softmax(torch.from_numpy(x), -1).numpy()),
                     "log_softmax", "log-probabilities")


# ------------------------------------------------------------------------------------ dropout


def good_dropout(a, p, rng):
    keep = rng.random(a.shape) >= p
    return np.where(keep, a / (1 - p), 0.0)


def test_dropout_reference_passes():
    assert C.check_dropout(good_dropout).passed


def test_dropout_stub_not_attempted():
    assert_not_attempted(C.check_dropout(stub))


def test_dropout_no_rescale():
    assert_diagnosis(C.check_dropout(lambda a, p, rng: a * (rng.random(a.shape) >= p)), "no_rescale", "no rescaling")


def test_dropout_scaled_by_p():
    def by_p(a, p, rng):
        return a * (rng.random(a.shape) >= p) / max(p, 1e-12) if p > 0 else a
    assert_diagnosis(C.check_dropout(by_p), "scaled_by_p", "divided the kept weights by p")


def test_dropout_renormalised():
    def renorm(a, p, rng):
        w = a * (rng.random(a.shape) >= p)
        return w / w.sum(-1, keepdims=True)
    assert_diagnosis(C.check_dropout(renorm), "renormalised", "only in expectation")


def test_dropout_p_as_keep_probability():
    def keep_prob(a, p, rng):
        keep = rng.random(a.shape) < p
        return np.where(keep, a / max(p, 1e-12), 0.0)
    assert_diagnosis(C.check_dropout(keep_prob), "p_is_keep_probability", "probability of dropping")


def test_dropout_one_mask_for_all_rows():
    def shared(a, p, rng):
        keep = rng.random(a.shape[-1]) >= p
        return a * keep / (1 - p)
    assert_diagnosis(C.check_dropout(shared), "shared_mask", "same entries dropped")


def test_dropout_ignoring_rng():
    def global_rng(a, p, rng):
        return a * (np.random.random(a.shape) >= p) / (1 - p)
    assert_diagnosis(C.check_dropout(global_rng), "ignores_rng", "same seed")


def test_dropout_reseeding():
    def reseed(a, p, rng):
        fresh = np.random.default_rng(0)
        return a * (fresh.random(a.shape) >= p) / (1 - p)
    assert_diagnosis(C.check_dropout(reseed), "reseeds", "re-seed")


# ------------------------------------------------------------------------------------ new wrong implementations


def test_softmax_subtracting_the_row_minimum_overflows_on_wide_rows():
    def minimum(x):
        e = np.exp(x - x.min(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    assert_diagnosis(C.check_softmax(minimum), "subtracts_min", "minimum")


def test_softmax_subtracting_the_row_mean_overflows_on_wide_rows():
    def mean(x):
        z = x - np.mean(x, axis=-1, keepdims=True)
        return np.exp(z) / np.sum(np.exp(z), axis=-1, keepdims=True)
    assert_diagnosis(C.check_softmax(mean), "subtracts_mean", "mean")


def test_softmax_subtracting_the_mean_overflows_in_float32_too():
    """Rows spanning less than 709 but more than 88: only float32 overflows."""
    def mean_but_float64_safe(x):
        z = x - x.mean(axis=-1, keepdims=True)
        if x.dtype == np.float64:                      # behaves on every float64 case
            z = x - x.max(axis=-1, keepdims=True)
        return np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    assert_diagnosis(C.check_softmax(mean_but_float64_safe), "subtracts_mean", "float32")


def test_softmax_float32_torch_is_refused_with_the_dtype_named():
    def float32_torch(x):
        return torch_by_hand(x.astype(np.float32))
    assert_diagnosis(C.check_softmax(float32_torch), "not_float64", "your result is float32; compute in float64")


def test_softmax_returning_a_tensor_is_refused():
    def tensor(x):
        return torch.from_numpy(torch_by_hand(x))
    assert_diagnosis(C.check_softmax(tensor), "wrong_type", "asks for a NumPy array")


def test_softmax_float32_input_may_stay_float32():
    def stays(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    assert C.check_softmax(stays).passed


def test_softmax_broadcast_error_gets_the_keepdims_hint_not_the_transpose_hint():
    def no_keepdims(x):
        e = np.exp(x - x.max(axis=-1)[..., None])
        return e / e.sum(axis=-1)                       # (3, 5) / (3,) fails to broadcast
    result = C.check_softmax(no_keepdims)
    assert not result.passed and "keepdims=True" in result.message and "transpose" not in result.message


# dropout: one decision per row, correlated neighbours, a wrong rate

def test_dropout_dropping_whole_rows():
    def whole_rows(a, p, rng):
        keep = rng.random((a.shape[0], 1)) >= p
        return a * keep / (1 - p)
    assert_diagnosis(C.check_dropout(whole_rows), "drops_whole_rows", "one decision per row")


def test_dropout_in_pairs_of_neighbours():
    def pairs(a, p, rng):
        keep = np.repeat(rng.random((a.shape[0], (a.shape[1] + 1) // 2)) >= p, 2, axis=1)[:, :a.shape[1]]
        return a * keep / (1 - p)
    assert_diagnosis(C.check_dropout(pairs), "correlated_mask", "neighbouring entries")


def test_dropout_with_a_wrong_rate():
    def half(a, p, rng):
        keep = rng.random(a.shape) >= p / 2
        return a * keep / (1 - p)
    result = C.check_dropout(half)
    assert not result.passed and result.mistake in ("wrong_rate",), result
    assert_diagnosis(result, "wrong_rate", "should be zero")


def test_dropout_verdict_is_deterministic():
    def whole_rows(a, p, rng):
        return a * (rng.random((a.shape[0], 1)) >= p) / (1 - p)
    assert len({C.check_dropout(whole_rows).message for _ in range(3)}) == 1
