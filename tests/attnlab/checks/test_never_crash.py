"""A checker never raises and never runs for minutes: bad settings, huge numbers, a right but slow function."""
import time

import numpy as np
import pytest

import attnlab as al
import attnlab.checks as C
from attnlab.checks import limits
from tests.attnlab.checks.support import assert_diagnosis, np_softmax


@pytest.mark.parametrize("timeout", [0, -1, "abc", float("nan"), float("inf"), True, [1]])
def test_a_bad_timeout_is_a_failed_result(timeout):
    assert_diagnosis(C.check_softmax(np_softmax, timeout=timeout), "bad_arguments", "timeout must be a positive")


def test_a_bad_environment_variable_is_a_failed_result(monkeypatch):
    monkeypatch.setenv(limits.ENVIRONMENT_VARIABLE, "abc")
    assert_diagnosis(C.check_attention(al.attention), "bad_arguments", "ATTNLAB_CHECK_TIMEOUT")
    assert_diagnosis(C.check_answer("multihead.gpt2_head_dim", 64), "bad_arguments", "ATTNLAB_CHECK_TIMEOUT")


def test_a_number_beyond_float_range_is_a_message_not_a_checker_bug():
    result = C.check_answer("scaling.var_unscaled", 10**400)
    assert_diagnosis(result, "unreadable", "too large for a floating-point number")


def test_a_string_inside_a_list_is_refused_like_a_string_alone():
    assert_diagnosis(C.check_answer("qkv.transpose_trap", [[1, "4"], [0, 1]]), "unreadable", "holds the text '4'")
    assert_diagnosis(C.check_answer("scaling.var_unscaled", "1024"), "unreadable", "without quotes")


def test_a_right_but_slow_function_spends_the_budget_and_is_told_so(monkeypatch):
    """Every call finishes within its limit (0.7 s) but the check's budget (here 1.5 s) runs out."""
    def slow(x):
        time.sleep(0.6)
        return np_softmax(x)
    monkeypatch.setattr(limits, "MINIMUM_BUDGET", 1.5)
    start = time.perf_counter()
    result = C.check_softmax(slow, timeout=0.7)
    assert time.perf_counter() - start < 1.5 + 1.0
    assert_diagnosis(result, "budget_spent", "time budget")


def test_the_budget_is_three_limits_and_at_least_fifteen_seconds():
    assert limits.check_budget(5) == 15 and limits.check_budget(20) == 60 and limits.check_budget(0.1) == 15


def test_float32_inside_a_float64_result_is_named():
    def via_float32(x):
        return np_softmax(x.astype(np.float32)).astype(np.float64)
    assert_diagnosis(C.check_softmax(via_float32), "computed_in_float32", "exactly a float32 number")

    def float32_weights(q, k, v, allowed=None):
        s = q.astype(np.float32) @ np.swapaxes(k, -1, -2).astype(np.float32) / np.float32(np.sqrt(q.shape[-1]))
        return np_softmax(s).astype(np.float64) @ v    # float64 product of float32 weights: not representable
    result = C.check_attention(float32_weights, masks_too=False)
    assert_diagnosis(result, "computed_in_float32", "ran in float32")
    assert "exactly a float32 number" not in result.message
