"""The Chinese edition (make book-zh) in headless Chromium: it is Chinese, finds Chinese words,
and each page links to its English twin and back. Every zh page also goes through the offline,
phone and width checks of tests/build/test_browser.py, which run over both editions.
"""
from __future__ import annotations

import re

import pytest

from tests.build.browser_support import missing_build
from tests.build.test_browser import PAGES, ZH, ZH_PAGES, open_page, site  # noqa: F401  (site is a fixture)

pytestmark = pytest.mark.browser
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
# the page's prose: its text without code, formulas and cell outputs (which are English in both)
PROSE_JS = """() => {
  const article = document.querySelector('main article').cloneNode(true);
  article.querySelectorAll('pre, code, .math, mjx-container, .cell_output, .cell_input').forEach(e => e.remove());
  return article.textContent;
}"""


@pytest.fixture(scope="module")
def zh_site(site):  # noqa: F811
    if not ZH_PAGES:
        missing_build("no Chinese edition in _build/zh/html: run `make book-zh` first")
    return site


def test_every_page_of_the_chinese_edition_is_in_chinese(zh_site):
    base, browser = zh_site
    assert len(ZH_PAGES) == len(PAGES), "the editions have different pages"
    for rel in [p for p in ZH_PAGES if p.startswith((ZH + "chapters/", ZH + "exercises/"))][:4] + [ZH + "index.html"]:
        with open_page(browser, base, rel) as (page, _):
            assert page.evaluate("document.documentElement.lang") == "zh-CN", rel
            heading = page.locator("main h1").first.inner_text()
            prose = page.evaluate(PROSE_JS)
            assert CJK.search(heading), f"{rel}: the title is not Chinese: {heading!r}"
            share = len(CJK.findall(prose)) / max(1, len(re.findall(r"[A-Za-z]", prose)))
            assert share > 1, f"{rel}: mostly not Chinese ({share:.2f} CJK characters per Latin letter)"


def test_the_theme_speaks_chinese(zh_site):
    base, browser = zh_site
    with open_page(browser, base, ZH + "chapters/03_masks.html") as (page, _):
        interface = page.evaluate("""() => [...document.querySelectorAll(
            '.bd-sidebar-primary, .bd-sidebar-secondary, .prev-next-area, .bd-header-article')]
            .map(e => e.innerText).join(' ')""")
        assert CJK.search(interface), "the sidebars and header are not Chinese"
        for english in ("Contents", "previous", "next"):
            assert not re.search(rf"\b{english}\b", interface), f"the interface still says {english!r}"


def test_search_finds_chinese_words(zh_site):
    base, browser = zh_site
    with open_page(browser, base, ZH + "search.html?q=掩码") as (page, watch):
        page.wait_for_selector("ul.search li", timeout=20000)
        assert page.locator("ul.search li").count() >= 3
        assert watch.blocked == [] and watch.console_errors == []


def test_the_switch_opens_the_same_page_in_the_other_edition_and_back(zh_site):
    base, browser = zh_site
    with open_page(browser, base, ZH + "chapters/03_masks.html") as (page, _):
        page.locator("a.edition-switch").click()
        page.wait_for_load_state("load")
        assert page.url.endswith("/html/chapters/03_masks.html") and "/zh/" not in page.url, page.url
        assert page.evaluate("document.documentElement.lang").startswith("en")
        assert not CJK.search(page.locator("main h1").first.inner_text())
        switch = page.locator("a.edition-switch")
        assert switch.count() == 1, "the English edition has no switch (built before the Chinese one?)"
        assert switch.inner_text() == "中文"
        switch.click()
        page.wait_for_load_state("load")
        assert page.url.endswith("/zh/html/chapters/03_masks.html"), page.url


def test_solution_titles_repeat_their_exercise_title_in_chinese(zh_site):
    from tests.build.test_browser import ZH_HTML

    titles = [t for page in sorted((ZH_HTML / "solutions").glob("sol*.html"))
              for t in re.findall(r'class="admonition-title">解答<a [^>]*>([^<]*)</a>', page.read_text())]
    assert len(titles) > 40, titles[:3]
    english = [t for t in titles if "(" in t and not CJK.search(t.split("(", 1)[1])]
    assert not english, f"solution titles with the exercise's English title: {english[:3]}"
    hints = " ".join(p.read_text() for p in (ZH_HTML / "chapters").glob("*.html"))
    assert "Click to show" not in hints and "Show code cell" not in hints, "English interface hints are left"


def test_display_math_is_the_same_in_both_editions(zh_site):
    """A display formula is shared, never translated: Sphinx re-parses a translated math block as
    a literal block, which MyST reads as the paragraph "::" (three formulas once showed only that)."""
    from tests.build.test_browser import HTML, ZH_HTML

    def formulas(path):
        blocks = re.findall(r'<div class="math notranslate nohighlight"[^>]*>(.*?)</div>', path.read_text(), re.S)
        return [re.sub(r'<span class="eqno">.*?</span>', "", b, flags=re.S).strip() for b in blocks]

    checked, differ = 0, []
    for zh_page in sorted(ZH_HTML.rglob("*.html")):
        en_page = HTML / zh_page.relative_to(ZH_HTML)
        if not en_page.exists():
            continue
        zh, en = formulas(zh_page), formulas(en_page)
        checked += len(en)
        differ += [f"{zh_page.relative_to(ZH_HTML)}: {z[:60]!r} (English {e[:60]!r})"
                   for z, e in zip(zh, en) if z != e]
        if len(zh) != len(en):
            differ.append(f"{zh_page.relative_to(ZH_HTML)}: {len(zh)} display formulas, English {len(en)}")
    assert checked > 50, f"only {checked} display formulas found"
    assert not differ, "display math differs between the editions:\n" + "\n".join(differ[:10])
