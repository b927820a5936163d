"""Bespoke: inline math and the punctuation next to it stay on one line.

Keep inline math and the punctuation next to it on one line: ``$x$,`` or ``$T$。``.

MathJax draws inline math as an inline-block, and a browser may break a line after an inline-block
even before a comma or a full stop, which then starts the next line. No stylesheet rule can reach
the text node after the formula, so this post-transform wraps the formula together with the
closing punctuation right after it (and the opening punctuation right before it, "($x$") in
``<span class="math-nowrap">``, which ``_assets/book.css`` sets ``white-space: nowrap``.
"""
from __future__ import annotations

import re

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

CLOSING = re.compile(r"^[,.;:!?)\]}'\"\u2019\u201d\u2026\-"
                     r"\u3001\u3002\uff0c\uff0e\uff1b\uff1a\uff01\uff1f\uff09\uff3d\u3009\u300b\u300d\u300f\u3011]+")
OPENING = re.compile(r"[(\[{\u2018\u201c\uff08\uff3b\u3008\u300a\u300c\u300e\u3010]+$")
CLASS = "math-nowrap"


def glue(math: nodes.math) -> bool:
    """Wrap ``math`` with the punctuation that touches it; False if there is none."""
    parent = math.parent
    if parent is None or CLASS in parent.get("classes", ()):
        return False
    # by identity: Text nodes are strings and compare equal by value
    i = next(k for k, child in enumerate(parent.children) if child is math)
    after = parent[i + 1] if i + 1 < len(parent) else None
    before = parent[i - 1] if i > 0 else None
    close = CLOSING.match(str(after)) if isinstance(after, nodes.Text) else None
    open_ = OPENING.search(str(before)) if isinstance(before, nodes.Text) else None
    if not (close or open_):
        return False
    span, new = nodes.inline(classes=[CLASS]), []
    if open_:
        head = str(before)[:open_.start()]
        new += [nodes.Text(head)] if head else []
        span += nodes.Text(open_.group())
    span += math
    new.append(span)
    if close:
        span += nodes.Text(close.group())
        tail = str(after)[close.end():]
        new += [nodes.Text(tail)] if tail else []
    parent[i - 1 if open_ else i:i + 2 if close else i + 1] = new
    return True


def glue_all(document: nodes.Node) -> int:
    return sum(glue(m) for m in list(document.findall(nodes.math)))


class GlueMathToPunctuation(SphinxPostTransform):
    default_priority = 850          # before cjk_glosses (900): it then marks the Chinese punctuation inside
    formats = ("html",)

    def run(self, **kwargs) -> None:
        glue_all(self.document)


def setup(app):
    app.add_post_transform(GlueMathToPunctuation)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
