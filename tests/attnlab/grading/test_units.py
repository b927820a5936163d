"""Fast tests of the grading pieces: assignment options, their folders, bad files, cells, points."""
import json
import pathlib

import pytest

from attnlab.grading.notebook import code_cells, problem_with
from attnlab.grading.supervisor import Question, _score
from bookbuild import assignments as make_assignments

ROOT = pathlib.Path(__file__).resolve().parents[3]

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


def test_written_exercises_become_manual_questions_with_their_points():
    nb = make_assignments.master_notebook(ROOT / "exercises" / "ex01_qkv.md", ROOT / "solutions" / "sol01_qkv.md",
                                          points={"ex-qkv-tied": 3})
    manual = [c.source for c in nb.cells if c.cell_type == "raw" and "manual: true" in c.source]
    assert manual and all(m.startswith("# BEGIN QUESTION\nname: ex-qkv-") for m in manual)
    plugin = config_of(nb)["generate"]["plugins"][0]["attnlab.grading.otter_plugin.IsolatedGrading"]
    names = [m.split("name: ")[1].split("\n")[0] for m in manual]
    assert [w["name"] for w in plugin["written"]] == names
    assert {w["name"]: w["points"] for w in plugin["written"]}["ex-qkv-tied"] == 3
    assert "points: 3" in next(m for m in manual if "ex-qkv-tied" in m)


def test_a_choice_of_exercises_gets_a_folder_of_its_own():
    page = ROOT / "exercises" / "ex03_masks.md"
    assert make_assignments.assignment_name(page) == "ex03_masks"
    assert make_assignments.assignment_name(page, ["ex-masks-causal", "ex-masks-padding"]) == \
        "ex03_masks-causal-padding"
    assert make_assignments.assignment_name(page, ["ex-masks-causal", "ex-masks-padding"],
                                            {"ex-masks-causal": 4, "ex-masks-padding": 2}) == \
        "ex03_masks-causal4-padding2"
    assert make_assignments.assignment_name(page, None, None, "week2") == "ex03_masks-week2"
    with pytest.raises(SystemExit, match="NAME"):
        make_assignments.assignment_name(page, None, None, "../x")


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
def test_files_that_are_not_notebooks_are_explained(content, words):
    assert words in problem_with(content)


def test_points_are_shared_among_checks():
    q = Question("q", 4, ["check_a(f)", "check_b(f)"])
    assert _score(q, [{"status": "passed"}, {"status": "failed"}]) == 2
    assert _score(q, [{"status": "passed"}, {"status": "passed"}]) == 4


def test_ipython_syntax_is_translated_and_otter_lines_become_check_points():
    data = json.dumps({"cells": [{"cell_type": "code", "source": ["%matplotlib inline\n", "x = 1"]},
                                 {"cell_type": "markdown", "source": "text"},
                                 {"cell_type": "code", "source": 'import otter\ngrader.check("q1")\ny = 2'}],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()
    cells = code_cells(data)
    assert [c.source for c in cells] == ["get_ipython().run_line_magic('matplotlib', 'inline')\nx = 1", "y = 2"]
    assert [c.checks for c in cells] == [[], ["q1"]]


def test_functions_that_call_attnlab_or_a_librarys_attention_are_listed():
    from attnlab.grading.shortcuts import shortcuts
    found = shortcuts(["import attnlab as al\nimport torch.nn.functional as F\nfrom attnlab.masks import causal",
                       "def attention(q, k, v):\n    return al.attention(q, k, v)\n\n"
                       "def mine(q, k, v):\n    print(al.tr('x'))\n"
                       "    return causal(3), F.scaled_dot_product_attention(q, k, v)\n\n"
                       "def honest(q, k, v):\n    return q @ k.T\n\nal.attention(1, 2, 3)"])
    assert found == {"attention": ["attnlab.attention"],
                     "mine": ["attnlab.masks.causal", "torch.nn.functional.scaled_dot_product_attention"]}
