"""An otter-grader plugin that replaces otter's in-notebook scores with the sandbox's.

otter runs a submission in a kernel and then runs the tests in that same kernel, where the
student's code has already had every chance to rebind ``check_*`` or patch ``attnlab.checks``.
This plugin runs after that (event ``after_grading``, in otter's own process, not the kernel):
it grades the submission again with :func:`attnlab.grading.grade_notebook` and overwrites each
question's score and messages, so that Gradescope, ``otter run`` and ``otter grade`` report the
same points and words as ``make grade``.

Its configuration (written by ``bookbuild.assignments`` into the autograder's
``otter_config.json``) lists the questions::

    {"questions": [{"name": "ex-qkv-scores", "points": 1, "checks": ["check_scores(scores)"]}],
     "timeout": 120, "question_timeout": 30}
"""
from __future__ import annotations

from otter.plugins import AbstractOtterPlugin
from otter.test_files.abstract_test import TestCase, TestCaseResult

from .supervisor import Question, grade_notebook


def questions_from_config(config: dict) -> list[Question]:
    return [Question(q["name"], float(q["points"]), list(q["checks"])) for q in config["questions"]]


class IsolatedGrading(AbstractOtterPlugin):
    """Scores from :mod:`attnlab.grading.sandbox` instead of the student's kernel."""

    def after_grading(self, results):
        config = self.plugin_config or {}
        outcome = grade_notebook(self.submission_path, questions_from_config(config),
                                 timeout=float(config.get("timeout", 120)),
                                 question_timeout=float(config.get("question_timeout", 30)))
        for question in outcome.questions:
            if question.name not in results.results:
                continue
            test_file = results.results[question.name]
            share = question.possible / max(len(question.checks), 1)
            cases = []
            for i, check in enumerate(question.checks or [{"status": "failed", "message": question.note}]):
                passed = check["status"] == "passed"
                case = TestCase(f"{question.name} - {i + 1}", check.get("check", ""), False, share, None, None)
                words = f"{check['status']}: {check['message']}"
                cases.append(TestCaseResult(case, ("✅ " if passed else "❌ ") + words, passed))
            test_file.test_case_results = cases
            results.update_score(question.name, question.earned)
        if outcome.notes:
            results.set_output("\n".join(outcome.notes))
