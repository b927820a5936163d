"""Chinese spacing (issue 29, review M9/M10): no space after full-width punctuation nor before it in any
catalog entry; spaces between Chinese and Latin letters, digits and formulas stay. What the catalogs
cannot express (a space after ``**标题。**``, around a link whose text is only known once it resolves)
the zh_spacing extension removes in the doctree; its rules are tested here on small trees."""
import re
import sys
from pathlib import Path

import polib
import pytest
from docutils import nodes

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "_ext"))
from zh_spacing import (  # noqa: E402
    close_numbered_titles,
    drop_spaces_after_run_in_heads,
    drop_spaces_around_chinese_links,
    quote_cited_titles,
)

CATALOGS = sorted((ROOT / "locale" / "zh_CN" / "LC_MESSAGES").rglob("*.po"))
CJK = r"[\u4e00-\u9fff]"
RULES = {
    "space after full-width punctuation": re.compile(r"[，。：；！？、）」』》】] +(?=[^\s|])"),
    "space before full-width punctuation": re.compile(r"(?<=[^\s|]) +[，。：；！？、（）」》]"),
    "Chinese glued to a formula": re.compile(CJK + r"\$(?=[^$\s][^$]*\$)|(?<=\$)(?<=[^$\s]\$)" + CJK),
}


def offences(text: str) -> list[str]:
    return [f"{name}: …{text[max(0, m.start() - 10):m.end() + 10]}…"
            for name, rule in RULES.items() for m in rule.finditer(text)]


@pytest.mark.parametrize("path", CATALOGS, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_catalog_entries_follow_the_chinese_spacing_rules(path):
    found = [o for entry in polib.pofile(str(path)) for o in offences(entry.msgstr)]
    assert not found, "\n".join(found)


def test_the_rules_catch_the_reviewed_examples_and_keep_latin_spacing():
    assert offences("仅用矩阵乘法、变形（reshape） 和一次 softmax")
    assert offences("练习 13 （带偏移的因果掩码）")
    assert offences("由此得$x$。")
    assert not offences("宽度为 $d_k = 2$，一个 softmax 和 4 个词元。")
    assert not offences("| 一行。 | 另一格 |")


def paragraph(*children) -> nodes.paragraph:
    return nodes.paragraph("", "", *children)


def link(text: str) -> nodes.reference:
    return nodes.reference(text, text, refuri="#x")


def test_a_run_in_head_ending_in_full_width_punctuation_loses_the_space_after_it():
    tree = paragraph(nodes.strong("长度可变。", "长度可变。"), nodes.Text(" 一个句子可能有 3 个词元"))
    assert drop_spaces_after_run_in_heads(tree) == 1
    assert tree.astext() == "长度可变。一个句子可能有 3 个词元"


def test_an_english_run_in_head_keeps_its_space():
    tree = paragraph(nodes.strong("Variable length.", "Variable length."), nodes.Text(" A sentence"))
    assert drop_spaces_after_run_in_heads(tree) == 0
    assert tree.astext() == "Variable length. A sentence"


@pytest.mark.parametrize("before, text, after, expected", [
    ("见 ", "记号与约定", "。", "见记号与约定。"),
    ("我们将在 ", "无可读之键的行", " 中回到这一点", "我们将在无可读之键的行中回到这一点"),
    ("扩展你在 ", "练习 3.2", " 中写的函数", "扩展你在练习 3.2 中写的函数"),
    ("和 ", "MiniLM 编码器", " 一样", "和 MiniLM 编码器一样"),
])
def test_spaces_around_chinese_link_text_go_and_those_beside_latin_or_digits_stay(before, text, after, expected):
    tree = paragraph(nodes.Text(before), link(text), nodes.Text(after))
    drop_spaces_around_chinese_links(tree)
    assert tree.astext() == expected


CAPTION = '<span class="caption-number">'


@pytest.mark.parametrize("html, expected", [
    (CAPTION + "练习 3.1 </span>（带偏移的因果掩码）", CAPTION + "练习 3.1</span>（带偏移的因果掩码）"),
    (CAPTION + "引理 1 </span> （随机点积的方差）", CAPTION + "引理 1</span>（随机点积的方差）"),
    (CAPTION + "图 2 </span>Softmax", CAPTION + "图 2 </span>Softmax"),
])
def test_a_numbered_title_has_no_space_before_its_full_width_parenthesis(html, expected):
    assert close_numbered_titles(html) == expected


TITLES = {"记号与约定", "第 3 章习题：掩码", "MiniLM 编码器"}


@pytest.mark.parametrize("children, expected", [
    (["（见 ", "记号与约定", "）"], "（见《记号与约定》）"),
    (["本章习题见 ", "第 3 章习题：掩码", "。"], "本章习题见《第 3 章习题：掩码》。"),
    (["和 ", "MiniLM 编码器"], "和《MiniLM 编码器》"),
    (["见《", "记号与约定", "》"], "见《记号与约定》"),            # the catalog wrote them already
    (["记号与约定", "：本书的记号"], "记号与约定：本书的记号"),    # a line headed by the link
    (["第 3 章习题：掩码", " 的详细解答。"], "《第 3 章习题：掩码》的详细解答。"),
    (["见 ", "第 3 章", "。"], "见 第 3 章。"),                   # a link with its own text is no title
])
def test_a_page_title_cited_in_a_chinese_sentence_gets_book_title_marks(children, expected):
    """Review M10/issue 29 item 8: a page cited by its title is a work, 「见《记号与约定》」."""
    tree = paragraph(*[link(c) if c in TITLES or c == "第 3 章" else nodes.Text(c) for c in children])
    quote_cited_titles(tree, TITLES)
    assert tree.astext() == expected
