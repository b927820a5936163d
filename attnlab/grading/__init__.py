"""Grading a class: scores that a student's notebook cannot change, and feedback in words.

* :mod:`.sandbox` runs a submission's code in a fresh process and checks it with checkers
  captured before any student code ran; :mod:`.guard` undoes and detects patching.
* :mod:`.supervisor` adds the time limits and turns checks into points (``grade_notebook``).
* :mod:`.otter_plugin` puts those scores into otter-grader's results (Gradescope, ``otter run``).
* :mod:`.student` is what the otter test cells call, so that ``grader.check("q")`` in a
  student's notebook shows the checker's diagnosis in words.

``bookbuild.grade`` (``make grade``) writes the gradebook and the feedback files.
"""
from .supervisor import NotebookResult, Question, QuestionResult, grade_notebook

__all__ = ["NotebookResult", "Question", "QuestionResult", "grade_notebook"]
