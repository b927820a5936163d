"""Grading a class: scores that a student's notebook cannot change, and feedback in words.

Two processes with one narrow channel. The grader (this package, imported by ``make grade``,
otter's plugin or Gradescope's entry point) owns the cases, the references, the mistake models,
the answers' fingerprints and the gradebook, and never runs student code. The student's process
runs the notebook in a sandbox and calls its functions on the inputs the grader sends:

* :mod:`.supervisor` grades one notebook (``grade_notebook``): cells there, checks here;
* :mod:`.remote` is the grader's end of the channel (``StudentProcess``, ``StudentFunction``),
  :mod:`.untrusted` the student's end, :mod:`.wire` the data that crosses (never pickle),
  :mod:`.references` the objects a checker hands over by name, :mod:`.scrub` what of the
  student's text may reach the feedback (forbidden entry points: :mod:`attnlab.checks.forbidden`);
* :mod:`.sandbox` starts the student's process (bubblewrap, or a bare process);
* :mod:`.notebook` reads a submission; :mod:`.gradebook` grades a folder (``make grade``, through ``bookbuild.grade``);
* :mod:`.otter_plugin` and :mod:`.autograder` do the same for otter-grader and Gradescope;
* :mod:`.student` is what the otter test cells call in a student's own notebook;
* :mod:`.shortcuts` lists submitted functions that call attnlab or torch's attention, to read.
"""
from __future__ import annotations

_PUBLIC = {"NotebookResult": "supervisor", "Question": "supervisor", "QuestionResult": "supervisor",
           "grade_notebook": "supervisor"}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    """The public names, imported on first use (the student's process imports this package too)."""
    if name in _PUBLIC:
        import importlib
        return getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
