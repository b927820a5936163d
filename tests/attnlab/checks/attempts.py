"""The helper of the wrong-attempt suite (``test_attempts_exNN.py``): one wrong attempt, its expected diagnosis.

Each attempt was written from an exercise sheet's text, the way a student might get it wrong, independently
of the checkers' own mistake models. ``expect`` runs the checker, records the outcome (for
``report_attempts.py``, which sorts the messages into good, vague and misleading) and asserts the diagnosis:
the mistake's short name, or, for an attempt no catalogue mistake describes (``mistake=""``), a message that
says what kind of difference it is (``fragment``).
"""
from dataclasses import dataclass

RECORD: list = []          # (Attempt, CheckResult) in the order run, for the report


@dataclass(frozen=True)
class Attempt:
    exercise: str          # the sheet's own number and task, e.g. "3.1 causal_mask"
    what: str              # what the student did, in a few words
    mistake: str           # the diagnosis it must get ("" = no named mistake, a described difference)
    fragment: str          # a part of the message that must be there
    judged: str = ""       # "vague" where the expected message is only a location (set by hand)


def expect(checker, fn, exercise, what, mistake, fragment, judged="", **options):
    """Run ``checker(fn, **options)``, record it, and assert the diagnosis."""
    result = checker(fn, **options)
    attempt = Attempt(exercise, what, mistake, fragment, judged)
    RECORD.append((attempt, result))
    assert not result.passed, (attempt, result)
    assert result.mistake == mistake, (attempt, result)
    assert fragment.lower() in result.message.lower(), (attempt, result.message)


def classify(attempt: Attempt, result) -> str:
    """good: the right mistake is named (or the difference is described as expected); misleading: another
    mistake is named; vague: only "differs", a shape, an exception; missed: the attempt passed."""
    if result.passed:
        return "missed"
    if result.mistake and result.mistake == attempt.mistake:
        return "good"
    if result.mistake and result.mistake not in ("", attempt.mistake):
        generic = {"wrong_shape", "wrong_type", "not_float64", "returns_none", "time_limit", "changes_input"}
        return "vague" if result.mistake in generic and attempt.mistake not in generic else "misleading"
    if not attempt.mistake and attempt.fragment.lower() in result.message.lower():
        return attempt.judged or "good"
    return "vague"
