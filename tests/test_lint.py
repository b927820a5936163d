"""The tree is ruff-clean: the package, tests and tools, and the code cells of every page."""
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(p for d in ("chapters", "exercises", "solutions") for p in (ROOT / d).glob("*.md"))
# A notebook imports where the reader first needs a module (E402); everything else is as for the package.
NOTEBOOK_IGNORES = "E402"


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
