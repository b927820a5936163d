"""Bespoke: long code names in table cells may break after ``.`` and ``_`` on a phone.

Long code names in table cells may break after a dot or an underscore on a narrow screen.

A cell holding ``torch.nn.functional.scaled_dot_product_attention`` was one unbreakable word
432 px wide, wider than a phone: the first column pushed the rest of the table off the screen.
The book's CSS keeps code in table cells on one line (breaking anywhere squeezed "test_bad_input.py"
to "test_bad_i|nput.py"), so this post-transform gives long names break opportunities where a
reader expects them: ``<wbr>`` after each ``.`` and ``_`` of a name longer than ``LONG`` characters.
The browser breaks there only when the column is too narrow; copying the name copies no extra
character. HTML only: the PDF sets table columns itself.
"""
from __future__ import annotations

import re

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

LONG = 20                       # characters: shorter names fit any column
AFTER = re.compile(r"(?<=[._])(?=[^._])")   # after a run of dots or underscores, before the next part


def break_opportunities(literal: nodes.literal) -> bool:
    """Put <wbr> into a long one-word literal; False if it is short, spaced or already done."""
    text = literal.astext()
    if len(text) <= LONG or " " in text or len(literal.children) != 1 or not AFTER.search(text):
        return False
    pieces = AFTER.split(text)
    children: list[nodes.Node] = []
    for i, piece in enumerate(pieces):
        if i:
            children.append(nodes.raw("", "<wbr>", format="html"))
        children.append(nodes.Text(piece))
    literal.children = []
    literal.extend(children)
    return True


def mark_tables(document: nodes.Node) -> int:
    return sum(break_opportunities(lit) for entry in document.findall(nodes.entry)
               for lit in list(entry.findall(nodes.literal)))


class BreakLongCodeInTables(SphinxPostTransform):
    default_priority = 880
    formats = ("html",)

    def run(self, **kwargs) -> None:
        mark_tables(self.document)


def setup(app):
    app.add_post_transform(BreakLongCodeInTables)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
