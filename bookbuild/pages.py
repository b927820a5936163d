"""The book's MyST notebooks as the build reads them: their pages, and the code cells of a page.

A code cell is read with the page's line numbers kept: its options (``:tags: [...]`` lines or a
``---`` YAML block) and magics (``%``, ``!``) are blanked, not removed, so that line ``n`` of
``ast.parse(cell.source)`` is line ``cell.line + n - 1`` of the page.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGE_FOLDERS = (".", "chapters", "exercises", "solutions")   # every MyST notebook of the book
HIDING_TAGS = {"remove-cell", "remove-input"}                # the reader never sees such a cell's code
_CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```\s*$", re.M | re.S)


@dataclass(frozen=True)
class Cell:
    page: Path
    line: int                 # the page's line of the cell's first source line
    source: str               # options and magics blanked
    options: dict

    @property
    def tags(self) -> frozenset[str]:
        return frozenset(self.options.get("tags") or ())

    @property
    def visible(self) -> bool:
        """Whether a reader sees the cell's code (``hide-input`` folds it; it is still there)."""
        return not self.tags & HIDING_TAGS

    def page_line(self, line: int) -> int:
        """The page's line of line ``line`` of ``ast.parse(self.source)``."""
        return self.line + line - 1


def _split_options(lines: list[str]) -> tuple[dict, list[str]]:
    """(options, lines with the option lines blanked)."""
    if lines and lines[0].strip() == "---":
        end = lines.index("---", 1)
        options = yaml.safe_load("\n".join(lines[1:end])) or {}
        return options, [""] * (end + 1) + lines[end + 1:]
    n = 0
    while n < len(lines) and lines[n].startswith(":"):
        n += 1
    options = yaml.safe_load("\n".join(line[1:] for line in lines[:n])) or {} if n else {}
    return options, [""] * n + lines[n:]


def code_cells(page: Path) -> list[Cell]:
    """The code cells of ``page``, in order."""
    text = page.read_text(encoding="utf-8")
    cells = []
    for match in _CODE_CELL.finditer(text):
        options, lines = _split_options(match.group(1).split("\n"))
        source = "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in lines)
        cells.append(Cell(page, text.count("\n", 0, match.start(1)) + 1, source, options))
    return cells


def pages(root: Path = ROOT, folders=PAGE_FOLDERS) -> list[Path]:
    """Every page of ``folders`` that has a code cell."""
    return sorted(p for folder in folders for p in (root / folder).glob("*.md")
                  if _CODE_CELL.search(p.read_text(encoding="utf-8")))
