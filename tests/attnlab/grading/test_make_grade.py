"""make grade on the folder a class hands in: solution, blank, partial, gamed, hanging and broken files.

The expected rows are stated from what each submission is, not read back from the grader: the
solution earns every point, the blank and every file that is not a notebook none, the partial
one all but its last question, the hanging one all but the question that loops, and the gamed
one exactly what the blank one earns. (Attacks on the grader itself: test_hostile.py.)
"""
import csv
import json
import re
import subprocess
import time

import nbformat
import pytest

from attnlab.grading import Question, grade_notebook

from .submissions import QUESTIONS, WRITTEN, write_submissions

pytestmark = pytest.mark.slow

QUESTION_TIMEOUT = 20


@pytest.fixture(scope="module")
def graded(guide, chapter1, tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    write_submissions(chapter1, folder)
    start = time.monotonic()
    done = subprocess.run(["make", "grade", "CHAPTER=01", f"SUBMISSIONS={folder}", "TIMEOUT=120",
                           f"QUESTION_TIMEOUT={QUESTION_TIMEOUT}"], cwd=guide.clone, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = {r["student"]: r for r in csv.DictReader(open(folder / "gradebook.csv"))}
    return folder, rows, done, time.monotonic() - start


def test_the_gradebook_has_one_sorted_row_per_file_and_a_column_per_question(graded):
    folder, rows, _, _ = graded
    header = next(csv.reader(open(folder / "gradebook.csv")))
    assert header == ["student", "total", "possible", *QUESTIONS, *WRITTEN]
    assert list(rows) == sorted(p.stem for p in folder.glob("*.ipynb"))
    # one point per check, one per written question; the written ones' columns wait for the instructor
    assert {r["possible"] for r in rows.values()} == {str(len(QUESTIONS) + len(WRITTEN))}
    assert {r[w] for r in rows.values() for w in WRITTEN} == {""}


def test_scores_follow_what_each_submission_is(graded):
    _, rows, _, _ = graded

    def points(student):
        return [float(rows[student][q]) for q in QUESTIONS]

    assert points("solution") == [1, 1, 1, 1, 1]
    for student in ("blank", "empty", "not-json", "not-a-notebook"):
        assert points(student) == [0, 0, 0, 0, 0], student
    assert points("partial") == [1, 1, 1, 1, 0]                                # its last stub is back
    assert points("hanging") == [1, 1, 0, 1, 1]                                # scores() never returns
    for student, row in rows.items():
        assert float(row["total"]) == sum(points(student)), student


def test_a_notebook_that_games_the_checkers_scores_as_the_blank_one(graded):
    _, rows, _, _ = graded
    assert {q: rows["gamed"][q] for q in QUESTIONS} == {q: rows["blank"][q] for q in QUESTIONS}
    assert rows["gamed"]["total"] == "0"


def test_feedback_is_in_words_and_says_what_happened(graded):
    folder, rows, _, _ = graded
    feedback = {p.stem: p.read_text() for p in (folder / "feedback").glob("*.md")}
    assert set(feedback) == set(rows)
    for student, text in feedback.items():
        assert "Traceback" not in text and 'File "' not in text, student
        assert f"feedback for {student}" in text
    assert feedback["blank"].count("not attempted yet") == len(QUESTIONS)
    assert "ran longer than 20 s" in feedback["hanging"]
    assert "not valid JSON" in feedback["not-json"]
    assert "empty" in feedback["empty"]
    assert "not a Jupyter notebook" in feedback["not-a-notebook"]
    assert "is None. Did you forget `return`?" in feedback["gamed"]           # its patches changed nothing
    assert "Written questions" in feedback["solution"] and "ex-qkv-tied (1 point)" in feedback["solution"]


def test_the_run_shows_a_progress_bar_and_says_which_autograder_and_seed(graded):
    _, _, done, _ = graded
    assert "grading ex01_qkv" in done.stderr and "8/8" in done.stderr
    assert "with the autograder" in done.stdout and "ex01_qkv-autograder_" in done.stdout
    assert "bubblewrap sandbox" in done.stdout and "cases drawn from seed" in done.stdout


def test_a_notebook_past_its_time_limit_scores_zero_on_what_it_had_not_finished(chapter1, tmp_path):
    nb = nbformat.read(chapter1 / "autograder" / "ex01_qkv.ipynb", as_version=4)
    where = next(i for i, c in enumerate(nb.cells) if 'grader.check("ex-qkv-scores")' in c.source)
    nb.cells.insert(where, nbformat.v4.new_code_cell("import time\nwhile True:\n    time.sleep(0.1)"))
    nbformat.write(nb, tmp_path / "slow.ipynb")
    config = json.loads((chapter1 / "autograder" / "otter_config.json").read_text())
    questions = [Question(q["name"], q["points"], q["checks"])
                 for q in config["plugins"][0]["attnlab.grading.otter_plugin.IsolatedGrading"]["questions"]]
    # 60 s: the questions before the loop must finish first, on a loaded machine too (20 s did not at load 12)
    result = grade_notebook(tmp_path / "slow.ipynb", questions, timeout=60, question_timeout=120)
    earned = {q.name: q.earned for q in result.questions}
    assert earned == {"ex-qkv-shapes": 1, "ex-qkv-trap": 1, "ex-qkv-scores": 0, "ex-qkv-attention": 0,
                      "ex-qkv-limit": 0}
    assert any("time limit of 60 s" in n for n in result.notes)
    assert all("time limit" in q.note for q in result.questions[2:])


def test_grading_in_chinese_gives_a_chinese_feedback_file(guide, tmp_path):
    folder = tmp_path / "zh"
    folder.mkdir()
    (folder / "blank.ipynb").write_bytes((guide.clone / "submissions" / "ex01" / "blank.ipynb").read_bytes())
    done = subprocess.run(["make", "grade", "CHAPTER=01", f"SUBMISSIONS={folder}", "LANG=zh_CN"], cwd=guide.clone,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    text = (folder / "feedback" / "blank.md").read_text()
    assert "尚未作答" in text and "总分" in text and "书面题" in text
    words = re.sub(r"`[^`]*`|ex-qkv-[\w-]+|ex01_qkv|blank", "", text)
    assert not re.search(r"\b(the|your|points?|not attempted|Written|Total)\b", words), text
