"""Hostile notebooks graded beside an honest classmate, on both paths: ``make grade`` and ``otter run``.

One notebook per class of attack (``hostile/``, see ``hostile_class.py``), each the blank
notebook plus the attack: each must score exactly what the blank notebook scores; the honest
classmate's row and feedback must be those of a run without them (same seed); and the checkout,
its virtual environment and the submissions folder must be unchanged, nothing may reach the
test's port on the grading machine, no file may appear in the proof folder, and no process of
theirs may outlive the run. ``make grade``'s command (``python -m bookbuild grade``, which the recipe runs)
grades two notebooks at a time (JOBS=2); ``otter run`` grades each with the zip, two at a time.
"""
from __future__ import annotations

import concurrent.futures
import csv
import json
import os
import pathlib
import shutil
import socket
import subprocess
import threading
import time

import pytest

from attnlab.grading.gradebook import read_autograder

from .hostile_class import changes, snapshot, write_class

pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parents[3]
VENV = ROOT / ".venv"
QUESTION_TIMEOUT = 10
SEED = "20261206"
ENV = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
SKIP = (".venv", "_build", ".pytest_cache", "assignments", "submissions", "results", "notebooks", "dist")


@pytest.fixture(scope="module")
def assignment(tmp_path_factory) -> pathlib.Path:
    from bookbuild import assignments as make_assignments
    out = tmp_path_factory.mktemp("assignments")
    return make_assignments.make_assignment("01", out, run_tests=False, wheel=make_assignments.build_wheel(out / "w"),
                                            question_timeout=QUESTION_TIMEOUT)


@pytest.fixture(scope="module")
def listener():
    """A TCP port on this machine's loopback; the list of connections that reached it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    reached, stop = [], threading.Event()

    def accept():
        while not stop.is_set():
            try:
                reached.append(server.accept()[1])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], reached
    stop.set()
    thread.join()
    server.close()


@pytest.fixture(scope="module")
def hostile(assignment, listener, tmp_path_factory):
    folder, proof = tmp_path_factory.mktemp("class"), tmp_path_factory.mktemp("proof")
    proof.chmod(0o777)                                        # every chance: anyone may write here
    places = {"ROOT": str(ROOT), "VENV": str(VENV), "SUBMISSIONS": str(folder), "PROOF": str(proof),
              "PORT": str(listener[0])}
    names = write_class(assignment, folder, places)
    return folder, proof, names


def grade(folder: pathlib.Path, assignment: pathlib.Path, jobs: int) -> dict[str, dict]:
    done = subprocess.run([str(VENV / "bin" / "python"), "-m", "bookbuild", "grade", "--chapter", "01",
                           "--submissions", str(folder), "--assignments", str(assignment.parent), "--jobs", str(jobs),
                           "--seed", SEED], capture_output=True, text=True, env=ENV, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return {r["student"]: r for r in csv.DictReader(open(folder / "gradebook.csv"))}


def snapshots(folder: pathlib.Path) -> tuple:
    return (snapshot(ROOT, skip=SKIP), snapshot(VENV, contents=False),
            {k: v for k, v in snapshot(folder).items() if k.endswith(".ipynb") and "/" not in k})


def assert_contained(before, folder, proof, reached) -> None:
    time.sleep(3)                                             # a detached process would have written by now
    after = snapshots(folder)
    for what, old, new in zip(("the checkout", "the venv", "the submissions"), before, after):
        # git's own loose objects may appear while the suite runs (content-addressed: they change no file)
        changed = [p for p in changes(old, new) if not p.startswith(".git/objects/")]
        assert not changed, f"{what} changed: {changed[:5]}"
    assert not list(proof.iterdir()), f"an attack left proof: {sorted(p.name for p in proof.iterdir())}"
    assert not reached, f"connections reached the grading machine: {reached}"
    found = subprocess.run(["pgrep", "-f", "attnlab-hostile-detached"], capture_output=True, text=True).stdout
    assert not found.strip(), f"a detached process outlived the run: {found}"


def test_make_grade_scores_every_hostile_notebook_as_the_blank_one_and_changes_nothing(
        hostile, assignment, listener, tmp_path):
    folder, proof, names = hostile
    control = tmp_path / "control"                            # the honest classmate graded alone
    control.mkdir()
    for name in ("honest", "blank"):
        shutil.copy(folder / f"{name}.ipynb", control)
    expected = grade(control, assignment, jobs=1)
    before = snapshots(folder)
    rows = grade(folder, assignment, jobs=2)
    assert_contained(before, folder, proof, listener[1])
    assert sorted(rows) == sorted(names)
    questions = [k for k in rows["blank"] if k.startswith("ex-qkv-")]
    zip_path = next((assignment / "autograder").glob("*-autograder_*.zip"))
    autograded = sum(q.points for q in read_autograder(zip_path).questions)
    assert rows["honest"] == expected["honest"] and float(rows["honest"]["total"]) == autograded
    feedback = (folder / "feedback" / "honest.md").read_text()
    assert feedback == (control / "feedback" / "honest.md").read_text()
    for name in names[2:]:
        assert [rows[name][q] for q in questions] == [rows["blank"][q] for q in questions], name
    for name in names:
        text = (folder / "feedback" / f"{name}.md").read_text()
        assert "Traceback" not in text and str(ROOT) not in text and 'File "' not in text, name
        assert f"seed {SEED}" in text, name
    early = (folder / "feedback" / "hostile-early-exit.md").read_text()
    assert f"ran longer than {QUESTION_TIMEOUT} s" in early and "ended the notebook's process" in early


def otter_run(zip_path: pathlib.Path, notebook: pathlib.Path, out: pathlib.Path) -> dict:
    out.mkdir()
    submitted = out / "submission" / "ex01_qkv.ipynb"
    submitted.parent.mkdir()
    shutil.copy(notebook, submitted)
    done = subprocess.run([str(VENV / "bin" / "otter"), "run", "-a", str(zip_path), "-o", str(out), str(submitted)],
                          capture_output=True, text=True, env=ENV, timeout=900, cwd=out)
    assert done.returncode == 0, notebook.name + done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stdout + done.stderr, notebook.name
    results = json.loads((out / "results.json").read_text())
    return {t["name"]: t for t in results["tests"] if t.get("max_score")}


def test_otter_run_scores_every_hostile_notebook_as_the_blank_one_and_changes_nothing(
        hostile, assignment, listener, tmp_path):
    folder, proof, names = hostile
    zip_path = next((assignment / "autograder").glob("*-autograder_*.zip"))
    before = snapshots(folder)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = dict(zip(names, pool.map(lambda n: otter_run(zip_path, folder / f"{n}.ipynb", tmp_path / n), names)))
    assert_contained(before, folder, proof, listener[1])
    blank = {q: t["score"] for q, t in runs["blank"].items()}
    assert blank and set(blank.values()) == {0}
    assert all(t["score"] == t["max_score"] for t in runs["honest"].values())
    for name in names[2:]:
        assert {q: t["score"] for q, t in runs[name].items()} == blank, name


def gradescope(zip_path: pathlib.Path, submission: pathlib.Path, root: pathlib.Path) -> dict:
    """Gradescope's layout (/autograder: source, submission, results) in ``root``, run by the zip's entry."""
    import zipfile
    for folder in ("source", "submission", "results"):
        (root / folder).mkdir(parents=True)
    (root / "submission_metadata.json").write_text("{}")
    zipfile.ZipFile(zip_path).extractall(root / "source")
    assert "attnlab.grading.autograder" in (root / "source" / "run_otter.py").read_text()
    shutil.copy(submission, root / "submission" / "ex01_qkv.ipynb")
    done = subprocess.run([str(VENV / "bin" / "python"), "-m", "attnlab.grading.autograder", str(root)],
                          capture_output=True, text=True, env=ENV, timeout=900)
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
    return json.loads((root / "results" / "results.json").read_text())


def test_gradescopes_entry_point_gives_a_results_file_for_broken_files_and_early_exits(hostile, assignment, tmp_path):
    folder, proof, _ = hostile
    zip_path = next((assignment / "autograder").glob("*-autograder_*.zip"))
    files = {"empty": b"", "not-json": b'{"cells": [', "not-a-notebook": b'{"hello": "world"}'}
    for name, data in files.items():
        (tmp_path / f"{name}.ipynb").write_bytes(data)
    cases = {**{n: tmp_path / f"{n}.ipynb" for n in files}, "early-exit": folder / "hostile-early-exit.ipynb",
             "pickle-payload": folder / "hostile-pickle-payload.ipynb"}
    for name, path in cases.items():
        results = gradescope(zip_path, path, tmp_path / f"gs-{name}")
        scored = [t for t in results["tests"] if t.get("max_score")]
        assert scored and all(t["score"] == 0 for t in scored), name
    assert not list(proof.iterdir())
