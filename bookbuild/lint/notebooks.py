"""A generated notebook reads like the book: its prose holds what the book shows, not the book's markup.

The markdown cells of the notebooks ``make notebooks`` and ``make assignments`` write may not hold
a MyST role (``{ref}`...```, ``{numref}``, ``{glue:text}``, ``{eq}``...; Jupyter shows them as
typed), a glue key in place of its number (a name glued in the page, shown as code), or a doubled
word ("Chapter chapter 2", left where a reference was turned into words). In a Chinese notebook (one
under a ``zh_CN`` folder), no code cell may keep an English comment or docstring: they are translated
through the page's catalog (``bookbuild.i18n.code_text``).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from ..i18n.code_text import messages
from . import Finding

ROLE = re.compile(r"\{[a-z][\w:-]*\}`[^`]*`")
DOUBLED = re.compile(r"\b([A-Za-z]{2,})[ \n]\1\b", re.I)       # one space or line break apart: in a sentence
_NOT_PROSE = re.compile(r"```.*?```|\$\$.*?\$\$|\$[^$\n]*\$|`[^`\n]*`|^\|.*$", re.S | re.M)   # code, math, tables


def problems(markdown: str, glue_keys: set[str] = frozenset()) -> list[str]:
    """What in one markdown cell does not read like the book."""
    found = [f"role {m.group(0)[:50]}" for m in ROLE.finditer(markdown)]
    found += [f"glue key {m.group(1)}" for m in re.finditer(r"`(\w+)`", markdown) if m.group(1) in glue_keys]
    prose = _NOT_PROSE.sub(" ", markdown)
    found += [f"doubled word {m.group(0)!r}" for m in DOUBLED.finditer(prose)
              if m.group(1).lower() not in {"that", "had", "is"}]       # "that that", "had had" are English
    return found


CJK = re.compile(r"[\u4e00-\u9fff]")


def english_words(code: str) -> list[str]:
    """The comments and docstrings of a Chinese notebook's code cell that are still English."""
    return [f"English in the code: {m[:50]!r}" for m in messages(code) if not CJK.search(m)]


def lint(notebook: Path, glue_keys: set[str] = frozenset()) -> list[Finding]:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    found = [Finding(notebook, index, problem) for index, cell in enumerate(cells) if cell["cell_type"] == "markdown"
             for problem in problems("".join(cell["source"]), glue_keys)]
    if "zh_CN" in notebook.parts:
        found += [Finding(notebook, index, problem) for index, cell in enumerate(cells) if cell["cell_type"] == "code"
                  for problem in english_words("".join(cell["source"]))]
    return found


def glue_keys(root: Path) -> set[str]:
    """Every name a page of the book glues."""
    keys = set()
    for page in root.glob("**/*.md"):
        if "_build" in page.parts or ".venv" in page.parts:
            continue
        keys |= set(re.findall(r"\bglue\(\s*f?[\"']([\w{}]+)[\"']", page.read_text(encoding="utf-8")))
    return {k for k in keys if "{" not in k}
