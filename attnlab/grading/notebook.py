"""A submission as the grader reads it: its code cells, and where each question is checked.

The grader reads the ``.ipynb`` itself (JSON, never executed here): each code cell becomes plain
Python (IPython's ``%magics`` translated, otter's own lines such as ``grader.check("q")`` taken
out), and a cell that calls ``grader.check("q")`` marks the point where question q is graded, with
the notebook's state at that point. :func:`problem_with` says why a file cannot be graded at all.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from ..i18n import _

OTTER_LINE = re.compile(r"^\s*(import otter\b|grader\s*=\s*otter\.|grader\.\w+\()")
CHECK_CALL = re.compile(r"""grader\.check\(\s*["']([^"']+)["']\s*\)""")
MAX_BYTES = 64 << 20                  # a submission larger than this is not graded


@dataclass
class Cell:
    source: str                       # plain Python, otter's lines removed
    checks: list[str] = field(default_factory=list)    # questions graded after this cell


def _translator():
    try:
        from IPython.core.inputtransformer2 import TransformerManager
        return TransformerManager().transform_cell
    except ImportError:                                  # pragma: no cover - IPython is a dependency
        return str


def code_cells(data: bytes) -> list[Cell]:
    """The notebook's code cells (``data``: the bytes of an .ipynb that :func:`problem_with` accepts)."""
    translate = _translator()
    cells = []
    for cell in json.loads(data).get("cells", []):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(map(str, source)) if isinstance(source, list) else str(source)
        try:
            source = translate(source)
        except Exception:                                # leave it to compile() in the student's process
            pass
        kept = "\n".join(line for line in source.splitlines() if not OTTER_LINE.match(line))
        cells.append(Cell(kept, CHECK_CALL.findall(source)))
    return cells


def problem_with(data: bytes) -> str:
    """Why ``data`` cannot be graded as a notebook, in words for the student, or "" if it can."""
    if not data.strip():
        return _("The file is empty.")
    if len(data) > MAX_BYTES:
        return _("The file is larger than {mib} MiB, more than a notebook of this course can be.").format(
            mib=MAX_BYTES >> 20)
    try:
        content = json.loads(data)
    except UnicodeDecodeError:
        return _("The file is not text: it is not a Jupyter notebook (.ipynb), which is a JSON text file.")
    except json.JSONDecodeError as error:
        return _("The file is not valid JSON (line {line}, column {column}: {message}), so it is not a "
                 "Jupyter notebook; was it saved from Jupyter, or renamed from another file?").format(
                     line=error.lineno, column=error.colno, message=error.msg)
    except (ValueError, RecursionError):
        return _("The file is not valid JSON, so it is not a Jupyter notebook.")
    if not isinstance(content, dict) or "cells" not in content:
        return _("The file is JSON but not a Jupyter notebook (it has no list of cells).")
    try:
        import nbformat
        nbformat.validate(nbformat.reads(data.decode(), as_version=4))
    except Exception as error:                           # nbformat raises several kinds
        from .scrub import scrub
        return _("The file is not a valid Jupyter notebook: {reason}").format(reason=scrub(str(error)))
    return ""
