"""The result object: green, red and grey notes; escaped HTML; a non-function argument.

Every "student" function is written independently, the way a student would write the mistake,
not taken from the package's mistake models; each test asserts the diagnosis it gets.
"""

import numpy as np

import attnlab as al
from attnlab import checks as C

from .support import stub

# ------------------------------------------------------------------------------------ result object


def test_result_renders_green_red_and_grey_notes():
    ok = C.check_softmax(al.softmax)
    bad = C.check_softmax(lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True))
    todo = C.check_softmax(stub)
    assert "#2e7d32" in ok._repr_html_() and "passed" in ok._repr_html_()
    assert "#c62828" in bad._repr_html_() and "<code>" in bad._repr_html_()
    assert "#757575" in todo._repr_html_()
    assert str(ok).startswith("\u2714 softmax: passed.") and repr(bad).startswith("\u2718 softmax: failed.")


def test_result_escapes_html_in_messages():
    result = C.check_softmax(lambda x: (_ for _ in ()).throw(ValueError("<script>x</script>")))
    assert "<script>" not in result._repr_html_() and "&lt;script&gt;" in result._repr_html_()


def test_a_non_function_gets_a_message():
    result = C.check_softmax(np.zeros(3))
    assert not result.passed and "Expected a function" in result.message
