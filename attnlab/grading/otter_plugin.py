"""An otter-grader plugin: otter's kernel runs none of the student's code, and attnlab scores it.

otter executes a submission in a Jupyter kernel, runs the tests there, and reads the results
back into its own process with ``pickle``: a cell of the student's could hook that pickling and
run code in otter's process. So this plugin

* ``before_execution``: hands otter the notebook with every code cell emptied (markdown, raw
  cells and metadata stay), so otter's kernel executes nothing of the student's (its tests then
  fail for want of the student's names, and their scores are replaced below);
* ``after_grading`` (in otter's process): grades the submission with :mod:`attnlab.grading`, the
  student's code in its own process (a sandbox where bubblewrap works; on Gradescope and in
  Docker the container, and another user where otter runs as root), the checks here; and
  overwrites each question's score and output. Nothing raised there reaches otter: a failure of
  the grading itself scores zero with a note.

``make assignments`` (``bookbuild.assignments``) writes its configuration into the autograder's ``otter_config.json``::

    {"questions": [{"name": "ex-qkv-scores", "points": 1, "checks": ["check_scores(scores)"]}],
     "written": [{"name": "ex-qkv-why", "points": 1}], "timeout": 120, "question_timeout": 30,
     "lang": "en"}
"""
from __future__ import annotations

import contextlib
import copy

from otter.plugins import AbstractOtterPlugin
from otter.test_files.abstract_test import TestCase, TestCaseResult

from .gradebook import questions_from_config

__all__ = ["IsolatedGrading", "questions_from_config", "strip_code"]


def strip_code(notebook):
    """The notebook with every code cell's source and outputs emptied."""
    stripped = copy.deepcopy(notebook)
    for cell in stripped.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["source"], cell["outputs"], cell["execution_count"] = "", [], None
    return stripped


class IsolatedGrading(AbstractOtterPlugin):
    """Scores from :mod:`attnlab.grading` instead of otter's kernel."""

    def before_execution(self, submission):
        if isinstance(submission, str):                       # a .py submission: nothing of it runs either
            return ""
        return strip_code(submission)

    def after_grading(self, results):
        config = self.plugin_config or {}
        with language(config):
            self._score(results, *grade(self.submission_path, config))

    @staticmethod
    def _score(results, outcome, notes):
        for question in outcome.questions:
            if question.name not in results.results:
                continue
            test_file = results.results[question.name]
            share = question.possible / max(len(question.checks), 1)
            cases = []
            for i, check in enumerate(question.checks or [{"status": "failed", "message": question.note}]):
                passed = check["status"] == "passed"
                case = TestCase(f"{question.name} - {i + 1}", check.get("check", ""), False, share, None, None)
                words = f"{_status(check['status'])}: {check['message']}"
                cases.append(TestCaseResult(case, ("✅ " if passed else "❌ ") + words, passed))
            test_file.test_case_results = cases
            results.update_score(question.name, question.earned)
        results.set_output("\n".join(notes))


def _status(status: str) -> str:
    from ..i18n import _
    return _(status)


@contextlib.contextmanager
def language(config: dict):
    """attnlab's messages in the assignment's language (its ``"lang"``) inside the block."""
    from .. import i18n
    previous = i18n.get_language()
    try:
        i18n.set_language(str(config.get("lang") or "en"))
    except ValueError:
        pass
    try:
        yield
    finally:
        i18n.set_language(previous)


def grade(submission_path, config: dict):
    """(NotebookResult, notes for the output) of one submission, in the current language; never raises."""
    from .. import i18n
    from ..checks.seeds import new_seed
    from .sandbox import KINDS, isolation
    from .supervisor import NOT_GRADED, NotebookResult, QuestionResult, grade_notebook

    questions = questions_from_config(config)
    seed = new_seed()
    try:
        kind = isolation(unsafe=True)
        outcome = grade_notebook(submission_path, questions, timeout=float(config.get("timeout", 120)),
                                 question_timeout=float(config.get("question_timeout", 30)), kind=kind, seed=seed)
    except Exception as error:                                # the grading itself failed: zero, and say so
        kind = "unsafe"
        note = i18n._("The grader failed on this notebook ({error}); please tell your instructor.").format(
            error=type(error).__name__)
        outcome = NotebookResult([QuestionResult(q.name, q.points, note=i18n._(NOT_GRADED)) for q in questions],
                                 [note], seed)
    words = i18n._("Graded {how}; the checkers' cases were drawn from seed {seed}.")
    return outcome, [*outcome.notes, words.format(how=i18n._(KINDS[kind]), seed=seed)]
