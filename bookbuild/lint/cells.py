"""What a reader sees of a page's code is what a student would write.

A visible cell (one without ``remove-cell`` or ``remove-input``) holds teaching code only: copied
into a fresh notebook it runs and reads as plain Python, in English. So it calls no translation
(``tr``, ``page_text``, ``tr_table``: the text is translated where it is shown, ``attnlab.edge``),
no ``glue`` (the book's plumbing), and asserts nothing (``assert``, ``np.testing.assert_*``): the
checks that keep the page's claims true run in a hidden cell after it. An assertion the cell
catches itself (``try: torch.testing.assert_close(...) except AssertionError: ...``) is a
predicate the lesson is about, not a check, and may stay.
"""
from __future__ import annotations

import ast
from pathlib import Path

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


def lint(page: Path) -> list[Finding]:
    return [Finding(page, cell.page_line(line), f"a visible cell holds {what}: move it into a hidden cell")
            for cell in code_cells(page) if cell.visible for line, what in plumbing(cell.source)]
