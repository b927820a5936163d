"""Chinese notebooks and assignments for students (``make notebooks LANG=zh_CN``).

The markdown of a page is translated through the page's catalog, piece by piece as Sphinx looks
pieces up, before the MyST is converted to plain Jupyter Markdown; code cells are those of the
English notebook with their comments and docstrings translated (``bookbuild.i18n.code_text``). The
fast tests use a made-up catalog and the real chapter 1 and exercise sheet 1; the slow one runs
``make assignments LANG=zh_CN``.
"""
import json
import os
import pathlib
import re
import subprocess

import nbformat
import polib
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
from bookbuild import assignments as make_assignments  # noqa: E402
from bookbuild import notebooks as make_notebooks  # noqa: E402
from bookbuild.i18n import markdown as tm  # noqa: E402
from bookbuild.i18n.code_text import included_code, messages  # noqa: E402

from .notebook_support import AnyGlue, program  # noqa: E402

CJK = re.compile(r"[\u4e00-\u9fff]")
FENCED = re.compile(r"^```python\n(.*?)^```", re.M | re.S)



SNIPPET = """\
(sec-made-up)=
# A made-up heading

See {ref}`ch-qkv` for the number {glue:text}`n_heads:d`
and the formula $a + b$.

- first item,
  on two lines
- second item

| name | meaning |
|---|---|
| one cell | other cell |

:::{dropdown} A hint
Inside the dropdown,
on two lines.

Not in the catalog.
:::

A fuzzy paragraph.

$$
x = \\text{one}
$$"""

TRANSLATIONS = {
    "A made-up heading": "虚构的标题",
    "See {ref}`ch-qkv` for the number {glue:text}`n_heads:d` and the formula $a + b$.":
        "数字 {glue:text}`n_heads:d` 与公式 $a + b$ 见 {ref}`ch-qkv`。",
    "first item, on two lines": "第一项，分两行",
    "second item": "",                                     # untranslated
    "meaning": "含义",
    "other cell": "另一格",
    "A hint": "提示",
    "Inside the dropdown, on two lines.": "在下拉框里。",
    "\nx = \\text{one}\n": "\nx = \\text{一}\n",
}

EXPECTED = """\
(sec-made-up)=
# 虚构的标题

数字 {glue:text}`n_heads:d` 与公式 $a + b$ 见 {ref}`ch-qkv`。

- 第一项，分两行
- second item

| name | 含义 |
|---|---|
| one cell | 另一格 |

:::{dropdown} 提示
在下拉框里。

Not in the catalog.
:::

A fuzzy paragraph.

$$
x = \\text{一}
$$"""


@pytest.fixture
def catalog(tmp_path):
    po = polib.POFile()
    for msgid, msgstr in TRANSLATIONS.items():
        po.append(polib.POEntry(msgid=msgid, msgstr=msgstr))
    po.append(polib.POEntry(msgid="A fuzzy paragraph.", msgstr="模糊的段落。", flags=["fuzzy"]))
    path = tmp_path / "page.po"
    po.save(str(path))
    return tm.load_catalog(path)


def test_translated_pieces_are_replaced_and_the_rest_stays_as_it_was(catalog):
    assert tm.translate_markdown(SNIPPET, catalog) == EXPECTED


def test_fuzzy_and_untranslated_entries_are_not_in_the_catalog(catalog):
    assert "A fuzzy paragraph." not in catalog and "second item" not in catalog
    assert catalog["meaning"] == "含义"


def test_chinese_text_is_converted_with_chinese_words(catalog):
    text = make_notebooks.jupyter_markdown(tm.translate_markdown(SNIPPET, catalog), lang="zh_CN",
                                           glued={"n_heads": {"text/plain": "4"}})
    title = make_notebooks.reference_titles("zh_CN")["ch-qkv"]
    assert f"数字 4 与公式 $a + b$ 见《{title}》。" in text and CJK.search(title)   # a page cited as a work
    assert "<details><summary>提示</summary>" in text and "在下拉框里。" in text
    assert "{ref}" not in text and "(sec-made-up)=" not in text


def test_an_exercise_box_gets_a_chinese_heading():
    text = ":::{exercise-start} 标题\n:label: ex-x\n:::\n\n正文。\n\n:::{exercise-end}\n:::\n"
    assert make_notebooks.jupyter_markdown(text, lang="zh_CN") == "### 练习：标题\n\n正文。\n"


def test_bad_language_or_page_is_refused_clearly(tmp_path):
    page = ROOT / "chapters" / "01_qkv.md"
    with pytest.raises(ValueError, match="fr"):
        make_notebooks.to_notebook(page, lang="fr")
    with pytest.raises(ValueError, match="not a page of the book"):
        tm.catalog_path(tmp_path / "page.md", "zh_CN")
    with pytest.raises(FileNotFoundError, match="make translations"):
        tm.load_catalog(tmp_path / "missing.po")
    with pytest.raises(SystemExit):
        make_notebooks.main(["--lang", "fr", "--out", str(tmp_path)])


# ------------------------------------------------------------------------------------ the real pages



@pytest.fixture
def glued():
    return AnyGlue()



@pytest.mark.parametrize("page", ["chapters/01_qkv.md", "exercises/ex01_qkv.md"])
def test_chinese_notebook_is_chinese_prose_around_the_english_code(page, glued):
    english = make_notebooks.to_notebook(ROOT / page, glued=glued)
    chinese = make_notebooks.to_notebook(ROOT / page, lang="zh_CN", glued=glued)
    nbformat.validate(chinese)
    first, rest = chinese.cells[0], chinese.cells[1:]
    assert first.cell_type == "code" and "set_language" in first.source
    assert [c.cell_type for c in rest] == [c.cell_type for c in english.cells]
    code = [c for c in rest if c.cell_type == "code"]
    english_code = [c.source for c in english.cells if c.cell_type == "code"]
    assert [program(c.source) for c in code] == [program(c) for c in english_code]     # the same program
    assert not [m for c in code for m in messages(c.source) if not CJK.search(m)]      # in Chinese words
    assert any(messages(c) for c in english_code)
    captions = [tm.figure_caption(c.metadata) for c in code if tm.figure_caption(c.metadata)]
    assert all(CJK.search(caption) for caption in captions)     # figure captions translated too
    assert len(captions) == sum(bool(tm.figure_caption(c.metadata)) for c in english.cells)
    assert captions or page.startswith("exercises")
    markdown = [c.source for c in rest if c.cell_type == "markdown"]
    assert sum(bool(CJK.search(m)) for m in markdown) > 0.8 * len(markdown)
    assert not [m for m in markdown if re.search(r"\{[\w:-]+\}`", m)]       # every role converted


def test_the_first_cell_switches_attnlab_to_chinese():
    from attnlab.i18n import get_language, set_language

    cell = make_notebooks.to_notebook(ROOT / "exercises" / "ex01_qkv.md", lang="zh_CN").cells[0]
    try:
        exec(cell.source, {})
        assert get_language() == "zh_CN"
    finally:
        set_language("en")


def test_exercise_sheet_names_its_chapter_and_drops_the_solutions_link():
    nb = make_notebooks.to_notebook(ROOT / "exercises" / "ex01_qkv.md", lang="zh_CN")
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "第 1 章" in text and "sol-qkv" not in text and "解答 <" not in text
    assert "### 练习 1.2：" in text and "练习 1.6 的" in text


def test_chinese_master_notebook_keeps_code_checks_and_tests():
    pages = ROOT / "exercises" / "ex01_qkv.md", ROOT / "solutions" / "sol01_qkv.md"
    english = make_assignments.master_notebook(*pages)
    chinese = make_assignments.master_notebook(*pages, lang="zh_CN")
    # the assignment config: the same but for the language its plugin answers in
    assert '"lang": "zh_CN"' in chinese.cells[0].source
    assert chinese.cells[0].source.replace('"lang": "zh_CN"', '"lang": "en"') == english.cells[0].source
    assert chinese.cells[1].cell_type == "code" and "set_language" in chinese.cells[1].source
    rest = chinese.cells[2:]
    assert [(c.cell_type, program(c.source)) for c in rest if c.cell_type != "markdown"] == [
        (c.cell_type, program(c.source)) for c in english.cells[1:] if c.cell_type != "markdown"]
    assert [c.source for c in rest if c.cell_type == "raw"] == [c.source for c in english.cells[1:]
                                                                 if c.cell_type == "raw"]
    assert not [m for c in rest if c.cell_type == "code" for m in messages(c.source) if not CJK.search(m)]
    markdown = [c.source for c in rest if c.cell_type == "markdown"]
    assert markdown and all(CJK.search(m) for m in markdown)


def test_make_passes_lang_only_from_its_command_line():
    env = {**os.environ, "LANG": "C.UTF-8"}

    def dry(*args, **extra):
        done = subprocess.run(["make", "-n", *args], cwd=ROOT, capture_output=True, text=True,
                              env={**env, **extra})
        return done.returncode, done.stdout + done.stderr

    assert "bookbuild notebooks --lang zh_CN" in dry("notebooks", "LANG=zh_CN")[1]
    assert "--lang" not in dry("notebooks", LANG="zh_CN")[1]                   # the locale is no language
    assert "bookbuild assignments 01" in dry("assignments", "CHAPTERS=01", "LANG=zh_CN")[1]
    assert "--lang zh_CN" in dry("assignments", "CHAPTERS=01", "LANG=zh_CN")[1]
    code, out = dry("notebooks", "LANG=fr")
    assert code != 0 and "zh_CN" in out


# ------------------------------------------------------------------------------------ slow: otter


@pytest.mark.slow
def test_make_assignments_lang_zh_writes_a_chinese_student_notebook():
    target = ROOT / "assignments" / "zh_CN" / "ex01_qkv"
    done = subprocess.run(["make", "assignments", "LANG=zh_CN", "CHAPTERS=01"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    student = nbformat.read(target / "student" / "ex01_qkv.ipynb", as_version=4)
    shown = [re.sub(r"<!--.*?-->", "", c.source).strip() for c in student.cells if c.cell_type == "markdown"]
    markdown = [m for m in shown if m]                     # otter's <!-- QUESTION --> markers show nothing
    assert markdown and sum(bool(CJK.search(m)) for m in markdown) > 0.8 * len(markdown)
    assert not [m for m in markdown if "Type your answer here" in m or "double-check your work" in m]
    assert any('set_language("zh_CN")' in c.source for c in student.cells if c.cell_type == "code")
    assert not [c for c in student.cells if "BEGIN SOLUTION" in c.source]
    assert list((target / "autograder").glob("ex01_qkv-autograder_*.zip"))
    from attnlab.grading import grade_notebook
    from attnlab.grading.otter_plugin import questions_from_config

    config = json.loads((target / "autograder" / "otter_config.json").read_text())
    questions = questions_from_config(config["plugins"][0]["attnlab.grading.otter_plugin.IsolatedGrading"])
    full = grade_notebook(target / "autograder" / "ex01_qkv.ipynb", questions)     # the solved notebook
    assert full.total == full.possible > 0, [(q.name, q.note) for q in full.questions if q.earned < q.possible]
    assert grade_notebook(target / "student" / "ex01_qkv.ipynb", questions).total == 0
    from attnlab.grading.otter_plugin import grade, language
    plugin = config["plugins"][0]["attnlab.grading.otter_plugin.IsolatedGrading"]
    assert plugin["lang"] == "zh_CN"
    with language(plugin):                                   # the zip's plugin answers in Chinese
        outcome, notes = grade(target / "student" / "ex01_qkv.ipynb", plugin)
        words = [c["message"] for q in outcome.questions for c in q.checks] + notes
    assert words and all(CJK.search(w) for w in words), words


@pytest.mark.parametrize("folder", ["chapters", "exercises", "solutions"])
def test_every_catalog_entry_is_a_piece_the_notebooks_look_up(folder):
    """What Sphinx and ``bookbuild.i18n.code_text`` extracted from a page is what the notebook
    translation finds in its cells (and the code they include), so no translated text is left English
    in a notebook."""
    import jupytext

    missed = {}
    for page in sorted((ROOT / folder).glob("*.md")):
        found = set()
        for cell in jupytext.read(page, fmt="md:myst").cells:
            if cell.cell_type == "markdown":
                found.update(tm.pieces(cell.source))
                found.update(m for fence in FENCED.findall(cell.source) for m in messages(fence))
            else:
                found.add(tm.figure_caption(cell.metadata))
                found.update(messages(cell.source))
        found.update(m for code in included_code(page, page.read_text()) for m in messages(code))
        entries = {e.msgid for e in polib.pofile(str(tm.catalog_path(page, "zh_CN"))) if not e.obsolete}
        if entries - found:
            missed[page.name] = sorted(entries - found)[:3]
    assert not missed


def test_a_chinese_notebook_cites_a_sheet_as_a_work_without_spaces(glued):
    """As the book does (_ext/zh_spacing.py): 「扩展你在《第 1 章习题：查询、键和值》中写的」, not bare and spaced."""
    text = "\n".join(c.source for c in make_notebooks.to_notebook(ROOT / "exercises" / "ex03_masks.md", lang="zh_CN",
                                                                   glued=glued).cells if c.cell_type == "markdown")
    assert "在《第 1 章习题：查询、键和值》中" in text
    english = "\n".join(c.source for c in make_notebooks.to_notebook(ROOT / "exercises" / "ex03_masks.md",
                                                                      glued=glued).cells)
    assert "《" not in english
