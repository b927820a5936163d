"""attnlab.plots: legible figures (text size in the book's column) and heatmap colour bars.

The reference for "legible" is the PNG the figure becomes: its pixel width (read back with
PIL) fixes how much the book's column shrinks it, and every text's size in points fixes its
height in the PNG. Nothing here reuses the helpers' own arithmetic.
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


def shown_text_px(fig) -> float:
    """Smallest visible text of ``fig`` in CSS pixels once its PNG is fitted into the book's column."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", dpi=fig.dpi)
    width = Image.open(io.BytesIO(buf.getvalue())).size[0]
    scale = min(1.0, plots.COLUMN_PX / width)
    pts = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return min(pts) * fig.dpi / 72 * scale


def four_panels(fontsize=6):
    fig, axes = plt.subplots(1, 4, figsize=(11, 2.9))
    for k, ax in enumerate(axes):
        plots.heatmap(ax, np.arange(9.0).reshape(3, 3) / 8, title=f"panel {k}", vmin=0, vmax=1)
        ax.tick_params(labelsize=fontsize)
    axes[0].plot([], [], label="weights")
    axes[0].legend(fontsize=fontsize)
    return fig


def test_a_wide_figure_is_illegible_before_and_legible_after():
    fig = four_panels()
    assert shown_text_px(fig) < plots.MIN_TEXT_PX          # the defect the book had: ~5 px labels
    smallest = plots.make_legible(fig)
    assert shown_text_px(fig) >= plots.MIN_TEXT_PX
    pts = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    assert smallest == pytest.approx(min(pts) * fig.dpi / 72)


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
