"""Figures keep their text legible: never shown narrower than the width where it reads at 9 px.

``attnlab.plots.book_style`` stamps every figure's PNG with its smallest text, in pixels of
the PNG (tEXt entry ``attnlab:min-text-px``); ``attnlab.diagrams`` writes the same number on
the root of every diagram's SVG (``data-min-text-px``, in the SVG's own pixels, beside its
``width``). This extension reads the stamp of every PNG and SVG in the book and writes it on
the ``<img>``, with the CSS width below which that text would be smaller than 9 CSS pixels:
``<img class="attnlab-figure" data-min-text-px="15.28" style="--legible-width: 412px">``. The
stylesheet never lets the figure shrink below that width: on a phone a wide figure scrolls
inside its own output box instead. tests/test_browser.py checks the result in Chromium.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

from docutils import nodes

PNG_TEXT_KEY = "attnlab:min-text-px"   # attnlab.plots.PNG_TEXT_KEY (the book's extension does not import attnlab)
MIN_TEXT_PX = 9.0


def png_stamp(path: Path) -> tuple[int, float] | None:
    """(pixel width, smallest text in PNG pixels) of a stamped PNG; None if unstamped or unreadable."""
    from PIL import Image
    try:
        with Image.open(path) as im:
            value = getattr(im, "text", {}).get(PNG_TEXT_KEY)
            return (im.size[0], float(value)) if value else None
    except (OSError, ValueError):
        return None


_SVG_ROOT = re.compile(r"<svg\b[^>]*>", re.S)


def svg_stamp(path: Path) -> tuple[int, float] | None:
    """(width, smallest text in the SVG's pixels) of a stamped SVG (attnlab.diagrams); None otherwise."""
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:4000]
    except OSError:
        return None
    root = _SVG_ROOT.search(head)
    width = re.search(r'\swidth="([0-9.]+)"', root.group(0)) if root else None
    value = re.search(r'\sdata-min-text-px="([0-9.]+)"', root.group(0)) if root else None
    return (math.ceil(float(width.group(1))), float(value.group(1))) if width and value else None


def mark_figures(app, doctree, docname) -> None:
    for image in doctree.findall(nodes.image):
        rel = image.get("candidates", {}).get("*") or image.get("uri", "")
        if not rel.endswith((".png", ".svg")):
            continue
        path = Path(app.srcdir, rel.lstrip("/"))
        stamp = png_stamp(path) if rel.endswith(".png") else svg_stamp(path)
        if stamp is None:
            continue
        width, min_px = stamp
        image["classes"].append("attnlab-figure")
        image["min_text_px"] = min_px
        image["legible_width"] = math.ceil(width * MIN_TEXT_PX / min_px)


def visit_image(self, node) -> None:
    type(self).visit_image(self, node)
    if "legible_width" not in node:
        return
    for k in range(len(self.body) - 1, -1, -1):         # the <img> tag the default visitor just wrote
        if self.body[k].lstrip().startswith("<img "):
            self.body[k] = self.body[k].replace(
                "<img ", f'<img data-min-text-px="{node["min_text_px"]:.2f}" '
                         f'style="--legible-width: {node["legible_width"]}px" ', 1)
            break


def depart_image(self, node) -> None:
    type(self).depart_image(self, node)


def setup(app):
    app.connect("doctree-resolved", mark_figures)
    app.add_node(nodes.image, override=True, html=(visit_image, depart_image))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
