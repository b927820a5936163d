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
