"""Workaround (no issue filed upstream; report at executablebooks/MyST-NB): a ``{glue:text}`` role in
a translated paragraph finds the page's computed number. Remove when it resolves on its own.

Sphinx parses each translated paragraph as a small document of its own
(``sphinx.transforms.i18n.publish_msgstr``), which has no notebook attached, so myst-nb's glue roles
found no glue data ("No key ... found in glue data for this document"). Before a translation is
parsed, its glue roles are pointed at the page itself (``{glue:text}`page.md::key```), which myst-nb
resolves from the page's glue cache; translators write the short form, as in the English text.
Remove when a translated glue role resolves on its own: the Chinese edition then builds -W
without this extension.
"""
from __future__ import annotations

import re
from pathlib import Path

from sphinx.transforms import i18n

_GLUE_ROLE = re.compile(r"\{glue(?::(?P<kind>\w+))?\}`(?P<body>[^`]+)`")


def _on_page(page: str, match: re.Match) -> str:
    body = match["body"]
    if "::" in body:
        return match[0]
    if match["kind"] == "text" and ":" not in body:
        body += ":s"        # myst-nb reads "page.md::key" without a format as key "page.md:"
    return match[0].replace(f"`{match['body']}`", f"`{page}::{body}`")


def _publish_with_page_glue(publish):
    def publish_msgstr(app, source, source_path, source_line, config, settings):
        page = Path(source_path).name
        return publish(app, _GLUE_ROLE.sub(lambda m: _on_page(page, m), source), source_path, source_line,
                       config, settings)
    publish_msgstr.with_page_glue = True
    return publish_msgstr


def setup(app):
    if not getattr(i18n.publish_msgstr, "with_page_glue", False):
        i18n.publish_msgstr = _publish_with_page_glue(i18n.publish_msgstr)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
