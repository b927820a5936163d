"""The built HTML book in headless Chromium, with every request off 127.0.0.1 blocked.

Run after `make book` (`make test-browser`). Without a build these tests skip with a message
(under `make test-browser` they fail instead). Screenshots go to _build/screenshots/.
"""
from __future__ import annotations

import contextlib

import pytest
from browser_support import CHROMIUM_ARGS, ROOT, PageWatch, chromium_path, require_book, serve

pytestmark = pytest.mark.browser
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
SKIP_PAGES = {"genindex.html", "search.html"}


def book_pages() -> list[str]:
    if not (HTML / "index.html").exists():
        return []
    pages = []
    for p in sorted(HTML.rglob("*.html")):
        rel = p.relative_to(HTML).as_posix()
        if rel.split("/")[0].startswith("_") or rel in SKIP_PAGES:
            continue
        pages.append(rel)
    return pages


PAGES = book_pages()


@pytest.fixture(scope="module")
def site():
    if not PAGES:
        message = "no built book in _build/html: run `make book` first"
        if require_book():
            pytest.fail(message)
        pytest.skip(message)
    exe = chromium_path()
    if exe is None:
        message = "Chromium is not installed (Debian: apt-get install chromium)"
        if require_book():
            pytest.fail(message)
        pytest.skip(message)
    playwright = pytest.importorskip("playwright.sync_api")
    with serve(HTML) as base, playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield base, browser
        browser.close()


@contextlib.contextmanager
def open_page(browser, base, rel, width=1280, height=900, color_scheme="light"):
    """A loaded page (MathJax done, network idle) and its watcher; the context closes after."""
    context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=color_scheme)
    page = context.new_page()
    watch = PageWatch(page, base)
    page.goto(f"{base}/{rel}", wait_until="load")
    # wait for MathJax to finish typesetting, if the page loads it
    page.wait_for_function("""() => !document.querySelector('script[src*="mathjax"]')
                                 || (window.MathJax && MathJax.startup && MathJax.startup.promise)""", timeout=20000)
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
    page.wait_for_load_state("networkidle")
    try:
        yield page, watch
    finally:
        context.close()


@pytest.mark.parametrize("rel", PAGES or ["(no build)"])
def test_page_reads_correctly_offline(site, rel):
    base, browser = site
    with open_page(browser, base, rel) as (page, watch):
        report = page.evaluate("""() => {
          const main = document.querySelector('main') || document.body;
          const text = main.innerText;
          const bad = [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src);
          const anchors = [...main.querySelectorAll('a.reference.internal[href^="#"]')]
              .map(a => decodeURIComponent(a.getAttribute('href').slice(1)))
              .filter(id => id && !document.getElementById(id));
          return {
            mathSources: main.querySelectorAll('.math, div.math, span.math').length,
            typeset: main.querySelectorAll('mjx-container').length,
            mathErrors: [...main.querySelectorAll('mjx-merror')].map(e =>
                e.getAttribute('data-mjx-error') || e.textContent),
            rawDollars: (text.match(/\\$\\$/g) || []).length,
            rawBrackets: (text.match(/\\\\\\[|\\\\begin\\{/g) || []).length,
            brokenImages: bad,
            missingAnchors: anchors,
            unresolved: [...main.querySelectorAll('span.xref.std')].filter(e => !e.closest('a'))
                .map(e => e.textContent),
            cells: main.querySelectorAll('.cell').length,
            outputs: main.querySelectorAll('.cell_output').length,
          };
        }""")
        if rel.startswith("chapters/") or rel.count("/") == 0:
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / (rel.replace("/", "__").removesuffix(".html") + ".png")), full_page=True)
        assert watch.console_errors == [], f"{rel}: JavaScript console errors: {watch.console_errors}"
        assert watch.blocked == [], f"{rel}: requests to other hosts (the book must read offline): {watch.blocked}"
        assert watch.failed == [], f"{rel}: failed requests: {watch.failed}"
        if report["mathSources"]:
            assert report["typeset"] >= report["mathSources"] * 0.9, f"{rel}: math not typeset: {report}"
        assert report["mathErrors"] == [], f"{rel}: MathJax errors: {report['mathErrors']}"
        assert report["rawDollars"] == 0 and report["rawBrackets"] == 0, f"{rel}: raw LaTeX left in the text: {report}"
        assert report["brokenImages"] == [], f"{rel}: images that did not load: {report['brokenImages']}"
        assert report["missingAnchors"] == [], f"{rel}: links to anchors that do not exist: {report['missingAnchors']}"
        assert report["unresolved"] == [], f"{rel}: unresolved cross-references: {report['unresolved']}"
        if report["cells"]:
            assert report["outputs"] > 0, f"{rel}: code cells but no outputs: the page was not executed"


@pytest.mark.parametrize("rel", PAGES or ["(no build)"])
def test_page_fits_a_phone_screen(site, rel):
    base, browser = site
    with open_page(browser, base, rel, width=390, height=844) as (page, _):
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 2, f"{rel}: the page scrolls sideways by {overflow}px on a 390px-wide screen"


def test_equation_references_resolve(site):
    base, browser = site
    checked = 0
    expected = [p.with_suffix(".html").relative_to(ROOT).as_posix() for p in ROOT.glob("chapters/*.md")
                if "{eq}" in p.read_text() and (HTML / p.with_suffix(".html").relative_to(ROOT)).exists()]
    for rel in PAGES:
        if "#equation-" not in (HTML / rel).read_text(errors="ignore"):
            continue
        with open_page(browser, base, rel) as (page, _):
            refs = page.evaluate("""() => [...document.querySelectorAll('a.reference[href*="#equation-"]')].map(a => ({
                text: a.textContent, target: a.getAttribute('href')}))""")
            for ref in refs:
                assert any(ch.isdigit() for ch in ref["text"]), f"{rel}: equation reference without a number: {ref}"
                checked += 1
    if expected:
        assert checked > 0, f"{expected} use {{eq}} references but no numbered equation links were found"


def test_dropdowns_open_and_close(site):
    base, browser = site
    candidates = [p for p in PAGES if "sd-dropdown" in (HTML / p).read_text(errors="ignore")]
    if not candidates:
        pytest.skip("no page has a dropdown yet")
    with open_page(browser, base, candidates[0]) as (page, _):
        details = page.locator("details.sd-dropdown").first
        summary = details.locator("summary")
        assert details.evaluate("d => d.open") is False
        summary.click()
        assert details.evaluate("d => d.open") is True
        summary.click()
        assert details.evaluate("d => d.open") is False


def test_search_finds_softmax(site):
    base, browser = site
    with open_page(browser, base, "search.html?q=softmax") as (page, watch):
        page.wait_for_selector("ul.search li", timeout=20000)
        assert page.locator("ul.search li").count() >= 1
        assert watch.blocked == [] and watch.console_errors == []


def test_light_dark_toggle(site):
    base, browser = site
    with open_page(browser, base, "index.html") as (page, _):
        before = page.evaluate("() => document.documentElement.dataset.theme")
        seen = {before}
        button = page.locator(".theme-switch-button").first
        for _ in range(3):
            button.click()
            seen.add(page.evaluate("() => document.documentElement.dataset.theme"))
        assert {"light", "dark"} <= seen, f"themes seen while toggling: {seen}"


def test_explorer_controls_work_without_a_kernel(site):
    """The mask explorer's frames are switched by jslinked controls in the static page."""
    base, browser = site
    rel = "chapters/03_masks.html"
    if rel not in PAGES:
        pytest.skip("chapter 3 is not in the build")
    with open_page(browser, base, rel) as (page, watch):
        explorer = page.locator(".cell_output .widget-container").first
        explorer.scroll_into_view_if_needed()
        visible_text = "el => el.innerText"
        before = explorer.evaluate(visible_text)
        assert "row sum" in before and "1.00" in before, "the explorer's initial state is not rendered"
        explorer.locator("button", has_text="after softmax").click()
        page.wait_for_timeout(500)
        after = explorer.evaluate(visible_text)
        assert after != before, "clicking 'mask after softmax' changed nothing on the page"
        explorer.locator("select").first.select_option(index=0)          # pattern: none
        page.wait_for_timeout(500)
        assert explorer.evaluate(visible_text) not in (before, after), "choosing another pattern changed nothing"
        assert watch.console_errors == [] and watch.blocked == []
