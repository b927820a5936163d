"""The verdict a checker returns: passed, failed, or not attempted yet.

A :class:`CheckResult` prints as one plain line in a terminal and renders as a coloured note in
Jupyter (green: passed, red: failed, grey: not attempted yet), so the exercise notebooks execute
cleanly in the book build while every stub still says what is left to do.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass

PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not attempted yet"

_STYLE = {
    PASSED: ("#2e7d32", "#e8f5e9", "\u2714"),         # green, check mark
    FAILED: ("#c62828", "#ffebee", "\u2718"),         # red, cross
    NOT_ATTEMPTED: ("#757575", "#f5f5f5", "\u25cb"),  # grey, open circle
}


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one checker run.

    ``task`` names what was checked, ``status`` is one of "passed", "failed",
    "not attempted yet", and ``message`` says in plain words what happened: for a failure,
    the case that failed and, where the behaviour matches a classic mistake, which one
    (its short name is in ``mistake``).
    """

    task: str
    status: str
    message: str
    mistake: str = ""   # short name of the diagnosed mistake, "" if none was recognised

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    @property
    def attempted(self) -> bool:
        return self.status != NOT_ATTEMPTED

    def __str__(self) -> str:
        symbol = _STYLE[self.status][2]
        return f"{symbol} {self.task}: {self.status}. {self.message}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        border, background, symbol = _STYLE[self.status]
        lines = [_inline_code(html.escape(line)) for line in self.message.splitlines()]
        body = "<br>".join(lines)
        return (
            f'<div class="attnlab-check attnlab-check-{self.status.split()[0]}" '
            f'style="border-left:6px solid {border};background:{background};color:#1b1b1b;'
            f'padding:0.55em 0.9em;margin:0.3em 0;border-radius:4px;line-height:1.45;">'
            f'<strong style="color:{border}">{symbol} {html.escape(self.task)}: {self.status}.</strong> '
            f"{body}</div>"
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
                       "Your function still raises `NotImplementedError`: replace the stub's body "
                       "with your code and run this cell again.")
