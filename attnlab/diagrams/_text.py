"""Text of the diagrams: fonts, a small math markup, and widths measured before anything is placed.

A label is plain text with math between dollar signs, as in the book's prose:
``"scores $QK^⊤/√d_k$"``. Inside math, Latin and lower-case Greek letters are set in a serif
italic (the look of the page's formulas), capital Greek, digits and operators upright; ``_k`` or
``_{ij}`` is a subscript, ``^⊤`` or ``^{m − m′}`` a superscript (scripts nest), ``\\,`` a thin
space, ``\\op{lse}`` an upright name (log, softmax, rowsum in a formula). Everything outside the
dollars is the sans face of the explorers' pictures.

Widths are measured with the DejaVu faces matplotlib ships (so the same on every machine, with
no font installed): the faces the SVG names first, in both editions. A character DejaVu lacks
(Chinese, mostly) is set by the reader's CJK font, whose ideographs and full-width punctuation
are one em wide; that is what it is measured as. A reader whose browser lacks DejaVu gets
Helvetica or Arial, which are narrower: the layout only gains room.
"""
from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

SANS = "DejaVu Sans, Helvetica, Arial, sans-serif"
SANS_ZH = ("DejaVu Sans, Helvetica, Arial, 'Noto Sans CJK SC', 'Source Han Sans SC', 'PingFang SC', "
           "'Microsoft YaHei', sans-serif")
SERIF = "DejaVu Serif, 'Times New Roman', serif"
SUB_SCALE = 0.8            # sub- and superscripts, of the surrounding size ...
SUB_MIN = 12.5             # ... but never below this (px): capitals of 9 px, the book's smallest text
SUB_SHIFT = 0.28           # their baseline offset, in ems of the surrounding size
CENTRE_TO_BASELINE = 0.36  # a line's visual centre lies this many ems above its baseline

_FACES = {("sans", False, False): "DejaVuSans.ttf", ("sans", True, False): "DejaVuSans-Bold.ttf",
          ("serif", False, False): "DejaVuSerif.ttf", ("serif", False, True): "DejaVuSerif-Italic.ttf",
          ("sans", False, True): "DejaVuSans-Oblique.ttf", ("serif", True, False): "DejaVuSerif-Bold.ttf",
          ("serif", True, True): "DejaVuSerif-BoldItalic.ttf", ("sans", True, True): "DejaVuSans-BoldOblique.ttf"}


@lru_cache(maxsize=None)
def _font(family: str, bold: bool, italic: bool):
    import matplotlib
    from matplotlib.ft2font import FT2Font
    path = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / _FACES[(family, bold, italic)]
    font = FT2Font(str(path))
    font.set_size(1000, 72)                                      # 1000 px per em
    return font


def has_glyph(char: str, family: str = "sans", bold: bool = False, italic: bool = False) -> bool:
    return _font(family, bold, italic).get_char_index(ord(char)) != 0


@lru_cache(maxsize=None)
def advance_em(char: str, family: str = "sans", bold: bool = False, italic: bool = False) -> float:
    """Advance width of one character in ems (a CJK or other wide character: one em)."""
    font = _font(family, bold, italic)
    if font.get_char_index(ord(char)) == 0:
        if unicodedata.east_asian_width(char) in "WF":
            return 1.0
        other = "sans" if family == "serif" else "serif"
        if _font(other, bold, italic).get_char_index(ord(char)):
            return advance_em(char, other, bold, italic)
        return 0.6
    return font.load_char(ord(char)).linearHoriAdvance / 65536 / 1000


def is_wide(char: str) -> bool:
    return unicodedata.east_asian_width(char) in "WF"


@dataclass(frozen=True)
class Run:
    """A piece of a label in one style. ``rise`` is its baseline offset in ems of the label's size (up is
    positive: a superscript), ``depth`` how many script levels deep it is (0: the baseline text)."""

    text: str
    family: str = "sans"
    italic: bool = False
    bold: bool = False
    rise: float = 0.0
    depth: int = 0

    def size(self, size: float) -> float:
        return size if self.depth == 0 else max(size * SUB_SCALE ** self.depth, SUB_MIN)

    def width(self, size: float) -> float:
        return sum(advance_em(c, self.family, self.bold, self.italic) for c in self.text) * self.size(size)


def _group(src: str, k: int) -> tuple[str, int]:
    """The script after ``_`` or ``^`` at ``src[k]``: a braced group (nested braces allowed) or one character."""
    if src[k] != "{":
        return src[k], k + 1
    depth, j = 0, k
    while j < len(src):
        depth += {"{": 1, "}": -1}.get(src[j], 0)
        if depth == 0:
            return src[k + 1:j], j + 1
        j += 1
    raise ValueError(f"unbalanced braces in math label {src!r}")


def _math_runs(src: str, bold: bool, rise: float = 0.0, depth: int = 0) -> list[Run]:
    """Letters italic, everything else upright, both serif; ``_x`` and ``^x`` one script level down or up."""
    runs, k = [], 0
    while k < len(src):
        ch = src[k]
        if src.startswith("\\op{", k):                               # an upright name: \op{lse}
            body, k = _group(src, k + 3)
            runs.append(Run(body, "serif", False, bold, rise, depth))
            continue
        if ch in "_^" and k + 1 < len(src):
            body, k = _group(src, k + 1)
            step = SUB_SHIFT * SUB_SCALE ** depth
            runs.extend(_math_runs(body, bold, rise + (step if ch == "^" else -step), depth + 1))
            continue
        if unicodedata.combining(ch) and runs:                       # q̃: the mark stays with its letter
            last = runs[-1]
            runs[-1] = Run(last.text + ch, last.family, last.italic, last.bold, last.rise, last.depth)
            k += 1
            continue
        letter = ch.isalpha() and not is_wide(ch) and not ("\u0391" <= ch <= "\u03a9")   # capital Greek: upright
        runs.append(Run(ch, "serif", letter, bold, rise, depth))
        k += 1
    return runs


def parse(label: str, bold: bool = False) -> list[Run]:
    """The runs of a label with ``$math$`` segments (a literal dollar: ``\\$``)."""
    runs: list[Run] = []
    label = label.replace("\\,", "\u2009")                      # TeX's thin space
    parts = re.split(r"(?<!\\)\$", label)
    for k, part in enumerate(parts):
        part = part.replace("\\$", "$")
        if not part:
            continue
        runs.extend(_math_runs(part, bold) if k % 2 else [Run(part, "sans", False, bold)])
    return _merge(runs)


def _merge(runs: list[Run]) -> list[Run]:
    out: list[Run] = []
    for r in runs:
        last = out[-1] if out else None
        if last and (last.family, last.italic, last.bold, last.rise, last.depth) == (r.family, r.italic, r.bold,
                                                                                     r.rise, r.depth):
            out[-1] = Run(last.text + r.text, r.family, r.italic, r.bold, r.rise, r.depth)
        else:
            out.append(r)
    return out


def width(label: str, size: float, bold: bool = False) -> float:
    """Width in pixels of a one-line label at font size ``size`` (px)."""
    return sum(r.width(size) for r in parse(label, bold))


def plain(label: str) -> str:
    """The label's characters without markup: what a reader (or a search) sees."""
    return "".join(r.text for r in parse(label))


def smallest_size(label: str, size: float) -> float:
    """The smallest font size used in the label (its sub- and superscripts are smaller)."""
    return min(r.size(size) for r in parse(label))


def tspans(label: str, size: float, bold: bool = False) -> str:
    """The label as SVG ``<tspan>`` elements (relative baseline shifts, so ``text-anchor`` still centres)."""
    out, rise = [], 0.0
    for r in parse(label, bold):
        attrs = []
        if r.family == "serif":
            attrs.append(f'font-family="{SERIF}"')
        if r.italic:
            attrs.append('font-style="italic"')
        if r.rise != rise:
            attrs.append(f'dy="{(rise - r.rise) * size:.2f}"')         # SVG's y grows downwards
            rise = r.rise
        if r.depth:
            attrs.append(f'font-size="{r.size(size):.1f}"')
        text = html.escape(r.text, quote=False)
        out.append(f'<tspan {" ".join(attrs)}>{text}</tspan>' if attrs else text)
    return "".join(out)


def extent(label: str) -> tuple[float, float]:
    """How far the label's scripts reach above and below its baseline text, in ems (0, 0 without scripts)."""
    runs = parse(label)
    return max([0.0] + [r.rise for r in runs]), max([0.0] + [-r.rise for r in runs])
