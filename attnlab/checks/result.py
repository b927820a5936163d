"""The verdict a checker returns: passed, failed, or not attempted yet.

A :class:`CheckResult` prints as one plain line in a terminal and renders as a coloured note in
Jupyter (green: passed, red: failed, grey: not attempted yet), so the exercise notebooks execute
cleanly in the book build while every stub still says what is left to do. Every message a
student can read is built by one function of this module or by one :class:`~.engine.Mistake`,
so that a translation layer can wrap each in one place.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass

from ..i18n import N_, _

PASSED, FAILED, NOT_ATTEMPTED = N_("passed"), N_("failed"), N_("not attempted yet")   # shown translated

_STYLE = {
    PASSED: ("#2e7d32", "#e8f5e9", "\u2714"),         # green, check mark
    FAILED: ("#c62828", "#ffebee", "\u2718"),         # red, cross
    NOT_ATTEMPTED: ("#616161", "#f5f5f5", "\u25cb"),  # grey (5.9:1 on its background), open circle
}


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one checker run.

    ``task`` names what was checked, ``status`` is one of "passed", "failed",
    "not attempted yet", and ``message`` says in plain words what happened: for a failure,
    the case that failed and, where the behaviour matches a classic mistake, which one
    (its short name is in ``mistake``). ``details`` holds what only the book's authors need
    (the traceback of an internal error of the checker); it is folded away in Jupyter.
    """

    task: str
    status: str
    message: str
    mistake: str = ""   # short name of the diagnosed mistake, "" if none was recognised
    details: str = ""   # folded: for a bug report, never the student's traceback

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    @property
    def attempted(self) -> bool:
        return self.status != NOT_ATTEMPTED

    def __str__(self) -> str:
        symbol = _STYLE[self.status][2]
        return _("{symbol} {task}: {status}. {message}").format(symbol=symbol, task=_(self.task),
                                                                   status=_(self.status), message=self.message)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        border, background, symbol = _STYLE[self.status]
        heading = _("{symbol} {task}: {status}.").format(symbol=symbol, task=_(self.task), status=_(self.status))
        lines = [_inline_code(html.escape(line)) for line in self.message.splitlines()]
        body = "<br>".join(lines)
        gap = "" if heading.endswith("。") else " "  # a Chinese full stop carries its own space
        folded = ""
        if self.details:
            summary = html.escape(_("Details for a bug report"))
            folded = (f'<details style="margin-top:0.4em"><summary>{summary}</summary>'
                      f'<pre style="white-space:pre-wrap">{html.escape(self.details)}</pre></details>')
        return (
            f'<div class="attnlab-check attnlab-check-{self.status.split()[0]}" '
            f'style="border-left:6px solid {border};background:{background};color:#1b1b1b;'
            f'padding:0.55em 0.9em;margin:0.3em 0;border-radius:4px;line-height:1.45;">'
            f'<strong style="color:{border}">{html.escape(heading)}</strong>{gap}'
            f"{body}{folded}</div>"
        )


def _inline_code(text: str) -> str:
    """Render `backticked` fragments of an (already escaped) message as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def passed(task: str, message: str) -> CheckResult:
    return CheckResult(task, PASSED, message)


def failed(task: str, message: str, mistake: str = "") -> CheckResult:
    return CheckResult(task, FAILED, message, mistake)


def not_attempted(task: str) -> CheckResult:
    return CheckResult(task, NOT_ATTEMPTED,
                       _("Your function still raises `NotImplementedError`: replace the stub's body "
                         "with your code and run this cell again."))


def not_a_function(task: str, got) -> CheckResult:
    return failed(task, _("Expected a function; got {type}. Pass the function itself, without calling it "
                          "(`check(my_function)`, not `check(my_function())`).").format(type=type(got).__name__),
                  "not_a_function")


def timed_out(task: str, case: str, seconds: float, still_running: bool) -> CheckResult:
    text = _("On {case}, your function ran longer than {seconds:g} s, so the check stopped it. This usually "
             "means a loop whose condition never becomes false (e.g. `while True:` without a `break`, or a "
             "counter that is never increased), or a computation far larger than the task needs.").format(
                 case=_(case), seconds=seconds)
    if still_running:
        text += _(" The check could not interrupt it (it is running outside the main thread or inside one "
                  "long library call), so it may keep a CPU busy: restart the kernel if the notebook slows down.")
    return failed(task, text, "time_limit")


def budget_spent(task: str, case: str, budget: float) -> CheckResult:
    return failed(task, _("On {case}, the check stopped: your function has used up the check's time budget "
                          "({seconds:g} s over all cases together). Each call finished, so it is not a loop that "
                          "never ends, but it is far slower than the task needs (a right solution takes "
                          "milliseconds): look for Python loops over every entry, or work repeated inside a "
                          "loop.").format(case=_(case), seconds=budget), "budget_spent")


def bad_setting(task: str, error: Exception) -> CheckResult:
    return failed(task, _("The check did not run: {error}.").format(error=str(error).rstrip(".")), "bad_arguments")


def internal_error(task: str, details: str) -> CheckResult:
    return CheckResult(task, FAILED, _("The checker itself failed: this is a bug in the checker, not in your code. "
                                       "Please report it with the folded details below."), "checker_bug", details)
