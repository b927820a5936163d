"""Accessibility of the built book (both editions) in headless Chromium: an audit of every page in
light and dark mode, and a keyboard-only walk through every explorer.

The audit is axe-core (npm, vendored into _build/test-vendor by bookbuild/vendor.py the first
time, injected into the page: nothing is fetched while the page runs) with the WCAG 2.0/2.1 A and
AA rules; a serious or critical violation fails. One load per page: the audit runs, the page is
switched to dark mode (as the theme's switch does), and the rules that depend on colours run
again (the others see the same page in both modes; a whole second audit doubled the time). Beside it, the page's
structure: one h1, headings that never skip a level going down, the main and navigation
landmarks, every image described in words (not a path or a hash), every explorer picture named,
and every formula exposed to assistive technology (MathJax's assistive MathML). Each page's
findings are written to _build/a11y/<edition>/<page>.json.

The walk starts before each explorer and presses only Tab, the arrow keys, Space and Enter: every
control it reaches must have an accessible name and change the state, and the explorer's live
region must then announce the new reading, in the page's language.
"""
from __future__ import annotations

import json
import re

import pytest

from tests.build.browser_support import require_book
from tests.build.test_browser import BOTH_EDITIONS, BUILD, PAGES, ZH, ZH_PAGES, open_page, site  # noqa: F401

pytestmark = pytest.mark.browser
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
FAILING = {"serious", "critical"}
REPORTS = BUILD / "a11y"
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
EXPLORER_PAGES = {"chapters/01_qkv.html": 1, "chapters/02_scaling_softmax.html": 1, "chapters/03_masks.html": 1,
                  "chapters/06_multihead.html": 1, "chapters/11_pretrained.html": 1}


@pytest.fixture(scope="module")
def axe_js():
    from bookbuild.vendor import vendor_axe
    try:
        return vendor_axe().read_text(encoding="utf-8")
    except (OSError, SystemExit) as exc:                   # npm missing or the registry out of reach
        message = f"axe-core could not be vendored with npm: {exc}"
        if require_book():
            pytest.fail(message)
        pytest.skip(message)


COLOUR_RULES = ["color-contrast", "link-in-text-block"]
AXE_RUN = """async (only) => {
  const result = await axe.run(document, {runOnly: only, resultTypes: ['violations']});
  return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.join(' '), html: n.html.slice(0, 160),
                              summary: (n.failureSummary || '').slice(0, 300)}))}));
}"""


def audit(page, axe_js, rules=None) -> list[dict]:
    """axe's violations on the page: of every WCAG A/AA rule, or of ``rules`` only."""
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(content=axe_js)
    return page.evaluate(AXE_RUN, rules or {"type": "tag", "values": AXE_TAGS})


# What assistive technology is given, beyond axe's rules: exposed elements only (a print-only copy of
# the title, display: none, is not a second h1).
STRUCTURE_JS = """() => {
  const exposed = el => el.getClientRects().length > 0 && !el.closest('[aria-hidden="true"]')
                        && getComputedStyle(el).visibility !== 'hidden';
  const headings = [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')].filter(exposed)
                   .map(h => ({level: +h.tagName[1], text: h.textContent.trim().slice(0, 50)}));
  const skips = [];
  for (let k = 1; k < headings.length; k++)
    if (headings[k].level > headings[k - 1].level + 1) skips.push([headings[k - 1], headings[k]]);
  // nothing, a path or a file name (one word with a slash, or ending in .png), or a hash
  const bad = a => !a || !a.trim() || /^\\S*[\\/\\\\]\\S*$|\\.(png|svg|jpe?g|gif)$|^[0-9a-f]{16,}$/i.test(a.trim());
  const images = [...document.querySelectorAll('main img')].filter(i => bad(i.getAttribute('alt')))
                 .map(i => ({src: i.getAttribute('src').split('/').pop(), alt: i.getAttribute('alt')}));
  // pictures drawn inline (explorers, diagrams shown as SVG), not the icons of buttons
  const pictures = [...document.querySelectorAll('main .cell_output svg[viewBox]')].filter(s => !s.closest('button'))
                 .filter(s => s.getAttribute('role') !== 'img' || bad(s.getAttribute('aria-label')))
                 .map(s => (s.textContent || '').slice(0, 40));
  const formulas = [...document.querySelectorAll('main mjx-container')];
  return {h1: headings.filter(h => h.level === 1).map(h => h.text), first: headings.length ? headings[0].level : 0,
          skips, images, pictures, main: document.querySelectorAll('main, [role="main"]').length,
          navigation: document.querySelectorAll('nav, [role="navigation"]').length,
          formulas: formulas.length,
          mathml: formulas.filter(f => f.querySelector('mjx-assistive-mml math')).length};
}"""


NO_TRANSITIONS = "*, *::before, *::after { transition: none !important; animation: none !important; }"


def _dark(page) -> None:
    """Dark mode, as the theme's switch sets it (and as the system's preference would), with the
    colours' transitions off: audited halfway, a button read 1.05:1 against its own background."""
    page.emulate_media(color_scheme="dark", reduced_motion="reduce")
    page.add_style_tag(content=NO_TRANSITIONS)
    page.evaluate("() => { document.documentElement.dataset.mode = 'dark'; "
                  "document.documentElement.dataset.theme = 'dark'; }")
    page.wait_for_timeout(100)


def _summary(violations) -> dict:
    out = {}
    for v in violations:
        out[f"{v['impact']}:{v['id']}"] = out.get(f"{v['impact']}:{v['id']}", 0) + len(v["nodes"])
    return out


def _report(rel, findings) -> None:
    edition, name = ("zh", rel.removeprefix(ZH)) if rel.startswith(ZH) else ("en", rel)
    path = REPORTS / edition / (name.removesuffix(".html").replace("/", "__") + ".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(findings, indent=1, ensure_ascii=False), encoding="utf-8")


@pytest.mark.parametrize("rel", BOTH_EDITIONS or ["(no build)"])
def test_page_is_accessible_in_light_and_dark_mode(site, axe_js, rel):  # noqa: F811
    base, browser = site
    with open_page(browser, base, rel) as (page, _):
        page.wait_for_timeout(300)                        # the explorers render after the page has loaded
        structure = page.evaluate(STRUCTURE_JS)
        light = audit(page, axe_js)
        _dark(page)
        dark = audit(page, axe_js, COLOUR_RULES)
    _report(rel, {"light": _summary(light), "dark (colour rules)": _summary(dark), "structure": structure,
                  "violations": {"light": light, "dark": dark}})
    failing = [(mode, v["impact"], v["id"], v["help"], [n["target"] for n in v["nodes"]][:5])
               for mode, found in (("light", light), ("dark", dark)) for v in found if v["impact"] in FAILING]
    assert failing == [], f"{rel}: serious or critical accessibility violations: {failing}"
    assert len(structure["h1"]) == 1 and structure["first"] == 1, f"{rel}: not one h1 first: {structure['h1']}"
    assert structure["skips"] == [], f"{rel}: headings skip a level: {structure['skips']}"
    assert structure["main"] == 1 and structure["navigation"] >= 1, f"{rel}: landmarks: {structure}"
    assert structure["images"] == [], f"{rel}: images without a description (a path, a hash or nothing): " \
                                      f"{structure['images']}"
    assert structure["pictures"] == [], f"{rel}: explorer pictures without a name: {structure['pictures']}"
    assert structure["mathml"] == structure["formulas"], (f"{rel}: {structure['formulas'] - structure['mathml']} "
                                                          "formulas without assistive MathML")


# --- The keyboard walk --------------------------------------------------------------------------------------

# The focused element: its role and accessible name as the browser exposes them (Playwright's ARIA
# snapshot of the element), and where it is.
FOCUS_JS = """(explorer) => {
  const el = document.activeElement;
  const inside = explorer.contains(el);
  return {inside, tag: el.tagName.toLowerCase(), role: el.getAttribute('role') || '',
          pressed: el.getAttribute('aria-pressed'), now: el.getAttribute('aria-valuenow'),
          max: el.getAttribute('aria-valuemax'), index: el.selectedIndex, options: el.options ? el.options.length : 0,
          text: (el.textContent || '').trim().slice(0, 40)};
}"""
ANNOUNCED_JS = "ex => { const r = ex.querySelector('.attnlab-announcer'); return r ? r.textContent : null; }"


def _keys_for(focus: dict) -> list[str] | None:
    """The key that moves the focused control, or None for a stop that is no control to move."""
    if focus["tag"] == "select":
        return ["ArrowUp"] if focus["index"] == focus["options"] - 1 else ["ArrowDown"]
    if focus["role"] == "slider":
        return ["ArrowLeft"] if focus["now"] == focus["max"] else ["ArrowRight"]
    if focus["tag"] == "button":
        return None if focus["pressed"] == "true" else ["Enter"]
    if focus["tag"] == "input":
        return ["Space"]
    return None


def walk(page, explorer) -> list[dict]:
    """Tab through ``explorer`` from just before it, moving every control; what each announced."""
    explorer.scroll_into_view_if_needed()
    page.wait_for_function("ex => ex.querySelector('.attnlab-announcer')", arg=explorer.element_handle(),
                           timeout=10000)
    explorer.evaluate("""ex => { const start = document.createElement('span'); start.tabIndex = -1;
                                 start.className = 'attn-walk-start'; ex.before(start); start.focus(); }""")
    steps = []
    for _ in range(40):
        page.keyboard.press("Tab")
        focus = explorer.evaluate(FOCUS_JS)
        if not focus["inside"]:
            break
        name = page.locator(":focus").aria_snapshot()
        keys = _keys_for(focus)
        step = {"control": name, "keys": keys}
        if keys:
            before = explorer.evaluate(ANNOUNCED_JS)
            for key in keys:
                page.keyboard.press(key)
            try:
                page.wait_for_function(f"ex => ({ANNOUNCED_JS})(ex) !== {json.dumps(before)}",
                                       arg=explorer.element_handle(), timeout=3000)
            except Exception:                             # noqa: BLE001  (reported by the assertion below)
                pass
            step["announced"] = explorer.evaluate(ANNOUNCED_JS)
            step["changed"] = step["announced"] != before
        steps.append(step)
    return steps


def _named(snapshot: str) -> bool:
    """An ARIA snapshot line such as '- slider "T": 6' or '- combobox "pattern"' names its element."""
    first = snapshot.strip().splitlines()[0]
    return bool(re.match(r'^- \w+ "[^"]+"', first))


WALK_PAGES = [p for p in EXPLORER_PAGES if p in PAGES] + [ZH + p for p in EXPLORER_PAGES if ZH + p in ZH_PAGES]


@pytest.mark.parametrize("rel", WALK_PAGES or ["(no build)"])
def test_every_explorer_works_with_the_keyboard_alone(site, rel):  # noqa: F811
    base, browser = site
    with open_page(browser, base, rel) as (page, watch):
        explorers = page.locator(".cell_output .attnlab-explorer")
        page.wait_for_timeout(300)
        count = EXPLORER_PAGES[rel.removeprefix(ZH)]
        assert explorers.count() == count, f"{rel}: {explorers.count()} explorers, expected {count}"
        walks = [walk(page, explorers.nth(k)) for k in range(count)]
        assert watch.console_errors == [], watch.console_errors
    path = REPORTS / ("zh" if rel.startswith(ZH) else "en") / "keyboard-walk"
    path.mkdir(parents=True, exist_ok=True)
    (path / (rel.removeprefix(ZH).split("/")[-1].removesuffix(".html") + ".json")).write_text(
        json.dumps(walks, indent=1, ensure_ascii=False), encoding="utf-8")
    for k, steps in enumerate(walks):
        moved = [s for s in steps if s["keys"]]
        assert len(moved) >= 2, f"{rel}, explorer {k}: the keyboard reached {len(moved)} controls: {steps}"
        unnamed = [s["control"] for s in steps if not _named(s["control"])]
        assert unnamed == [], f"{rel}, explorer {k}: controls without an accessible name: {unnamed}"
        silent = [s for s in moved if not (s["changed"] and s["announced"])]
        assert silent == [], f"{rel}, explorer {k}: a control moved and nothing was announced: {silent}"
        if rel.startswith(ZH):
            english = [s["announced"] for s in moved if not CJK.search(s["announced"])]
            assert english == [], f"{rel}, explorer {k}: announced in English on a Chinese page: {english}"
