"""Bespoke: the header's PDF button, only when the PDF has been built.

A "download the book as a PDF" button in the header of every HTML page, once `make pdf` built it.

When ``pdf_download_file`` (relative to the book's root) exists as the HTML build starts, the PDF
is copied into the HTML output and every page's header gets a link to it (a sphinx-book-theme
header button). Without the PDF this extension does nothing, so the HTML book builds -W clean on
its own and never links a missing file. Only the edition built from ``pdf_download_toc`` gets the
link: the PDF holds the solutions, and the student edition has another table of contents.
"""
from __future__ import annotations

import shutil
from pathlib import Path

KEY = "_pdf_download_path"
TOOLTIPS = {"en": "Download the whole book as a PDF", "zh": "下载整本书的 PDF"}


def _find_pdf(app) -> None:
    setattr(app, KEY, None)
    if app.builder.format != "html":
        return
    toc = Path(getattr(app.config, "external_toc_path", None) or "").name   # none in a one-page build
    pdf = Path(app.confdir) / app.config.pdf_download_file
    if toc == app.config.pdf_download_toc and pdf.is_file():
        setattr(app, KEY, pdf)


def _add_button(app, pagename, templatename, context, doctree) -> None:
    pdf = getattr(app, KEY, None)
    if pdf is None or "header_buttons" not in context:
        return
    context["header_buttons"].insert(0, {
        "type": "link",
        "url": context["pathto"](pdf.name, 1),
        "tooltip": TOOLTIPS["zh" if (app.config.language or "").startswith("zh") else "en"],
        "icon": "fas fa-file-pdf",
        "label": "download-book-pdf-button",
    })


def _copy_pdf(app, exception) -> None:
    pdf = getattr(app, KEY, None)
    if exception is None and pdf is not None:
        shutil.copy2(pdf, Path(app.outdir) / pdf.name)


def setup(app):
    app.add_config_value("pdf_download_file", "_build/pdf/attention-computed.pdf", "html")
    app.add_config_value("pdf_download_toc", "_toc.yml", "html")
    app.connect("builder-inited", _find_pdf)
    app.connect("html-page-context", _add_button, priority=502)  # after the theme's buttons (501)
    app.connect("build-finished", _copy_pdf)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
