"""Every figure of the book has a description, and the book puts it into the ``<img>``'s alt.

Fast checks over the pages' sources (chapters, exercises, solutions and the pages at the top):
every code cell that draws a matplotlib figure describes it with ``al.plots.describe(fig, "...")``
in words (not empty, not a path, a file name or a hash, not TeX, not the figure's caption), and
the Chinese pages catalog translates each description. Then ``_ext/figure_alt.py`` on a doctree:
the description stored in a PNG (written here by matplotlib's own ``savefig``) or an SVG becomes
the image node's alt. tests/build/test_a11y_browser.py checks the built book itself.
"""
from __future__ import annotations

import ast
import base64
import re
from pathlib import Path

import pytest

from bookbuild.pages import code_cells, pages

ROOT = Path(__file__).resolve().parents[2]

FIGURE_CALLS = {"subplots", "figure", "subplot_mosaic"}          # plt.<call>(...) makes a figure
NOT_WORDS = re.compile(r"[/\\]\S*\.(png|svg|jpe?g)|\.(png|svg|jpe?g)\b|\b[0-9a-f]{16,}\b|\$|\\[a-z]+", re.I)
_CAPTION = re.compile(r"^:\s+caption: \|\n((?::\s{6,}.*\n)+)", re.M)


def _calls(tree, name):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and (n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None)) == name]


def figure_cells():
    """(page, line, number of figures made, descriptions, caption) of every cell that draws."""
    for page in pages(ROOT):
        text = page.read_text(encoding="utf-8")
        for line, source in ((cell.line, cell.source) for cell in code_cells(page)):
            tree = ast.parse(source)
            made = sum(len([c for c in _calls(tree, name) if isinstance(c.func, ast.Attribute)
                            and getattr(c.func.value, "id", "") == "plt"]) for name in FIGURE_CALLS)
            if not made:
                continue
            texts = [c.args[1].value for c in _calls(tree, "describe")
                     if len(c.args) == 2 and isinstance(c.args[1], ast.Constant)]
            cell = text.split("\n")[line - 1: line - 1 + source.count("\n") + 1]
            found = _CAPTION.search("\n".join(cell) + "\n")
            caption = " ".join(re.sub(r"^:\s+", "", ln) for ln in found.group(1).splitlines()) if found else ""
            yield page.relative_to(ROOT).as_posix(), line, made, texts, caption


FIGURES = list(figure_cells())


def test_the_pages_draw_figures():
    assert sum(made for _, _, made, _, _ in FIGURES) >= 20


@pytest.mark.parametrize(("page", "line", "made", "texts", "caption"), FIGURES,
                         ids=[f"{p}:{ln}" for p, ln, *_ in FIGURES])
def test_every_figure_is_described_in_words(page, line, made, texts, caption):
    assert len(texts) >= made, (f"{page}, cell at line {line}: {made} figure(s) and {len(texts)} "
                                'al.plots.describe(fig, "...") call(s) with a literal description')
    for text in texts:
        words = text.split()
        assert len(words) >= 8, f"{page}:{line}: say what the figure shows, in a sentence: {text!r}"
        assert not NOT_WORDS.search(text), f"{page}:{line}: a path, a file name, a hash or TeX: {text!r}"
        assert " ".join(words) not in " ".join(caption.split()), f"{page}:{line}: the caption again: {text!r}"


def test_every_description_is_translated_for_the_chinese_edition():
    from babel.messages import pofile
    with (ROOT / "attnlab/locale/zh_CN/LC_MESSAGES/pages.po").open("rb") as handle:
        catalog = pofile.read_po(handle)
    untranslated = [text for *_, texts, _ in FIGURES for text in texts
                    if not (catalog.get(text) and catalog.get(text).string and not catalog.get(text).fuzzy)]
    assert untranslated == [], (f"{len(untranslated)} descriptions without a current Chinese translation in "
                                f"pages.po (make translations, then translate them): {untranslated[:3]}")


# --- _ext/figure_alt.py -----------------------------------------------------------------------------------

DESCRIPTION = "A heatmap of weights, each row summing to one."
ZH = "权重热图，每行之和为一。"


def _png(path: Path, alt: str | None) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(1, 1))
    fig.savefig(path, metadata={"attnlab:alt": alt} if alt else None)
    plt.close(fig)
    return path


def _doctree(*uris, alt=None):
    from docutils import nodes
    from docutils.utils import new_document
    doc = new_document("test")
    for uri in uris:
        image = nodes.image(uri=uri, candidates={"*": uri})
        if alt:
            image["alt"] = alt
        doc += image
    return doc


class _App:
    def __init__(self, srcdir):
        self.srcdir = str(srcdir)


def _alts(doc):
    from docutils import nodes
    return [image.get("alt") for image in doc.findall(nodes.image)]


def test_the_description_in_a_png_or_an_svg_becomes_the_images_alt(tmp_path):
    import figure_alt
    _png(tmp_path / "en.png", DESCRIPTION)
    _png(tmp_path / "zh.png", ZH)                                   # iTXt: UTF-8
    _png(tmp_path / "none.png", None)
    (tmp_path / "d.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="x">\n'
                                    f"  <title>{DESCRIPTION}</title><rect/></svg>", encoding="utf-8")
    (tmp_path / "label.svg").write_text(f'<svg xmlns="http://www.w3.org/2000/svg" aria-label="{ZH}"/>',
                                        encoding="utf-8")
    data = "data:image/svg+xml;base64," + base64.b64encode(
        f"<svg><title>{DESCRIPTION}</title></svg>".encode()).decode()
    doc = _doctree("en.png", "zh.png", "none.png", "d.svg", "label.svg", data)
    figure_alt.describe_images(_App(tmp_path), doc, "page")
    assert _alts(doc) == [DESCRIPTION, ZH, None, DESCRIPTION, ZH, DESCRIPTION]


def test_an_alt_the_page_gives_is_kept(tmp_path):
    import figure_alt
    _png(tmp_path / "en.png", DESCRIPTION)
    doc = _doctree("en.png", alt="Given by the page.")
    figure_alt.describe_images(_App(tmp_path), doc, "page")
    assert _alts(doc) == ["Given by the page."]


def test_the_extension_reads_the_key_attnlab_writes():
    import figure_alt

    from attnlab import plots
    assert figure_alt.PNG_ALT_KEY == plots.PNG_ALT_KEY
