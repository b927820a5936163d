"""Workaround (no issue filed upstream; report at executablebooks/MyST-Parser): a footnote reference in
a translated paragraph (``SDPA[^sdpa]``) stays a reference. Remove when it resolves on its own.

MyST reads ``[^label]`` as a footnote reference only where the footnote is defined, and Sphinx
parses a translated paragraph alone (``sphinx.transforms.i18n.publish_msgstr``), so the
reference became text. Stub definitions follow the translation (only the paragraph, the first
node, is used: Sphinx then links the reference to the page's real footnote). Remove when a
translated MyST footnote reference resolves on its own: the Chinese edition then builds -W without
this extension.
"""
from __future__ import annotations

import re

from sphinx.transforms import i18n

_FOOTNOTE_REF = re.compile(r"\[\^(?P<label>[^\]\s]+)\](?!:)")


def with_footnote_stubs(source: str) -> str:
    labels = dict.fromkeys(m["label"] for m in _FOOTNOTE_REF.finditer(source))
    return source + "".join(f"\n\n[^{label}]: ." for label in labels)


def _publish_with_footnote_stubs(publish):
    def publish_msgstr(app, source, source_path, source_line, config, settings):
        return publish(app, with_footnote_stubs(source), source_path, source_line, config, settings)
    publish_msgstr.with_footnote_stubs = True
    return publish_msgstr


def setup(app):
    if not getattr(i18n.publish_msgstr, "with_footnote_stubs", False):
        i18n.publish_msgstr = _publish_with_footnote_stubs(i18n.publish_msgstr)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
