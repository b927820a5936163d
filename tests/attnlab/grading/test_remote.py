"""A checker in the grader calling a student's function in its sandbox gives the verdicts it gives in one process.

The student's functions below are defined in a real student's process (the sandbox this machine
offers); the checks run here, through ``Check.call``, and are compared with the same checks
run in this process on the same functions.
"""
import numpy as np
import pytest

from attnlab import checks
from attnlab.checks.engine import Check, Stop
from attnlab.grading.remote import StudentProcess
from attnlab.grading.sandbox import isolation

pytestmark = pytest.mark.slow

SOURCE = '''
import numpy as np
import torch

def scores(q, k):
    return q @ np.swapaxes(k, -1, -2)

def scores_in_place(q, k):
    q *= 1.0
    q[...] = 0
    return q @ np.swapaxes(k, -1, -2)

def stub(q, k):
    raise NotImplementedError

class ShapeError(ValueError):
    pass

def refuses(q, k, v, allowed=None):
    raise ShapeError("no key at /work/secret/path for $HOME\\nsecond line")

def interrupts(q, k):
    raise KeyboardInterrupt

def loops(q, k):
    while True:
        pass

def draws(a, p, rng):
    keep = rng.random(a.shape) >= p
    return np.where(keep, a / (1 - p), 0.0)

def reseeds(a, p, rng):
    return draws(a, p, np.random.default_rng(0))

def uses_sdpa(q, k, v):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v)
'''


@pytest.fixture(scope="module")
def student():
    process = StudentProcess(isolation(unsafe=True), b"{}", "test.ipynb")
    assert process.run_cell(SOURCE, 0, 120) == ""
    yield process
    process.close()


def test_verdicts_are_those_of_one_process(student):
    local = {}
    exec(SOURCE, local)
    for name, checker in (("scores", checks.check_scores), ("scores_in_place", checks.check_scores),
                          ("stub", checks.check_scores)):
        remote, here = checker(student.resolve(name)), checker(local[name])
        assert (remote.status, remote.mistake, remote.message) == (here.status, here.mistake, here.message), name
    assert checks.check_scores(student.resolve("scores")).passed
    assert checks.check_scores(student.resolve("scores_in_place")).mistake == "changes_input"


def test_a_shared_generator_advances_across_calls_as_in_one_process(student):
    assert checks.check_dropout(student.resolve("draws")).passed
    assert checks.check_dropout(student.resolve("reseeds")).mistake == "reseeds"


def test_the_students_exceptions_keep_their_class_and_one_scrubbed_line(student):
    run = Check("attention", 5)
    q = np.ones((2, 2))
    err = run.call(student.resolve("refuses"), "a case", q, q, q, np.zeros((2, 2), bool), expect=(ValueError,))
    assert isinstance(err, ValueError) and type(err).__name__ == "ShapeError"
    assert str(err) == "no key at <path> for <name>"
    with pytest.raises(Stop, match="raised KeyboardInterrupt"):   # reported; it does not stop the grader
        run.call(student.resolve("interrupts"), "a case", q, q)


def test_forbidden_entry_points_are_recorded_in_the_students_process(student):
    import torch
    run = Check("attention", 5)
    q = torch.randn(1, 3, 4)
    forbid = ("torch.nn.functional.scaled_dot_product_attention", "torch.einsum")
    with pytest.raises(Stop) as stopped:                       # a forbidden call fails the check, named
        run.call(student.resolve("uses_sdpa"), "a case", q, q, q, forbid=forbid)
    assert run.called == ("torch.nn.functional.scaled_dot_product_attention",)
    assert "scaled_dot_product_attention" in stopped.value.result.message
    run.call(student.resolve("scores"), "a case", np.ones((2, 2)), np.ones((2, 2)), forbid=("numpy.einsum",))
    assert run.called == ()


def test_a_hang_gets_the_checkers_own_diagnosis(student):
    result = checks.check_scores(student.resolve("loops"), timeout=1)
    assert result.mistake == "time_limit" and "ran longer than 1 s" in result.message
    assert student.alive                                         # interrupted inside: the process goes on


def test_a_hang_that_ignores_signals_ends_its_process_with_the_same_diagnosis():
    process = StudentProcess(isolation(unsafe=True), b"{}", "test.ipynb")
    try:
        process.run_cell("import signal\ndef deaf(q, k):\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                         "    while True:\n        pass\n", 0, 120)
        result = checks.check_scores(process.resolve("deaf"), timeout=1)
        assert result.mistake == "time_limit" and "ran longer than 1 s" in result.message
        assert not process.alive
    finally:
        process.close()
