"""The tree is ruff-clean: the package, tests and tools, and the code cells of every page."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p for d in ("chapters", "exercises", "solutions") for p in (ROOT / d).glob("*.md"))
# A notebook imports where the reader first needs a module (E402), shows a value by ending a cell with it
# (B018), names the loop variables of the story it tells (B007), and calls the lambdas it times within
# the loop that makes them (B023); everything else is as for the package.
NOTEBOOK_IGNORES = "E402,B018,B007,B023"


def _ruff():
    exe = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if exe is None:
        pytest.fail("ruff is not installed: `make venv` installs it from requirements/lock.txt")
    return exe


def test_package_tests_and_tools_are_ruff_clean():
    run = subprocess.run([_ruff(), "check", "--output-format", "concise", str(ROOT)],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr


def test_code_cells_of_every_page_are_ruff_clean(tmp_path):
    for page in PAGES:
        notebook = jupytext.read(page)
        cells = [c.source for c in notebook.cells if c.cell_type == "code"]
        # one file per page, code cells only (the prose is not Python)
        target = tmp_path / page.parent.name / f"{page.stem}.py"
        target.parent.mkdir(exist_ok=True)
        target.write_text("\n\n".join(cells) + "\n")
    run = subprocess.run([_ruff(), "check", "--config", str(ROOT / "pyproject.toml"), "--extend-ignore",
                          NOTEBOOK_IGNORES, "--output-format", "concise", str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, "code cells need fixing (path: page folder/page name.py):\n" + run.stdout


# The widest code line that fits a code box at 1280 px: code is set at 0.8em monospace, and a
# line of n columns needs about 7.9 n + 15 px (88 columns measured 710 px in Chromium), so 88
# columns fit the page's boxes (726 px; tests/build/test_browser.py measures them) and 80 columns fit the
# narrower boxes of exercises and solutions (657 px). A hidden input opens in a toggle 20 px
# narrower still (checking.md's 706 px box overflowed by 4 px with 88 columns), so one column
# fewer on the page and two fewer in an exercise box.
PAGE_CODE_COLUMNS = 88
BOX_CODE_COLUMNS = 80
HIDDEN_INPUT_COLUMNS = {PAGE_CODE_COLUMNS: 87, BOX_CODE_COLUMNS: 78}
LITERALINCLUDE = re.compile(r"```\{literalinclude\} (?P<path>\S+)\n(?P<options>(?::[\w-]+:.*\n)*)")


def _object_source(path: Path, dotted: str) -> str:
    """The object as the page shows it: literalinclude's ``:dedent:`` takes a method's indentation off."""
    from bookbuild.i18n.code_text import object_source

    return object_source(path.read_text(), dotted)


BOX_MARKERS = re.compile(r"\{(?:exercise|solution)-(?P<edge>start|end)\}")
FENCED_TEXT = re.compile(r"^```(?:console|shell|bash|python)\n(?P<body>.*?)^```", re.M | re.S)


def _shown_code(page: Path):
    """(where, source, columns) of every code cell a reader can see (hidden inputs open on a click),
    every fenced block of the Markdown and every package object the page includes."""
    in_box = False
    for i, cell in enumerate(jupytext.read(page).cells):
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "markdown":
            for m in BOX_MARKERS.finditer(cell.source):
                in_box = m["edge"] == "start"
            for m in FENCED_TEXT.finditer(cell.source):
                yield f"cell {i} (text block)", m["body"], BOX_CODE_COLUMNS if in_box else PAGE_CODE_COLUMNS
        elif not {"remove-input", "remove-cell"} & set(tags):
            columns = BOX_CODE_COLUMNS if in_box else PAGE_CODE_COLUMNS
            if "hide-input" in tags:
                columns = HIDDEN_INPUT_COLUMNS[columns]
            yield f"cell {i}", cell.source, columns
    for m in LITERALINCLUDE.finditer(page.read_text()):
        pyobject = re.search(r":pyobject: (\S+)", m["options"])
        if pyobject:
            source = (page.parent / m["path"]).resolve()
            yield f"{source.relative_to(ROOT)}::{pyobject[1]}", _object_source(source, pyobject[1]), PAGE_CODE_COLUMNS


SHOWN_PAGES = PAGES + [ROOT / name for name in ("checking.md", "instructors.md", "notation.md")]


def test_code_shown_on_the_pages_fits_their_width():
    too_wide = [f"{page.relative_to(ROOT)} {where}: {len(line)} > {columns} columns: {line.strip()[:60]}"
                for page in SHOWN_PAGES for where, source, columns in _shown_code(page)
                for line in source.splitlines() if len(line) > columns]
    assert not too_wide, f"{len(too_wide)} code lines wider than their box:\n" + "\n".join(too_wide)


@pytest.mark.parametrize("page", SHOWN_PAGES, ids=lambda p: p.stem)
def test_code_shown_in_the_chinese_edition_fits_its_width(page):
    """The Chinese edition shows the same code with Chinese comments and docstrings
    (``bookbuild.i18n.code_text``), a CJK character taking two columns of a code box."""
    from attnlab._shown import display_width
    from bookbuild.i18n.code_text import translate
    from bookbuild.i18n.markdown import page_catalog

    catalog = page_catalog(page, "zh_CN")
    too_wide = [f"{where}: {display_width(line)} > {columns} columns: {line.strip()[:60]}"
                for where, source, columns in _shown_code(page)
                for line in translate(source, catalog.get).splitlines() if display_width(line) > columns]
    assert not too_wide, f"{len(too_wide)} translated code lines wider than their box:\n" + "\n".join(too_wide)
