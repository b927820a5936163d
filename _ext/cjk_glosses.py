"""Bespoke: the Chinese glosses of the English prose get ``lang="zh"`` (a font and a voice of their own).

Mark the Chinese glosses of the prose as Chinese: ``<span lang="zh" class="zh">键</span>``.

Without ``lang``, a browser picks a font for CJK characters by itself; on many systems that is
a Japanese or a calligraphic face. The span lets the stylesheet (``_assets/book.css``) give
the glosses a CJK font stack and lets screen readers switch voice. Code, math and raw
output are left as they are.
"""
from __future__ import annotations

import re

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

# Han ideographs (with extension A and compatibility forms), CJK punctuation, full-width forms
CJK_RUN = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]+")
SKIP = (nodes.literal, nodes.literal_block, nodes.math, nodes.math_block, nodes.raw, nodes.comment,
        nodes.FixedTextElement)


def gloss(text: str) -> nodes.inline:
    """The inline node of one run of Chinese text (docutils writes a ``language-`` class as ``lang``)."""
    return nodes.inline(text, text, classes=["language-zh", "zh"])


def split_cjk(text: str) -> list[nodes.Node]:
    """Text nodes for the other characters, :func:`gloss` nodes for each run of CJK characters."""
    out, last = [], 0
    for m in CJK_RUN.finditer(text):
        if m.start() > last:
            out.append(nodes.Text(text[last:m.start()]))
        out.append(gloss(m.group()))
        last = m.end()
    if last < len(text):
        out.append(nodes.Text(text[last:]))
    return out


def _skipped(node: nodes.Node) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, SKIP) or "zh" in parent.get("classes", ()):
            return True
        parent = parent.parent
    return False


class MarkChineseGlosses(SphinxPostTransform):
    default_priority = 900          # after references are resolved: their titles are marked too
    formats = ("html",)

    def run(self, **kwargs) -> None:
        for text in list(self.document.findall(nodes.Text)):
            if not CJK_RUN.search(text) or text.parent is None or _skipped(text):
                continue
            text.parent.replace(text, split_cjk(str(text)))


def setup(app):
    app.add_post_transform(MarkChineseGlosses)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
