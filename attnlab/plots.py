"""Figures shared by the chapters: weight heatmaps, mask grids and convex-hull pictures.

Every chapter draws with these helpers so the figures look alike. Call :func:`book_style`
once per page: it sets matplotlib's rcParams and, in a Jupyter kernel, the PNG formatter of
figures, which makes every text of a figure legible in the book (see :func:`make_legible`).
In Chinese (``attnlab.i18n.set_language("zh_CN")`` or ``ATTNLAB_LANG=zh_CN``) it also puts a CJK
font first among matplotlib's fonts, and translates at the edge (``attnlab.edge``): the page's
own figure texts, written in English, are translated when the figure is drawn into its PNG, and
its printed text and tables when they are shown; math mixed in included, they show as characters.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.text import Text

from . import edge
from .i18n import N_, _, get_language

ALLOWED_COLOR = "#2b6cb0"
FORBIDDEN_COLOR = "#edf2f7"
# The colours of the roles, shared with the drawn diagrams (attnlab.diagrams): a plot that shows queries,
# keys, values or outputs uses these, so that a figure and a diagram of the same page agree
QUERY_COLOR = ALLOWED_COLOR
KEY_COLOR = "#dd6b20"
VALUE_COLOR = "#2f855a"
OUTPUT_COLOR = "#c53030"        # the output star of convex_picture
FIGURE_DPI = 110         # pixels per inch of the PNGs in the book
COLUMN_PX = 720          # width of the book's text column at a 1280 px window (tests/test_browser.py measures it)
MIN_TEXT_PX = 9.0        # the smallest text a reader may see there: height of its capitals and digits, CSS px
CAP_HEIGHT_EM = 0.73     # that height per font size (em) in DejaVu Sans, matplotlib's font (1493/2048)
PNG_TEXT_KEY = "attnlab:min-text-px"   # PNG tEXt entry: smallest text (capital height), in pixels of the PNG
_PAD_INCHES = 0.1        # matplotlib's pad around a bbox_inches="tight" figure


# Fonts with the characters of Simplified Chinese, best first (the book's machines install fonts-noto-cjk),
# and the files they come in, for a matplotlib font cache written before the font was installed.
CJK_FAMILIES = ("Noto Sans CJK SC", "Source Han Sans SC", "Noto Sans SC", "WenQuanYi Zen Hei",
                "WenQuanYi Micro Hei", "Microsoft YaHei", "SimHei", "PingFang SC", "Heiti SC")
CJK_FILES = ("NotoSansCJK-Regular.ttc", "NotoSansCJKsc-Regular.otf", "NotoSansSC-Regular.otf",
             "SourceHanSansSC-Regular.otf", "wqy-zenhei.ttc", "wqy-microhei.ttc")
NO_CJK_FONT = N_("attnlab: no CJK font found for matplotlib (looked for {families}); Chinese labels in figures "
               "will show as boxes. Install one, e.g. `apt-get install fonts-noto-cjk` (Noto Sans CJK SC), "
               "then restart the kernel.")
_warned_no_cjk = False


def _known_families() -> set[str]:
    from matplotlib import font_manager
    return {f.name for f in font_manager.fontManager.ttflist}


def find_cjk_font() -> str | None:
    """The family name of an installed CJK font matplotlib can draw with (see CJK_FAMILIES), or None.

    A font installed after matplotlib wrote its font cache is not in that cache: its file is looked
    for among the system's fonts and added to matplotlib's font list.
    """
    known = _known_families()
    found = next((name for name in CJK_FAMILIES if name in known), None)
    if found is not None:
        return found
    from matplotlib import font_manager
    for path in font_manager.findSystemFonts():
        if Path(path).name in CJK_FILES:
            try:
                font_manager.fontManager.addfont(path)
            except (OSError, RuntimeError, ValueError):       # an unreadable file: try the next one
                continue
    known = _known_families()
    return next((name for name in CJK_FAMILIES if name in known), None)


def _use_cjk_font() -> None:
    """zh_CN: a CJK font first, then the primary family; otherwise: none of ours.

    First, not a fallback behind DejaVu Sans: a label that mixes Chinese and math ("序列长度 $T$")
    is drawn by mathtext, which sets its text outside the $...$ in one font, the first of the
    family list, with no fallback; behind DejaVu Sans its Chinese would show as boxes. The math
    itself keeps mathtext's own fonts; Latin text takes the CJK font's Latin letters (its cap
    height, 0.733 em, is DejaVu Sans's to 1%, so the size rules above still hold)."""
    families = plt.rcParams["font.family"]
    families = [families] if isinstance(families, str) else list(families)
    families = [f for f in families if f not in CJK_FAMILIES] or ["sans-serif"]
    if get_language() == "zh_CN":
        font = find_cjk_font()
        if font is not None:
            families = [font, *families]
        else:
            global _warned_no_cjk
            if not _warned_no_cjk:
                _warned_no_cjk = True
                looked_for = ", ".join(CJK_FAMILIES[:3])
                warnings.warn(_(NO_CJK_FONT).format(families=looked_for), stacklevel=3)
    plt.rcParams["font.family"] = families


def book_style() -> None:
    """Consistent figure size, resolution and fonts across chapters; legible PNGs in a kernel.

    In Chinese, a CJK font comes first among the fonts matplotlib draws with; where none is installed,
    one warning (per session) names the package to install, and figures show boxes for the characters.
    The page's printed text, tables and figure texts are then translated where they are shown
    (``attnlab.edge.install``).
    """
    plt.rcParams.update({
        "figure.figsize": (6.0, 3.6), "figure.dpi": FIGURE_DPI, "savefig.dpi": FIGURE_DPI,
        "font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11, "xtick.labelsize": 10,
        "ytick.labelsize": 10, "legend.fontsize": 10, "figure.titlesize": 12,
        "axes.spines.top": False, "axes.spines.right": False, "figure.constrained_layout.use": True,
    })
    _use_cjk_font()
    _install_png_formatter()
    edge.install()


def _visible_texts(fig) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def _shown_scale(fig) -> float:
    """How much the book shrinks the PNG of ``fig``: column width / PNG width, at most 1."""
    fig.draw_without_rendering()                                     # runs the layout engine first
    bbox = fig.get_tightbbox(fig.canvas.get_renderer())              # inches
    png_px = (bbox.width + 2 * _PAD_INCHES) * fig.dpi
    return min(1.0, COLUMN_PX / png_px)


def make_legible(fig, min_px: float = MIN_TEXT_PX) -> float:
    """Raise every text of ``fig`` whose capitals would be shown less than ``min_px`` tall in the book.

    A text's size is what a reader measures on the screen: the height of its capitals and digits,
    ``CAP_HEIGHT_EM`` of the font size (the font size itself, the em, is 1.37 times taller, and
    lower-case letters are shorter still). A PNG wider than the column (``COLUMN_PX``) is shrunk to
    fit, and its text with it: a font of ``pt`` points is shown with capitals
    ``pt * dpi / 72 * CAP_HEIGHT_EM * scale`` pixels tall. Texts below the floor (tick labels,
    legends, cell numbers, annotations, a chapter's own ``fontsize=``) are raised to it; the
    layout is redone and checked again, as bigger labels widen the figure. Returns the smallest
    capital height in pixels of the PNG (what :data:`PNG_TEXT_KEY` records).
    """
    for _attempt in range(4):
        floor_pt = min_px * 1.03 * 72 / (fig.dpi * CAP_HEIGHT_EM * _shown_scale(fig))   # 3 % spare for rounding
        small = [t for t in _visible_texts(fig) if t.get_fontsize() < floor_pt - 1e-6]
        if not small:
            break
        for ax in fig.axes:                           # tick labels: through tick_params, so new ticks get it too
            for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
                for which, ticks in (("major", axis.get_major_ticks()), ("minor", axis.get_minor_ticks())):
                    if ticks and ticks[0].label1.get_fontsize() < floor_pt:
                        ax.tick_params(axis=name, which=which, labelsize=floor_pt)
        for t in small:
            if t.get_fontsize() < floor_pt:
                t.set_fontsize(floor_pt)
    sizes = [t.get_fontsize() for t in _visible_texts(fig)]
    return (min(sizes) if sizes else plt.rcParams["font.size"]) * fig.dpi / 72 * CAP_HEIGHT_EM


def _legible_png(fig, **kwargs) -> str:
    """The inline backend's PNG of ``fig`` (base64), in the edition's language, made legible and
    stamped with its smallest text."""
    from IPython.core.pylabtools import print_figure
    edge.translate_figure(fig)
    smallest = make_legible(fig)
    kwargs.setdefault("bbox_inches", "tight")
    return print_figure(fig, "png", base64=True, metadata={PNG_TEXT_KEY: f"{smallest:.2f}"}, **kwargs)


def _install_png_formatter() -> None:
    """In an IPython kernel, draw figures with :func:`_legible_png` (no-op elsewhere)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return
    import matplotlib
    from matplotlib.figure import Figure
    if "inline" in matplotlib.get_backend():
        # importing the inline backend registers its own formatters: let it do so first
        import matplotlib_inline.backend_inline  # noqa: F401
    shell.display_formatter.formatters["image/png"].for_type(Figure, _legible_png)


def _label_axes(ax, rows, cols, row_labels, col_labels, xlabel, ylabel, title):
    """Ticks on every row and column (with labels if given), axis labels, title."""
    ax.set_xticks(range(cols), col_labels if col_labels is not None else range(cols))
    ax.set_yticks(range(rows), row_labels if row_labels is not None else range(rows))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)


def heatmap(ax, matrix, row_labels=None, col_labels=None, title=None, annotate=True, fmt="{:.2f}",
            cmap="viridis", vmin=None, vmax=None, xlabel=None, ylabel=None, colorbar=None):
    """Draw a matrix (e.g. attention weights, rows = queries) with optional numbers in the cells.

    The axis labels default to "key j" and "query i" (in the current language); pass "" for none.

    A heatmap whose cells carry no numbers gets a colour bar (``colorbar=None`` means: when
    not annotated). Heatmaps of one figure with the same explicit scale (cmap, vmin, vmax)
    share one bar, beside the last of them.
    """
    m = np.asarray(matrix, dtype=float)
    im = ax.imshow(m, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    rows, cols = m.shape
    xlabel = _("key j") if xlabel is None else xlabel
    ylabel = _("query i") if ylabel is None else ylabel
    _label_axes(ax, rows, cols, row_labels, col_labels, xlabel, ylabel, title)
    annotated = annotate and rows * cols <= 100
    if annotated:
        lo, hi = np.nanmin(m), np.nanmax(m)
        mid = (lo + hi) / 2
        size = plt.rcParams["xtick.labelsize"]
        for i in range(rows):
            for j in range(cols):
                ax.text(j, i, fmt.format(m[i, j]), ha="center", va="center", fontsize=size,
                        color="white" if m[i, j] < mid else "black")
    if colorbar or (colorbar is None and not annotated):
        shared = (str(cmap), vmin, vmax) if vmin is not None and vmax is not None else None
        _colorbar(ax, im, shared)
    return im


def _colorbar(ax, im, shared) -> None:
    """A colour bar for ``im``; with a ``shared`` scale key, one bar for all such axes of the figure."""
    fig = ax.figure
    bars = fig.__dict__.setdefault("_attnlab_colorbars", {})
    axes = [ax]
    if shared is not None and shared in bars:
        axes, bar = bars[shared]
        bar.remove()
        axes = [*axes, ax]
    bar = fig.colorbar(im, ax=axes, shrink=0.85 if len(axes) == 1 else 0.9, pad=0.02)
    if shared is not None:
        bars[shared] = (axes, bar)


def mask_grid(ax, allowed, title=None, row_labels=None, col_labels=None, xlabel=None, ylabel=None):
    """Draw a boolean allowed mask as a grid: filled = may read, pale = forbidden.

    The axis labels default to "key position j" and "query position i" (in the current language).
    """
    xlabel = _("key position j") if xlabel is None else xlabel
    ylabel = _("query position i") if ylabel is None else ylabel
    a = np.asarray(allowed, dtype=bool)
    rows, cols = a.shape
    ax.imshow(np.where(a, 1.0, 0.0), cmap=plt.matplotlib.colors.ListedColormap([FORBIDDEN_COLOR, ALLOWED_COLOR]),
              vmin=0, vmax=1, aspect="equal")
    ax.set_xticks(np.arange(cols + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(rows + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    _label_axes(ax, rows, cols, row_labels, col_labels, xlabel, ylabel, title)


def _hull(points: np.ndarray) -> np.ndarray:
    """Convex hull of 2-D points (Andrew's monotone chain), counter-clockwise, no repeats."""
    pts = sorted(map(tuple, np.unique(points, axis=0)))
    if len(pts) <= 2:
        return np.array(pts)

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.array(lower[:-1] + upper[:-1])


def convex_picture(ax, values, weights, allowed=None, labels=None, title=None):
    """Values as points in the plane, the hull of the allowed ones, and the output sum_j a_j v_j.

    ``values`` (S, 2), ``weights`` (S,). Point sizes grow with the weights; forbidden values
    are drawn hollow and left out of the hull. The legend goes below the figure, once per figure
    (the panels of one figure share it: draw the panel with forbidden values first, if any).
    """
    v = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    ok = np.ones(len(v), dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    hull = _hull(v[ok])
    if len(hull) >= 3:
        ax.fill(hull[:, 0], hull[:, 1], color=ALLOWED_COLOR, alpha=0.12, label=_("convex hull of allowed values"))
        ax.plot(np.r_[hull[:, 0], hull[0, 0]], np.r_[hull[:, 1], hull[0, 1]], color=ALLOWED_COLOR, lw=1)
    elif len(hull) == 2:
        ax.plot(hull[:, 0], hull[:, 1], color=ALLOWED_COLOR, lw=2, alpha=0.5, label=_("hull of allowed values"))
    ax.scatter(v[ok, 0], v[ok, 1], s=40 + 400 * w[ok], color=ALLOWED_COLOR, zorder=3,
               label=_("values (size = weight)"))
    if (~ok).any():
        ax.scatter(v[~ok, 0], v[~ok, 1], s=60, facecolors="none", edgecolors="gray", zorder=3,
                   label=_("forbidden values"))
    out = w @ v
    ax.scatter([out[0]], [out[1]], marker="*", s=220, color=OUTPUT_COLOR, zorder=4, label=_("output"))
    for j, p in enumerate(v):
        ax.annotate(labels[j] if labels is not None else f"$v_{{{j + 1}}}$", p, textcoords="offset points",
                    xytext=(6, 6))
    ax.set_aspect("equal", adjustable="datalim")
    fig = ax.figure
    if not fig.legends:                       # one legend below the panels: inside an axes it covers the hull
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=2, markerscale=0.6)
    if title:
        ax.set_title(title)
    return out
