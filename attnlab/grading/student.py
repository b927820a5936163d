"""What ``grader.check("q")`` runs in a student's notebook: the checker's verdict, in words.

otter shows a failed test as the exception it raised, so a check that fails raises
:class:`CheckFailed` whose message is the checker's diagnosis (for example
"scores: not attempted yet. Your function still raises `NotImplementedError`: ..."),
never a traceback of the checker. These in-notebook checks run in the student's own kernel, for
the student's benefit; the scores that count come from :mod:`attnlab.grading.supervisor` (the
notebook in a sandbox, the checks in the grader's process).
"""
from __future__ import annotations


class CheckFailed(AssertionError):
    """A check did not pass; the message is the checker's diagnosis."""


def require(result) -> None:
    """Return quietly if ``result`` (a CheckResult) passed; otherwise raise CheckFailed with its words."""
    if not getattr(result, "passed", False):
        raise CheckFailed(str(result))
