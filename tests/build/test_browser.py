"""The built HTML book in headless Chromium, with every request off 127.0.0.1 blocked.

Run after `make book` (`make test-browser`). Without a build these tests skip with a message
(under `make test-browser` they fail instead). Screenshots go to _build/screenshots/.
"""
from __future__ import annotations

import contextlib
import re

import pytest

from tests.build.browser_support import (
    CHROMIUM_ARGS,
    ROOT,
    PageWatch,
    chromium_path,
    missing_build,
    require_book,
    serve,
)

pytestmark = pytest.mark.browser
BUILD = ROOT / "_build"
HTML = BUILD / "html"
ZH_HTML = BUILD / "zh" / "html"          # the Chinese edition (make book-zh), tested when built
SHOTS = BUILD / "screenshots"
SKIP_PAGES = {"genindex.html", "search.html"}
ZH = "zh/"                                 # a page of the Chinese edition is named "zh/<page>"


def book_pages(html=HTML, prefix="") -> list[str]:
    if not (html / "index.html").exists():
        return []
    pages = []
    for p in sorted(html.rglob("*.html")):
        rel = p.relative_to(html).as_posix()
        if rel.split("/")[0].startswith("_") or rel in SKIP_PAGES:
            continue
        pages.append(prefix + rel)
    return pages


PAGES = book_pages()
ZH_PAGES = book_pages(ZH_HTML, ZH)
BOTH_EDITIONS = PAGES + ZH_PAGES


def url_path(rel: str) -> str:
    """Where a page is served: the server's root is _build, which holds both editions."""
    return f"zh/html/{rel.removeprefix(ZH)}" if rel.startswith(ZH) else f"html/{rel}"


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
    with serve(BUILD) as base, playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield base, browser
        browser.close()


@contextlib.contextmanager
def open_page(browser, base, rel, width=1280, height=900, color_scheme="light"):
    """A loaded page (MathJax done, network idle) and its watcher; the context closes after."""
    context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=color_scheme)
    page = context.new_page()
    watch = PageWatch(page, base)
    page.goto(f"{base}/{url_path(rel)}", wait_until="load")
    # wait for MathJax to finish typesetting, if the page loads it
    page.wait_for_function("""() => !document.querySelector('script[src*="mathjax"]')
                                 || (window.MathJax && MathJax.startup && MathJax.startup.promise)""", timeout=20000)
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
    page.wait_for_load_state("networkidle")
    try:
        yield page, watch
    finally:
        context.close()


@pytest.mark.parametrize("rel", BOTH_EDITIONS or ["(no build)"])
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
            looseAnswers: [...main.querySelectorAll('#check-yourself details.sd-dropdown')]
                .filter(d => !d.closest('li')).length,
            favicon: (document.querySelector('link[rel="icon"]') || {}).href || null,
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
        assert report["looseAnswers"] == 0, (f"{rel}: {report['looseAnswers']} 'Check yourself' answers outside "
                                             "their question's list item (indent the dropdown under the question)")
        assert report["favicon"], f"{rel}: no favicon (html_favicon)"


def unfold(page) -> None:
    """Open every folded "Going deeper" section, as its button does: what it holds is measured too
    (folded, its figures are 0 px wide)."""
    page.evaluate("() => document.querySelectorAll('section.going-deeper.folded')"
                  ".forEach(s => s.classList.remove('folded'))")


@pytest.mark.parametrize("rel", BOTH_EDITIONS or ["(no build)"])
def test_page_fits_a_phone_screen(site, rel):
    base, browser = site
    with open_page(browser, base, rel, width=390, height=844) as (page, _):
        unfold(page)
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 2, f"{rel}: the page scrolls sideways by {overflow}px on a 390px-wide screen"
        cut = page.evaluate(CUT_OFF_JS)
        assert cut == [], (f"{rel}: at 390 px, math or figures cut off or overflowing the page "
                           f"(not scrolling in a box of their own): {cut}")
        small = page.evaluate(FIGURE_TEXT_JS)
        assert small["small"] == [], f"{rel}: figure text below 9 px at 390 px: {small['small']}"
        tiny = page.evaluate(SVG_TEXT_JS)
        assert tiny == [], f"{rel}: explorer text shrunk below 9 px at 390 px: {tiny}"
        cut = page.evaluate(REACH_JS)
        assert cut == [], (f"{rel}: at 390 px, tables, outputs or formulas clipped by their box, "
                           f"with no way to scroll to the rest: {cut}")
        numbers = page.evaluate(EQUATION_NUMBER_JS)
        assert numbers == [], f"{rel}: at 390 px, equation numbers drawn over their formula: {numbers}"
        wrapped = page.evaluate(WRAPPED_OUTPUT_JS)
        assert wrapped == [], f"{rel}: at 390 px, printed outputs wrap their lines (they should scroll): {wrapped}"
        squeezed = page.evaluate(PREV_NEXT_JS)
        assert squeezed == [], f"{rel}: at 390 px, previous/next titles squeezed: {squeezed}"
        if rel == "chapters/03_masks.html":
            clipped = page.evaluate(CLIPPED_CONTROLS_JS)
            assert clipped == [], f"{rel}: explorer controls cut off at 390 px: {clipped}"
        if rel.startswith("chapters/") or rel.count("/") == 0:
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / ("390__" + rel.replace("/", "__").removesuffix(".html") + ".png")),
                            full_page=True)


# Tables, printed outputs and formulas (display or inline) must show whole or be reachable by
# scrolling a box of their own: report those that an ancestor clips (overflow hidden or clip, e.g.
# the theme's span.math or an admonition) past the reach of any scroll box between them.
REACH_JS = """() => {
  const root = document.querySelector('article') || document.body;
  const bad = [];
  for (const el of root.querySelectorAll('table, div.cell_output pre, mjx-container')) {
    if (el.parentElement.closest('mjx-container')) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0) continue;
    for (let box = el.parentElement; box && box !== document.body; box = box.parentElement) {
      const ox = getComputedStyle(box).overflowX;
      if (ox === 'visible') continue;
      const b = box.getBoundingClientRect();
      if ((ox === 'auto' || ox === 'scroll') && box.scrollWidth - box.clientWidth >= r.right - b.right - 1) break;
      if (r.right > b.right + 1 || r.left < b.left - 1)
        bad.push({element: el.tagName.toLowerCase(), near: (el.closest('[id]') || {}).id || '',
                  clippedBy: box.tagName.toLowerCase() + '.' + String(box.className).split(' ')[0] + ' (' + ox + ')',
                  width: Math.round(r.width), box: Math.round(b.width), text: el.textContent.trim().slice(0, 40)});
      break;
    }
    if (bad.length > 4) break;
  }
  return bad;
}"""

# An equation number sits beside its formula when both fit the line; beside a formula cut at the
# edge of its scroll box it reads as part of the formula: then it goes on its own line below.
EQUATION_NUMBER_JS = """() => {
  const bad = [];
  for (const n of document.querySelectorAll('article div.math > span.eqno')) {
    const f = n.parentElement.querySelector('mjx-container');
    if (!f) continue;
    const a = n.getBoundingClientRect(), b = f.getBoundingClientRect(), col = n.parentElement.getBoundingClientRect();
    const sameLine = a.top < b.bottom - 1 && b.top < a.bottom - 1;
    const overlap = sameLine && a.left < b.right - 1 && b.left < a.right - 1;
    if (overlap || (sameLine && f.scrollWidth > f.clientWidth + 1) || a.right > col.right + 1)
      bad.push({equation: n.parentElement.id, number: n.textContent.replace('#', '').trim()});
  }
  return bad;
}"""

# A printed output keeps its lines on a phone: a box whose text wraps is taller than its lines.
WRAPPED_OUTPUT_JS = """() => {
  const bad = [];
  for (const pre of document.querySelectorAll('article div.cell_output pre')) {
    if (pre.getClientRects().length === 0) continue;
    const ws = getComputedStyle(pre).whiteSpace;
    if (ws !== 'pre') bad.push({whiteSpace: ws, text: pre.textContent.trim().slice(0, 40)});
    if (bad.length > 2) break;
  }
  return bad;
}"""

# The previous/next links at the foot of a page: each title gets the width to read in two lines
# (a narrow box squeezes a long title into several lines; a short title on one line is fine).
PREV_NEXT_JS = """() => [...document.querySelectorAll('.prev-next-area a')].map(a => {
    const t = a.querySelector('.prev-next-title');
    const lh = parseFloat(getComputedStyle(t).lineHeight) || 20;
    return {title: t.textContent.trim(), width: Math.round(t.getBoundingClientRect().width),
            lines: Math.round(t.getBoundingClientRect().height / lh)};
  }).filter(t => t.lines > 2 || (t.width < 200 && t.lines > 1 && t.title.length > 20))"""

# Text of the explorers' SVG pictures (shown ones) rendered smaller than 9 px, or than drawn where
# it is drawn smaller: the picture shrank with the screen instead of scrolling in its box.
SVG_TEXT_JS = """() => {
  const bad = [];
  for (const svg of document.querySelectorAll('.cell_output svg[viewBox]')) {
    const box = svg.getBoundingClientRect();
    if (box.width === 0) continue;
    const scale = box.width / svg.viewBox.baseVal.width;
    for (const t of svg.querySelectorAll('text')) {
      const drawn = parseFloat(getComputedStyle(t).fontSize);
      if (drawn * scale < Math.min(9, drawn) - 0.25)
        bad.push({text: t.textContent.slice(0, 20), drawn, shown: Math.round(drawn * scale * 10) / 10});
      if (bad.length > 4) return bad;
    }
  }
  return bad;
}"""

# Elements whose content is wider than their box: the deepest ones (an overflowing formula makes its
# ancestors overflow too; the formula is reported).
OVERFLOW_JS = """() => {
  const root = document.querySelector('article') || document.querySelector('main') || document.body;
  const wide = [...root.querySelectorAll('*')].filter(el => {
    // MathJax: only a display formula's own box counts (glyphs of inline math overhang their
    // inline-block by a few px; a formula really too wide for its line makes the paragraph overflow)
    const mjx = el.closest('mjx-container');
    if (mjx && (el !== mjx || mjx.getAttribute('display') !== 'true')) return false;
    if (el.closest('span.math')) return false;
    // inside an SVG picture or a slider: their own boxes are what the reader sees
    if ((el.closest('svg') && el.tagName.toLowerCase() !== 'svg') || el.closest('.widget-slider')) return false;
    // what only a screen reader reads: an explorer's reading, clipped to a pixel on purpose
    if (el.closest('.attnlab-reading, .attnlab-announcer')) return false;
    const cw = el.clientWidth;
    return cw > 0 && el.scrollWidth - cw > 1 && el.getClientRects().length > 0;
  });
  const deepest = wide.filter(el => !wide.some(other => other !== el && el.contains(other)));
  return deepest.map(el => ({
    element: el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className && typeof el.className === 'string'
             ? '.' + el.className.trim().split(/\\s+/).join('.') : ''),
    box: el.clientWidth, content: el.scrollWidth,
    near: (el.closest('[id]') || {}).id || '',
    text: (el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 70),
  }));
}"""

# Display math, figures and explorer pictures at phone width: content may scroll inside a box of its
# own (overflow-x auto/scroll) but may not be clipped (hidden/clip) nor stick out of the page.
CUT_OFF_JS = """() => {
  const root = document.querySelector('article') || document.body;
  const els = root.querySelectorAll('mjx-container[display="true"], div.cell_output img, .widget-html-content svg');
  const bad = [];
  for (const el of els) {
    const r = el.getBoundingClientRect();
    if (r.width === 0) continue;                                   // a hidden explorer frame
    let box = el.parentElement;
    while (box && box !== document.documentElement) {
      const ox = getComputedStyle(box).overflowX;
      if (ox !== 'visible') break;
      box = box.parentElement;
    }
    const ox = box && box !== document.documentElement ? getComputedStyle(box).overflowX : 'page';
    const b = box && box !== document.documentElement ? box.getBoundingClientRect()
                                                      : {left: 0, right: window.innerWidth};
    const sticksOut = r.right > b.right + 1 || r.left < b.left - 1;
    const name = el.tagName.toLowerCase() + ' near #' + ((el.closest('[id]') || {}).id || '');
    if (sticksOut && !(ox === 'auto' || ox === 'scroll'))
      bad.push({element: name, overflow: ox, width: Math.round(r.width), box: Math.round(b.right - b.left)});
    else if (b.right > window.innerWidth + 1)
      bad.push({element: name, scrollBoxRight: Math.round(b.right), window: window.innerWidth});
  }
  return bad;
}"""

# Figures drawn through attnlab.plots.book_style carry their smallest text (in PNG pixels), diagrams of
# attnlab.diagrams theirs (in SVG pixels); shown at clientWidth / naturalWidth of that, it must read at
# >= 9 CSS px. Every PNG and SVG output must carry it.
FIGURE_TEXT_JS = """() => {
  const root = document.querySelector('article') || document.body;
  const imgs = [...root.querySelectorAll('div.cell_output img')].filter(i => /\\.(png|svg)($|\\?)/.test(i.src));
  const small = [], unstamped = [];
  for (const img of imgs) {
    if (!img.classList.contains('attnlab-figure')) { unstamped.push(img.src.split('/').pop()); continue; }
    const shown = parseFloat(img.dataset.minTextPx) * img.clientWidth / img.naturalWidth;
    if (!(shown >= 9)) small.push({figure: ((img.closest('figure[id]') || img.closest('[id]')) || {}).id,
                                   textPx: Math.round(shown * 10) / 10, shownWidth: img.clientWidth,
                                   naturalWidth: img.naturalWidth});
  }
  const col = root.querySelector(':scope > section') || root;         // the column of the page's prose
  const pad = parseFloat(getComputedStyle(col).paddingLeft) + parseFloat(getComputedStyle(col).paddingRight);
  return {count: imgs.length, small, unstamped, column: imgs.length ? col.clientWidth - pad : null};
}"""

# Explorer controls (buttons, dropdowns, sliders) whose box sticks out of the explorer or the window.
CLIPPED_CONTROLS_JS = """() => {
  const bad = [];
  for (const ex of document.querySelectorAll('.cell_output .widget-container')) {
    const e = ex.getBoundingClientRect();
    for (const c of ex.querySelectorAll('button, select, .widget-slider, .widget-readout')) {
      const r = c.getBoundingClientRect();
      if (r.width === 0) continue;
      if (r.right > Math.min(e.right, window.innerWidth) + 1)
        bad.push({control: (c.textContent || c.className).trim().slice(0, 40), right: Math.round(r.right),
                  explorer: Math.round(e.right)});
    }
  }
  return bad;
}"""

# Chinese characters in prose must sit inside a lang="zh" element (code, math and outputs excepted);
# inline code in a table cell must not break inside a name.
TEXT_JS = """() => {
  const root = document.querySelector('article') || document.body;
  const cjk = /[\\u3400-\\u4dbf\\u4e00-\\u9fff]/;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const unmarked = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!cjk.test(n.textContent)) continue;
    const p = n.parentElement;
    if (p.closest('[lang|="zh"], pre, code, .math, mjx-container, script, style, .cell_output')) continue;
    unmarked.push(n.textContent.trim().slice(0, 40));
  }
  const broken = [...root.querySelectorAll('td code.literal, th code.literal')]
    .filter(c => !/\\s/.test(c.textContent.trim()) && c.getClientRects().length > 1)
    .map(c => c.textContent.trim());
  return {unmarked, broken};
}"""


@pytest.mark.parametrize("rel", BOTH_EDITIONS or ["(no build)"])
def test_nothing_is_wider_than_its_box_at_1280(site, rel):
    """Math, code, outputs, tables, explorer readouts: all fit their boxes, with no sideways scrolling."""
    base, browser = site
    with open_page(browser, base, rel) as (page, _):
        unfold(page)
        wide = page.evaluate(OVERFLOW_JS)
        assert wide == [], f"{rel}: content wider than its box at 1280 px: {wide}"
        figures = page.evaluate(FIGURE_TEXT_JS)
        assert figures["unstamped"] == [], (f"{rel}: figures not drawn through al.plots.book_style "
                                            f"(no text-size stamp): {figures['unstamped']}")
        assert figures["small"] == [], f"{rel}: figure text below 9 px at 1280 px: {figures['small']}"
        if figures["column"] is not None:
            from attnlab.plots import COLUMN_PX
            assert figures["column"] >= COLUMN_PX - 2, (f"{rel}: the text column is {figures['column']} px, "
                                                       f"attnlab.plots.COLUMN_PX assumes {COLUMN_PX}")
        text = page.evaluate(TEXT_JS)
        assert text["unmarked"] == [], f"{rel}: Chinese text outside a lang=\"zh\" element: {text['unmarked']}"
        assert text["broken"] == [], f"{rel}: names broken across lines in table cells: {text['broken']}"


def test_chinese_glosses_use_a_cjk_sans_font(site):
    base, browser = site
    rel = "notation.html"
    if rel not in PAGES:
        pytest.skip("notation.html is not in the build")
    with open_page(browser, base, rel) as (page, _):
        gloss = page.locator('article span.zh[lang="zh"]').first
        assert gloss.count() == 1, "no Chinese gloss is marked lang=zh"
        family = gloss.evaluate("el => getComputedStyle(el).fontFamily")
        assert family.split(",")[0].strip().strip('"\'') == "Noto Sans CJK SC", family
        cdp = page.context.new_cdp_session(page)
        cdp.send("DOM.enable")
        cdp.send("CSS.enable")
        doc = cdp.send("DOM.getDocument", {"depth": -1})
        node = cdp.send("DOM.querySelector", {"nodeId": doc["root"]["nodeId"],
                                              "selector": 'article span.zh[lang="zh"]'})
        fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node["nodeId"]})["fonts"]
        used = [f["familyName"] for f in fonts if f.get("glyphCount", 0) > 0]
        assert used and all("CJK" in name for name in used), f"the gloss is drawn with {used}"


@pytest.mark.parametrize("rel", [r for r in PAGES if r.startswith("chapters/") or r == "notation.html"]
                         or ["(no build)"])
def test_a_chinese_gloss_never_breaks_across_lines_on_a_phone(site, rel):
    base, browser = site
    with open_page(browser, base, rel, width=390, height=844) as (page, _):
        split = page.evaluate("""() => [...document.querySelectorAll('article span.zh')]
            .filter(s => s.textContent.length > 1 && s.getClientRects().length > 1).map(s => s.textContent)""")
    assert split == [], f"{rel}: glosses broken across two lines: {split[:8]}"


@pytest.mark.parametrize("rel", [r for r in PAGES if r in ("chapters/03_masks.html", "checking.html",
                                                             "instructors.html", "chapters/08_cost.html")]
                         or ["(no build)"])
def test_no_table_cell_is_wider_than_a_phone(site, rel):
    base, browser = site
    with open_page(browser, base, rel, width=390, height=844) as (page, _):
        wide = page.evaluate("""() => {
            const column = document.querySelector('article').getBoundingClientRect().width;
            return [...document.querySelectorAll('article table.table td, article table.table th')]
              .filter(c => c.getBoundingClientRect().width > column).map(c => c.textContent.trim().slice(0, 50));
        }""")
    assert wide == [], f"{rel}: table cells wider than the 390 px screen: {wide}"


# Every box that can scroll sideways, measured here, not by the page's script: how much of it is
# hidden (of a formula, its visible glyphs: MathJax's clipped copy for screen readers may stick out
# further), and whether the cue's classes and mask are on it.
SCROLL_BOXES_JS = """() => {
  const out = [];
  for (const el of document.querySelectorAll('article *')) {
    const ox = getComputedStyle(el).overflowX;
    if (ox !== 'auto' && ox !== 'scroll') continue;
    const box = el.getBoundingClientRect();
    if (box.width === 0) continue;
    const style = getComputedStyle(el);
    const glyphs = el.matches('span.math, mjx-container') ? [...el.querySelectorAll('mjx-math *')] : [];
    const hidden = glyphs.length
      ? Math.ceil(Math.max(...glyphs.map(g => g.getBoundingClientRect().right)) - box.left + el.scrollLeft
                  - el.clientLeft) - el.clientWidth
      : el.scrollWidth - el.clientWidth;
    out.push({tag: el.tagName.toLowerCase() + '.' + String(el.className).split(' ')[0],
              hidden: hidden, marked: el.classList.contains('attn-scrolls'),
              left: el.classList.contains('attn-more-left'), right: el.classList.contains('attn-more-right'),
              mask: style.maskImage || style.webkitMaskImage || 'none'});
  }
  return out;
}"""


@pytest.mark.parametrize("rel", ["chapters/04_worked_examples.html", "chapters/08_cost.html",
                                 "chapters/11_pretrained.html", ZH + "chapters/04_worked_examples.html",
                                 ZH + "chapters/06_multihead.html"])
def test_a_box_that_scrolls_on_a_phone_fades_where_more_is_hidden(site, rel):
    """At 390 px each box with more than a few pixels hidden fades at its right edge, then at its
    left once scrolled to the end; a formula whose glyphs overhang by a pixel or two does not fade;
    at 1280 px nothing does."""
    if rel.startswith(ZH) and not ZH_PAGES:
        pytest.skip("the Chinese edition is not built")
    base, browser = site
    with open_page(browser, base, rel, width=390, height=844) as (page, _):
        page.wait_for_timeout(300)
        boxes = page.evaluate(SCROLL_BOXES_JS)
        scrolling = [b for b in boxes if b["hidden"] > 4]
        assert scrolling, f"{rel}: nothing scrolls sideways at 390 px, so the cue is not tested here"
        assert all(b["marked"] and b["right"] and not b["left"] and b["mask"] != "none" for b in scrolling), \
            [b for b in scrolling if not (b["marked"] and b["right"] and b["mask"] != "none")][:3]
        overhang = [b for b in boxes if b["hidden"] <= 4]
        assert not any(b["marked"] or b["mask"] != "none" for b in overhang), \
            [b for b in overhang if b["marked"] or b["mask"] != "none"][:3]
        end = page.evaluate("""() => { const el = document.querySelector('.attn-more-right');
                                       el.scrollLeft = el.scrollWidth; return el.tagName; }""")
        page.wait_for_timeout(200)
        after = page.evaluate("""() => { const el = document.querySelectorAll('.attn-scrolls')[0];
            return {left: el.classList.contains('attn-more-left'), right: el.classList.contains('attn-more-right'),
                    mask: getComputedStyle(el).maskImage || getComputedStyle(el).webkitMaskImage}; }""")
        assert after["left"] and not after["right"] and after["mask"] != "none", (end, after)
    with open_page(browser, base, rel) as (page, _):
        page.wait_for_timeout(300)
        marked = [b for b in page.evaluate(SCROLL_BOXES_JS) if b["marked"]]
        assert marked == [], f"{rel}: boxes fade at 1280 px, where nothing should scroll: {marked[:3]}"


def test_code_in_an_exercise_box_uses_the_phone_width(site):
    base, browser = site
    rel = "exercises/ex03_masks.html"
    if rel not in PAGES:
        pytest.skip(f"{rel} is not in the build")
    with open_page(browser, base, rel, width=390, height=844) as (page, _):
        gap = page.evaluate("""() => {
            const code = document.querySelector('div.exercise div.cell div.highlight pre');
            const box = code.closest('div.exercise');
            return box.getBoundingClientRect().width - code.getBoundingClientRect().width; }""")
    # the box's border and padding take about 25 px; a second indent took 70
    assert gap <= 40, f"an exercise's code box is {gap:.0f} px narrower than its box at 390 px"


DIAGRAM_NAME = re.compile(r"^[\s:]*name: (diag-[\w-]+)", re.M)


def diagram_pages() -> list[tuple[str, list[str]]]:
    """(page, its diagram figures' labels) for every page of both editions that shows a diagram."""
    found = []
    for source in sorted(ROOT.glob("chapters/*.md")):
        labels = DIAGRAM_NAME.findall(source.read_text(encoding="utf-8"))
        rel = source.with_suffix(".html").relative_to(ROOT).as_posix()
        found += [(r, labels) for r in (rel, ZH + rel) if labels and r in BOTH_EDITIONS]
    return found


@pytest.mark.parametrize(("rel", "labels"), diagram_pages() or [("(no build)", [])])
def test_every_diagram_is_drawn_with_its_number_and_alt_text(site, rel, labels):
    base, browser = site
    if rel == "(no build)":
        missing_build("no built book in _build/html: run `make book` first")
    with open_page(browser, base, rel) as (page, _):
        unfold(page)
        drawn = page.evaluate("""() => [...document.querySelectorAll('figure[id^="diag-"]')].map(f => {
            const img = f.querySelector('img'), box = img ? img.getBoundingClientRect() : {width: 0, height: 0};
            return {id: f.id, loaded: !!img && img.complete && img.naturalWidth > 0, width: box.width,
                    height: box.height, alt: img ? img.alt : '',
                    caption: (f.querySelector('figcaption') || {textContent: ''}).textContent.trim()};
        })""")
    assert sorted(d["id"] for d in drawn) == sorted(labels), f"{rel}: diagram figures {drawn}"
    number = "图" if rel.startswith(ZH) else "Fig."
    for d in drawn:
        assert d["loaded"] and d["width"] > 200 and d["height"] > 80, f"{rel}: {d['id']} is not drawn: {d}"
        assert d["caption"].startswith(number), f"{rel}: {d['id']}'s caption lacks its number: {d['caption']!r}"
        assert len(d["alt"]) > 40, f"{rel}: {d['id']} has no description for a screen reader: {d['alt']!r}"
        if rel.startswith(ZH):
            assert re.search("[\u4e00-\u9fff]", d["alt"]), f"{rel}: {d['id']}'s alt text is not Chinese"


def test_explorer_footers_are_readable_in_dark_mode(site):
    base, browser = site
    rel = "chapters/03_masks.html"
    if rel not in PAGES:
        pytest.skip("chapter 3 is not in the build")
    with open_page(browser, base, rel, color_scheme="dark") as (page, _):
        assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
        ratios = page.evaluate(CONTRAST_JS, ".cell_output .widget-container code")
        assert ratios, "no inline code in the explorer's footer"
        low = [r for r in ratios if r["ratio"] < 4.5]
        assert low == [], f"inline code below WCAG's 4.5:1 contrast in dark mode: {low}"


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


@pytest.mark.parametrize("html", [HTML, ZH_HTML], ids=["en", "zh"])
def test_every_citation_reads_as_its_entry_in_the_bibliography(site, html):
    # two 2024 papers by DeepSeek-AI are 2024a and 2024b in the list: the citations must say which
    import html as html_lib
    import re
    if not (html / "references.html").exists():
        pytest.skip(f"{html.relative_to(ROOT)} is not built")
    entry = re.compile(r'<div class="citation" id="([^"]+)"[^>]*>\s*<span class="label">'
                       r'<span class="fn-bracket">\[</span>(.*?)<span class="fn-bracket">')
    labels = {key: html_lib.unescape(label) for key, label in entry.findall((html / "references.html").read_text())}
    assert len(labels) > 20, "the bibliography's entries were not found (has its HTML changed?)"
    cite = re.compile(r'<span class="bibtex-citation"[^>]*>\[<a class="reference internal" '
                      r'href="[^"]*references\.html#([^"]+)"[^>]*>([^<]*)</a>')
    wrong, checked = [], 0
    for page in html.rglob("*.html"):
        for key, text in cite.findall(page.read_text(errors="ignore")):
            checked += 1
            if html_lib.unescape(text) != labels.get(key):
                wrong.append((page.relative_to(html).as_posix(), text, labels.get(key)))
    assert checked > 50 and not wrong, f"citations that do not read as their entry's label: {wrong[:5]}"


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


@pytest.mark.parametrize("query", ["softmax", "derivative", "Jacobian"])
def test_search_snippets_show_no_tex(site, query):
    """Snippets are cut from the pages' text, where MathJax has not run: formulas must read as text."""
    base, browser = site
    with open_page(browser, base, f"search.html?q={query}") as (page, watch):
        page.wait_for_selector("ul.search li p.context", timeout=30000)
        page.wait_for_function("() => !document.querySelector('#search-progress') || "
                               "/found|match/.test(document.querySelector('#search-progress').textContent)",
                               timeout=30000)
        page.wait_for_timeout(1500)                          # snippets are fetched page by page
        snippets = page.locator("ul.search li p.context").all_inner_texts()
        assert snippets, f"no snippets for {query!r}"
        tex = [t for t in snippets if any(m in t for m in ("\\(", "\\)", "\\[", "\\frac", "\\alpha", "\\top", "$$"))]
        assert tex == [], f"search snippets with raw TeX for {query!r}: {tex[:3]}"
        assert watch.console_errors == []


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


# innerText leaves out SVG <text>: add the text of the pictures on show (hidden frames have no box)
VISIBLE_TEXT_JS = """el => el.innerText + ' ' + [...el.querySelectorAll('svg')]
    .filter(svg => svg.getBoundingClientRect().width > 0).map(svg => svg.textContent).join(' ')"""


def test_gqa_explorer_keeps_h_kv_when_h_q_changes(site):
    base, browser = site
    rel = "chapters/06_multihead.html"
    if rel not in PAGES:
        pytest.skip("chapter 6 is not in the build")
    with open_page(browser, base, rel) as (page, watch):
        explorer = page.locator(".cell_output .widget-container", has_text="H_q = 16").first
        explorer.scroll_into_view_if_needed()
        text = lambda: explorer.evaluate(VISIBLE_TEXT_JS)  # noqa: E731
        assert "H_q = 8, H_kv = 2," in text()
        explorer.locator("button", has_text="H_q = 4").click()
        page.wait_for_timeout(300)
        assert "H_q = 4, H_kv = 2," in text(), "changing H_q reset H_kv"
        explorer.locator("button", has_text="H_kv = 4").click()
        explorer.locator("button", has_text="H_q = 16").click()
        page.wait_for_timeout(300)
        assert "H_q = 16, H_kv = 4," in text()
        explorer.locator("button", has_text="H_q = 2").click()
        page.wait_for_timeout(300)
        assert "does not divide" in text()
        assert watch.console_errors == []


def test_mask_explorer_padding_opens_on_a_padded_sequence(site):
    base, browser = site
    rel = "chapters/03_masks.html"
    if rel not in PAGES:
        pytest.skip("chapter 3 is not in the build")
    with open_page(browser, base, rel) as (page, _):
        explorer = page.locator(".cell_output .widget-container").first
        explorer.scroll_into_view_if_needed()
        explorer.locator("select").first.select_option(label="padding (per-sequence lengths)")
        page.wait_for_timeout(500)
        text = explorer.evaluate(VISIBLE_TEXT_JS)
        assert "2 padding queries" in text and "sequence 1: length 4" in text, text[:400]


# Colour contrast (WCAG) of text against the first opaque background behind it.
CONTRAST_JS = """(selector) => {
  const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = c => { const v = c.slice(0, 3).map(x => { x /= 255;
      return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); });
      return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
  const background = el => { for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) return c; }
      return [255, 255, 255]; };
  return [...document.querySelectorAll(selector)].filter(e => e.getClientRects().length && e.textContent.trim())
    .slice(0, 40).map(e => {
      const a = lum(rgb(getComputedStyle(e).color)), b = lum(background(e));
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      return {text: e.textContent.trim().slice(0, 30), ratio: Math.round(ratio * 10) / 10,
              background: Math.round(b * 100) / 100};
    });
}"""


@pytest.mark.parametrize(("rel", "selector"), [
    ("exercises/ex01_qkv.html", ".attnlab-check, .attnlab-check strong, .attnlab-check code"),
    ("chapters/10_structure.html", 'div.cell_output table.dataframe :is(th, td)'),   # its tables of strings
    ("chapters/03_masks.html",
     ".cell_output .widget-label, .cell_output .widget-readout, .cell_output .attnlab-readout td"),
    ("chapters/11_pretrained.html", ".cell_output .attnlab-readout td"),   # the query's row is red
])
def test_outputs_follow_dark_mode(site, rel, selector):
    """Checker notes, styled tables and explorers: text on a dark background, readable (>= 4.5:1)."""
    base, browser = site
    if rel not in PAGES:
        pytest.skip(f"{rel} is not in the build")
    with open_page(browser, base, rel, color_scheme="dark") as (page, _):
        assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
        if ".widget-" in selector:
            page.locator(".cell_output .widget-container").first.scroll_into_view_if_needed()
            page.wait_for_timeout(300)
        found = page.evaluate(CONTRAST_JS, selector)
        assert found, f"{rel}: nothing matches {selector}"
        low = [f for f in found if f["ratio"] < 4.5]
        assert low == [], f"{rel}: text below 4.5:1 contrast in dark mode: {low}"
        light = [f for f in found if f["background"] > 0.4]
        assert light == [], f"{rel}: a light panel left in dark mode: {light}"


def test_figures_are_one_light_card_in_dark_mode(site):
    base, browser = site
    rel = "chapters/01_qkv.html"
    if rel not in PAGES:
        pytest.skip("chapter 1 is not in the build")
    with open_page(browser, base, rel, color_scheme="dark") as (page, _):
        look = page.locator("div.cell_output img.attnlab-figure").first.evaluate(
            "i => { const s = getComputedStyle(i); return [s.backgroundColor, s.borderRadius]; }")
        # the padding around the figure has the figure's own white: no grey frame around a white one
        assert look[0] == "rgb(255, 255, 255)", look
        assert float(look[1].removesuffix("px")) >= 6, look


@pytest.mark.parametrize("width", [1280, 390])
def test_one_search_control(site, width):
    base, browser = site
    for rel in [p for p in ("chapters/05_backprop.html", ZH + "chapters/05_backprop.html") if p in BOTH_EDITIONS]:
        with open_page(browser, base, rel, width=width) as (page, _):
            # on show: a box, and no hidden ancestor (the folded sidebar of a phone is visibility: hidden)
            shown = page.evaluate("""() => [...document.querySelectorAll('.search-button__button')]
                .filter(b => !b.closest('dialog') && b.getClientRects().length)
                .filter(b => { for (let e = b; e; e = e.parentElement)
                                 if (getComputedStyle(e).visibility === 'hidden') return false; return true; })
                .map(b => b.className)""")
            assert len(shown) == 1, f"{rel} at {width} px: {len(shown)} search controls shown: {shown}"


def test_explorers_render_from_file(site):
    """A reader may open the HTML from disk (file://): the explorers must still render."""
    _, browser = site
    rel = "chapters/03_masks.html"
    if rel not in PAGES:
        pytest.skip("chapter 3 is not in the build")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        errors = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto((HTML / rel).as_uri(), wait_until="load")
        page.wait_for_selector(".cell_output .widget-container", timeout=20000)
        assert "row sum" in page.locator(".cell_output .widget-container").first.inner_text()
        assert errors == [], f"{rel} from file://: console errors: {errors}"
    finally:
        context.close()


@pytest.mark.parametrize("rel", [r for r in ("chapters/03_masks.html", ZH + "chapters/03_masks.html")
                                 if r in BOTH_EDITIONS] or ["(no build)"])
def test_a_long_going_deeper_section_folds_behind_a_button_that_says_its_minutes(site, rel):
    """The button counts minutes in both editions (a count of words means nothing in Chinese), and
    opens and folds its section."""
    base, browser = site
    with open_page(browser, base, rel) as (page, _):
        buttons = page.locator("button.going-deeper-toggle")
        assert buttons.count() >= 1, f"{rel}: no folded 'Going deeper' section"
        first = buttons.first
        label = first.inner_text()
        pattern = r"^展开本节（约 \d+ 分钟）$" if rel.startswith(ZH) else r"^Show this section \(about \d+ min\)$"
        assert re.match(pattern, label), label
        assert first.get_attribute("aria-expanded") == "false"
        first.click()
        assert first.get_attribute("aria-expanded") == "true"
        assert first.inner_text() == ("收起本节" if rel.startswith(ZH) else "Fold this section")
