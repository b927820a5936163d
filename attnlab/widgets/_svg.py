"""A small SVG writer for the explorers' pictures.

Why not matplotlib: a full matplotlib redraw (al.plots helpers, PNG into an Image widget)
costs 200-300 ms of CPU per control change on the book's 2-core machine, several times the
50 ms budget (benchmarks/widget_latency.py times both). Writing the same picture as an SVG string
takes a few milliseconds, stays sharp at any zoom, and is a few kilobytes, so precomputed
frames for the static book stay small. The look follows ``attnlab.plots``: same colours, the
viridis colormap, the mask grid's white cell borders.
"""
from __future__ import annotations

import html
import math
from functools import lru_cache

import numpy as np

from ..i18n import get_language
from ..plots import ALLOWED_COLOR, FORBIDDEN_COLOR, svg_with_alt

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
# Chinese: the same Latin face, then CJK faces the browser (or rsvg-convert, for the PDF) falls back on
FONT_ZH = ("DejaVu Sans, Helvetica, Arial, 'Noto Sans CJK SC', 'Source Han Sans SC', 'PingFang SC', "
           "'Microsoft YaHei', sans-serif")
LEGIBLE_PX = 9        # the smallest text size a reader is shown, as for the book's figures
GRAY = "#718096"
RED = "#c53030"
__all__ = ["ALLOWED_COLOR", "FORBIDDEN_COLOR", "GRAY", "RED", "Svg", "Panel", "viridis", "nice_ticks"]


@lru_cache(maxsize=1)
def _viridis_lut() -> list[str]:
    import matplotlib
    from matplotlib.colors import to_hex
    cmap = matplotlib.colormaps["viridis"]
    return [to_hex(cmap(i / 255)) for i in range(256)]


def viridis(x: float, vmin: float = 0.0, vmax: float = 1.0) -> str:
    """Hex colour of ``x`` on matplotlib's viridis map (the colormap of plots.heatmap)."""
    t = 0.0 if vmax == vmin else (x - vmin) / (vmax - vmin)
    return _viridis_lut()[int(round(min(max(t, 0.0), 1.0) * 255))]


def nice_ticks(lo: float, hi: float, n: int = 5) -> np.ndarray:
    """Round tick positions inside [lo, hi] (matplotlib's MaxNLocator, no figure needed)."""
    from matplotlib.ticker import MaxNLocator
    t = MaxNLocator(nbins=n).tick_values(lo, hi)
    return t[(t >= lo - 1e-9) & (t <= hi + 1e-9)]


def _n(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


class Svg:
    """Accumulates SVG elements; ``str(svg)`` is the finished picture.

    ``alt`` is what the picture shows, in words (in the reader's language): the finished picture
    carries it as its ``<title>`` and ``aria-label`` (``attnlab.plots.svg_with_alt``); every
    explorer's ``draw`` sets it from its state.
    """

    def __init__(self, width: int, height: int, alt: str | None = None):
        self.width, self.height = width, height
        self.alt = alt
        self.parts: list[str] = []
        self.smallest_text = 10.0          # the root's font size; text() lowers it
        self.font = FONT_ZH if get_language() == "zh_CN" else FONT

    @property
    def min_width(self) -> int:
        """The narrowest the picture may be shown: where its smallest text reads at 9 px (never
        wider than drawn). The book's CSS holds pictures to it below 1200 px, where they then
        scroll in their own box instead of shrinking; on a desktop column they fit it."""
        return min(self.width, math.ceil(self.width * LEGIBLE_PX / self.smallest_text))

    def rect(self, x, y, w, h, fill="none", stroke=None, sw=1.0, opacity=None):
        extra = f' stroke="{stroke}" stroke-width="{_n(sw)}"' if stroke else ""
        extra += f' fill-opacity="{opacity}"' if opacity is not None else ""
        self.parts.append(f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" fill="{fill}"{extra}/>')

    def line(self, x1, y1, x2, y2, stroke="black", sw=1.0, dash=None, opacity=None):
        """A line; stroke=None and sw=None inherit from an enclosing group."""
        extra = f' stroke="{stroke}"' if stroke else ""
        extra += f' stroke-width="{_n(sw)}"' if sw else ""
        extra += f' stroke-dasharray="{dash}"' if dash else ""
        extra += f' stroke-opacity="{opacity}"' if opacity is not None else ""
        self.parts.append(f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}"{extra}/>')

    def polyline(self, points, stroke="black", sw=1.0, dash=None, opacity=None):
        pts = " ".join(f"{_n(x)},{_n(y)}" for x, y in points)
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        extra += f' stroke-opacity="{opacity}"' if opacity is not None else ""
        self.parts.append(f'<polyline points="{pts}" fill="none" stroke="{stroke}" stroke-width="{_n(sw)}"{extra}/>')

    def polygon(self, points, fill="none", stroke=None, sw=1.0, opacity=None):
        pts = " ".join(f"{_n(x)},{_n(y)}" for x, y in points)
        extra = f' stroke="{stroke}" stroke-width="{_n(sw)}"' if stroke else ""
        extra += f' fill-opacity="{opacity}"' if opacity is not None else ""
        self.parts.append(f'<polygon points="{pts}" fill="{fill}"{extra}/>')

    def circle(self, cx, cy, r, fill="none", stroke=None, sw=1.0):
        extra = f' stroke="{stroke}" stroke-width="{_n(sw)}"' if stroke else ""
        self.parts.append(f'<circle cx="{_n(cx)}" cy="{_n(cy)}" r="{_n(r)}" fill="{fill}"{extra}/>')

    def star(self, cx, cy, r, fill=RED):
        pts = [(cx + (r if k % 2 == 0 else r * 0.42) * np.sin(k * np.pi / 5),
                cy - (r if k % 2 == 0 else r * 0.42) * np.cos(k * np.pi / 5)) for k in range(10)]
        self.polygon(pts, fill=fill, stroke="white", sw=0.8)

    def arrow(self, x1, y1, x2, y2, stroke="black", sw=1.5, head=7.0):
        d = np.array([x2 - x1, y2 - y1], dtype=float)
        length = np.hypot(*d)
        if length < 1e-9:
            return
        u = d / length
        base = np.array([x2, y2]) - head * u
        perp = np.array([-u[1], u[0]]) * head * 0.45
        self.line(x1, y1, *base, stroke=stroke, sw=sw)
        self.polygon([(x2, y2), tuple(base + perp), tuple(base - perp)], fill=stroke)

    def hatch(self, x, y, w, h, stroke=GRAY, step=6.0, sw=0.7):
        """Diagonal hatching of a rectangle (explicit lines: patterns in hidden frames do not render)."""
        self.group(stroke=stroke, stroke_width=_n(sw))
        c = -h
        while c < w:
            x1, y1 = x + c, y + h                      # along the bottom edge, going up-right
            x2, y2 = x + c + h, y
            if x1 < x:
                y1 -= x - x1
                x1 = x
            if x2 > x + w:
                y2 += x2 - (x + w)
                x2 = x + w
            self.line(x1, y1, x2, y2, stroke=None, sw=None)
            c += step
        self.end()

    def group(self, **attrs):
        """Open a <g> whose attributes its children inherit (keeps frames small); close with end()."""
        if "font_size" in attrs:
            self.smallest_text = min(self.smallest_text, float(attrs["font_size"]))
        self.parts.append("<g " + " ".join(f'{k.replace("_", "-")}="{v}"' for k, v in attrs.items()) + ">")

    def end(self):
        self.parts.append("</g>")

    def text(self, x, y, s, size=10, anchor="middle", color="black", weight=None, rotate=None,
             baseline="middle", italic=False):
        """Text; attributes equal to the root's defaults (size 10, centred, black) are left out."""
        extra = f' font-size="{size:g}"' if size not in (None, 10) else ""
        self.smallest_text = min(self.smallest_text, size or 10)
        extra += f' text-anchor="{anchor}"' if anchor != "middle" else ""
        extra += f' dominant-baseline="{baseline}"' if baseline != "middle" else ""
        extra += f' fill="{color}"' if color != "black" else ""
        extra += f' font-weight="{weight}"' if weight else ""
        extra += ' font-style="italic"' if italic else ""
        extra += f' transform="rotate({rotate} {_n(x)} {_n(y)})"' if rotate else ""
        self.parts.append(f'<text x="{_n(x)}" y="{_n(y)}"{extra}>{html.escape(str(s))}</text>')

    def __str__(self) -> str:
        svg = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {self.width} {self.height}" '
               f'width="{self.width}" height="{self.height}" font-family="{self.font}" font-size="10" '
               f'text-anchor="middle" dominant-baseline="middle" '
               f'style="display:block;max-width:100%;--legible-svg-width:{self.min_width}px;height:auto;background:white">'
               f'{"".join(self.parts)}</svg>')
        return svg if self.alt is None else svg_with_alt(svg, self.alt)


class Panel:
    """A plotting box inside an Svg: data -> pixel maps, axes with ticks, labels and a title."""

    def __init__(self, svg: Svg, x, y, w, h, xlim, ylim, xlog2=False, equal=False):
        self.svg, self.x, self.y, self.w, self.h = svg, x, y, w, h
        self.xlog2 = xlog2
        self.xlim, self.ylim = (np.log2(xlim[0]), np.log2(xlim[1])) if xlog2 else xlim, ylim
        if equal:                                     # same scale on both axes: shrink the box to fit
            sx = w / (self.xlim[1] - self.xlim[0])
            sy = h / (self.ylim[1] - self.ylim[0])
            s = min(sx, sy)
            self.w, self.h = s * (self.xlim[1] - self.xlim[0]), s * (self.ylim[1] - self.ylim[0])

    def X(self, v):
        v = np.log2(v) if self.xlog2 else v
        return self.x + (v - self.xlim[0]) / (self.xlim[1] - self.xlim[0]) * self.w

    def Y(self, v):
        return self.y + self.h - (v - self.ylim[0]) / (self.ylim[1] - self.ylim[0]) * self.h

    def axes(self, title=None, xlabel=None, ylabel=None, xticks=None, yticks=None, xfmt="{:g}", yfmt="{:g}",
             size=10):
        s = self.svg
        x0, y0, x1, y1 = self.x, self.y + self.h, self.x + self.w, self.y
        s.line(x0, y0, x1, y0, sw=0.8)
        s.line(x0, y0, x0, y1, sw=0.8)
        if xticks is None:
            xticks = 2.0 ** nice_ticks(*self.xlim) if self.xlog2 else nice_ticks(*self.xlim)
        for t in xticks:                              # data values; X() applies the log scale
            px = self.X(t)
            s.line(px, y0, px, y0 + 4, sw=0.8)
            s.text(px, y0 + 13, xfmt.format(t), size=size - 1)
        for t in (nice_ticks(*self.ylim) if yticks is None else yticks):
            py = self.Y(t)
            s.line(x0 - 4, py, x0, py, sw=0.8)
            s.text(x0 - 6, py, yfmt.format(t), size=size - 1, anchor="end")
        if title:
            s.text((x0 + x1) / 2, y1 - 10, title, size=size + 1)
        if xlabel:
            s.text((x0 + x1) / 2, y0 + 30, xlabel, size=size)
        if ylabel:
            s.text(x0 - 38, (y0 + y1) / 2, ylabel, size=size, rotate=-90)
