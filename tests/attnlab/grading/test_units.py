"""Fast tests of the grading pieces: assignment options, bad files, and the guard against patching."""
import json
import pathlib

import numpy as np
import pytest

from bookbuild import assignments as make_assignments
from bookbuild import grade

ROOT = pathlib.Path(__file__).resolve().parents[3]

from attnlab.grading.sandbox import code_cells, run_check  # noqa: E402
from attnlab.grading.supervisor import Question, _score  # noqa: E402

EX03 = ROOT / "exercises" / "ex03_masks.md"
SOL03 = ROOT / "solutions" / "sol03_masks.md"


def config_of(nb):
    import yaml
    return yaml.safe_load(nb.cells[0].source.split("\n", 1)[1])


def test_exercises_and_points_select_and_weight_questions():
    nb = make_assignments.master_notebook(EX03, SOL03, chosen=["ex-masks-causal", "ex-masks-padding"],
                                          points={"ex-masks-causal": 4})
    plugin = config_of(nb)["generate"]["plugins"][0]["attnlab.grading.otter_plugin.IsolatedGrading"]
    assert [(q["name"], q["points"]) for q in plugin["questions"]] == [("ex-masks-causal", 4), ("ex-masks-padding", 1)]
    raw = [c.source for c in nb.cells if c.cell_type == "raw"]
    assert "# BEGIN QUESTION\nname: ex-masks-causal\npoints: 4" in raw
    assert not [r for r in raw if "ex-masks-documents" in r]


def test_unknown_exercise_labels_are_named_with_the_choices():
    with pytest.raises(SystemExit, match="no exercise ex-masks-nope.*ex-masks-causal"):
        make_assignments.master_notebook(EX03, SOL03, chosen=["ex-masks-nope"])
    with pytest.raises(SystemExit, match="not a number"):
        make_assignments.parse_points("ex-masks-causal=four")
    assert make_assignments.parse_points("a=4 b=2.5") == {"a": 4.0, "b": 2.5}


def test_written_exercises_become_manual_questions():
    nb = make_assignments.master_notebook(ROOT / "exercises" / "ex01_qkv.md", ROOT / "solutions" / "sol01_qkv.md")
    manual = [c.source for c in nb.cells if c.cell_type == "raw" and "manual: true" in c.source]
    assert manual and all(m.startswith("# BEGIN QUESTION\nname: ex-qkv-") for m in manual)
    plugin = config_of(nb)["generate"]["plugins"][0]["attnlab.grading.otter_plugin.IsolatedGrading"]
    assert plugin["written"] == [m.split("name: ")[1].split("\n")[0] for m in manual]


def test_the_autograder_requirements_are_the_lock_pins():
    lock = dict(line.split("==") for line in (ROOT / "requirements" / "lock.txt").read_text().splitlines()
                if "==" in line)
    for requirement in make_assignments.pinned_requirements():
        name, version = requirement.split("==")
        assert lock[name.split("[")[0]] == version
    names = [r.split("==")[0] for r in make_assignments.pinned_requirements()]
    assert {"numpy", "sympy", "torch", "otter-grader[grading]"} <= set(names)


@pytest.mark.parametrize("content, words", [(b"", "empty"), (b"{nope", "not valid JSON"),
                                            (b"[1, 2]", "not a Jupyter notebook"),
                                            (b'{"cells": "x", "nbformat": 4}', "not a valid Jupyter notebook"),
                                            (b"\xff\xfe\x00", "not text")])
def test_files_that_are_not_notebooks_are_explained(tmp_path, content, words):
    path = tmp_path / "x.ipynb"
    path.write_bytes(content)
    assert words in grade.problem_with(path)


def test_points_are_shared_among_checks():
    q = Question("q", 4, ["check_a(f)", "check_b(f)"])
    assert _score(q, [{"status": "passed"}, {"status": "failed"}]) == 2
    assert _score(q, [{"status": "passed"}, {"status": "passed"}]) == 4


def test_ipython_syntax_in_cells_is_translated(tmp_path):
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": ["%matplotlib inline\n", "x = 1"]}],
                                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert code_cells(str(path)) == ["get_ipython().run_line_magic('matplotlib', 'inline')\nx = 1\n"]


def test_a_check_ignores_the_notebooks_check_names_and_undoes_patches():
    """run_check uses the checkers it is given, and the snapshot undoes patching before checking."""
    import attnlab.checks as checks
    from attnlab.checks import CheckResult
    from attnlab.grading.guard import Snapshot

    snapshot = Snapshot()
    original = np.allclose
    fake = CheckResult("scores", "passed", "fake")
    namespace = {"scores": lambda q, k: None, "check_scores": lambda f: fake}
    pristine = {"check_scores": checks.check_scores}
    try:
        np.allclose = lambda *a, **k: True                            # patched at the top of a cell
        checks.check_scores = lambda f: fake
        record = run_check("check_scores(scores)", pristine, namespace, snapshot, CheckResult)
        assert record["status"] == "failed"
        assert np.allclose is original and checks.check_scores is pristine["check_scores"]   # put back
        namespace["scores"] = lambda q, k: q @ np.swapaxes(k, -1, -2)
        assert run_check("check_scores(scores)", pristine, namespace, snapshot, CheckResult)["status"] == "passed"

        def patching(q, k):
            np.allclose = lambda *a, **kw: True                       # patched while being checked
            return q @ np.swapaxes(k, -1, -2)
        namespace["scores"] = patching
        record = run_check("check_scores(scores)", pristine, namespace, snapshot, CheckResult)
        assert record["status"] == "failed" and "numpy.allclose" in record["message"]
        assert np.allclose is original
        record = run_check("check_scores(missing)", pristine, namespace, snapshot, CheckResult)
        assert record["status"] == "failed" and "`missing` is not defined" in record["message"]
    finally:
        snapshot.restore()
