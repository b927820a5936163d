"""What a reader sees of a page's code is what a student would write.

A visible cell (one without ``remove-cell`` or ``remove-input``) holds teaching code only: copied
into a fresh notebook it runs and reads as plain Python, in English. So it calls no translation
(``tr``, ``page_text``, ``tr_table``: the text is translated where it is shown, ``attnlab.edge``),
no ``glue`` (the book's plumbing), and asserts nothing (``assert``, ``np.testing.assert_*``): the
checks that keep the page's claims true run in a hidden cell after it. An assertion the cell
catches itself (``try: torch.testing.assert_close(...) except AssertionError: ...``) is a
predicate the lesson is about, not a check, and may stay. Nor does a visible cell read a name
that only a hidden cell defined: the student who copies the visible cells in order would get a
NameError.
"""
from __future__ import annotations

import ast
import builtins
from pathlib import Path

from attnlab.live_cells import symbols

from ..pages import code_cells
from . import Finding

PLUMBING = {"tr": "a translation", "page_text": "a translation", "tr_table": "a translation",
            "page_table": "a translation", "glue": "glue"}


def _name(func: ast.AST) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _caught(tree: ast.AST) -> set[int]:
    """The ids of the nodes inside a ``try`` that catches AssertionError."""
    caught = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                h.type is not None and "AssertionError" in ast.unparse(h.type) for h in node.handlers):
            caught |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return caught


def plumbing(source: str) -> list[tuple[int, str]]:
    """(line, what) of each translation call, glue call and assertion in ``source``."""
    found = []
    tree = ast.parse(source)
    caught = _caught(tree)
    for node in ast.walk(tree):
        if id(node) in caught:
            continue
        if isinstance(node, ast.Assert):
            found.append((node.lineno, "an assert statement"))
        elif isinstance(node, ast.Call):
            name = _name(node.func)
            if name in PLUMBING:
                found.append((node.lineno, f"{PLUMBING[name]} ({name})"))
            elif name.startswith("assert"):
                found.append((node.lineno, f"an assertion ({name})"))
    return sorted(found)


def bound_and_read(source: str) -> tuple[set[str], set[str]]:
    """(the names a cell binds at its top level, the global names it or its functions read)."""
    bound, read = symbols(source)
    return bound, read - bound - set(dir(builtins))


def hidden_names(page: Path) -> list[tuple[int, list[str]]]:
    """(line, names) of each visible cell that reads names which, before it, only hidden cells defined."""
    shown, hidden, found = set(), set(), []
    for cell in code_cells(page):
        bound, read = bound_and_read(cell.source)
        if cell.visible:
            missing = sorted(read & hidden - shown)
            if missing:
                found.append((cell.page_line(1), missing))
            shown |= bound
        else:
            hidden |= bound
    return found


def lint(page: Path) -> list[Finding]:
    found = [Finding(page, cell.page_line(line), f"a visible cell holds {what}: move it into a hidden cell")
             for cell in code_cells(page) if cell.visible for line, what in plumbing(cell.source)]
    return found + [Finding(page, line, f"a visible cell reads {', '.join(names)}, defined only in hidden "
                                        "cells: a student copying the visible cells gets a NameError")
                    for line, names in hidden_names(page)]
