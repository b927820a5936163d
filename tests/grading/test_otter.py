"""otter's side: the autograder zip scores with the sandbox, and students see words, not tracebacks."""
import json
import shutil
import subprocess
import sys

import nbformat
import pytest
from nbclient import NotebookClient

from .submissions import QUESTIONS, write_submissions

pytestmark = pytest.mark.slow

OTTER = [sys.executable, "-m", "otter"]


def otter_run(zip_path, notebook, work):
    work.mkdir()
    target = work / "ex01_qkv.ipynb"
    shutil.copy(notebook, target)
    done = subprocess.run([*OTTER, "run", "-a", str(zip_path), "-o", str(work), str(target)],
                          capture_output=True, text=True, cwd=work)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((work / "results.json").read_text())
    return {t["name"]: t for t in results["tests"] if t["name"] in QUESTIONS}, done.stdout


def test_otter_run_gives_a_gamed_notebook_the_blank_notebooks_zero(chapter1, tmp_path):
    """In otter's own kernel the tricks would pass; the plugin's scores replace otter's."""
    subs = write_submissions(chapter1, tmp_path / "subs")
    zip_path = next((chapter1 / "autograder").glob("*-autograder_*.zip"))
    tests, printed = otter_run(zip_path, subs["gamed"], tmp_path / "gamed")
    assert set(tests) == set(QUESTIONS)
    assert all(t["score"] == 0 and t["max_score"] == 1 for t in tests.values()), tests
    assert "changed the grading code" in tests["ex-qkv-attention"]["output"]
    assert "Traceback" not in "".join(t["output"] for t in tests.values())


def test_grader_check_in_the_student_notebook_shows_the_diagnosis_in_words(chapter1, tmp_path):
    work = tmp_path / "student"
    shutil.copytree(chapter1 / "student", work)
    nb = nbformat.read(work / "ex01_qkv.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(work)}}).execute()
    shown = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("grader.check("):
            text = "".join(o.get("text", "") + "".join(o.get("data", {}).get("text/plain", ""))
                           for o in cell.outputs)
            shown[cell.source] = text
    assert len(shown) == len(QUESTIONS)
    for source, text in shown.items():
        assert "not attempted yet" in text, (source, text)
        assert "Traceback" not in text and "Expected:" not in text and 'File "' not in text, (source, text)
