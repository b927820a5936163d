"""Text of the diagrams: fonts, a small math markup, and widths measured before anything is placed.

A label is plain text with math between dollar signs, as in the book's prose:
``"scores $QK^⊤/√d_k$"``. Inside math, letters are set in a serif italic (the look of the
page's formulas), digits and operators upright; ``_k`` or ``_{model}`` is a subscript, ``^⊤`` or
``^{-1}`` a superscript. Everything else is the sans face of the explorers' pictures.

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
    """A piece of a label in one style: ``shift`` -1 subscript, 0 baseline, +1 superscript."""

    text: str
    family: str = "sans"
    italic: bool = False
    bold: bool = False
    shift: int = 0

    def width(self, size: float) -> float:
        shown = script_size(size) if self.shift else size
        return sum(advance_em(c, self.family, self.bold, self.italic) for c in self.text) * shown


def script_size(size: float) -> float:
    """The font size of a sub- or superscript in a label of font size ``size``."""
    return max(size * SUB_SCALE, SUB_MIN)


_MATH_TOKEN = re.compile(r"([_^])(\{[^}]*\}|.)|([A-Za-z\u0370-\u03ff])|([^A-Za-z\u0370-\u03ff_^]+)")


def _math_runs(src: str, bold: bool) -> list[Run]:
    runs = []
    for m in _MATH_TOKEN.finditer(src):
        if m.group(1):
            body = m.group(2)[1:-1] if m.group(2).startswith("{") else m.group(2)
            shift = -1 if m.group(1) == "_" else 1
            for piece in _math_runs(body, bold):
                runs.append(Run(piece.text, piece.family, piece.italic, bold, shift))
        elif m.group(3):
            runs.append(Run(m.group(3), "serif", True, bold))
        else:
            runs.append(Run(m.group(4), "serif", False, bold))
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
        if out and (out[-1].family, out[-1].italic, out[-1].bold, out[-1].shift) == (r.family, r.italic, r.bold,
                                                                                        r.shift):
            out[-1] = Run(out[-1].text + r.text, r.family, r.italic, r.bold, r.shift)
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
    return min(size, script_size(size)) if any(r.shift for r in parse(label)) else size


def tspans(label: str, size: float, bold: bool = False) -> str:
    """The label as SVG ``<tspan>`` elements (relative baseline shifts, so ``text-anchor`` still centres)."""
    out, level = [], 0
    for r in parse(label, bold):
        attrs = []
        if r.family == "serif":
            attrs.append(f'font-family="{SERIF}"')
        if r.italic:
            attrs.append('font-style="italic"')
        if r.shift != level:
            dy = (level - r.shift) * SUB_SHIFT * size            # SVG's y grows downwards
            attrs.append(f'dy="{dy:.2f}"')
            level = r.shift
        if r.shift:
            attrs.append(f'font-size="{script_size(size):.1f}"')
        text = html.escape(r.text, quote=False)
        out.append(f'<tspan {" ".join(attrs)}>{text}</tspan>' if attrs else text)
    return "".join(out)
