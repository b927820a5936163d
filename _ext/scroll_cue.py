"""Boxes that scroll sideways on a phone (a wide table, formula, output or explorer) fade out at
the edge where more is hidden.

``_assets/scroll-cue.js`` marks each such box with ``attn-scrolls`` and, as it is scrolled,
``attn-more-left`` / ``attn-more-right``; ``_assets/book.css`` draws the fades. A script rather
than a scroll-driven animation: MathJax's glyph boxes overhang almost every formula by a pixel or
two, so every inline formula would "scroll" and fade; the script ignores overflow of a few pixels,
and it works in browsers without scroll timelines.
"""


def setup(app):
    app.add_js_file("scroll-cue.js", loading_method="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
