"""The autograder zip installs everything it needs: a fresh venv from the zip's own requirements grades.

Gradescope and ``otter grade`` build their environment from the zip's ``environment.yml``
(conda, then pip for its ``pip:`` list, run in the folder of the file). Here, without conda or
Docker, the same ``pip:`` list is installed into a fresh virtual environment, from the unpacked
zip's folder, and otter grades the solved notebook and the blank one there.
"""
import json
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest
import yaml

from .submissions import QUESTIONS, write_submissions

pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parents[3]


def lock_pins():
    pins = {}
    for line in (ROOT / "requirements" / "lock.txt").read_text().splitlines():
        name, sep, version = line.partition("==")
        if sep:
            pins[name.lower()] = version
    return pins


@pytest.fixture(scope="module")
def unpacked(chapter1, tmp_path_factory):
    folder = tmp_path_factory.mktemp("autograder")
    zip_path = next((chapter1 / "autograder").glob("*-autograder_*.zip"))
    zipfile.ZipFile(zip_path).extractall(folder)
    return folder, zip_path


def test_the_zip_names_attnlab_and_its_pinned_dependencies(unpacked):
    folder, _ = unpacked
    env = yaml.safe_load((folder / "environment.yml").read_text())
    assert "python=3.11" in env["dependencies"]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    wheels = [r for r in pip if r.endswith(".whl")]
    assert len(wheels) == 1 and (folder / wheels[0]).is_file() and "attnlab-" in wheels[0]
    assert wheels[0].startswith("./requirements.wheels/")                  # see make_assignments.WHEELS
    assert (folder / "requirements.wheels" / wheels[0]).is_file()          # the copy for otter grade's Docker
    pins = lock_pins()
    for name in ("numpy", "sympy", "torch", "otter-grader[grading]"):
        assert f"{name}=={pins[name.split('[')[0]]}" in pip, name


def test_a_fresh_venv_from_the_zip_grades_solution_full_blank_and_gamed_zero(unpacked, chapter1, tmp_path):
    """otter run in the zip's environment: otter's kernel runs none of the notebook's code (the
    plugin empties it), and the plugin's isolated grading gives the scores."""
    folder, zip_path = unpacked
    env = yaml.safe_load((folder / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *pip], cwd=folder,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found = subprocess.run([str(python), "-c", "import attnlab, torch; print(attnlab.__file__, torch.__version__)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert str(venv) in found and "2.13.0" in found                          # the vendored wheel, the pinned torch
    submissions = write_submissions(chapter1, tmp_path / "submissions")
    outputs = {}
    for name, expected in [("solution", 1), ("blank", 0), ("gamed", 0)]:
        work = tmp_path / name
        work.mkdir()
        shutil.copy(submissions[name], work / "ex01_qkv.ipynb")
        done = subprocess.run([str(python), "-m", "otter", "run", "-a", str(zip_path), "-o", str(work),
                               str(work / "ex01_qkv.ipynb")], capture_output=True, text=True, cwd=work)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        tests = {t["name"]: t for t in json.loads((work / "results.json").read_text())["tests"]}
        assert [tests[q]["score"] for q in QUESTIONS] == [expected * tests[q]["max_score"] for q in QUESTIONS], name
        assert all(tests[q]["max_score"] == 1 for q in QUESTIONS)
        outputs[name] = "".join(tests[q]["output"] for q in QUESTIONS)
    assert "not attempted yet" in outputs["blank"] and "Did you forget `return`?" in outputs["gamed"]
    assert "Traceback" not in "".join(outputs.values())
