"""The book's local Sphinx extensions (_ext/): Chinese glosses as lang="zh" spans, figure stamps,
glossary word forms on one line."""
from __future__ import annotations

import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from docutils import nodes  # noqa: E402
from docutils.core import publish_doctree  # noqa: E402

from attnlab import plots  # noqa: E402
from tests.browser_support import ROOT  # noqa: E402

sys.path.insert(0, str(ROOT / "_ext"))
import cjk_glosses  # noqa: E402
import glossary_word_forms  # noqa: E402
import latex_superscripts  # noqa: E402
import legible_figures  # noqa: E402
import math_nowrap  # noqa: E402
import table_code_breaks  # noqa: E402


def test_runs_of_chinese_become_zh_spans_and_the_rest_stays_text():
    out = cjk_glosses.split_cjk("key (键) and query（查询）, done")
    kinds = [(type(n).__name__, n.astext()) for n in out]
    assert kinds == [("Text", "key ("), ("inline", "键"), ("Text", ") and query"), ("inline", "（查询）"),
                     ("Text", ", done")]
    assert "".join(n.astext() for n in out) == "key (键) and query（查询）, done"


def test_the_span_is_written_with_lang_zh():
    from docutils.writers.html5_polyglot import Writer
    doc = publish_doctree("A key (键).")
    para = next(iter(doc.findall(nodes.paragraph)))
    text = next(iter(para.findall(nodes.Text)))
    para.replace(text, cjk_glosses.split_cjk(str(text)))
    from docutils.core import publish_from_doctree
    html = publish_from_doctree(doc, writer=Writer()).decode()
    assert '<span class="zh" lang="zh">键</span>' in html


def test_code_and_math_keep_their_chinese():
    doc = publish_doctree("Prose 键 and ``code 键`` and :math:`键`.")
    texts = [t for t in doc.findall(nodes.Text) if "键" in t]
    skipped = [cjk_glosses._skipped(t) for t in texts]
    assert skipped == [False, True, True]


def test_inline_math_is_glued_to_the_punctuation_that_touches_it():
    doc = publish_doctree("So :math:`x`, and (:math:`y`) then :math:`z` is; :math:`T`。下, :math:`a`, :math:`b`, end.")
    before = doc.astext()
    assert math_nowrap.glue_all(doc) == 5
    assert doc.astext() == before                                  # nothing added or lost
    spans = [n for n in doc.findall(nodes.inline) if "math-nowrap" in n["classes"]]
    assert [n.astext() for n in spans] == ["x,", "(y)", "T。", "a,", "b,"]
    z = next(m for m in doc.findall(nodes.math) if m.astext() == "z")
    assert isinstance(z.parent, nodes.paragraph)                  # followed by a space: left alone
    assert math_nowrap.glue_all(doc) == 0                          # idempotent


def test_superscript_numbers_in_prose_become_math_for_the_pdf_and_code_keeps_them():
    from attnlab.display import scientific
    small, large = scientific(1.8e-15), scientific(-2.5e7)
    doc = publish_doctree(f"Worst error {small}, then {large}; plain 10 stays.\n\n``{small} in code``\n\n"
                          f"::\n\n    printed {small}\n")
    assert latex_superscripts.rewrite(doc) == 2
    formulas = [m.astext() for m in doc.findall(nodes.math)]
    assert formulas == [r"1.8 \times 10^{-15}", r"-2.5 \times 10^{7}"]
    prose = doc.children[0].astext()
    assert prose == r"Worst error 1.8 \times 10^{-15}, then -2.5 \times 10^{7}; plain 10 stays."
    assert small in doc.children[1].astext() and small in doc.children[2].astext()   # code and output
    assert latex_superscripts.rewrite(doc) == 0                                      # idempotent


def test_long_code_names_in_table_cells_get_break_opportunities_after_dots_and_underscores():
    doc = publish_doctree(".. list-table::\n\n   * - ``torch.nn.functional.scaled_dot_product_attention``\n"
                          "     - ``test_bad_input.py`` and ``a long name with spaces in it``\n\n"
                          "``torch.nn.functional.scaled_dot_product_attention`` in prose.\n")
    assert table_code_breaks.mark_tables(doc) == 1
    cell, prose = [lit for lit in doc.findall(nodes.literal)][0], doc.children[-1]
    pieces = [str(c) for c in cell.children if isinstance(c, nodes.Text)]
    assert pieces == ["torch.", "nn.", "functional.", "scaled_", "dot_", "product_", "attention"]
    assert all(c.astext() == "<wbr>" and c["format"] == "html" for c in cell.children if isinstance(c, nodes.raw))
    assert "".join(pieces) == "torch.nn.functional.scaled_dot_product_attention"     # nothing added to copy
    assert not list(prose.findall(nodes.raw))                  # prose and short or spaced names untouched
    assert table_code_breaks.mark_tables(doc) == 0             # idempotent


def test_the_glued_math_is_written_as_a_nowrap_span():
    from docutils.core import publish_from_doctree
    from docutils.writers.html5_polyglot import Writer
    doc = publish_doctree("Keys :math:`K`, values.")
    math_nowrap.glue_all(doc)
    html = publish_from_doctree(doc, writer=Writer()).decode()
    assert '<span class="math-nowrap"><span class="formula"><i>K</i></span>,</span> values.' in html


def test_a_stamped_png_is_read_back(tmp_path):
    with plt.rc_context():
        plots.book_style()
        fig, ax = plt.subplots(figsize=(11, 3))
        ax.set_title("a title", fontsize=5)
        smallest = plots.make_legible(fig)
        path = tmp_path / "fig.png"
        fig.savefig(path, bbox_inches="tight", metadata={plots.PNG_TEXT_KEY: f"{smallest:.2f}"})
        plt.close(fig)
    width, min_px = legible_figures.png_stamp(path)
    assert min_px == pytest.approx(smallest, abs=0.01)
    assert legible_figures.PNG_TEXT_KEY == plots.PNG_TEXT_KEY
    # the width the stylesheet keeps the figure at: its smallest text reads at 9 px there
    legible = width * legible_figures.MIN_TEXT_PX / min_px
    assert min_px * legible / width == pytest.approx(9.0)
    assert legible <= plots.COLUMN_PX + 1                          # so it fits the column at 1280 px
    plain = tmp_path / "plain.png"
    plt.figure().savefig(plain)
    assert legible_figures.png_stamp(plain) is None


def test_bibliography_entries_are_labelled_as_they_are_cited_and_keep_their_titles():
    import bib_style  # noqa: F401  (registers the style)
    from pybtex.database import parse_string
    from pybtex.plugin import find_plugin
    bib = parse_string(r"""
    @article{one, author = {Vaswani, Ashish}, title = {Attention Is All You Need}, year = {2017}, journal = {X}}
    @article{two, author = {Jain, Sarthak and Wallace, Byron}, title = {Attention is not Explanation}, year = {2019},
             journal = {X}}
    @article{many, author = {Dao, Tri and Fu, Dan and Ermon, Stefano}, title = {FlashAttention}, year = {2022},
             journal = {X}}
    @article{many2, author = {Dao, Tri and Fu, Dan and Ré, Christopher}, title = {Other}, year = {2022}, journal = {X}}
    @misc{src, author = {{Source text A}}, title = {A Chinese Textbook Chapter}, year = {2026}}
    """, "bibtex")
    style = find_plugin("pybtex.style.formatting", "authoryear")()
    entries = {e.key: e for e in style.format_entries(bib.entries.values())}
    labels = {key: e.label for key, e in entries.items()}
    assert labels["one"] == "Vaswani, 2017" and labels["two"] == "Jain and Wallace, 2019"
    assert {labels["many"], labels["many2"]} == {"Dao et al., 2022a", "Dao et al., 2022b"}
    assert labels["src"] == "Source text A, 2026"
    assert "A Chinese Textbook Chapter" in entries["src"].text.render_as("text")     # not "a chinese textbook"


def test_the_bibliography_is_alphabetical_with_corporate_authors_among_their_letter():
    import bib_style  # noqa: F401  (registers the style)
    from pybtex.database import parse_string
    from pybtex.plugin import find_plugin
    bib = parse_string(r"""
    @misc{z, author = {Zhang, Wei}, title = {Z}, year = {2020}}
    @misc{g, author = {{Gemma Team}}, title = {G}, year = {2024}}
    @misc{a, author = {Ainslie, Joshua}, title = {A}, year = {2023}}
    @misc{h, author = {Henry, Alex}, title = {H}, year = {2020}}
    """, "bibtex")
    style = find_plugin("pybtex.style.formatting", "authoryear")()
    assert [e.key for e in style.format_entries(bib.entries.values())] == ["a", "g", "h", "z"]


def _entry(*terms: str) -> nodes.definition_list_item:
    from sphinx import addnodes

    item = nodes.definition_list_item()
    for n, text in enumerate(terms):
        term = nodes.term("", text, ids=[f"term-{n}"])
        index = addnodes.index()
        index["entries"] = [("single", text, f"term-{n}", "main", None)]
        term += index
        item += term
    item += nodes.definition("", nodes.paragraph(text="Softmax weights pinned near 0 and 1."))
    return item


@pytest.mark.parametrize("terms, line", [
    (("saturation (饱和)", "saturated (饱和)", "saturates (饱和)"), "saturation, saturated, saturates (饱和)"),
    (("饱和（saturation）", "饱和（saturated）"), "饱和（saturation、saturated）"),
])
def test_word_forms_of_one_term_become_one_line_that_keeps_every_anchor(terms, line):
    from sphinx import addnodes

    item = _entry(*terms)
    assert glossary_word_forms.merge_item(item)
    kept = [c for c in item.children if isinstance(c, nodes.term)]
    assert len(kept) == 1 and kept[0].astext() == line
    assert kept[0]["ids"] == [f"term-{n}" for n in range(len(terms))]       # links to any form land here
    assert len(list(kept[0].findall(addnodes.index))) == len(terms)           # and each stays in the index
    assert isinstance(item.children[-1], nodes.definition)


@pytest.mark.parametrize("terms", [
    ("KV cache (键值缓存)",),                                   # one term: nothing to merge
    ("cache (高速缓存)", "KV cache (键值缓存)"),                # different glosses: different terms
    ("saturation (饱和)", "饱和（saturated）"),                  # mixed order: left alone
    ("saturation", "saturated"),                               # no gloss
])
def test_entries_that_are_not_word_forms_of_one_term_stay_as_they_are(terms):
    item = _entry(*terms)
    assert not glossary_word_forms.merge_item(item)
    assert [c.astext() for c in item.children if isinstance(c, nodes.term)] == list(terms)


def test_pybtex_looks_each_plugin_up_once_and_finds_the_same_plugin():
    import bib_lookup_cache
    import pybtex.plugin
    from pybtex.backends.plaintext import Backend
    from pybtex.richtext import Text

    calls = []

    def counted(**selection):
        calls.append(selection)
        return uncached(**selection)

    uncached, bib_lookup_cache._uncached = bib_lookup_cache._uncached, counted
    bib_lookup_cache._entry_points.cache_clear()
    try:
        rounds = []
        for _ in range(3):
            assert pybtex.plugin.find_plugin("pybtex.backends", "text") is Backend
            assert Text("Vaswani").render_as("text") == "Vaswani"
            rounds.append(len(calls))
        assert {"group": "pybtex.backends", "name": "text"} in calls
        assert rounds[0] == rounds[2], "a second lookup asked the installed packages again"
        assert len(bib_lookup_cache.cached_entry_points(group="pybtex.backends")) >= 3   # text, html, latex...
    finally:
        bib_lookup_cache._uncached = uncached
        bib_lookup_cache._entry_points.cache_clear()
