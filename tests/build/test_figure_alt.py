"""Alt text of figures: ``attnlab.plots.describe`` and what carries the description to the book.

A matplotlib figure keeps its English description and the kernel's PNG formatter writes it, in the
current language, into the PNG's ``attnlab:alt`` text entry (read back here with PIL, the way any
PNG reader sees it); an SVG carries it as its root's first ``<title>`` with ``role="img"`` and
``aria-label`` (read back with ElementTree).
"""
from __future__ import annotations

import base64
import io
import xml.etree.ElementTree as ET

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from attnlab import i18n, plots  # noqa: E402

SVG_NS = "{http://www.w3.org/2000/svg}"
TEXT = "A line rising from the lower left to the upper right."


@pytest.fixture(autouse=True)
def _english():
    yield
    i18n.set_language("en")
    plt.close("all")


def png_text(fig) -> dict:
    png = base64.b64decode(plots._legible_png(fig))
    return Image.open(io.BytesIO(png)).text


def test_the_png_carries_the_description():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    assert plots.describe(fig, TEXT) is fig
    assert png_text(fig)["attnlab:alt"] == TEXT
    assert plots.PNG_ALT_KEY == "attnlab:alt"           # the key the book's extension reads


def test_a_figure_without_a_description_has_no_alt_entry():
    fig, _ = plt.subplots()
    text = png_text(fig)
    assert "attnlab:alt" not in text and "attnlab:min-text-px" in text


def test_the_description_is_translated_when_the_figure_is_drawn():
    """English in the source; the Chinese edition's PNG holds the pages catalog's translation (UTF-8)."""
    from babel.messages import pofile
    with (i18n.LOCALE_DIR / "zh_CN" / "LC_MESSAGES" / "pages.po").open("rb") as handle:
        catalog = pofile.read_po(handle)
    english, chinese = next((m.id, m.string) for m in catalog if m.id and m.string and not m.fuzzy
                            and "{" not in m.id and len(m.id) > 20 and m.id == m.id.strip())
    fig, _ = plt.subplots()
    plots.describe(fig, english)                   # described while English is on ...
    i18n.set_language("zh_CN")
    assert png_text(fig)["attnlab:alt"] == chinese  # ... drawn in Chinese


@pytest.mark.parametrize("bad", ["", "   ", "../_images/c320fe40e0.png", "figure.svg",
                                 "c320fe40c320fe40c320fe40c320fe40", None, 3])
def test_an_empty_text_a_path_or_a_hash_is_refused(bad):
    fig, _ = plt.subplots()
    with pytest.raises(ValueError, match="describe"):
        plots.describe(fig, bad)


def test_only_figures_and_svg_can_be_described():
    with pytest.raises(ValueError, match="Figure or SVG"):
        plots.describe([1, 2], TEXT)


def _root(svg: str):
    return ET.fromstring(svg)


@pytest.mark.parametrize("svg", [
    '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="5" height="5"/></svg>',
    '<svg xmlns="http://www.w3.org/2000/svg"/>',
    '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="old">'
    '<title>old</title><circle r="2"/></svg>',
])
def test_an_svg_gets_a_title_first_and_an_accessible_name(svg):
    described = plots.describe(svg, 'Two "boxes" & a circle.')
    root = _root(described.split("?>")[-1])
    assert root.get("role") == "img"
    assert root.get("aria-label") == 'Two "boxes" & a circle.'
    first = list(root)[0]
    assert first.tag == f"{SVG_NS}title" and first.text == 'Two "boxes" & a circle.'
    assert [c.tag for c in root].count(f"{SVG_NS}title") == 1           # an earlier title is replaced
    assert len(list(root)) == len(list(_root(svg.split("?>")[-1]))) + (0 if "<title>" in svg else 1)


def test_an_ipython_svg_object_is_described_in_place():
    from IPython.display import SVG
    picture = SVG('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="2" height="2"/></svg>')
    assert plots.describe(picture, TEXT) is picture
    assert _root(picture.data).get("aria-label") == TEXT


def test_svg_text_without_an_svg_element_is_refused():
    with pytest.raises(ValueError, match="<svg>"):
        plots.svg_with_alt("<div>no picture</div>", TEXT)


@pytest.mark.slow
def test_a_kernel_set_up_by_book_style_stamps_the_description():
    """In a real Jupyter kernel, as the book executes its pages: describe() then plt.show()."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    code = ("import matplotlib.pyplot as plt\nimport attnlab as al\nal.plots.book_style()\n"
            "fig, ax = plt.subplots()\nax.plot([0, 1], [0, 1])\n"
            f"al.plots.describe(fig, {TEXT!r})\nplt.show()")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    pngs = [o["data"]["image/png"] for o in nb.cells[0].outputs if "image/png" in o.get("data", {})]
    assert len(pngs) == 1
    assert Image.open(io.BytesIO(base64.b64decode(pngs[0]))).text["attnlab:alt"] == TEXT
