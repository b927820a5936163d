"""The drawing primitives every diagram shares: one palette, boxes, arrows, matrices, text that fits.

A diagram is a function that draws on a :class:`Canvas` and returns it; :class:`Diagram` wraps
that function so a notebook shows it (``_repr_svg_``), a file keeps it (``save``) and a test
inspects it (``canvas``). Every label goes through the catalog when the diagram is drawn, so the
language of the page at that moment is the language of the picture.

The canvas remembers every text it placed, with its measured box and the box it must stay in;
``tests/attnlab/diagrams`` checks that none leaves its box, leaves the picture or overlaps
another. Sizes follow the book's figures (``attnlab.plots``): at the column's 720 px the smallest
text (a subscript) has capitals of at least 9 px.
"""
from __future__ import annotations

import html
import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import i18n
from ..plots import CAP_HEIGHT_EM, COLUMN_PX, KEY_COLOR, MIN_TEXT_PX, OUTPUT_COLOR, QUERY_COLOR, VALUE_COLOR
from ._text import CENTRE_TO_BASELINE, SANS, SANS_ZH, extent, smallest_size, tspans, width

TEXT = 15          # labels, px
SMALL = 13         # notes and cell numbers: capitals of 9.5 px
MATH = 17          # math labels: serif italic reads smaller than the sans at one size
PAD = 6            # room between a text and its box's border

INK = "#1a202c"
MUTED = "#4a5568"
FAINT = "#a0aec0"
WHITE = "#ffffff"


@dataclass(frozen=True)
class Role:
    """The colours of one kind of thing: stroke, a light fill for boxes, a stronger one for cells, text."""

    stroke: str
    fill: str
    cell: str
    text: str


# Tailwind 1's palette, the one of attnlab.plots: the roles' strokes are its colours, with light tints of
# the same hue for fills and darker shades for text (WCAG AA, 4.5:1, on white and on the fills)
QUERY = Role(QUERY_COLOR, "#ebf8ff", "#bee3f8", "#2c5282")
KEY = Role(KEY_COLOR, "#fffaf0", "#feebc8", "#9c4221")
VALUE = Role(VALUE_COLOR, "#f0fff4", "#c6f6d5", "#276749")
OUTPUT = Role(OUTPUT_COLOR, "#fff5f5", "#fed7d7", "#9b2c2c")
SCORE = Role("#6b46c1", "#faf5ff", "#e9d8fd", "#553c9a")
INPUT = Role("#4a5568", "#f7fafc", "#e2e8f0", INK)
GRADIENT = Role("#b83280", "#fff5f7", "#fed7e2", "#97266d")
SRAM = Role("#319795", "#e6fffa", "#b2f5ea", "#285e61")
REGISTER = Role("#b7791f", "#fffff0", "#fefcbf", "#744210")
PAD_ROLE = Role("#a0aec0", "#f7fafc", "#edf2f7", "#4a5568")


@dataclass
class Rect:
    x: float
    y: float
    w: float
    h: float

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def bottom(self) -> float:
        return self.y + self.h

    def contains(self, other: Rect, tol: float = 0.5) -> bool:
        return (other.x >= self.x - tol and other.y >= self.y - tol and other.right <= self.right + tol
                and other.bottom <= self.bottom + tol)

    def overlaps(self, other: Rect) -> bool:
        return (self.x < other.right and other.x < self.right and self.y < other.bottom and other.y < self.bottom)


@dataclass
class Placed:
    """A text as placed: its label, its measured bounds, the box it must stay inside (if any)."""

    label: str
    bounds: Rect
    within: Rect | None
    size: float


@dataclass
class Canvas:
    width: float
    height: float
    parts: list[str] = field(default_factory=list)
    texts: list[Placed] = field(default_factory=list)
    shapes: list[Rect] = field(default_factory=list)      # filled rectangles: free text must not cover them
    arrows: list[tuple] = field(default_factory=list)     # (start, end, colour) of every arrow drawn

    # --- text -------------------------------------------------------------------------------
    def text(self, x, y, label: str, size: float = TEXT, anchor: str = "middle", color: str = INK,
             bold: bool = False, within: Rect | None = None, line_height: float = 1.3) -> Rect:
        """A label whose visual centre is at ``y`` (lines split at ``\\n``); returns its measured bounds."""
        lines = label.split("\n")
        widths = [width(line, size, bold) for line in lines]
        w, step = max(widths), size * line_height
        top_centre = y - step * (len(lines) - 1) / 2
        for k, line in enumerate(lines):
            base = top_centre + k * step + CENTRE_TO_BASELINE * size
            attrs = f'x="{x:.1f}" y="{base:.1f}"'
            attrs += f' font-size="{size:g}"' if size != TEXT else ""
            attrs += f' text-anchor="{anchor}"' if anchor != "middle" else ""
            attrs += f' fill="{color}"' if color != INK else ""
            attrs += ' font-weight="bold"' if bold else ""
            self.parts.append(f"<text {attrs}>{tspans(line, size, bold)}</text>")
        left = {"middle": x - w / 2, "start": x, "end": x - w}[anchor]
        up = max(extent(line)[0] for line in lines)
        down = max(extent(line)[1] for line in lines)
        top = top_centre - (0.6 + up) * size
        bottom = top_centre + step * (len(lines) - 1) + (0.6 + down) * size
        bounds = Rect(left, top, w, bottom - top)
        smallest = min(smallest_size(line, size) for line in lines)
        self.texts.append(Placed(label, bounds, within, smallest))
        return bounds

    # --- shapes -----------------------------------------------------------------------------
    def rect(self, x, y, w, h, fill="none", stroke=None, sw=1.5, rx=0.0, dash=None, opacity=None) -> Rect:
        attrs = f'x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{fill}"'
        attrs += f' rx="{rx:g}"' if rx else ""
        attrs += f' stroke="{stroke}" stroke-width="{sw:g}"' if stroke else ""
        attrs += f' stroke-dasharray="{dash}"' if dash else ""
        attrs += f' fill-opacity="{opacity}"' if opacity is not None else ""
        self.parts.append(f"<rect {attrs}/>")
        r = Rect(x, y, w, h)
        if fill not in ("none", WHITE, "#ffffff") and w > 6 and h > 6:
            self.shapes.append(r)
        return r

    def box(self, x, y, w, h, label: str | None = None, role: Role = INPUT, size: float = TEXT, bold=False,
            dash=None, rx=6.0, fill: str | None = None) -> Rect:
        """A rounded box in a role's colours, its label centred inside (and checked to fit)."""
        r = self.rect(x, y, w, h, fill=role.fill if fill is None else fill, stroke=role.stroke, rx=rx, dash=dash)
        if label:
            self.text(r.cx, r.cy, label, size=size, bold=bold, within=r)
        return r

    def fit(self, label: str, size: float = TEXT, minimum: float = 0.0, bold=False) -> float:
        """The width of a box that holds ``label`` with PAD on either side (at least ``minimum``)."""
        return max(minimum, max(width(line, size, bold) for line in label.split("\n")) + 2 * PAD)

    def line(self, x1, y1, x2, y2, stroke=MUTED, sw=1.5, dash=None):
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}" '
                          f'stroke-width="{sw:g}"{extra}/>')

    def polygon(self, points, fill=MUTED, stroke=None, sw=1.0):
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        extra = f' stroke="{stroke}" stroke-width="{sw:g}"' if stroke else ""
        self.parts.append(f'<polygon points="{pts}" fill="{fill}"{extra}/>')

    def circle(self, cx, cy, r, fill="none", stroke=MUTED, sw=1.5, dash=None):
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}" fill="{fill}" stroke="{stroke}" '
                          f'stroke-width="{sw:g}"{extra}/>')

    def path(self, d: str, stroke=MUTED, sw=1.5, fill="none", dash=None):
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<path d="{d}" fill="{fill}" stroke="{stroke}" stroke-width="{sw:g}"{extra}/>')

    def arrow(self, points, color=MUTED, sw=1.6, dash=None, head=9.0, both=False):
        """A polyline through ``points`` with a filled head at the end (and the start, if ``both``)."""
        pts = [tuple(map(float, p)) for p in points]
        self.arrows.append((pts[0], pts[-1], color))
        trimmed = list(pts)
        trimmed[-1] = self._head(pts[-2], pts[-1], color, head)
        if both:
            trimmed[0] = self._head(pts[1], pts[0], color, head)
        d = "M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in trimmed)
        self.path(d, stroke=color, sw=sw, dash=dash)

    def _head(self, p, q, color, head):
        dx, dy = q[0] - p[0], q[1] - p[1]
        n = math.hypot(dx, dy) or 1.0
        ux, uy = dx / n, dy / n
        bx, by = q[0] - head * ux, q[1] - head * uy
        px, py = -uy * head * 0.42, ux * head * 0.42
        self.polygon([q, (bx + px, by + py), (bx - px, by - py)], fill=color)
        return (bx + ux * 1.0, by + uy * 1.0)                    # the line stops inside the head

    def matrix(self, x, y, rows: int, cols: int, cell: float, role: Role = INPUT, values=None,
               size: float = SMALL, cell_h: float | None = None, fills=None) -> Rect:
        """A grid of ``rows`` x ``cols`` cells (a matrix drawn as its shape); optional numbers inside."""
        ch = cell if cell_h is None else cell_h
        for i in range(rows):
            for j in range(cols):
                fill = role.cell if fills is None else fills[i][j]
                r = self.rect(x + j * cell, y + i * ch, cell, ch, fill=fill, stroke=WHITE, sw=1.5)
                if values is not None and values[i][j] is not None:
                    self.text(r.cx, r.cy, values[i][j], size=size, within=r)
        outline = self.rect(x, y, cols * cell, rows * ch, stroke=role.stroke, sw=1.2)
        return outline

    def group_open(self, **attrs):
        self.parts.append("<g " + " ".join(f'{k.replace("_", "-")}="{v}"' for k, v in attrs.items()) + ">")

    def group_close(self):
        self.parts.append("</g>")

    # --- output -----------------------------------------------------------------------------
    @property
    def smallest_text(self) -> float:
        """The smallest font size (px) of any text, sub- and superscripts included."""
        return min((t.size for t in self.texts), default=TEXT)

    @property
    def min_text_px(self) -> float:
        """Capital height of the smallest text, in px of the picture (the PNG figures' stamp)."""
        return self.smallest_text * CAP_HEIGHT_EM

    @property
    def legible_width(self) -> int:
        """The narrowest the picture may be shown: where its smallest capitals are MIN_TEXT_PX tall."""
        return min(math.ceil(self.width), math.ceil(self.width * MIN_TEXT_PX / self.min_text_px))

    def svg(self, alt: str) -> str:
        font = SANS_ZH if i18n.get_language() == "zh_CN" else SANS
        label = html.escape(alt, quote=True)
        return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{label}" '
                f'viewBox="0 0 {self.width:g} {self.height:g}" width="{self.width:g}" height="{self.height:g}" '
                f'font-family="{font}" font-size="{TEXT}" fill="{INK}" text-anchor="middle" xml:space="preserve" '
                f'data-min-text-px="{self.min_text_px:.2f}" '
                f'style="max-width:100%;height:auto;--legible-svg-width:{self.legible_width}px">'
                f'<title>{html.escape(alt, quote=False)}</title>'
                f'<rect width="100%" height="100%" fill="{WHITE}"/>'
                + "".join(self.parts) + "</svg>")


@contextmanager
def language(lang: str | None):
    """Draw in ``lang`` ("en", "zh_CN"), then restore attnlab's language; None: the current one."""
    before = i18n.get_language()
    if lang is not None:
        i18n.set_language(lang)
    try:
        yield
    finally:
        if lang is not None:
            i18n.set_language(before)


class Diagram:
    """A drawn diagram: Jupyter shows it as SVG; ``save`` writes it; ``canvas`` is for tests.

    ``label`` is the name of its figure in the book (``diag-...``); ``alt`` the English description of
    what it shows (translated when drawn), ``params`` the values its alt text is formatted with (a
    callable is called when the text is shown, in the language of that moment).
    """

    def __init__(self, label: str, alt: str, draw: Callable[[], Canvas], params: dict | None = None):
        self.label, self._alt, self._draw, self.params = label, alt, draw, dict(params or {})

    def alt(self, lang: str | None = None) -> str:
        with language(lang):
            values = {k: v() if callable(v) else v for k, v in self.params.items()}
            return i18n._(self._alt).format(**values)

    def canvas(self, lang: str | None = None) -> Canvas:
        with language(lang):
            return self._draw()

    def svg(self, lang: str | None = None) -> str:
        with language(lang):
            return self._draw().svg(self.alt())

    def _repr_svg_(self) -> str:
        return self.svg()

    def save(self, path, lang: str | None = None) -> Path:
        path = Path(path)
        path.write_text(self.svg(lang), encoding="utf-8")
        return path

    def __repr__(self) -> str:
        return f"<Diagram {self.label}: {self.alt()}>"


def check_layout(canvas: Canvas) -> list[str]:
    """What is wrong with a drawn canvas: texts outside their box or the picture, texts overlapping."""
    problems = []
    frame = Rect(0, 0, canvas.width, canvas.height)
    for t in canvas.texts:
        if t.within is not None and not t.within.contains(t.bounds, tol=0.5):
            problems.append(f"{t.label!r} overflows its box ({_fmt(t.bounds)} not inside {_fmt(t.within)})")
        if not frame.contains(t.bounds, tol=0.5):
            problems.append(f"{t.label!r} leaves the picture ({_fmt(t.bounds)})")
    for t in canvas.texts:
        if t.within is None:
            for r in canvas.shapes:
                inner = Rect(r.x + 1, r.y + 1, r.w - 2, r.h - 2)
                if inner.overlaps(t.bounds):
                    problems.append(f"{t.label!r} covers a shape at {_fmt(r)}")
                    break
    for a in range(len(canvas.texts)):
        for b in range(a + 1, len(canvas.texts)):
            ta, tb = canvas.texts[a], canvas.texts[b]
            if ta.bounds.overlaps(tb.bounds):
                problems.append(f"{ta.label!r} overlaps {tb.label!r}")
    if canvas.legible_width > COLUMN_PX and canvas.width <= COLUMN_PX:
        problems.append(f"smallest text {canvas.smallest_text:.1f} px is too small for the column")
    return problems


def _fmt(r: Rect) -> str:
    return f"x {r.x:.0f}-{r.right:.0f}, y {r.y:.0f}-{r.bottom:.0f}"


__all__ = ["Canvas", "Diagram", "GRADIENT", "INK", "INPUT", "KEY", "MATH", "MUTED", "OUTPUT", "PAD", "PAD_ROLE",
           "QUERY", "REGISTER", "Rect", "Role", "SCORE", "SMALL", "SRAM", "TEXT", "VALUE",
           "check_layout", "language"]


def labelled_matrix(c: Canvas, cx: float, cy: float, rows: int, cols: int, role: Role, name: str | None = None,
                    shape: str | None = None, cell: float = 14.0, values=None, fills=None,
                    cell_h: float | None = None, size: float = SMALL) -> Rect:
    """A matrix glyph centred at (cx, cy): its name above (math), its shape below (math italics)."""
    ch = cell if cell_h is None else cell_h
    grid = c.matrix(cx - cols * cell / 2, cy - rows * ch / 2, rows, cols, cell, role, values=values, fills=fills,
                    cell_h=cell_h, size=size)
    if name:
        c.text(cx, grid.y - 14, name, size=MATH, color=role.text)
    if shape:
        lines = shape.count("\n") + 1
        c.text(cx, grid.bottom + 12 + 9.5 * (lines - 1), shape, size=TEXT, color=MUTED)
    return grid
