"""Printed columns line up in Chinese too (issue 29, review M7): a page pads a printed label with a
format width, never with spaces typed into the string, because the edition translates the label and
pads it again by display width, a CJK character taking two columns.

``f"{'chance:':<17} loss …"`` and ``print(f"{label:<30}", row)`` go through ``attnlab._shown``; spaces
typed into an English string were copied into the Chinese one (「随机猜测：       损失 2.7726」 under
「右移的目标：  损失」). Every page is checked for typed padding, and every width-padded label of every
page against the Chinese catalog: its translation fits the width, and pads to exactly it."""
from __future__ import annotations

import re
from pathlib import Path

import polib
import pytest

from attnlab._shown import Index, display_width
from bookbuild.i18n.page_strings import is_language

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([*ROOT.glob("chapters/*.md"), *ROOT.glob("exercises/*.md"), *ROOT.glob("solutions/*.md")])
# a label printed with spaces typed after it: print("label:     ", x), f"label:   {x}"
TYPED_PADDING = re.compile(r"print\(f?\"[^\"]*?(?:[A-Za-z)\]'][:,] {2,}|[A-Za-z:] {3,})")
# print(f"{'float64, no mask:':<23}", row): the label alone, so its colon is no format spec
LITERAL_FIELD = re.compile(r"print\(f\"\{'([^'{}]+)':<(\d+)\}\",")
# for label, loss, acc in [("chance:", ...), ...]: print(f"{label:<17} loss ...")
LOOP = re.compile(r"for label, [\w, ()]+ in \[(.*?)\]:\n\s+print\(f\"\{label:<(\d+)\}", re.S)
# f"{'chance:':<17} loss {x}": the colon inside the field ends its name, and no template matches the line
COLON_IN_FIELD = re.compile(r"\{'[^'{}]*:[^'{}]*':<\d+\}(?!\")")


def padded_inside_a_template(path: Path, label: str) -> bool:
    """Whether ``label`` is padded only inside a longer template (a loop's ``f"{label:<17} loss …"``),
    whose field width the translation keeps, rather than printed as an argument of its own."""
    text = path.read_text(encoding="utf-8")
    if f"{{'{label}':<" in text:
        return False
    loops = re.finditer(r"for label, [\w, ()]+ in \[(.*?)\]:\n\s+print\(f\"\{label:<\d+\}(.)", text, re.S)
    return all(next_char != '"' for pairs, next_char in (m.groups() for m in loops) if f'("{label}"' in pairs)


def padded_labels(path: Path) -> list[tuple[str, int]]:
    """(English label, width) of each label the page pads with a format width."""
    text = path.read_text(encoding="utf-8")
    found = [(label, int(width)) for label, width in LITERAL_FIELD.findall(text)]
    for pairs, width in LOOP.findall(text):
        found += [(label, int(width)) for label in re.findall(r"\(\"([^\"]+)\"", pairs)]
    return found


@pytest.fixture(scope="module")
def chinese():
    catalog = polib.pofile(str(ROOT / "attnlab" / "locale" / "zh_CN" / "LC_MESSAGES" / "pages.po"))
    return {e.msgid: e.msgstr for e in catalog if e.translated() and not e.obsolete}


def test_the_rule_finds_typed_padding_and_spares_format_widths():
    assert TYPED_PADDING.search('print("float64, no mask:     ", row)')
    assert TYPED_PADDING.search('print(f"chance:           loss {x:.4f}")')
    assert not TYPED_PADDING.search('print(f"{\'chance:\':<17} loss {x:.4f}")')
    assert not TYPED_PADDING.search('print("weights:", w)')
    assert COLON_IN_FIELD.search('print(f"{\'chance:\':<17} loss {x:.4f}")')
    assert not COLON_IN_FIELD.search('print(f"{\'chance:\':<17}", x)')
    assert not TYPED_PADDING.search('print(f"{word:>5}:  x = {x}   v = {v}")')     # columns of fixed width


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_types_padding_into_a_printed_label(page):
    lines = [line for line in page.read_text(encoding="utf-8").splitlines()
             if TYPED_PADDING.search(line) or COLON_IN_FIELD.search(line)]
    assert not lines, lines


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_width_padded_label_pads_to_its_width_in_chinese(page, chinese):
    index = Index(chinese)
    problems = []
    for label, width in padded_labels(page):
        translation = chinese.get(label)
        if not is_language(label):              # a code name ("SDPA:") is shown as it is in both editions
            continue
        if translation is None:
            problems.append(f"{label!r} is not translated in pages.po")
        elif len(label) >= width and not padded_inside_a_template(page, label):
            problems.append(f"{label!r} fills its width {width}: printed alone it carries no padding to keep, "
                            "so its Chinese would not be padded (widen the field by one)")
        elif display_width(translation) > width:
            problems.append(f"{translation!r} is wider than {width} columns")
        elif len(label) < width and display_width(index.translate(f"{label:<{width}}")) != width:
            problems.append(f"{label!r} padded to {width} is not {width} columns wide in Chinese")
    assert not problems, problems


def test_the_reviewed_columns_line_up_in_chinese(chinese):
    """ch03's three losses: the numbers start in one column in both languages."""
    index = Index(chinese)
    lines = [f"{'unshifted target:':<17} loss {2.1:.4f}, accuracy {0.3:.3f}",
             f"{'shifted target:':<17} loss {0.0001:.4f}, accuracy {1.0:.3f}",
             f"{'chance:':<17} loss {2.7726:.4f}, accuracy {1 / 16:.3f}"]
    for shown in (lines, [index.translate(line) for line in lines]):
        starts = {display_width(line[:re.search(r"\d", line).start()]) for line in shown}
        assert len(starts) == 1, shown
    assert index.translate(lines[2]).startswith("随机猜测：")
