"""Instructor workflow: the student edition hides the solutions; every chapter's assignment grades.

The fast tests check the bookkeeping that keeps both editions building (labels, tables of
contents, links both ways); the slow ones build the student edition, and build every chapter's
otter assignment and grade its solved and blank notebooks. The grading itself (make grade, the
otter plugin, the autograder's environment, gaming, time limits, the guide) is tested in
tests/attnlab/grading/.
"""
import json
import pathlib
import re
import subprocess

import nbformat
import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
from bookbuild import assignments as make_assignments  # noqa: E402
from bookbuild import notebooks as make_notebooks  # noqa: E402

EXERCISES = sorted((ROOT / "exercises").glob("ex[0-9][0-9]_*.md"))
SOLUTIONS = sorted((ROOT / "solutions").glob("sol[0-9][0-9]_*.md"))
CHAPTERS = [p.stem[2:4] for p in EXERCISES]


def labels(path, pattern):
    return set(re.findall(pattern, path.read_text(), flags=re.M))


def toc_files(path):
    toc = yaml.safe_load(path.read_text())
    return [entry["file"] for part in toc["parts"] for entry in part["chapters"]]


# ------------------------------------------------------------------------------------ fast bookkeeping


def test_every_exercise_page_has_a_solution_page():
    assert [p.stem[2:] for p in EXERCISES] == [p.stem[3:] for p in SOLUTIONS]
    chapters = sorted(p.stem[:2] for p in (ROOT / "chapters").glob("[0-9][0-9]_*.md"))
    assert [p.stem[2:4] for p in EXERCISES] == chapters      # one sheet per chapter


def test_every_exercise_has_a_solution_and_links_to_it():
    for ex_page, sol_page in zip(EXERCISES, SOLUTIONS):
        _, exercises = make_assignments.parse(ex_page)
        _, solutions = make_assignments.parse(sol_page)
        assert list(exercises) == list(solutions), ex_page.name       # same exercises, same order
        text = ex_page.read_text()
        for label, block in solutions.items():
            assert f"<{block['label']}>`" in text, f"{ex_page.name}: {label} does not link {block['label']}"


def test_withheld_page_defines_exactly_the_solution_labels():
    solution_labels = set()
    for page in SOLUTIONS:
        solution_labels |= labels(page, r"^\((sol-[\w-]+)\)=$") | labels(page, r"^:label: (sol-[\w-]+)$")
    withheld = labels(ROOT / "solutions_withheld.md", r"^\((sol-[\w-]+)\)=$")
    assert withheld == solution_labels


def test_student_toc_is_the_full_toc_without_solutions():
    from bookbuild.editions import Edition, write_files

    write_files(Edition(audience="student"))                  # generated from _toc.yml
    student = toc_files(ROOT / "_toc_student.yml")
    assert not [f for f in student if f.startswith("solutions/")]
    assert [f"exercises/{p.stem}" for p in EXERCISES] == [f for f in student if f.startswith("exercises/")]
    assert "solutions_withheld" in student and "instructors" in student
    full = toc_files(ROOT / "_toc.yml")
    expected = [f for f in full if not f.startswith("solutions/")]
    assert [f for f in student if f != "solutions_withheld"] == expected, (
        "_toc_student.yml must list the same pages as _toc.yml, minus solutions/")
    assert [f"solutions/{p.stem}" for p in SOLUTIONS] == [f for f in full if f.startswith("solutions/")]


def test_notebook_conversion_renders_myst_as_plain_markdown():
    nb = make_notebooks.to_notebook(ROOT / "exercises" / "ex01_qkv.md")
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "### Exercise 1.2: The transpose trap, by hand" in text
    assert "argument of Exercise 1.6." in text                     # a reference to an exercise
    assert "{ref}" not in text and ":::" not in text and "(ex-qkv)=" not in text
    assert "sol-qkv" not in text                                            # no links to solutions
    assert any("raise NotImplementedError" in c.source for c in nb.cells if c.cell_type == "code")


def test_master_notebook_separates_prompts_solutions_and_tests():
    nb = make_assignments.master_notebook(EXERCISES[0], SOLUTIONS[0])
    raw = [c.source for c in nb.cells if c.cell_type == "raw"]
    assert raw[0].startswith("# ASSIGNMENT CONFIG")
    assert raw.count("# BEGIN QUESTION\nname: ex-qkv-scores\npoints: 1") == 1
    tests = [c.source for c in nb.cells if c.cell_type == "code" and c.source.startswith("def test_")]
    assert ("def test_ex_qkv_scores_1(scores):\n    from attnlab.checks import check_scores\n"
            "    from attnlab.grading.student import require\n    require(check_scores(scores))") in tests


# ------------------------------------------------------------------------------------ slow: student edition


def solution_fingerprints():
    """Lines of solution code and sentences of solution prose that must not reach students."""
    shared = "\n".join(p.read_text() for p in list(EXERCISES) + sorted((ROOT / "chapters").glob("*.md")))
    # a line the chapters or sheets show too (even inside a longer line, as the leak test matches
    # substrings) is not solution material, however it is aligned
    shared_flat = " ".join(shared.split())
    code, prose = set(), set()
    for page in SOLUTIONS:
        _, solutions = make_assignments.parse(page)
        for block in solutions.values():
            for kind, text in block["parts"]:
                if kind == "code":
                    for line in make_assignments.solution_code(text).splitlines():
                        line = line.strip()
                        if len(line) > 30 and " ".join(line.split()) not in shared_flat \
                                and not line.startswith(("#", "print(")):
                            code.add(line)
                else:
                    for sentence in re.split(r"(?<=[.!?])\s+", " ".join(text.split())):
                        if len(sentence) > 60 and "$" not in sentence and "`" not in sentence \
                                and "{" not in sentence and sentence not in shared:
                            prose.add(sentence)
    return code, prose


def html_text(path):
    import html
    text = re.sub(r"<[^>]+>", "", path.read_text(errors="ignore"))
    return " ".join(html.unescape(text).split())


@pytest.mark.slow
def test_student_edition_contains_no_solution_text_or_code(tmp_path):
    # the instructor's command, as the README gives it: vendors the JS, builds with -W -n
    done = subprocess.run(["make", "student-book"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    site = ROOT / "_build" / "student" / "html"
    assert not (site / "solutions").exists()
    assert (site / "solutions_withheld.html").exists()
    pages = {p: html_text(p) for p in site.rglob("*.html")}
    code, prose = solution_fingerprints()
    assert len(code) > 100 and len(prose) > 30         # the fingerprints are substantial
    for path, text in pages.items():
        leaked = [c for c in code if " ".join(c.split()) in text] + [s for s in prose if s in text]
        assert not leaked, f"{path.relative_to(site)} contains solution material: {leaked[:3]}"
    ex_page = pages[site / "exercises" / "ex01_qkv.html"]
    assert "not attempted yet" in ex_page and "solutions/" not in (site / "exercises" / "ex01_qkv.html").read_text()


# ------------------------------------------------------------------------------------ slow: every chapter


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    return make_assignments.build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_grades_the_solution_full_marks_and_the_blank_notebook_zero(chapter, tmp_path, wheel):
    """otter assign checks the solutions in its kernel; the sandbox then grades both notebooks.

    (otter run itself, the plugin, the zip's environment and gaming are tested on chapter 1 in
    tests/attnlab/grading/.)
    """
    from attnlab.checks.seeds import new_seed
    from attnlab.grading import grade_notebook
    from attnlab.grading.otter_plugin import questions_from_config

    target = make_assignments.make_assignment(chapter, tmp_path / "assignments", wheel=wheel)
    stem = target.name
    student = target / "student" / f"{stem}.ipynb"
    solved = target / "autograder" / f"{stem}.ipynb"
    blank = nbformat.read(student, as_version=4)
    assert not [c for c in blank.cells if "BEGIN SOLUTION" in c.source]
    config = json.loads((target / "autograder" / "otter_config.json").read_text())
    questions = questions_from_config(config["plugins"][0]["attnlab.grading.otter_plugin.IsolatedGrading"])
    assert questions
    seed = new_seed()                    # fresh cases, as in a grading run: the solutions pass on any
    full = grade_notebook(solved, questions, seed=seed)
    lost = [(q.name, q.note, q.checks) for q in full.questions if q.earned < q.possible]
    assert full.total == full.possible > 0, (seed, lost)
    zero = grade_notebook(student, questions, seed=seed)
    assert zero.total == 0 and zero.possible == full.possible
    assert all(c["status"] == "not attempted yet" for q in zero.questions for c in q.checks), (
        [(q.name, q.checks) for q in zero.questions])
