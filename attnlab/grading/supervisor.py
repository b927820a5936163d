"""Grade one notebook in a fresh sandbox process, with time limits, and turn checks into points.

:func:`grade_notebook` starts ``python -I -m attnlab.grading.sandbox`` (see there) and follows
its progress. A cell or a question that runs longer than ``question_timeout`` seconds, or a
process that dies (``os._exit``, a crash), is stopped; the sandbox is started again from the
top, skipping that cell or question, so the rest of the notebook is still graded. Past
``timeout`` seconds for the whole notebook, every question not yet graded scores zero, with a
note saying so. A question of ``points`` points with k checks earns ``points / k`` per check
passed.
"""
from __future__ import annotations

import json
import os
import pathlib
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

STARTUP = 60      # seconds a fresh sandbox may take to import torch and the checkers, on a busy machine


@dataclass
class Question:
    name: str
    points: float
    checks: list[str]


@dataclass
class QuestionResult:
    name: str
    possible: float
    earned: float = 0.0
    checks: list[dict] = field(default_factory=list)     # {"check", "status", "message"}
    note: str = ""                                       # why it was not graded, if it was not


@dataclass
class NotebookResult:
    questions: list[QuestionResult]
    notes: list[str] = field(default_factory=list)       # about the whole notebook (hangs, errors)

    @property
    def total(self) -> float:
        return sum(q.earned for q in self.questions)

    @property
    def possible(self) -> float:
        return sum(q.possible for q in self.questions)


def _score(question: Question, checks: list[dict]) -> float:
    passed = sum(c["status"] == "passed" for c in checks)
    return round(question.points * passed / max(len(question.checks), 1), 6)


class _Run:
    """One sandbox process and the events it has sent."""

    def __init__(self, notebook: pathlib.Path, questions, skip_cells, skip_questions, check_timeout, workdir):
        job = {"notebook": str(notebook), "questions": [q.__dict__ for q in questions],
               "skip_cells": sorted(skip_cells), "skip_questions": sorted(skip_questions)}
        env = dict(os.environ, MPLBACKEND="Agg", PYTHONHASHSEED="0",
                   ATTNLAB_CHECK_TIMEOUT=os.environ.get("ATTNLAB_CHECK_TIMEOUT", str(check_timeout)))
        self.process = subprocess.Popen([sys.executable, "-I", "-m", "attnlab.grading.sandbox"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        cwd=workdir, env=env, start_new_session=True)
        self.process.stdin.write(json.dumps(job).encode())
        self.process.stdin.close()
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.process.stdout, selectors.EVENT_READ)
        self.buffer = b""

    def events(self, deadline_for):
        """Yield events; yield None when the current step passes its deadline or the process ends."""
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                try:
                    yield json.loads(line)
                except ValueError:
                    continue
            wait = deadline_for() - time.monotonic()
            if wait <= 0 or not self.selector.select(timeout=wait):
                yield None
                return
            chunk = os.read(self.process.stdout.fileno(), 65536)
            if not chunk:
                yield None
                return
            self.buffer += chunk

    def stop(self):
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
        self.selector.close()
        self.process.stdout.close()


def grade_notebook(notebook, questions: list[Question], timeout: float = 120,
                   question_timeout: float = 30) -> NotebookResult:
    """Grade ``notebook`` (an .ipynb path) on ``questions``; never raises for the notebook's sake."""
    notebook = pathlib.Path(notebook).resolve()
    start = time.monotonic()
    results: dict[str, QuestionResult] = {}
    notes: list[str] = []
    skip_cells: set[int] = set()
    errors: dict[int, str] = {}
    with tempfile.TemporaryDirectory(prefix="attnlab-grade-") as workdir:
        while True:
            run = _Run(notebook, questions, skip_cells, set(results), question_timeout, workdir)
            step = {"kind": None, "at": time.monotonic()}

            def deadline():
                allowance = question_timeout + (STARTUP if step["kind"] is None else 0)
                return min(start + timeout, step["at"] + allowance)

            finished = False
            for event in run.events(deadline):
                if event is None:
                    break
                if "cell" in event or "question" in event:
                    step.update(kind=("cell", event["cell"]) if "cell" in event else ("question", event["question"]),
                                at=time.monotonic())
                elif "cell_error" in event:
                    errors.setdefault(event["cell_error"], str(event.get("message", "")))
                elif "result" in event:
                    q = next((q for q in questions if q.name == event["result"]), None)
                    if q is not None and q.name not in results:
                        checks = [dict(c) for c in event.get("checks", [])][: len(q.checks)]
                        results[q.name] = QuestionResult(q.name, q.points, _score(q, checks), checks)
                elif event.get("done"):
                    finished = True
                    break
            run.stop()
            if finished:
                break
            elapsed = time.monotonic() - start
            if elapsed >= timeout:
                notes.append(f"The notebook ran past the time limit of {timeout:g} s; the questions not "
                             f"finished by then score zero.")
                for q in questions:
                    results.setdefault(q.name, QuestionResult(q.name, q.points, note="not finished within the "
                                                              f"notebook's time limit of {timeout:g} s"))
                break
            kind = step["kind"]
            why = (f"ran longer than {question_timeout:g} s and was stopped"
                   if time.monotonic() >= deadline() else "ended the grading process")
            if kind is None:
                notes.append("The grading process could not start on this notebook.")
                break
            if kind[0] == "cell":
                skip_cells.add(kind[1])
                notes.append(f"Code cell {kind[1] + 1} {why}; it was skipped and the rest was graded "
                             f"without it.")
            else:
                results[kind[1]] = QuestionResult(kind[1], next(q.points for q in questions if q.name == kind[1]),
                                                  note=f"its check {why}, so it scores zero")
    for index, message in sorted(errors.items()):
        notes.append(f"Code cell {index + 1} raised {message}")
    ordered = [results.get(q.name) or QuestionResult(q.name, q.points, note="not graded") for q in questions]
    return NotebookResult(ordered, notes)
