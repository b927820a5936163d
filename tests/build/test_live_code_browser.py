""""Run the code" in headless Chromium, with every request off 127.0.0.1 blocked (issue 30).

On ch01-ch04 and ex01-ex04 (English) and on ch01 and ex02 (Chinese): nothing of Pyodide loads before
Run; after it, every cell the build marked as runnable runs without error, its live output agrees with
the book's output to a tolerance (numbers to 1e-3, the rest word for word), and the other cells say
why they cannot run; an edited cell runs and shows its new output. On ex01 and ex02 the checkers run
in the page and name a mistake exactly as they do under CPython here; on ch01 figures appear, and
the page after Run passes the accessibility audit (axe, light and dark). A browser without
WebAssembly, and a book whose Pyodide files are missing, get a message, and the book's outputs stay.
Stop ends a cell that never returns, and Python starts again. The time from Run to the first output
is written to _build/live-code-timings.json (reported, never asserted).
"""
from __future__ import annotations

import json
import re

import pytest

from tests.build.browser_support import CHROMIUM_ARGS, ROOT, chromium_path, missing_build, serve
from tests.build.test_a11y_browser import COLOUR_RULES, FAILING, _dark, audit, axe_js  # noqa: F401 (a fixture)

pytestmark = pytest.mark.browser
BUILD = ROOT / "_build"
TIMINGS = BUILD / "live-code-timings.json"
PAGES = [("html", p) for p in ("chapters/01_qkv", "chapters/02_scaling_softmax", "chapters/03_masks",
                               "chapters/04_worked_examples", "exercises/ex01_qkv", "exercises/ex02_scaling",
                               "exercises/ex03_masks", "exercises/ex04_worked")]
PAGES += [("zh/html", "chapters/01_qkv"), ("zh/html", "exercises/ex02_scaling")]
FINISHED = "() => /has run|已全部运行|could not|无法启动/.test(document.querySelector('.live-status').textContent)"
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


@pytest.fixture(scope="module")
def browser():
    if not (BUILD / "html" / "index.html").exists():
        missing_build("no built book in _build/html: run `make book` first")
    if chromium_path() is None:
        missing_build("Chromium is not installed (Debian: apt-get install chromium)")
    playwright = pytest.importorskip("playwright.sync_api")
    with serve(BUILD) as base, playwright.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield base, chromium
        chromium.close()


class Visit:
    """A page in its own context: every request recorded, those off the book's server blocked."""

    def __init__(self, browser, folder: str, page: str, init_script: str = "", block: str = ""):
        base, chromium = browser
        if not (BUILD / folder / f"{page}.html").exists():
            missing_build(f"no {folder}/{page}.html: build that edition first")
        self.context = chromium.new_context(viewport={"width": 1280, "height": 900})
        self.requests, self.blocked, self.errors = [], [], []

        def route(r):
            url = r.request.url
            self.requests.append(url)
            if (url.startswith(base) and not (block and block in url)) or url.startswith("data:"):
                r.continue_()
            else:
                self.blocked.append(url)
                r.abort()

        self.context.route("**/*", route)
        if init_script:
            self.context.add_init_script(init_script)
        self.page = self.context.new_page()
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(f"{base}/{folder}/{page}.html", wait_until="networkidle")

    def run(self) -> float:
        before = list(self.requests)
        early = [u for u in before if "/pyodide/" in u or "live-code-" in u]
        assert not early, f"more than the button loaded before Run: {early}"
        self.page.click("button.live-run")
        self.page.wait_for_function(FINISHED, timeout=300_000)
        return self.page.evaluate("window.liveCode.firstOutputSeconds")

    def close(self):
        self.context.close()


def agree(book: str, live: str, numbers: bool = True) -> bool:
    """The same text, with every number within 1e-3 (absolute or relative): NumPy versions differ."""
    words = lambda text: NUMBER.sub("#", " ".join(text.split()))   # noqa: E731
    if words(book) != words(live):
        return False
    if not numbers:
        return True
    pairs = zip(NUMBER.findall(book), NUMBER.findall(live))
    return all(abs(float(a) - float(b)) <= 1e-3 * max(1.0, abs(float(a))) for a, b in pairs)


def record(folder: str, page: str, seconds: float) -> None:
    timings = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}
    timings[f"{folder}/{page}"] = round(seconds, 2)
    TIMINGS.write_text(json.dumps(timings, indent=1, sort_keys=True))


@pytest.mark.parametrize(("folder", "page"), PAGES)
def test_run_edit_and_compare(browser, axe_js, folder, page):   # noqa: F811
    visit = Visit(browser, folder, page)
    try:
        record(folder, page, visit.run())
        p = visit.page
        status = p.inner_text(".live-status")
        assert "could not" not in status and "无法" not in status, status
        cells = p.query_selector_all(".cell.live-runs")
        assert cells, "no cell of the page runs in the browser"
        compared = 0
        for number, cell in enumerate(cells, 1):
            assert cell.query_selector(".live-output"), f"cell {number} shows no live output"
            error = cell.query_selector(".live-error")
            assert error is None, f"cell {number}: {error.inner_text()[-500:]}"
            book = cell.query_selector(".cell_output")
            live = cell.eval_on_selector_all(".live-output > pre", "els => els.map(e => e.textContent).join('')")
            book_text = book.eval_on_selector_all("pre", "els => els.map(e => e.textContent).join('')") if book else ""
            if book_text and live and not book.query_selector("img, table"):
                # a cell drawing from the page's generator gets other draws when a cell before it that
                # drew too cannot run here: its numbers differ, its text must not
                draws = bool(re.search(r"\brng\b", cell.query_selector(".live-editor").input_value()))
                assert agree(book_text, live, numbers=not draws), \
                    f"cell {number}: the book shows\n{book_text}\nthe page computed\n{live}"
                compared += 1
        for cell in p.query_selector_all(".cell.live-static"):
            assert cell.query_selector(".live-static-note"), "a cell that cannot run does not say why"
        last = [c for c in cells if c.is_visible()][-1]      # not one in a folded "Going deeper" section
        editor = last.query_selector(".live-editor")
        editor.fill(editor.input_value() + '\nprint("edited", 6 * 7)')
        last.query_selector(".live-cell-run").click()
        p.wait_for_function("c => /edited 42/.test(c.querySelector('.live-output').textContent)", arg=last,
                            timeout=60_000)
        assert not visit.blocked and not visit.errors, (visit.blocked, visit.errors)
        if page.startswith("chapters/01"):
            widths = p.eval_on_selector_all("img.live-figure", "els => els.map(e => e.naturalWidth)")
            assert widths and min(widths) > 100
            light = audit(p, axe_js)
            _dark(p)
            dark = audit(p, axe_js, COLOUR_RULES)
            failing = [(v["impact"], v["id"], [n["target"] for n in v["nodes"]][:3]) for v in light + dark
                       if v["impact"] in FAILING]
            assert failing == [], f"after Run: serious or critical accessibility violations: {failing}"
        if page in WRONG:
            a_checker_names_the_mistake(visit, folder, page)
        assert compared or page.startswith("exercises"), "no printed output was compared with the book's"
    finally:
        visit.close()


def checker_verdict(folder: str, check: str, code: str) -> str:
    """What the checker says of ``code`` under CPython here, in the edition's language."""
    import attnlab
    import attnlab.checks as C
    namespace = {}
    exec("import numpy as np\n" + code, namespace)
    attnlab.set_language("zh_CN" if folder.startswith("zh") else "en")
    try:
        function = [v for k, v in namespace.items() if callable(v) and k != "np"][0]
        return getattr(C, check)(function, **({"masks_too": False} if check == "check_attention" else {})).message
    finally:
        attnlab.set_language("en")


WRONG = {
    "exercises/ex02_scaling": (5, 6, "check_softmax", "def softmax(x):\n    e = np.exp(x)\n"
                               "    return e / e.sum(axis=0, keepdims=True)\n"),
    "exercises/ex01_qkv": (6, 7, "check_attention", "def attention(q, k, v, allowed=None):\n"
                           "    s = q @ k.swapaxes(-1, -2)\n    e = np.exp(s - s.max(-1, keepdims=True))\n"
                           "    return (e / e.sum(-1, keepdims=True)) @ v\n"),
}


def a_checker_names_the_mistake(visit, folder, page):
    """A wrong solution, run in the page: the checker's verdict is CPython's here, word for word."""
    solution, check_cell, check, code = WRONG[page]
    expected = " ".join(checker_verdict(folder, check, code).replace("`", "").split())   # `code` shows as code
    cells = visit.page.query_selector_all(".cell.live-runs")
    cells[solution - 1].query_selector(".live-editor").fill(code)
    cells[solution - 1].query_selector(".live-cell-run").click()
    cells[check_cell - 1].query_selector(".live-cell-run").click()     # the worker runs them in order
    last_sentence = expected.rsplit(". ", 1)[-1][:60] if not folder.startswith("zh") else expected[-40:]
    visit.page.wait_for_function("([c, s]) => c.querySelector('.live-output').textContent.replace(/\\s+/g, ' ')"
                                 ".includes(s)", arg=[cells[check_cell - 1], last_sentence], timeout=60_000)


def test_without_webassembly_the_page_says_so_and_keeps_its_outputs(browser):
    visit = Visit(browser, "html", "chapters/01_qkv", init_script="delete window.WebAssembly;")
    try:
        assert visit.page.is_disabled("button.live-run")
        assert "lacks WebAssembly" in visit.page.inner_text(".live-status")
        assert visit.page.query_selector(".cell_output").is_visible()
    finally:
        visit.close()


def test_with_the_pyodide_files_missing_the_page_says_so_and_keeps_its_outputs(browser):
    visit = Visit(browser, "html", "chapters/01_qkv", block="/pyodide/")
    try:
        visit.run()
        assert "could not be started" in visit.page.inner_text(".live-status")
        assert visit.page.query_selector(".cell_output").is_visible()
        assert not visit.page.query_selector(".live-output") and not visit.errors
    finally:
        visit.close()


def test_stop_ends_a_cell_that_never_returns_and_python_starts_again(browser):
    visit = Visit(browser, "html", "exercises/ex02_scaling")
    try:
        visit.run()
        p = visit.page
        cells = p.query_selector_all(".cell.live-runs")
        cells[1].query_selector(".live-editor").fill("while True:\n    pass")
        cells[1].query_selector(".live-cell-run").click()
        stop = cells[1].query_selector(".live-stop")
        stop.wait_for_element_state("visible", timeout=30_000)
        stop.click()
        p.wait_for_function("() => /Stopped/.test(document.querySelector('.live-status').textContent)",
                            timeout=120_000)
        cells[1].query_selector(".live-editor").fill("print(6 * 7)")
        cells[1].query_selector(".live-cell-run").click()
        p.wait_for_function("c => /42/.test(c.querySelector('.live-output').textContent)", arg=cells[1],
                            timeout=60_000)
        assert not visit.errors
    finally:
        visit.close()
