"""What each test module checks, in one line: its docstring's first paragraph.

checking.md lists the test suite with these lines; ``bookbuild.i18n.catalogs`` puts them into the
pages' catalog (attnlab/locale/*/LC_MESSAGES/pages.po), so the Chinese edition shows them in
Chinese and a changed docstring marks its translation fuzzy.
"""
from __future__ import annotations

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
FILE_NAME = re.compile(r"(?<![`\w/.])((?:[\w.-]+/)*[\w-]+\.(?:py|md|yml|json|toml|sh))\b")


def summary(path: pathlib.Path) -> str:
    """The docstring's first paragraph on one line, file names as code (not links), ``|``
    escaped for a Markdown table."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = " ".join(doc.strip().split("\n\n")[0].split())
    return FILE_NAME.sub(r"`\1`", first).replace("|", "\\|")


def suite_modules(root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    """The test suite's modules, as pytest finds them (tests/**/test_*.py)."""
    return sorted((root / "tests").rglob("test_*.py"))
