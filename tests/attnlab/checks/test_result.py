"""The result object: green, red and grey notes; escaped HTML; a non-function argument.

Every "student" function is written independently, the way a student would write the mistake,
not taken from the package's mistake models; each test asserts the diagnosis it gets.
"""

import re

import numpy as np

from attnlab import checks as C

from .support import np_softmax, stub

# ------------------------------------------------------------------------------------ result object


def test_result_renders_green_red_and_grey_notes():
    ok = C.check_softmax(np_softmax)
    bad = C.check_softmax(lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True))
    todo = C.check_softmax(stub)
    assert "#2e7d32" in ok._repr_html_() and "passed" in ok._repr_html_()
    assert "#c62828" in bad._repr_html_() and "<code>" in bad._repr_html_()
    assert "#616161" in todo._repr_html_()
    assert str(ok).startswith("\u2714 softmax: passed.") and repr(bad).startswith("\u2718 softmax: failed.")


def _contrast(foreground: str, background: str) -> float:
    """WCAG 2 contrast ratio of two #rrggbb colours."""
    def luminance(colour):
        channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    high, low = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_every_note_title_reads_at_wcag_contrast_on_its_background():
    notes = {"passed": C.check_softmax(np_softmax), "not attempted": C.check_softmax(stub),
             "failed": C.check_softmax(lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True))}
    for name, note in notes.items():
        page = note._repr_html_()
        title = re.search(r'<strong style="color:(#[0-9a-f]{6})"', page).group(1)
        background = re.search(r"background:(#[0-9a-f]{6})", page).group(1)
        assert _contrast(title, background) >= 4.5, (name, title, background)
    assert _contrast("#757575", "#f5f5f5") < 4.5      # the grey the notes had: the check can fail


def test_result_escapes_html_in_messages():
    result = C.check_softmax(lambda x: (_ for _ in ()).throw(ValueError("<script>x</script>")))
    assert "<script>" not in result._repr_html_() and "&lt;script&gt;" in result._repr_html_()


def test_a_non_function_gets_a_message():
    result = C.check_softmax(np.zeros(3))
    assert not result.passed and "Expected a function" in result.message
