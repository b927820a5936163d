"""The words in the code a page shows reach the Chinese reader in Chinese (issue 29, item 1): comments and
docstrings go through the page's catalog (``bookbuild.i18n.code_text``); the code itself does not change."""
from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import polib
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bookbuild.i18n.code_text import is_message, messages, page_code, page_messages, translate, translate_fenced
from bookbuild.i18n.markdown import catalog_path

from .notebook_support import program

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([*ROOT.glob("chapters/*.md"), *ROOT.glob("exercises/*.md"), *ROOT.glob("solutions/*.md"),
                *(ROOT / name for name in ("checking.md", "instructors.md", "notation.md"))])
CJK = re.compile(r"[\u4e00-\u9fff]")

SOURCE = '''import numpy as np

x = np.ones((2, 3))  # (B, T)
# the scores, scaled
def f(x):
    """Return the softmax of x.

    Each row sums to one.
    """
    return x  # noqa: E501
# BEGIN SOLUTION
y = "# not a comment"  # 1
'''
CHINESE = {"the scores, scaled": "缩放后的分数",
           "Return the softmax of x.\n\nEach row sums to one.": "返回 x 的 softmax。\n\n每行之和为 1。"}




def test_comments_and_docstrings_are_messages_and_shapes_markers_and_numbers_are_not():
    assert messages(SOURCE) == ["the scores, scaled", "Return the softmax of x.\n\nEach row sums to one."]
    assert not any(map(is_message, ["(B, H, T, d_k)", "(T, S) -> (S, T)", "%%", "noqa: E501", "BEGIN SOLUTION",
                                    "1", "  "]))
    assert all(map(is_message, ["(T, S): the scores", "BLOCK_K key indices", "q_i . k_j by hand"]))


def test_translation_changes_the_words_and_not_the_program():
    chinese = translate(SOURCE, CHINESE.get)
    assert "# 缩放后的分数\n" in chinese and '    """返回 x 的 softmax。\n\n    每行之和为 1。\n    """' in chinese
    assert "# (B, T)" in chinese and "# noqa: E501" in chinese and "# BEGIN SOLUTION" in chinese
    assert '"# not a comment"' in chinese
    assert program(chinese) == program(SOURCE)
    assert translate(SOURCE, {}.get) == SOURCE


def test_broken_code_and_unsafe_translations_leave_the_source_as_it_is():
    assert translate("def f(:\n    # a comment\n", {"a comment": "注释"}.get) == "def f(:\n    # 注释\n"
    assert translate("x = (\n", {"x": "y"}.get) == "x = (\n"                 # tokenize gives up: unchanged
    quoted = 'def f():\n    """Quoted."""\n'
    assert translate(quoted, {"Quoted.": 'has """ quotes'}.get) == quoted     # would end the string early


def test_a_fenced_python_block_is_translated_and_other_fences_are_not():
    markdown = ("Text # the scores, scaled\n```python\n# the scores, scaled\nx = 1\n```\n"
                "```text\n# the scores, scaled\n```\n")
    done = translate_fenced(markdown, CHINESE.get)
    assert done.count("缩放后的分数") == 1 and done.startswith("Text # the scores, scaled")


@given(st.lists(st.text(alphabet="abcxyz ,.()", min_size=1, max_size=12), max_size=4))
def test_any_comment_translated_keeps_the_program(words):
    source = "".join(f"v{i} = {i}  # {w}\n" for i, w in enumerate(words))
    chinese = translate(source, lambda text: "中文" + text)
    assert program(chinese) == program(source)
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(chinese).readline) if t.type == tokenize.COMMENT]
    assert len(tokens) == len(words)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_every_comment_and_docstring_a_page_shows_has_its_chinese_translation(page):
    """Its catalog holds each one, translated into Chinese (not copied) and not fuzzy."""
    entries = {e.msgid: e for e in polib.pofile(str(catalog_path(page, "zh_CN"))) if not e.obsolete}
    missing = [m for m in page_messages(page) if m not in entries]
    assert not missing, f"not in the catalog (run `make translations`): {missing[:3]}"
    english = [m for m in page_messages(page) if entries[m].fuzzy or not CJK.search(entries[m].msgstr)]
    assert not english, f"{len(english)} left in English or fuzzy, first: {english[:3]}"


@pytest.mark.parametrize("page", ["chapters/01_qkv.md", "chapters/11_pretrained.md", "exercises/ex02_scaling.md"])
def test_the_chinese_code_of_a_page_has_no_english_words_left(page):
    from bookbuild.i18n.markdown import page_catalog

    catalog = page_catalog(ROOT / page, "zh_CN")
    for source in page_code(ROOT / page):
        assert not [m for m in messages(translate(source, catalog.get)) if not CJK.search(m)]
