"""Bespoke: in a translated edition the code a page shows speaks the reader's language in its comments.

Sphinx translates a page's prose through the page's catalog and leaves literal blocks as they are.
This extension translates the comments and docstrings of every Python block a page shows (its code
cells and its ``literalinclude`` of the package) through the same catalog, after the page is read,
so the HTML and the PDF get it alike; the code itself, and the package's files, do not change.
The messages and the rules (a shape comment like ``# (T, S)`` stays) are
``bookbuild.i18n.code_text``'s, which also extracts them and translates the Chinese notebooks and
assignments. _config.yml loads this extension with the path ``.``, which puts the book's root, and
so the build package, on Sphinx's path.
"""
from __future__ import annotations

from pathlib import Path

from docutils import nodes
from sphinx.locale import init as init_locale
from sphinx.util.i18n import docname_to_domain

from bookbuild.i18n.code_text import translate

PYTHON = {"python", "python3", "ipython", "ipython3", "py", "default", ""}


def translate_code(app, doctree: nodes.document) -> None:
    language = app.config.language
    if not language or language == "en" or app.builder.name == "gettext":
        return
    domain = docname_to_domain(app.env.docname, app.config.gettext_compact)
    dirs = [str(Path(app.srcdir, d)) for d in app.config.locale_dirs]
    catalog, found = init_locale(dirs, language, domain, namespace="code_comments")
    if not found:
        return

    def lookup(text: str) -> str | None:
        done = catalog.gettext(text)
        return done if done != text else None

    for block in doctree.findall(nodes.literal_block):
        if block.get("language", "") not in PYTHON or block.rawsource != block.astext():
            continue              # another language, or a parsed literal (it holds markup)
        source = block.astext()
        done = translate(source, lookup)
        if done != source:
            block.rawsource = done
            block.children = [nodes.Text(done)]


def setup(app):
    app.connect("doctree-read", translate_code)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
