"""The grading process: run a submission's code, then its checks with the pristine checkers.

``python -I -m attnlab.grading.sandbox`` reads a job (JSON) on stdin::

    {"notebook": "alice.ipynb", "questions": [{"name": "ex-qkv-scores", "checks": ["check_scores(scores)"]}],
     "skip_cells": [7], "skip_questions": ["ex-qkv-attention"]}

It imports the checkers and records them (:mod:`attnlab.grading.guard`) before any student code
runs, then executes the notebook's code cells in order, each in its own ``try`` (like a notebook
run that continues after errors). Where a cell calls ``grader.check("q")``, question q is graded
there, with the checkers captured at the start; questions without such a cell are graded after the
last cell. A check is a call whose arguments are names from the notebook and literals: the
notebook's own ``check_*`` bindings are never used.

It reports progress as JSON lines on its original stdout (the notebook's own output goes to
/dev/null)::

    {"cell": 3}                   about to execute code cell 3
    {"question": "ex-qkv-scores"} about to check it
    {"result": "ex-qkv-scores", "checks": [{"check": ..., "status": ..., "message": ...}]}
    {"cell_error": 3, "message": "NameError: name 'x' is not defined"}
    {"done": true}

:mod:`attnlab.grading.supervisor` enforces the time limits and restarts it after a hang.
"""
from __future__ import annotations

import ast
import builtins
import json
import os
import re
import sys

OTTER_LINE = re.compile(r"^\s*(import otter\b|grader\s*=\s*otter\.|grader\.\w+\()")
CHECK_CALL = re.compile(r"""grader\.check\(\s*["']([^"']+)["']\s*\)""")


class _Shell:
    """Stands in for ``get_ipython()``: line magics and shell escapes do nothing."""

    def run_line_magic(self, *args, **kwargs):
        return None

    def run_cell_magic(self, name, line, cell):
        if name in ("time", "timeit", "capture"):
            exec(compile(cell, "<cell magic>", "exec"), self.namespace)

    def system(self, *args, **kwargs):
        return None

    getoutput = system


def code_cells(path: str) -> list[str]:
    """The notebook's code cells as plain Python (IPython syntax translated)."""
    with open(path, encoding="utf-8") as f:
        nb = json.load(f)
    try:
        from IPython.core.inputtransformer2 import TransformerManager
        translate = TransformerManager().transform_cell
    except ImportError:                                      # pragma: no cover - IPython is a dependency
        translate = str
    cells = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else str(source)
            try:
                cells.append(translate(source))
            except Exception:                                # leave it to compile() to report
                cells.append(source)
    return cells


def _argument(node: ast.expr, namespace: dict):
    if isinstance(node, ast.Name):
        if node.id not in namespace:
            raise NameError(f"`{node.id}` is not defined: its cell did not run, raised an error, or "
                            f"the name was changed")
        return namespace[node.id]
    return ast.literal_eval(node)


def run_check(expression: str, checks: dict, namespace: dict, snapshot, result_type) -> dict:
    """Evaluate one check such as ``check_attention(attention, masks_too=False)``, never raising."""
    record = {"check": expression}
    call = ast.parse(expression, mode="eval").body
    snapshot.restore()
    try:
        function = checks[call.func.id]
        args = [_argument(a, namespace) for a in call.args]
        kwargs = {k.arg: _argument(k.value, namespace) for k in call.keywords}
    except NameError as error:
        return record | {"status": "failed", "message": str(error)}
    try:
        result = function(*args, **kwargs)
    except BaseException as error:                         # noqa: BLE001 - a student's code may raise anything
        result = error
    changed = snapshot.changed()
    snapshot.restore()
    if changed:
        return record | {"status": "failed",
                         "message": f"Your code changed the grading code while it was being checked "
                                    f"({', '.join(changed[:3])}); this check scores zero."}
    if not isinstance(result, result_type):
        return record | {"status": "failed",
                         "message": f"The checker could not finish: {type(result).__name__}: "
                                    f"{str(result)[:300]}"}
    status = "passed" if result.passed is True else str(result.status)
    return record | {"status": status, "message": str(result.message)}


def main() -> None:
    job = json.loads(sys.stdin.read())
    channel = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    sys.stdout = sys.stderr = open(os.devnull, "w")

    def emit(event: dict) -> None:
        os.write(channel, (json.dumps(event) + "\n").encode())

    import attnlab.checks as pristine
    from attnlab.checks import CheckResult

    from .guard import Snapshot

    checks = {name: getattr(pristine, name) for name in dir(pristine) if name.startswith("check_")}
    questions = {q["name"]: q["checks"] for q in job["questions"]}
    skip_cells, skip_questions = set(job.get("skip_cells", [])), set(job.get("skip_questions", []))
    cells = code_cells(job["notebook"])
    shell = _Shell()
    namespace = {"__name__": "__main__", "__builtins__": builtins, "get_ipython": lambda: shell,
                 "display": lambda *a, **k: None}
    shell.namespace = namespace
    snapshot = Snapshot()
    graded = set(skip_questions)
    run = run_check                                       # held here: the module's binding is the student's to break

    def grade(name: str) -> None:
        if name in graded or name not in questions:
            return
        graded.add(name)
        emit({"question": name})
        results = [run(c, checks, namespace, snapshot, CheckResult) for c in questions[name]]
        emit({"result": name, "checks": results})

    for index, source in enumerate(cells):
        marked = CHECK_CALL.findall(source)
        if index not in skip_cells:
            emit({"cell": index})
            code = "\n".join(line for line in source.splitlines() if not OTTER_LINE.match(line))
            try:
                exec(compile(code, f"<cell {index}>", "exec"), namespace)
            except BaseException as error:                 # noqa: BLE001 - SystemExit included
                emit({"cell_error": index, "message": f"{type(error).__name__}: {str(error)[:300]}"})
        for name in marked:
            grade(name)
    for name in questions:
        grade(name)
    emit({"done": True})
    os._exit(0)


if __name__ == "__main__":
    main()
