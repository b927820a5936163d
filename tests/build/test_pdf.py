"""The PDF book (`make pdf`), read back with poppler's pdftotext, pdfinfo, pdffonts and pdftohtml.

Without a built PDF these tests skip with a message; `make test-pdf` (CI) sets REQUIRE_PDF=1,
and then a missing PDF or missing poppler tools fail instead.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PDF = ROOT / "_build" / "pdf" / "attention-computed.pdf"
LATEX_LOG = ROOT / "_build" / "latex" / "attention-computed.log"
HTML = ROOT / "_build" / "html"
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
EXPLORER_CALL = re.compile(r"al\.widgets\.(?:\w+\.)?(\w+_explorer)\(")
WIDGET_REPRS = ("IntSlider(", "SelectionSlider(", "ToggleButtons(", "VBox(children", "HBox(children", "Frames(",
                "<Diagram diag-")
DIAGRAM_FIGURE = re.compile(r":  figure:\n:    caption: \|\n((?::      [^\n]*\n)+):    name: (diag-[\w-]+)")


def require_pdf() -> bool:
    """make test-pdf sets REQUIRE_PDF=1: a missing PDF is then a failure, not a skip."""
    return os.environ.get("REQUIRE_PDF") == "1"


def skip_or_fail(message: str):
    if require_pdf():
        pytest.fail(message)
    pytest.skip(message)


def poppler(*args: str) -> str:
    return subprocess.run(list(args), check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def pdf() -> Path:
    if not PDF.exists():
        skip_or_fail(f"no built PDF at {PDF.relative_to(ROOT)}: run `make pdf` first")
    missing = [t for t in ("pdftotext", "pdfinfo", "pdffonts", "pdftohtml") if shutil.which(t) is None]
    if missing:
        skip_or_fail(f"poppler tools missing ({', '.join(missing)}); Debian: apt-get install poppler-utils")
    return PDF


def flat(text: str) -> str:
    """NFKC (ligatures like 'ﬁ' become 'fi') and every run of white space one blank."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text))


@pytest.fixture(scope="module")
def pages(pdf) -> list[str]:
    """The text of each page (pdftotext ends every page with a form feed)."""
    return [flat(p) for p in poppler("pdftotext", str(pdf), "-").split("\f")[:-1]]


@pytest.fixture(scope="module")
def text(pages) -> str:
    return " ".join(pages)


@functools.cache
def toc_documents() -> list[str]:
    """Every document of the full book's table of contents, in order (root first)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    docs = [toc["root"]]
    for part in toc["parts"]:
        docs += [c["file"] for c in part["chapters"]]
    return docs


def title(doc: str) -> str:
    """The page's first level-1 heading, its Markdown code marks removed."""
    for line in (ROOT / f"{doc}.md").read_text().splitlines():
        if line.startswith("# "):
            return line[2:].replace("`", "").strip()
    raise AssertionError(f"{doc}.md has no level-1 heading")


def explorer_cells() -> list[tuple[str, str]]:
    """(document, explorer name) for every explorer a code cell of the book displays."""
    return [(doc, name) for doc in toc_documents()
            for cell in CODE_CELL.findall((ROOT / f"{doc}.md").read_text())
            for name in EXPLORER_CALL.findall(cell)]


def test_every_page_title_is_in_the_pdf(text):
    missing = [title(doc) for doc in toc_documents() if flat(title(doc)) not in text]
    assert not missing, f"titles not found in the PDF: {missing}"


def test_toc_lists_the_chapters(pages):
    toc_pages = [i for i, p in enumerate(pages[:12]) if "Contents" in p]
    assert toc_pages, "no table of contents in the first pages"
    toc = " ".join(pages[toc_pages[0]:toc_pages[0] + 6])             # five pages for twelve chapters
    for doc in toc_documents()[1:]:
        assert flat(title(doc))[:30] in toc, f"{doc} is not in the table of contents"


def test_no_unresolved_reference(text):
    assert "??" not in text, "an unresolved \\ref or \\cite prints as ??"
    for marker in ("[?]", "<unknown>", "undefined label", "<inline classes=", "<reference "):
        assert marker not in text, f"{marker!r} in the PDF (an unresolved or mis-rendered reference)"


def test_latex_log_has_no_undefined_reference_or_missing_glyph(pdf):
    if not LATEX_LOG.exists():
        skip_or_fail(f"no LaTeX log at {LATEX_LOG.relative_to(ROOT)} (make pdf leaves it there)")
    log = LATEX_LOG.read_text(errors="replace")
    assert "There were undefined references" not in log
    assert not re.findall(r"Reference `[^']*' on page \d+ undefined", log)
    missing = sorted(set(re.findall(r"Missing character: There is no (.) ", log)))
    assert not missing, f"characters the fonts lack (dropped from the PDF): {missing}"


def test_page_count_is_plausible(pdf):
    n = int(re.search(r"^Pages:\s+(\d+)", poppler("pdfinfo", str(pdf)), re.M).group(1))
    docs = len(toc_documents())
    assert 4 * docs <= n <= 40 * docs, f"{n} pages for {docs} documents"


def test_a_cjk_font_is_embedded_and_the_chinese_terms_are_text(pdf, text):
    fonts = poppler("pdffonts", str(pdf)).splitlines()[2:]
    cjk = [f for f in fonts if "CJK" in f]
    assert cjk, "no CJK font in the PDF"
    assert all(f.split()[-5] == "yes" for f in cjk), f"a CJK font is not embedded: {cjk}"
    glossary = (ROOT / "notation.md").read_text().split("Glossary", 1)[1]
    terms = set(re.findall(r"[\u4e00-\u9fff]+", glossary))
    assert len(terms) >= 10
    squeezed = text.replace(" ", "")
    missing = sorted(t for t in terms if t not in squeezed)
    assert not missing, f"glossary terms missing from the PDF: {missing}"


def test_no_widget_text_repr(text):
    found = [r for r in WIDGET_REPRS if r in text]
    assert not found, f"an explorer printed as its text repr: {found}"


def test_no_output_is_an_object_repr(text):
    # an output with HTML only (a pandas Styler) falls back to "<pandas...Styler at 0x7f...>" in LaTeX
    found = sorted(set(re.findall(r"<[\w.]+ (?:object )?at 0x[0-9a-f]+>", text)))
    assert not found, f"outputs printed as Python reprs, not as their content: {found}"


def picture_labels(pdf: Path, page: int) -> int:
    """Text pieces on a page set in DejaVu Sans, the explorers' SVG font (the book's text is Latin
    Modern, its code DejaVu Sans Mono, and matplotlib figures are PNGs): a converted SVG picture."""
    xml = poppler("pdftohtml", "-xml", "-i", "-q", "-f", str(page), "-l", str(page), "-stdout", str(pdf))
    root = ET.fromstring(re.sub(r"<!DOCTYPE[^>]*>", "", xml))
    sans = {f.get("id") for f in root.iter("fontspec") if f.get("family").endswith("+DejaVuSans")}
    return sum(t.get("font") in sans for t in root.iter("text"))


def test_every_explorer_is_a_picture_with_its_caption(pdf, pages):
    cells = explorer_cells()
    assert len(cells) >= 5, cells
    pages = [re.sub(r"(?<=[a-z])- (?=[a-z])", "", p) for p in pages]   # words hyphenated at a line end
    text = " ".join(pages)
    for name in sorted({n for _, n in cells}):
        caption = f"the initial state of {name}, a static picture. The interactive version is in the HTML book"
        expected = sum(n == name for _, n in cells)
        assert text.count(caption) == expected, f"{name}: caption {text.count(caption)} times, {expected} cells"
        for i, p in enumerate(pages):
            if caption[:40] in p:
                # the picture sits just above its caption: on the caption's page or the page before
                labels = picture_labels(pdf, i + 1) + (picture_labels(pdf, i) if i else 0)
                assert labels >= 5, f"{name}: no SVG picture near its caption on page {i + 1}"


def diagram_figures() -> list[tuple[str, str]]:
    """(label, caption) of every diagram figure (a code cell named diag-...) in the book."""
    return [(label, flat(" ".join(line[7:] for line in caption.splitlines())).strip())
            for doc in toc_documents()
            for caption, label in DIAGRAM_FIGURE.findall((ROOT / f"{doc}.md").read_text())]


def test_every_diagram_is_a_picture_above_its_caption(pdf, pages):
    figures = diagram_figures()
    assert len(figures) >= 8, figures
    pages = [re.sub(r"(?<=[a-z])- (?=[a-z])", "", p) for p in pages]   # words hyphenated at a line end
    for label, caption in figures:
        start = re.split(r"[$*`{]", caption)[0][:40]     # the plain words before any markup
        found = [i for i, p in enumerate(pages) if start in p]
        assert found, f"{label}: caption {start!r} not in the PDF"
        i = found[0]
        # the converted SVG's labels are DejaVu Sans text: on the caption's page or the page before
        labels = picture_labels(pdf, i + 1) + (picture_labels(pdf, i) if i else 0)
        assert labels >= 3, f"{label}: no SVG picture near its caption on page {i + 1}"


def test_html_book_links_the_pdf(pdf):
    index = HTML / "index.html"
    if not index.exists() or index.stat().st_mtime < pdf.stat().st_mtime:
        skip_or_fail("the HTML book was not built after the PDF (make pdf, then make book)")
    copied = HTML / pdf.name
    assert copied.exists() and copied.stat().st_size == pdf.stat().st_size
    root = HTML / f"{toc_documents()[0]}.html"          # index.html only redirects to the root page
    assert 'href="attention-computed.pdf"' in root.read_text()
    chapter = HTML / "chapters" / "01_qkv.html"
    assert 'href="../attention-computed.pdf"' in chapter.read_text()


@pytest.mark.slow
@pytest.mark.parametrize("case", ["no pdf", "pdf", "student edition", "one-page build"])
def test_pdf_download_button_only_when_the_pdf_exists(tmp_path, case):
    """_ext/pdf_download.py in a two-page Sphinx project with the book's theme, built with -W."""
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "conf.py").write_text(                       # the extension is found through PYTHONPATH below
        "extensions = ['pdf_download']\nhtml_theme = 'sphinx_book_theme'\n"
        + ("" if case == "one-page build" else   # `jupyter-book build page.md` has no table of contents
           "def setup(app):\n    app.add_config_value('external_toc_path', '_toc.yml', 'env')\n"))
    (src / "index.rst").write_text("Book\n====\n\n.. toctree::\n\n   sub/page\n")
    (src / "sub" / "page.rst").write_text("Page\n====\n\nText.\n")
    if case != "no pdf":
        (src / "_build" / "pdf").mkdir(parents=True)
        (src / "_build" / "pdf" / "attention-computed.pdf").write_bytes(b"%PDF-1.5 stand-in\n")
    toc = ["-D", "external_toc_path=_toc_student.yml"] if case == "student edition" else []
    out = tmp_path / "html"
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", *toc, str(src), str(out)],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "_ext")})
    assert run.returncode == 0, run.stderr
    index, page = (out / "index.html").read_text(), (out / "sub" / "page.html").read_text()
    linked = case == "pdf"
    assert ("btn-download-book-pdf-button" in index) is linked
    assert ('href="attention-computed.pdf"' in index) is linked
    assert ('href="../attention-computed.pdf"' in page) is linked
    assert (out / "attention-computed.pdf").exists() is linked
