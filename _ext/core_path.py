"""Bespoke: a chapter's core path and its optional depth.

A section whose label starts with ``deeper-`` is optional depth ("Going deeper")::

    (deeper-trace-formula)=
    ## Going deeper: correlated coordinates

It gets the class ``going-deeper`` (``_assets/book.css`` sets it apart, ``_assets/going-deeper.js``
folds a long one behind a button), and the core path never depends on it. The role
``{reading-time}`core``` shows the reading time of the page's core path, computed from the
English source at build time (``bookbuild.reading_time``, which the notebooks use too; _config.yml's
``code_comments_i18n: .`` puts the build package on Sphinx's path).
"""
from __future__ import annotations

from pathlib import Path

from docutils import nodes

from bookbuild.reading_time import DEEPER, ReadingTime, reading_time, reading_time_text  # noqa: F401 (tests)


def reading_time_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    env = inliner.document.settings.env
    shown = reading_time_text(Path(env.doc2path(env.docname)).read_text("utf8"), env.config.language or "en")
    return [nodes.inline(rawtext, shown, classes=["reading-time"])], []


def mark_deeper_sections(app, doctree) -> None:
    for section in doctree.findall(nodes.section):
        if any(name.startswith(DEEPER) for name in section.get("names", []) + section.get("ids", [])):
            section["classes"].append("going-deeper")


def setup(app):
    app.add_role("reading-time", reading_time_role)
    app.connect("doctree-read", mark_deeper_sections)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
