"""The Chinese edition's interface (make book-zh) carries no English or Taiwan-usage theme strings
(issue 29, review L1): the search box, the tooltips, the colour-mode switch, the footer, the PDF button.
Reads the built HTML; marked like the other tests of the built book, skipped when it is not built
(a failure under REQUIRE_BOOK=1)."""
from __future__ import annotations

import pytest

from tests.build.browser_support import missing_build
from tests.build.test_browser import ZH_HTML

pytestmark = pytest.mark.browser
FORBIDDEN = ("Search...", "Search the docs", "Color mode", "Toggle primary sidebar", "Toggle secondary sidebar",
             "System Settings", "Link to this heading", "Link to this equation", 'aria-label="Main"',
             'aria-label="Page"',
             "© Copyright", "列印", "Print to PDF", "作者： ")
EXPECTED = ('placeholder="搜索……"', "打印为 PDF")


def zh_pages() -> list:
    pages = sorted(p for p in ZH_HTML.rglob("*.html") if "_static" not in p.parts) if ZH_HTML.is_dir() else []
    if not pages:
        missing_build("no Chinese edition in _build/zh/html: run `make book-zh` first")
    return pages


def test_no_page_of_the_chinese_edition_shows_an_english_or_taiwan_theme_string():
    found = [f"{page.relative_to(ZH_HTML)}: {text}" for page in zh_pages()
             for text in FORBIDDEN if text in page.read_text(encoding="utf-8")]
    assert not found, "\n".join(found[:40])


def test_the_chapters_show_the_mainland_wording():
    chapter = next(p for p in zh_pages() if p.parent.name == "chapters")
    html = chapter.read_text(encoding="utf-8")
    for text in EXPECTED:
        assert text in html, f"{chapter.name}: {text!r} missing"
