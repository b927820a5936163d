"""The Chinese PDF (`make pdf-zh`), read back with poppler like the English one (tests/test_pdf.py).

Without it these tests skip; `make test-pdf` (CI) sets REQUIRE_PDF=1 and then they fail instead.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import polib
import pytest

from tests.test_pdf import ROOT, WIDGET_REPRS, flat, poppler, skip_or_fail, title, toc_documents

PDF = ROOT / "_build" / "pdf" / "attention-computed-zh.pdf"
LATEX_LOG = ROOT / "_build" / "zh" / "_build" / "latex" / "attention-computed-zh.log"
ZH_HTML = ROOT / "_build" / "zh" / "html"
CATALOGS = ROOT / "locale" / "zh_CN" / "LC_MESSAGES"
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def pdf() -> Path:
    if not PDF.exists():
        skip_or_fail(f"no built PDF at {PDF.relative_to(ROOT)}: run `make pdf-zh` first")
    if shutil.which("pdftotext") is None or shutil.which("pdffonts") is None:
        skip_or_fail("poppler tools missing; Debian: apt-get install poppler-utils")
    return PDF


@pytest.fixture(scope="module")
def pages(pdf) -> list[str]:
    return [flat(p) for p in poppler("pdftotext", str(pdf), "-").split("\f")[:-1]]


def zh_title(doc: str) -> str:
    """The page's title as the Chinese edition prints it: its translation in the page's catalog."""
    english = title(doc)
    entries = {e.msgid.replace("`", ""): e.msgstr for e in polib.pofile(str(CATALOGS / f"{doc}.po"))}
    return entries[english].replace("`", "")


def test_every_page_title_is_in_the_pdf_in_chinese(pages):
    text = "".join(pages).replace(" ", "")
    missing = [zh_title(doc) for doc in toc_documents() if flat(zh_title(doc)).replace(" ", "") not in text]
    assert not missing, f"Chinese titles not found in the PDF: {missing}"


def test_the_captions_are_chinese(pages):
    front = " ".join(pages[:12])
    assert "目录" in front, "the table of contents is not headed 目录"
    text = " ".join(pages)
    assert "第 1 章" in text or "第1章" in text.replace(" ", ""), "numbered chapters are not headed 第 N 章"
    assert not re.search(r"\bContents\b|\bChapter \d", front), "English LaTeX captions are left"


def test_the_pdf_is_chinese_and_resolves_every_reference(pdf, pages):
    text = " ".join(pages)
    assert "??" not in text, "an unresolved \\ref or \\cite prints as ??"
    share = len(CJK.findall(text)) / max(1, len(re.findall(r"[A-Za-z]", text)))
    assert share > 0.25, f"{share:.2f} CJK characters per Latin letter (code included): not translated?"
    assert not [r for r in WIDGET_REPRS if r in text], "an explorer printed as its text repr"
    n = len(pages)
    assert 4 * len(toc_documents()) <= n <= 40 * len(toc_documents()), f"{n} pages"


def test_latex_log_has_no_undefined_reference_or_missing_glyph(pdf):
    if not LATEX_LOG.exists():
        skip_or_fail(f"no LaTeX log at {LATEX_LOG.relative_to(ROOT)}")
    log = LATEX_LOG.read_text(errors="replace")
    assert "There were undefined references" not in log
    missing = sorted(set(re.findall(r"Missing character: There is no (.) ", log)))
    assert not missing, f"characters the fonts lack (dropped from the PDF): {missing}"


def test_a_simplified_chinese_font_is_embedded(pdf):
    fonts = [f for f in poppler("pdffonts", str(pdf)).splitlines()[2:] if "CJK" in f]
    assert fonts and all(f.split()[-5] == "yes" for f in fonts), fonts


def test_the_chinese_html_edition_links_its_pdf(pdf):
    root = ZH_HTML / f"{toc_documents()[0]}.html"
    if not root.exists() or root.stat().st_mtime < pdf.stat().st_mtime:
        skip_or_fail("the Chinese edition was not built after its PDF (make pdf-zh, then make book-zh)")
    assert (ZH_HTML / PDF.name).stat().st_size == pdf.stat().st_size
    assert f'href="{PDF.name}"' in root.read_text()
