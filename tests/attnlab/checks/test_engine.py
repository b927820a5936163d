"""The engine every checker shares: time limit, inputs copied, odd return values, internal errors, hints.

Every checker is fed the same set of odd functions (returning None, text, generators, lists, SymPy objects,
tensors that require grad or live on another device, wrong dtypes, NaN, raising, hanging) and must come back
with a failed result in plain words: never an exception, never a traceback, never "a bug in the checker".
"""
import signal
import threading
import time

import numpy as np
import pytest
import sympy
import torch

import attnlab.checks as C
from attnlab.checks import limits
from attnlab.checks.registry import REGISTRY

from .support import assert_diagnosis, np_softmax

FUNCTION_CHECKERS = sorted(name for name in REGISTRY if name != "check_answer")


def _hang(*args, **kwargs):
    while True:
        pass


ODD_FUNCTIONS = {
    "returns None": lambda *a, **k: None,
    "returns a string": lambda *a, **k: "0.5",
    "returns a generator": lambda *a, **k: (i for i in range(3)),
    "returns a list": lambda *a, **k: [0.1, 0.2],
    "returns nested lists": lambda *a, **k: [[0.1, 0.2], [0.3]],
    "returns a SymPy matrix": lambda *a, **k: sympy.Matrix([[sympy.Rational(1, 2), sympy.sqrt(2)]]),
    "returns a tensor that requires grad": lambda *a, **k: torch.ones(2, 3, requires_grad=True) * 2,
    "returns a tensor on the meta device": lambda *a, **k: torch.ones(2, 3, device="meta"),
    "returns complex numbers": lambda *a, **k: np.ones((2, 2)) * 1j,
    "returns NaN and inf": lambda *a, **k: np.array([[np.nan, np.inf], [-np.inf, 0.0]]),
    "returns a dict": lambda *a, **k: {"out": 1},
    "returns itself": lambda *a, **k: ODD_FUNCTIONS,
    "takes no argument": lambda: 1.0,
    "raises ZeroDivisionError": lambda *a, **k: 1 / 0,
    "raises a ValueError with a multi-line message": lambda *a, **k: (_ for _ in ()).throw(ValueError("a\nb\nc")),
    "returns a pair of tensors with grad": lambda *a, **k: (torch.ones(1, requires_grad=True),) * 2,
}


@pytest.mark.parametrize("odd", sorted(ODD_FUNCTIONS))
@pytest.mark.parametrize("checker", FUNCTION_CHECKERS)
def test_no_checker_raises_or_shows_a_traceback_on_odd_functions(checker, odd):
    result = getattr(C, checker)(ODD_FUNCTIONS[odd])
    assert isinstance(result, C.CheckResult)
    assert result.status == "failed" and not result.passed, result
    assert result.mistake != "checker_bug", result.details
    assert "Traceback" not in result.message and result.message.strip()


@pytest.mark.parametrize("checker", FUNCTION_CHECKERS)
def test_every_checker_stops_a_hanging_function(checker):
    start = time.perf_counter()
    result = getattr(C, checker)(_hang, timeout=0.3)
    assert time.perf_counter() - start < 3
    assert_diagnosis(result, "time_limit", "ran longer than 0.3 s")
    assert "a loop whose condition never becomes false" in result.message


def test_the_environment_variable_sets_the_default_limit_and_the_argument_wins(monkeypatch):
    monkeypatch.setenv("ATTNLAB_CHECK_TIMEOUT", "0.2")
    assert_diagnosis(C.check_softmax(_hang), "time_limit", "longer than 0.2 s")
    assert_diagnosis(C.check_softmax(_hang, timeout=0.4), "time_limit", "longer than 0.4 s")
    monkeypatch.setenv("ATTNLAB_CHECK_TIMEOUT", "soon")
    assert_diagnosis(C.check_softmax(np_softmax), "bad_arguments", "ATTNLAB_CHECK_TIMEOUT must be a positive")
    monkeypatch.delenv("ATTNLAB_CHECK_TIMEOUT")
    assert limits.limit_seconds() == limits.DEFAULT_SECONDS


def test_a_hang_that_swallows_every_exception_is_still_reported():
    """`except BaseException` inside the loop: the repeated alarm keeps firing until it gets out."""
    def stubborn(x):
        end = time.perf_counter() + 0.8
        while time.perf_counter() < end:
            try:
                time.sleep(0.01)
            except BaseException:
                pass
        return np_softmax(x)
    assert_diagnosis(C.check_softmax(stubborn, timeout=0.3), "time_limit", "longer than 0.3 s")


def test_the_time_limit_off_the_main_thread():
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("result", C.check_softmax(_hang, timeout=0.3)))
    start = time.perf_counter()
    worker.start()
    worker.join(10)
    assert not worker.is_alive() and time.perf_counter() - start < 5
    assert_diagnosis(box["result"], "time_limit", "longer than 0.3 s")
    time.sleep(0.2)
    assert not any(t.name == "attnlab-check" and t.is_alive() for t in threading.enumerate())


def test_in_a_browser_a_slow_call_is_judged_when_it_returns(monkeypatch):
    """Pyodide has no threads and no timer signal: attnlab.live runs the checks there."""
    monkeypatch.setattr(limits.sys, "platform", "emscripten")
    monkeypatch.setattr(limits.threading, "Thread", None)         # no thread may be started
    monkeypatch.setattr(limits.signal, "setitimer", None)         # nor a timer
    def slow(x):
        time.sleep(0.4)
        return np_softmax(x)
    assert_diagnosis(C.check_softmax(slow, timeout=0.1), "time_limit", "longer than 0.1 s")
    assert C.check_softmax(np_softmax).passed


def test_off_the_main_thread_results_and_errors_come_back():
    box = {}

    def run():
        box["ok"] = C.check_softmax(np_softmax)
        box["raises"] = C.check_softmax(lambda x: 1 / 0)
    worker = threading.Thread(target=run)
    worker.start()
    worker.join(60)
    assert box["ok"].passed and "ZeroDivisionError" in box["raises"].message


def test_an_outer_alarm_and_its_handler_are_restored():
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 50.0)
        assert C.check_softmax(np_softmax).passed
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 40.0 < left <= 50.0
        assert signal.getsignal(signal.SIGALRM) is not previous and not fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_an_internal_error_is_reported_as_a_checker_bug_with_folded_details(monkeypatch):
    from attnlab.checks import softmax

    class Broken:
        @staticmethod
        def softmax(x):
            raise RuntimeError("the reference broke")
    monkeypatch.setattr(softmax, "ref", Broken)
    result = C.check_softmax(lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True))
    assert result.mistake == "checker_bug" and "bug in the checker, not in your code" in result.message
    assert "the reference broke" in result.details and "Traceback" not in result.message
    assert "<details" in result._repr_html_()


def test_inputs_changed_in_place_are_reported():
    def in_place(x):
        x -= x.max(axis=-1, keepdims=True)
        return np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)
    assert_diagnosis(C.check_softmax(in_place), "changes_input", "in place")

    def in_place_torch(q, k, v):
        q.mul_(1.0 / q.shape[-1] ** 0.5)
        r = q.shape[-3] // k.shape[-3]
        return torch.nn.functional.scaled_dot_product_attention(q, k.repeat_interleave(r, -3),
                                                                v.repeat_interleave(r, -3), scale=1.0)
    assert_diagnosis(C.check_gqa_attention(in_place_torch), "changes_input", "in place")


def test_common_failures_are_named():
    assert_diagnosis(C.check_softmax(lambda x: None), "returns_none", "forget `return`")
    assert_diagnosis(C.check_softmax(lambda x: x[..., :1]), "wrong_shape", "expected (4)")
    assert_diagnosis(C.check_softmax(lambda x: "0.25"), "wrong_type", "a str")
    assert_diagnosis(C.check_softmax(np.zeros(3)), "not_a_function", "expected a function")


def test_shape_errors_are_classified_by_what_failed():
    """NumPy broadcast errors also contain "shapes": only a matrix product gets the transpose hint."""
    def batched_k_T(q, k, v, allowed=None):
        s = q @ k.T / np.sqrt(q.shape[-1])                  # fine in 2-D, wrong on the batch
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True) @ v
    result = C.check_attention(batched_k_T, masks_too=False)
    assert "matrix product" in result.message and "keepdims" not in result.message
    assert "batch with a head axis" in result.message

    from attnlab.checks.engine import error_hint
    x = np.ones((3, 5))
    for failing, wanted, unwanted in ((lambda: x - x.max(-1), "keepdims=True", "transpose"),
                                      (lambda: x @ x, "transpose", "keepdims"),
                                      (lambda: x + np.ones((2, 7)), "Print the shapes", "transpose")):
        with pytest.raises(ValueError) as err:
            failing()
        hint = error_hint(err.value)
        assert wanted in hint and unwanted not in hint, hint


@pytest.mark.parametrize("checker", ["check_softmax", "check_leak_test", "check_dropout", "check_equivariance_test"])
def test_verdicts_are_deterministic(checker):
    wrong = {"check_softmax": lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True),
             "check_leak_test": lambda attn, x: False,
             "check_dropout": lambda a, p, rng: a * (rng.random(a.shape[:1] + (1,)) >= p) / (1 - p),
             "check_equivariance_test": lambda f, x, rng: True}[checker]
    assert len({str(getattr(C, checker)(wrong)) for _ in range(3)}) == 1


ODD_ANSWERS = [None, "8", b"8", (x for x in [8]), [8, 8], [[1, 2], [3]], {"a": 1}, float("nan"), float("inf"),
               True, sympy.Symbol("x"), torch.ones(2, requires_grad=True), torch.ones(1, device="meta"), print,
               sympy.Matrix([[1, 2]]), np.array(["a"])]


@pytest.mark.parametrize("value", ODD_ANSWERS, ids=lambda v: type(v).__name__)
def test_check_answer_never_raises_on_odd_values(value):
    result = C.check_answer("scaling.std_unscaled_64", value)
    assert isinstance(result, C.CheckResult) and not result.passed
    assert result.mistake != "checker_bug" and "Traceback" not in result.message


def test_two_mistakes_with_the_same_numbers_are_both_named():
    """The mechanism behind the FLOP-count hints: one output, two explanations, both shown."""
    from attnlab.checks.engine import Check, Mistake, Stop
    half = [Mistake("one_flop_per_madd", "a multiply-add counted as 1 FLOP.", lambda n: n // 2),
            Mistake("one_product", "only one of the two products counted.", lambda n: n // 2),
            Mistake("bits", "bits, not bytes.", lambda n: n * 8)]
    with pytest.raises(Stop) as stop:
        Check("FLOPs", 1.0).compare("n = 10", 5, 10, half, args=(10,), tol=None)
    result = stop.value.result
    assert result.mistake == "one_flop_per_madd"
    assert "2 classic mistakes that give the same numbers" in result.message
    assert "1 FLOP" in result.message and "one of the two products" in result.message and "bits" not in result.message


def test_a_function_that_exits_or_recurses_forever_gets_a_message():
    import sys

    def exits(x):
        sys.exit(1)

    def recurses(x):
        return recurses(x)
    assert "exit()" in C.check_softmax(exits).message
    assert "called itself without end" in C.check_softmax(recurses).message


@pytest.mark.slow
def test_the_time_limit_works_inside_a_jupyter_kernel(tmp_path):
    """A cell that checks `while True: pass` comes back, with the failed result as its output."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    cells = ["import attnlab.checks as C\n"
             "def softmax(x):\n    while True:\n        pass\n"
             "result = C.check_softmax(softmax, timeout=1)\nprint(result.mistake)\nresult"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    start = time.perf_counter()
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
                            ).execute()
    assert time.perf_counter() - start < 90
    outputs = nb.cells[0].outputs
    assert outputs[0]["text"].strip() == "time_limit"
    assert "ran longer than 1 s" in outputs[1]["data"]["text/plain"]


def test_a_checker_called_with_arguments_it_does_not_take_says_so():
    result = C.check_softmax(np_softmax, masks_too=False)
    assert_diagnosis(result, "bad_arguments", "arguments it does not take")
    assert C.check_attention(lambda q, k, v: np_softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])) @ v,
                             masks_too=False).passed


def test_a_name_error_gets_the_typo_hint_from_every_checker_in_both_languages():
    """A misspelt name is the commonest NameError; the verdict says so, whichever checker runs it."""
    import attnlab as al

    def misspelt(*args, **kwargs):
        return batchh  # noqa: F821  (the typo under test)

    for lang, word in (("en", "misspelt"), ("zh_CN", "拼写")):
        al.set_language(lang)
        try:
            for checker in (C.check_softmax, C.check_kv_cache_bytes):
                result = checker(misspelt)
                assert not result.passed and "NameError" in result.message and word in result.message, (
                    checker.__name__, result.message)
        finally:
            al.set_language("en")
