"""Workaround for the PDF's text font: Latin Modern has no superscript digits nor U+207B, which
``attnlab.display.scientific`` writes (no upstream to fix: the font is complete as designed).
Remove when the PDF's main font has them (or ``scientific`` writes math for the PDF).

PDF only: numbers written as ``1.2 × 10⁻⁷`` in prose become TeX math, ``\\(1.2 \\times 10^{-7}\\)``.

``attnlab.display.scientific`` writes small numbers with Unicode superscripts, which the HTML
fonts have. The PDF's text font (Latin Modern) lacks ⁴⁵⁶⁷⁸⁹ and ⁻, and xelatex would drop them
with "Missing character". Printed outputs are set in DejaVu Sans Mono, which has them, so only
prose (glued numbers, Markdown outputs) is rewritten; literal blocks and math are left alone.
"""
from __future__ import annotations

import re

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹⁻"
PLAIN = str.maketrans(SUPERSCRIPTS, "0123456789-")
NUMBER = re.compile(rf"([−-]?\d+(?:\.\d+)?)[\u00a0 ]?×[\u00a0 ]?10([{SUPERSCRIPTS}]+)")


def _tex(match: re.Match) -> str:
    mantissa = match.group(1).replace("−", "-")
    return rf"{mantissa} \times 10^{{{match.group(2).translate(PLAIN)}}}"


def _in_code_or_math(node: nodes.Node) -> bool:
    return any(isinstance(a, (nodes.FixedTextElement, nodes.literal, nodes.math, nodes.raw))
               for a in _ancestors(node))


def _ancestors(node: nodes.Node):
    while node.parent is not None:
        node = node.parent
        yield node


def rewrite(document: nodes.Node) -> int:
    """Replace each ``a × 10ⁿ`` in prose by a math node; the number of numbers replaced."""
    count = 0
    for text in list(document.findall(nodes.Text)):
        source = str(text)
        if not NUMBER.search(source) or _in_code_or_math(text):
            continue
        pieces, last = [], 0
        for match in NUMBER.finditer(source):
            if match.start() > last:
                pieces.append(nodes.Text(source[last:match.start()]))
            pieces.append(nodes.math(_tex(match), _tex(match)))
            last = match.end()
            count += 1
        if last < len(source):
            pieces.append(nodes.Text(source[last:]))
        parent = text.parent
        i = next(k for k, child in enumerate(parent.children) if child is text)   # by identity
        parent[i:i + 1] = pieces
    return count


class SuperscriptNumbersAsMath(SphinxPostTransform):
    default_priority = 900
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        rewrite(self.document)


def setup(app):
    app.add_post_transform(SuperscriptNumbersAsMath)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
