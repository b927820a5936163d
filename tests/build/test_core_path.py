"""_ext/core_path.py: the reading time of a page's core path, and which sections are optional depth."""
from pathlib import Path

import core_path  # the Sphinx extensions are on pytest's pythonpath
from docutils import nodes
from docutils.core import publish_doctree

from bookbuild.reading_time import WORDS_PER_MINUTE

from .notebook_support import AnyGlue

ROOT = Path(__file__).resolve().parents[2]



PAGE = """---
jupytext:
  text_representation:
    format_name: myst
---

# Title

One two three four five.

```{code-cell} ipython3
a = 1

b = 2
```

```{code-cell} ipython3
:tags: [remove-cell]
hidden = "not read by anyone"
```

(deeper-side)=
## Going deeper: a side topic

Ten words that the core path never counts at all, here.

```{code-cell} ipython3
not_counted = 1
```

### Its subsection

Still optional text.

## Back on the path

Six words with $a + b = c$ math.
"""


def test_the_core_path_counts_prose_and_visible_code_outside_deeper_sections():
    got = core_path.reading_time(PAGE)
    # "Title", five words, then "Back on the path" (4) and "Six words with x math." (5)
    assert got.words == 1 + 5 + 4 + 5
    assert got.code_lines == 2
    assert got.minutes == 1


def test_minutes_are_200_words_plus_10_code_lines_a_minute_rounded_up():
    assert core_path.ReadingTime(words=2000, code_lines=0).minutes == 10
    assert core_path.ReadingTime(words=2001, code_lines=0).minutes == 11
    assert core_path.ReadingTime(words=0, code_lines=95).minutes == 10
    assert core_path.ReadingTime(words=1000, code_lines=50).minutes == 10


def test_a_yaml_options_block_hides_a_cell_too():
    page = "# T\n\n```{code-cell} ipython3\n---\ntags: [remove-input]\n---\nx = 1\ny = 2\n```\n"
    assert core_path.reading_time(page).code_lines == 0


def test_a_section_labelled_deeper_gets_the_class_and_others_do_not():
    doctree = publish_doctree(".. _deeper-x:\n\nDeep\n====\n\ntext\n\n.. _core-y:\n\nCore\n====\n\ntext\n")
    core_path.mark_deeper_sections(None, doctree)
    classes = {s["names"][0]: s["classes"] for s in doctree.findall(nodes.section)}
    assert classes == {"deep": ["going-deeper"], "core": []}


def test_the_role_says_minute_in_the_singular_and_in_chinese():
    one_line = "A short page.\n"                       # 3 words: rounds up to one minute
    long = "word " * (WORDS_PER_MINUTE * 29 + 1) + "\n"  # just over 29 minutes: 30
    assert core_path.reading_time_text(one_line) == "about 1 minute"
    assert core_path.reading_time_text(long) == "about 30 minutes"
    assert core_path.reading_time_text(long, "zh_CN") == "约 30 分钟"


def test_a_notebook_shows_the_minutes_where_the_book_shows_its_role():
    from bookbuild.notebooks import to_notebook
    from bookbuild.reading_time import reading_time_text

    page = ROOT / "chapters" / "01_qkv.md"
    text = "\n".join(c.source for c in to_notebook(page, lang="zh_CN", glued=AnyGlue()).cells)
    assert reading_time_text(page.read_text(), "zh_CN") in text and "`core`" not in text and "：core" not in text
