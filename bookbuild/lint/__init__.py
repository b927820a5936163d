"""Lints of the book's sources: rules a reviewer would otherwise have to remember.

Each module holds one rule family and returns its findings as ``Finding`` values; ``python -m
bookbuild lint`` runs them all, and the tests in ``tests/build/`` run each one on the whole book.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, order=True)
class Finding:
    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        from ..pages import ROOT

        try:
            where = self.path.relative_to(ROOT)
        except ValueError:
            where = self.path
        return f"{where}:{self.line}: {self.message}"


def run_all() -> list[Finding]:
    """Every lint on the whole book: visible cells, timings, attnlab's messages."""
    from ..pages import ROOT, pages
    from . import cells, messages, timing

    found = [f for page in pages(ROOT, ("chapters", "exercises", "solutions")) for f in cells.lint(page)]
    found += [f for page in pages(ROOT) for f in timing.lint(page)]
    return sorted(found + messages.lint())
