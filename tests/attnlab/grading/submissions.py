"""Submissions of chapter 1's assignment that a class really hands in, built from otter's notebooks.

solution (the solved notebook), blank (the student notebook untouched), partial (solved, with
the last question's stub put back), gamed (blank, plus every trick that used to earn full marks),
hanging (solved, but one function loops forever), and files that are not notebooks at all.
"""
from __future__ import annotations

import pathlib
import re

import nbformat

# Chapter 1's autograded questions, as the exercise page defines them (tests assert the zip agrees)
QUESTIONS = ["ex-qkv-shapes", "ex-qkv-trap", "ex-qkv-scores", "ex-qkv-attention", "ex-qkv-limit"]
WRITTEN = ["ex-qkv-packing", "ex-qkv-tied", "ex-qkv-tied-peaks"]      # graded by hand, one point each
FUNCTIONS = {"ex-qkv-scores": "scores", "ex-qkv-attention": "attention"}

GAMING = '''\
# Every way a notebook used to score without doing the work
import numpy
import numpy.testing
import attnlab.checks
import attnlab.checks.result
from attnlab.checks import CheckResult

_passed = CheckResult("anything", "passed", "looks right")
for _name in dir(attnlab.checks):
    if _name.startswith("check_"):
        setattr(attnlab.checks, _name, lambda *args, **kwargs: _passed)     # patch the package
        globals()[_name] = lambda *args, **kwargs: _passed                 # rebind the names
attnlab.checks.result.CheckResult.passed = property(lambda self: True)
numpy.allclose = lambda *args, **kwargs: True
numpy.testing.assert_allclose = lambda *args, **kwargs: None

_q = numpy.arange(6.0).reshape(2, 3)
_precomputed = _q @ _q.T                  # the output for one input, returned for every input


def scores(q, k):
    return _precomputed


def attention(q, k, v, allowed=None):     # patches the checkers while it is being checked
    import attnlab.checks.engine
    import numpy
    numpy.allclose = lambda *args, **kwargs: True
    for name in dir(attnlab.checks.engine):
        if callable(getattr(attnlab.checks.engine, name)):
            setattr(attnlab.checks.engine, name, lambda *args, **kwargs: None)
    return None


'''


def _index_of_check(nb, question: str) -> int:
    call = f'grader.check("{question}")'
    return next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and call in c.source)


def _stub_cells(student, question: str) -> list:
    """The student notebook's code cells between the previous grader.check and this question's."""
    end = _index_of_check(student, question)
    start = max([i for i, c in enumerate(student.cells[:end]) if "grader.check(" in c.source], default=0)
    return [nbformat.v4.new_code_cell(c.source) for c in student.cells[start + 1:end] if c.cell_type == "code"]


def write_submissions(assignment: pathlib.Path, folder: pathlib.Path) -> dict[str, pathlib.Path]:
    """Write the mixed submissions into ``folder``; return {student id: path}."""
    stem = assignment.name
    solved = nbformat.read(assignment / "autograder" / f"{stem}.ipynb", as_version=4)
    student = nbformat.read(assignment / "student" / f"{stem}.ipynb", as_version=4)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}

    def save(name, nb):
        out[name] = folder / f"{name}.ipynb"
        nbformat.write(nb, out[name])

    save("solution", solved)
    save("blank", student)

    partial = nbformat.from_dict(solved)
    last = QUESTIONS[-1]
    partial.cells[_index_of_check(partial, last):_index_of_check(partial, last)] = _stub_cells(student, last)
    save("partial", partial)

    gamed = nbformat.from_dict(student)
    imports = next(i for i, c in enumerate(gamed.cells) if c.cell_type == "code" and "import attnlab" in c.source)
    gamed.cells.insert(imports + 1, nbformat.v4.new_code_cell(GAMING))
    for function in FUNCTIONS.values():                       # the stubs must not undo the gaming cell
        for cell in gamed.cells:
            if cell.cell_type == "code" and re.search(rf"^def {function}\(", cell.source, re.M) \
                    and "NotImplementedError" in cell.source:
                cell.source = f"# {function}: left as defined above"
    save("gamed", gamed)

    hanging = nbformat.from_dict(solved)
    where = _index_of_check(hanging, "ex-qkv-scores")
    hanging.cells.insert(where, nbformat.v4.new_code_cell("def scores(q, k):\n    while True:\n        pass"))
    save("hanging", hanging)

    for name, data in {"not-json": b'{"cells": [', "empty": b"", "not-a-notebook": b'{"hello": "world"}'}.items():
        out[name] = folder / f"{name}.ipynb"
        out[name].write_bytes(data)
    return out
