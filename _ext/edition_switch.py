"""A link on every page to the same page in the other edition (English <-> 中文).

The editions are built side by side: the English book in ``_build/html`` and the Chinese one in
``_build/zh/html``. Each page gets a ``<meta name="edition-switch">`` with the relative address of
its twin, and ``_assets/edition-switch.js`` turns it into a button in the page header. The
address is relative, so the switch works from ``file://`` and from any server that publishes the
``_build`` folder as it is (``/html/...`` and ``/zh/html/...``).
"""
from html import escape

OTHER = {  # edition -> (path from the other edition's html root, label of the link, its language)
    "en": ("../zh/html/", "中文", "zh-CN"),
    "zh": ("../../html/", "English", "en"),
}


def _add_switch(app, pagename, templatename, context, doctree):
    edition = app.config.html_context.get("edition", "en")
    root_to_other, label, lang = OTHER[edition]
    up = "../" * pagename.count("/")
    href = f"{up}{root_to_other}{pagename}.html"
    context["metatags"] = context.get("metatags", "") + (
        f'\n<meta name="edition-switch" content="{escape(href)}" data-label="{escape(label)}"'
        f' data-lang="{lang}">'
    )


def setup(app):
    app.connect("html-page-context", _add_switch)
    app.add_js_file("edition-switch.js")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
