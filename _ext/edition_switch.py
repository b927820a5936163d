"""Bespoke: a link on every page to its twin in the other edition.

A link on every page to the same page in the other edition (English <-> 中文).

The editions are built side by side: the English book in ``_build/html`` and the Chinese one in
``_build/zh/html``. Each page gets a ``<meta name="edition-switch">`` with the relative address of
its twin, and ``_assets/edition-switch.js`` turns it into a button in the page header. The
address is relative, so the switch works from ``file://`` and from any server that publishes the
``_build`` folder as it is (``/html/...`` and ``/zh/html/...``).

The Chinese edition always links to the English one (``make book-zh`` is built beside it). The
English edition links to the Chinese one only when ``_build/zh/html`` exists as its build starts
(``make book-zh`` before ``make book``, as CI does), so ``make book`` alone never links a missing
page. ``make books`` builds both editions side by side and says so with ``EDITION_TWIN=building``.
Only the full editions get the switch: the student edition withholds the solutions.
"""
from __future__ import annotations

import os
from html import escape
from pathlib import Path

OTHER = {  # edition -> (path from the other edition's html root, label of the link, its language)
    "en": ("../zh/html/", "中文", "zh-CN"),
    "zh": ("../../html/", "English", "en"),
}
FULL_TOCS = {"en": "_toc.yml", "zh": "_toc_zh.yml"}
KEY = "_edition_switch_on"


def _edition(app) -> str:
    return app.config.html_context.get("edition", "en")


def _decide(app) -> None:
    edition = _edition(app)
    toc = Path(getattr(app.config, "external_toc_path", None) or "").name
    twin_built = (edition == "zh" or os.environ.get("EDITION_TWIN") == "building"
                  or (Path(app.confdir) / "_build" / "zh" / "html" / "index.html").is_file())
    setattr(app, KEY, app.builder.format == "html" and toc == FULL_TOCS[edition] and twin_built)


def _add_switch(app, pagename, templatename, context, doctree):
    if not getattr(app, KEY, False):
        return
    root_to_other, label, lang = OTHER[_edition(app)]
    up = "../" * pagename.count("/")
    href = f"{up}{root_to_other}{pagename}.html"
    context["metatags"] = context.get("metatags", "") + (
        f'\n<meta name="edition-switch" content="{escape(href)}" data-label="{escape(label)}"'
        f' data-lang="{lang}">'
    )


def setup(app):
    app.connect("builder-inited", _decide)
    app.connect("html-page-context", _add_switch)
    app.add_js_file("edition-switch.js")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
