"""Bespoke: every figure's ``<img>`` gets its description (``al.plots.describe``) as ``alt``.

Every figure's ``<img>`` gets its description as ``alt``, not its file name.

A page describes each figure it draws with ``attnlab.plots.describe(fig, "...")`` (English in
the source, translated when the Chinese edition executes). The PNG carries the text in its
``attnlab:alt`` text entry (tEXt, or iTXt for Chinese); an SVG (a diagram, an explorer's
picture) carries it as the first ``<title>`` of its root, with ``role="img"`` and ``aria-label``.
This extension reads both and writes the text into the image node's ``alt``, which the HTML writer
puts on the ``<img>`` (without it, Sphinx writes the image's path there). An image whose file has
no description keeps what the page gave it; tests/build/test_a11y_browser.py fails on a path or
a hash. The extension does not import attnlab (keys and patterns are repeated here).
"""
from __future__ import annotations

import base64
import html
import re
import urllib.parse
from pathlib import Path

from docutils import nodes

PNG_ALT_KEY = "attnlab:alt"            # attnlab.plots.PNG_ALT_KEY
_SVG_TITLE = re.compile(r"<svg\b[^>]*>\s*<title\b[^>]*>(.*?)</title>", re.S)
_SVG_LABEL = re.compile(r"<svg\b[^>]*?\saria-label=\"([^\"]*)\"", re.S)


def _one_line(text: str) -> str:
    return " ".join(html.unescape(text).split())


def png_alt(path: Path) -> str | None:
    """The description stored in a PNG's ``attnlab:alt`` entry; None if none or unreadable."""
    from PIL import Image
    try:
        with Image.open(path) as im:
            value = getattr(im, "text", {}).get(PNG_ALT_KEY)
    except (OSError, ValueError):
        return None
    return _one_line(value) if value else None


def svg_alt(svg: str) -> str | None:
    """The description of SVG text: its root's first ``<title>``, else its ``aria-label``."""
    match = _SVG_TITLE.search(svg) or _SVG_LABEL.search(svg)
    return _one_line(match.group(1)) if match and match.group(1).strip() else None


def _svg_text(uri: str, srcdir: str) -> str | None:
    if uri.startswith("data:image/svg+xml"):
        head, _, data = uri.partition(",")
        raw = base64.b64decode(data) if head.endswith(";base64") else urllib.parse.unquote(data).encode()
        return raw.decode("utf-8", errors="replace")
    path = Path(srcdir, uri.lstrip("/"))
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def describe_images(app, doctree, docname) -> None:
    for image in doctree.findall(nodes.image):
        if image.get("alt"):
            continue
        uri = image.get("candidates", {}).get("*") or image.get("uri", "")
        if uri.endswith(".png"):
            alt = png_alt(Path(app.srcdir, uri.lstrip("/")))
        elif uri.endswith(".svg") or uri.startswith("data:image/svg+xml"):
            text = _svg_text(uri, app.srcdir)
            alt = svg_alt(text) if text else None
        else:
            alt = None
        if alt:
            image["alt"] = alt


def setup(app):
    app.connect("doctree-resolved", describe_images)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
