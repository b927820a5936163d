"""The students' side: grader.check in their notebook shows the checker's diagnosis, not a traceback.

(otter run with the autograder zip, the plugin and a gamed notebook: test_autograder_env.py.)
"""
import shutil

import nbformat
import pytest
from nbclient import NotebookClient

from .submissions import QUESTIONS

pytestmark = pytest.mark.slow

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
