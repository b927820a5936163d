"""Grading one notebook: its cells run in the student's process, its checks run here.

:func:`grade_notebook` starts the student's process (:mod:`.remote`, in a sandbox of
:mod:`.sandbox`), asks it to run the notebook's code cells one by one, and at each
``grader.check("q")`` (or after the last cell) runs question q's checks in *this* process, with
the checkers of this process's own ``attnlab.checks``, which no student code has touched: the
checker computes the cases (drawn from the run's seed, :mod:`attnlab.checks.seeds`), the
reference and the mistake models, and only calls the student's function, through the channel.

A cell that runs longer than ``question_timeout`` seconds, or that ends the process (``os._exit``,
a crash, a signal, a broken channel), is noted; the process is started again from the top
without that cell, so the rest of the notebook is still graded. A call of a student's function
is limited to ``question_timeout`` seconds by the checker, whose diagnosis ("ran longer than
30 s") reaches the feedback. Past ``timeout`` seconds for the whole notebook, every question not
yet graded scores zero, with a note saying so. A question of ``points`` points with k checks earns
``points / k`` per check passed. Nothing here raises for the notebook's sake.
"""
from __future__ import annotations

import ast
import pathlib
import time
from dataclasses import dataclass, field

from ..i18n import N_, _
from . import notebook as nb
from .remote import Ended, StudentProcess
from .sandbox import Limits

STARTUP = 60      # seconds a fresh process may take to start, on a busy machine


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
    seed: int | None = None                              # the seed the checkers' cases were drawn from

    @property
    def total(self) -> float:
        return sum(q.earned for q in self.questions)

    @property
    def possible(self) -> float:
        return sum(q.possible for q in self.questions)


def _score(question: Question, checks: list[dict]) -> float:
    passed = sum(c["status"] == "passed" for c in checks)
    return round(question.points * passed / max(len(question.checks), 1), 6)


def _argument(node: ast.expr, process: StudentProcess):
    if isinstance(node, ast.Name):
        return process.resolve(node.id)
    return ast.literal_eval(node)


def run_check(expression: str, process: StudentProcess, checkers: dict, seconds: float) -> dict:
    """Evaluate one check such as ``check_attention(attention, masks_too=False)`` here, never raising:
    names are the notebook's (asked of its process), literals are read here, the checker is ours."""
    record = {"check": expression}
    try:
        call = ast.parse(expression, mode="eval").body
        function = checkers[call.func.id]
        args = [_argument(a, process) for a in call.args]
        kwargs = {k.arg: _argument(k.value, process) for k in call.keywords}
    except NameError as error:
        return record | {"status": "failed", "message": _(
            "`{name}` is not defined: its cell did not run, raised an error, or the name was changed").format(
                name=error.args[0] if error.args else "?")}
    except Ended as ended:
        return record | {"status": "failed", "message": _("Your notebook {what}.").format(what=_(ended.reason))}
    kwargs.setdefault("timeout", seconds)
    try:
        result = function(*args, **kwargs)
        status = "passed" if result.passed is True else str(result.status)
        return record | {"status": status, "message": str(result.message)}
    except Exception as error:                           # the checkers never raise; if one did, say so
        return record | {"status": "failed", "message": _("The checker could not finish: {error}.").format(
            error=type(error).__name__)}


class _Grading:
    """The state of one notebook's grading across restarts of its process."""

    def __init__(self, path, questions, timeout, question_timeout, kind, seed, limits, slot):
        self.path = pathlib.Path(path)
        self.data = self.path.read_bytes()
        self.questions = {q.name: q for q in questions}
        self.order = list(questions)
        self.timeout, self.question_timeout = timeout, question_timeout
        self.kind, self.seed, self.limits, self.slot = kind, seed, limits, slot
        self.start = time.monotonic()
        self.results: dict[str, QuestionResult] = {}
        self.notes: list[str] = []
        self.skip: set[int] = set()
        self.errors: dict[int, str] = {}
        from .. import checks
        self.checkers = {name: getattr(checks, name) for name in checks.__all__ if name.startswith("check_")}

    def left(self) -> float:
        return self.start + self.timeout - time.monotonic()

    def grade(self, name: str, process: StudentProcess) -> None:
        from ..checks.seeds import cases_from
        if name in self.results or name not in self.questions:
            return
        question = self.questions[name]
        with cases_from(self.seed):
            checks = [run_check(c, process, self.checkers, self.question_timeout) for c in question.checks]
        if self.left() <= 0:
            return                                       # the time limit's note covers it
        self.results[name] = QuestionResult(name, question.points, _score(question, checks), checks)

    def attempt(self, cells: list[nb.Cell]) -> bool:
        """Run the notebook once from the top; True when every question is graded, False to restart."""
        process = StudentProcess(self.kind, self.data, self.path.name, self.limits, self.slot)
        process.deadline = self.start + self.timeout
        try:
            try:
                process.run_cell("pass", -1, min(STARTUP, max(self.left(), 1)))
            except Ended:
                self.notes.append(_("The grading process could not start on this notebook."))
                return True
            for index, cell in enumerate(cells):
                if index not in self.skip:
                    if self.left() <= 0:
                        return True
                    try:
                        error = process.run_cell(cell.source, index, min(self.question_timeout, self.left()))
                    except Ended as ended:
                        if self.left() > 0:
                            self.skip.add(index)
                            self.note_cell(index, ended)
                        return self.left() <= 0
                    if error:
                        self.errors.setdefault(index, error)
                for name in cell.checks:
                    self.grade(name, process)
                    if not process.alive:
                        return self.left() <= 0
            for name in self.questions:
                self.grade(name, process)
                if not process.alive:
                    return self.left() <= 0
            return True
        finally:
            process.close()

    def note_cell(self, index: int, ended: Ended) -> None:
        if ended.hung:
            why = _("ran longer than {seconds:g} s and was stopped").format(seconds=self.question_timeout)
        else:
            why = _(ended.reason)
        self.notes.append(_("Code cell {number} {why}; it was skipped and the rest was graded without it.").format(
            number=index + 1, why=why))

    def result(self) -> NotebookResult:
        if self.left() <= 0:
            self.notes.append(_("The notebook ran past the time limit of {seconds:g} s; the questions not finished "
                                "by then score zero.").format(seconds=self.timeout))
            note = _("not finished within the notebook's time limit of {seconds:g} s").format(seconds=self.timeout)
        else:
            note = _(NOT_GRADED)
        for index, message in sorted(self.errors.items()):
            self.notes.append(_("Code cell {number} raised {error}").format(number=index + 1, error=message))
        ordered = [self.results.get(q.name) or QuestionResult(q.name, q.points, note=note) for q in self.order]
        return NotebookResult(ordered, self.notes, self.seed)


NOT_GRADED = N_("not graded")


def grade_notebook(notebook, questions: list[Question], timeout: float = 120, question_timeout: float = 30,
                   *, kind: str | None = None, seed: int | None = None, limits: Limits | None = None,
                   slot: int = 0) -> NotebookResult:
    """Grade ``notebook`` (an .ipynb path) on ``questions``; never raises for the notebook's sake.

    ``kind``: the sandbox (:func:`.sandbox.isolation` picks the best there is); ``seed``: the cases'
    seed (None: the fixed cases of the notebooks); ``slot``: which of the concurrent sandboxes.
    """
    from .sandbox import isolation
    kind = kind or isolation(unsafe=True)
    limits = limits or Limits(cpu=int(2 * timeout + STARTUP))
    grading = _Grading(notebook, questions, timeout, question_timeout, kind, seed, limits, slot)
    problem = nb.problem_with(grading.data)
    if problem:
        return NotebookResult([QuestionResult(q.name, q.points, note=_("the file is not a notebook"))
                               for q in questions], [problem], seed)
    cells = nb.code_cells(grading.data)
    for _attempt in range(len(cells) + len(questions) + 2):   # each restart skips a cell or grades a question
        if grading.attempt(cells):
            break
    return grading.result()
