"""instructors.md, followed word for word in a temporary copy of the repository (see conftest.py).

Every fenced shell block of the guide runs exactly as printed (the fixture fails on the first
one that does not); these tests then check that each step produced what the guide says.
"""
import csv
import json
import re
import zipfile

import pytest

from .conftest import GUIDE, shell_blocks

pytestmark = pytest.mark.slow


def test_the_guide_has_the_steps_from_nothing_to_a_gradebook():
    blocks = "\n".join(shell_blocks(GUIDE.read_text()))
    for step in ("make assignments", "make grade", "gradebook.csv", "EXERCISES=", "POINTS=", "otter run"):
        assert step in blocks, step


def test_make_grade_as_the_guide_says_gives_blank_zero_and_model_answer_full_marks(guide):
    folder = guide.clone / "submissions" / "ex01"
    rows = list(csv.DictReader(open(folder / "gradebook.csv")))
    assert [r["student"] for r in rows] == ["blank", "model-answer"]
    blank, model = rows
    autograded = [q for q in list(model)[3:] if model[q] != ""]
    written = [q for q in list(model)[3:] if model[q] == ""]         # columns to fill by hand
    assert autograded and written and all(float(model[q]) > 0 for q in autograded)
    assert float(model["total"]) == sum(float(model[q]) for q in autograded)     # every autograded point
    assert float(model["possible"]) == float(model["total"]) + len(written)      # and one per written question
    assert blank["total"] == "0" and blank["possible"] == model["possible"]
    printed = "\n".join(o.stdout for o in guide.outputs)
    assert "student,total,possible" in printed and "not attempted yet" in printed   # the cat commands
    written = (folder / "written" / "model-answer.md").read_text()
    assert re.search(r"^### Exercise 1\.\d+: ", written, re.M)     # numbered as on the page


def test_exercises_and_points_choose_questions_and_weights_in_a_folder_of_their_own(guide):
    assert not (guide.clone / "assignments" / "ex03_masks").exists()       # the whole chapter's name stays free
    zips = list((guide.clone / "assignments" / "ex03_masks-causal4-padding2" / "autograder").glob(
        "*-autograder_*.zip"))
    assert len(zips) == 1
    config = json.loads(zipfile.ZipFile(zips[0]).read("otter_config.json"))
    plugin = config["plugins"][0]["attnlab.grading.otter_plugin.IsolatedGrading"]
    assert {q["name"]: q["points"] for q in plugin["questions"]} == {"ex-masks-causal": 4, "ex-masks-padding": 2}
    tests = sorted(n for n in zipfile.ZipFile(zips[0]).namelist() if n.startswith("tests/"))
    assert tests == ["tests/ex-masks-causal.py", "tests/ex-masks-padding.py"]


def test_otter_run_as_the_guide_says_gives_full_marks(guide):
    results = json.loads((guide.clone / "results" / "model-answer" / "results.json").read_text())
    graded = [t for t in results["tests"] if t.get("max_score")]
    assert graded and all(t["score"] == t["max_score"] for t in graded)


def test_the_wheel_contains_the_package_and_no_solutions(guide):
    wheel = next((guide.clone / "dist").glob("attnlab-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "attnlab/grading/sandbox.py" in names and "attnlab/checks/__init__.py" in names
    assert not [n for n in names if n.startswith(("solutions/", "exercises/", "chapters/"))]
