"""attnlab.plots: legible figures (text size in the book's column) and heatmap colour bars.

The reference for "legible" is the PNG the figure becomes: its pixel width (read back with
PIL) fixes how much the book's column shrinks it, and every text's size in points fixes its
height in the PNG. A text's size is what a reader measures on the screen, the height of its
capitals and digits, found here by counting the rows of ink of a rendered "H" (not the font
size, the em: text whose em is 9 px shows capitals 6.6 px tall and lower case 4.9 px, the
defect the book had). Nothing here reuses the helpers' own arithmetic.
"""
from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colorbar import Colorbar  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from PIL import Image  # noqa: E402

from attnlab import plots  # noqa: E402


@pytest.fixture(autouse=True)
def _style():
    with plt.rc_context():
        plots.book_style()
        yield
    plt.close("all")


def _ink_rows(png: bytes) -> int:
    ink = np.asarray(Image.open(io.BytesIO(png)).convert("L")) < 128
    rows = np.flatnonzero(ink.any(axis=1))
    return int(rows[-1] - rows[0] + 1)


def capital_height_per_em() -> float:
    """Height of the capitals and digits of matplotlib's font per font size, counted in a PNG's pixels."""
    fig = plt.figure(figsize=(3, 2), dpi=100)
    fig.text(0.1, 0.3, "H", fontsize=72)                            # 72 pt at 100 dpi: an em of 100 px
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return _ink_rows(buf.getvalue()) / 100


def shown_text_px(fig) -> float:
    """Smallest visible text of ``fig`` (height of capitals) in CSS pixels once its PNG is fitted into the column."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", dpi=fig.dpi)
    width = Image.open(io.BytesIO(buf.getvalue())).size[0]
    scale = min(1.0, plots.COLUMN_PX / width)
    pts = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return min(pts) * fig.dpi / 72 * capital_height_per_em() * scale


def test_the_capital_height_the_helpers_assume_is_the_fonts():
    assert plots.CAP_HEIGHT_EM == pytest.approx(capital_height_per_em(), abs=0.02)


def four_panels(fontsize=6):
    fig, axes = plt.subplots(1, 4, figsize=(11, 2.9))
    for k, ax in enumerate(axes):
        plots.heatmap(ax, np.arange(9.0).reshape(3, 3) / 8, title=f"panel {k}", vmin=0, vmax=1)
        ax.tick_params(labelsize=fontsize)
    axes[0].plot([], [], label="weights")
    axes[0].legend(fontsize=fontsize)
    axes[1].annotate("peak", (1, 1), xytext=(6, 6), textcoords="offset points", fontsize=fontsize)
    axes[2].text(0, 2, "note", fontsize=fontsize)
    return fig


def test_text_raised_to_a_9_px_em_is_still_too_small():
    """The old floor (font size 9 px where shown) leaves capitals under 9 px: it must not pass."""
    fig = four_panels()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plots, "CAP_HEIGHT_EM", 1.0)                    # what the helpers did before: the em
        plots.make_legible(fig)
    assert 6.0 < shown_text_px(fig) < plots.MIN_TEXT_PX


def test_a_wide_figure_is_illegible_before_and_legible_after():
    fig = four_panels()
    assert shown_text_px(fig) < plots.MIN_TEXT_PX          # the defect the book had: ~5 px labels
    smallest = plots.make_legible(fig)
    assert shown_text_px(fig) >= plots.MIN_TEXT_PX
    pts = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    assert smallest == pytest.approx(min(pts) * fig.dpi / 72 * capital_height_per_em(), rel=0.03)
    raised = [t for t in fig.findobj(Text) if t.get_text() in ("peak", "note", "weights", "0.50")]
    assert len(raised) >= 4 and min(t.get_fontsize() for t in raised) > 6      # annotations, ax.text, legend, cells


def test_a_narrow_figure_is_left_alone():
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot([0, 1], [0, 1], label="line")
    ax.set_title("title")
    ax.legend()
    before = [t.get_fontsize() for t in fig.findobj(Text)]
    plots.make_legible(fig)
    assert [t.get_fontsize() for t in fig.findobj(Text)] == before
    assert shown_text_px(fig) >= plots.MIN_TEXT_PX


def test_new_tick_labels_after_raising_keep_the_floor():
    fig = four_panels()
    plots.make_legible(fig)
    for ax in fig.axes:
        ax.set_xticks(range(3))                             # creates fresh Tick objects
    assert shown_text_px(fig) >= plots.MIN_TEXT_PX * 0.99


def colorbars(fig) -> list[Colorbar]:
    return [ax._colorbar for ax in fig.axes if getattr(ax, "_colorbar", None) is not None]


def test_heatmap_without_numbers_gets_a_colour_bar():
    fig, (a, b) = plt.subplots(1, 2)
    plots.heatmap(a, np.eye(3), annotate=True)
    assert colorbars(fig) == []
    plots.heatmap(b, np.eye(3), annotate=False)
    assert len(colorbars(fig)) == 1
    fig2, ax = plt.subplots()
    plots.heatmap(ax, np.eye(3), annotate=True, colorbar=True)
    assert len(colorbars(fig2)) == 1
    fig3, ax = plt.subplots()
    plots.heatmap(ax, np.eye(3), annotate=False, colorbar=False)
    assert colorbars(fig3) == []


def test_a_large_matrix_is_not_annotated_and_gets_a_bar():
    fig, ax = plt.subplots()
    plots.heatmap(ax, np.random.default_rng(0).random((12, 12)))
    assert not [t for t in ax.texts]
    assert len(colorbars(fig)) == 1


def test_heatmaps_with_one_fixed_scale_share_one_bar():
    fig, axes = plt.subplots(1, 4)
    for ax in axes[:3]:
        plots.heatmap(ax, np.eye(3), annotate=False, vmin=0, vmax=1)
    plots.heatmap(axes[3], np.eye(3) * 5, annotate=False)            # its own scale, its own bar
    bars = colorbars(fig)
    assert len(bars) == 2
    assert sorted((b.vmin, b.vmax) for b in bars) == [(0.0, 1.0), (0.0, 5.0)]
    fig.canvas.draw()                                                # the layout with shared bars works


@pytest.mark.slow
def test_the_kernel_draws_legible_stamped_pngs():
    """In a real Jupyter kernel book_style's formatter raises small text and stamps the PNG."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    code = ("import matplotlib.pyplot as plt\nimport attnlab as al\nal.plots.book_style()\n"
            "fig, ax = plt.subplots(figsize=(11, 3))\nax.plot([0, 1], [0, 1], label='x')\n"
            "ax.legend(fontsize=5)\nax.set_title('tiny', fontsize=5)\nplt.show()")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    pngs = [o["data"]["image/png"] for o in nb.cells[0].outputs if "image/png" in o.get("data", {})]
    assert len(pngs) == 1
    img = Image.open(io.BytesIO(base64.b64decode(pngs[0])))
    smallest_png_px = float(img.text[plots.PNG_TEXT_KEY])
    shown = smallest_png_px * min(1.0, plots.COLUMN_PX / img.size[0])
    assert shown >= plots.MIN_TEXT_PX
    assert smallest_png_px > 5 * plots.FIGURE_DPI / 72             # the 5 pt text was raised
