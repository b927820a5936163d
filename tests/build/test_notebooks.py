"""The notebooks for students read like the book (bookbuild.notebooks, bookbuild.lint.notebooks): a
reference shows its title, a glued value its number, and no role, glue key or doubled word is left; the rule
on examples, the exercise sheets' student notebooks in both languages, then every notebook `make notebooks`
writes (slow: the editions execute first)."""
import json
import subprocess
from pathlib import Path

import pytest

from bookbuild.lint import notebooks

ROOT = Path(__file__).resolve().parents[2]
from bookbuild import assignments as make_assignments  # noqa: E402
from bookbuild import notebooks as make_notebooks  # noqa: E402

from .notebook_support import AnyGlue  # noqa: E402


def test_roles_glue_keys_and_doubled_words_are_found_outside_code_and_math():
    text = ("See Chapter chapter 2 and {ref}`ch-qkv`; the value `c7_ratio` is glued.\n\n"
            "```python\nlogging\nlogging\n```\n\n$x x$ and `the the` and | and | and |")
    assert notebooks.problems(text, {"c7_ratio"}) == [
        "role {ref}`ch-qkv`", "glue key c7_ratio", "doubled word 'Chapter chapter'"]
    assert notebooks.problems("Glue the glue, then that that is fine.") == []


def test_an_english_comment_is_found_in_a_chinese_notebook_and_only_there(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1  # the scores\ny = 2  # 分数\n# (T, S)"),
                                         nbformat.v4.new_markdown_cell("# the scores")])
    for folder in ("zh_CN", "en"):
        (tmp_path / folder).mkdir()
        nbformat.write(nb, tmp_path / folder / "page.ipynb")
    assert [f.message for f in notebooks.lint(tmp_path / "zh_CN" / "page.ipynb")] == [
        "English in the code: 'the scores'"]
    assert notebooks.lint(tmp_path / "en" / "page.ipynb") == []


def test_a_reference_shows_the_title_and_a_glued_value_its_number_as_the_book_does():
    titles = make_notebooks.reference_titles("en")
    text = make_notebooks.jupyter_markdown(
        "Chapter {ref}`ch-scaling` finds {glue:text}`ratio:.2f` and {glue:text}`name`, see {numref}`fig-x`.",
        glued={"ratio": {"text/plain": "0.12345"}, "name": {"text/plain": "'layer 0, head 2'"}})
    assert text == f"Chapter {titles['ch-scaling']} finds {0.12345:.2f} and layer 0, head 2, see the figure.\n"
    assert titles["ch-scaling"].startswith("Scaling") and titles["ex-qkv"].startswith("Exercises 1")


def test_a_glued_value_the_cache_lacks_is_a_clear_error():
    with pytest.raises(SystemExit, match="no glued value 'missing'"):
        make_notebooks.jupyter_markdown("{glue:text}`missing:.1f`", glued={})


def student_cells(nb):
    """The cells of an otter master notebook that its student notebook keeps (not its solutions)."""
    inside = False
    for cell in nb.cells:
        if cell.cell_type == "raw" and cell.source.strip() in ("# BEGIN SOLUTION", "# END SOLUTION"):
            inside = cell.source.strip() == "# BEGIN SOLUTION"
        elif not inside:
            yield cell


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_the_student_notebooks_of_every_sheet_read_like_the_book(lang):
    keys = notebooks.glue_keys(ROOT)
    found = []
    for exercise in sorted((ROOT / "exercises").glob("ex*.md")):
        solution = ROOT / "solutions" / exercise.name.replace("ex", "sol", 1)
        nb = make_assignments.master_notebook(exercise, solution, lang=lang)
        found += [f"{exercise.stem}: {p}" for cell in student_cells(nb) if cell.cell_type == "markdown"
                  for p in notebooks.problems(cell.source, keys)]
        if lang != "en":            # the stubs' comments and docstrings are Chinese too
            found += [f"{exercise.stem}: {p}" for cell in student_cells(nb) if cell.cell_type == "code"
                      for p in notebooks.english_words(cell.source)]
    assert found == []


@pytest.mark.slow
def test_every_notebook_make_notebooks_writes_reads_like_the_book():
    for flags in ([], ["LANG=zh_CN"]):
        done = subprocess.run(["make", "notebooks", *flags], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    keys = notebooks.glue_keys(ROOT)
    written = sorted((ROOT / "notebooks").rglob("*.ipynb"))
    assert len(written) >= 40 and any("zh_CN" in p.parts for p in written)
    assert all(json.loads(p.read_text())["cells"] for p in written)
    assert [str(f) for p in written for f in notebooks.lint(p, keys)] == []




@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_notebooks_and_assignments_number_the_exercises_as_the_page_does(lang):
    """Exercise 3.8 is the same exercise on the page, in the notebook and in the assignment, and a
    written question has its answer cell right after it (the instructor read found 3.9 before 3.8)."""
    import re

    heading = re.compile(r"^### ((?:Exercise|练习) \d+\.\d+)[:：]", re.M)
    answer = make_notebooks.words(lang)["answer"]
    for exercise in sorted((ROOT / "exercises").glob("ex*.md")):
        labels = make_notebooks.exercise_labels(exercise.parent, lang)
        number = int(exercise.name[2:4])
        expected = [v for v in labels.values() if v.split()[-1].startswith(f"{number}.")]
        nb = make_notebooks.to_notebook(exercise, lang=lang, glued=AnyGlue())
        cells = [c for c in nb.cells if c.cell_type == "markdown"]
        assert [m for c in cells for m in heading.findall(c.source)] == expected, exercise.name
        for cell, after in zip(cells, cells[1:]):
            if re.search(r"^:::\{exercise\}", cell.source, re.M):
                pytest.fail("a directive left unconverted")
            if heading.search(cell.source) and after.source == answer:
                assert len(heading.findall(cell.source)) == 1, f"{exercise.name}: two exercises share a cell"
        solution = ROOT / "solutions" / exercise.name.replace("ex", "sol", 1)
        master = make_assignments.master_notebook(exercise, solution, lang=lang)
        assert [m for c in master.cells if c.cell_type == "markdown" for m in heading.findall(c.source)] == expected

