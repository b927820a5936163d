"""The book's Sphinx extensions say why they exist: each opens with the upstream issue it works around and when
it can go, or with "Bespoke:" and what it adds; each is loaded, and none only adds a script (html_js_files does)."""
import ast
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXTENSIONS = sorted((ROOT / "_ext").glob("*.py"))


def first_paragraph(path: Path) -> str:
    return " ".join((ast.get_docstring(ast.parse(path.read_text())) or "").split("\n\n")[0].split())


@pytest.mark.parametrize("path", EXTENSIONS, ids=lambda p: p.stem)
def test_an_extension_says_what_it_works_around_and_when_it_can_go_or_what_it_adds(path):
    opening = first_paragraph(path)
    assert opening.startswith(("Workaround", "Bespoke: ")), opening
    if opening.startswith("Workaround"):
        assert re.search(r"\w+/[\w-]+#\d+|no issue filed|no upstream", opening), opening   # the upstream issue
        assert "Remove when" in opening or "Remove when" in path.read_text(), path.stem


def test_every_extension_is_loaded_and_every_loaded_one_exists():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    loaded = set(config["sphinx"]["local_extensions"])
    assert loaded == {p.stem for p in EXTENSIONS}


@pytest.mark.parametrize("path", EXTENSIONS, ids=lambda p: p.stem)
def test_no_extension_only_adds_a_script(path):
    tree = ast.parse(path.read_text())
    setup = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "setup")
    calls = {n.func.attr for n in ast.walk(setup) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    assert not calls or calls - {"add_js_file", "add_css_file"}, "a script alone belongs in _config.yml's html_js_files"
