"""What the pages' code shows, collected into the pages catalog (bookbuild.i18n.page_strings): the collection
on examples, then the catalog against the pages: complete, current, translated, placeholders and math kept."""
import ast
import re
import string

import pytest

from bookbuild.i18n import catalogs
from bookbuild.i18n.flow import Flow
from bookbuild.i18n.page_strings import Cell, is_language, page_strings, template

PAGES_PO = catalogs.LOCALE / "zh_CN" / "LC_MESSAGES" / "pages.po"
CJK = re.compile(r"[\u4e00-\u9fff]")


def shown(source: str, earlier: str = "") -> list[str]:
    tree = ast.parse(source)
    scan = Cell(tree, Flow(tree, outer=Flow(ast.parse(earlier)) if earlier else None))
    return sorted({s.text for arg in scan.sink_arguments() for s in scan.shown(arg)})


def test_printed_literals_and_f_strings_become_messages_and_templates():
    source = '''
print("'cat' seen through slot 3:", x)
print(f"worst error {err:.1e} at row {i}")
print(f"{d_k:>4} {pred:>7.0f}")
print("SDPA:", y, "d_k")
display(Markdown(f"**{n}** heads agree"))
print(textwrap.fill(f"without query_valid: {err}", 76))
print("{name} scores {value:.2f}".format(name=n, value=v))
'''
    assert shown(source) == ["'cat' seen through slot 3:", "**{n}** heads agree", "without query_valid: {err}",
                             "worst error {err:.1e} at row {i}", "{name} scores {value:.2f}"]


def test_figure_text_is_followed_from_the_figure_call_to_its_literals():
    source = '''
panels = {"uniform": U, "hard selection": H, "softmax": S}
for ax, (title, W) in zip(axes, panels.items()):
    al.plots.heatmap(ax, W, title=title)
ax.set_xlabel("key position")
ax.plot(x, y, label=f"head {h}")
ax.set_xticks(range(2), ["query", "key"])
al.plots.mask_grid(ax, m, "causal", ylabel="query" if labels else "")
for name in kinds:
    ax.plot(p, label=name)
'''
    assert shown(source, earlier='kinds = ["plain", "soft-cap"]') == [
        "causal", "hard selection", "head {h}", "key", "key position", "plain", "query", "soft-cap", "uniform"]


def test_a_table_row_layout_is_kept_when_a_field_shows_a_word():
    source = '''
word = {True: "passes", False: "FAILS"}
for bug in bugs:
    print(f"{names[bug]:<24}{word[ok[bug]]:>13}")
print(f"{'backward pass':<24}{'two-position':>13}")
print(f"{a:>4} {b:>7.2f}")
'''
    assert shown(source) == ["FAILS", "backward pass", "passes", "two-position",
                             "{'backward pass':<24}{'two-position':>13}", "{names[bug]:<24}{word[ok[bug]]:>13}"]


def test_a_template_is_the_f_string_as_its_code_writes_it():
    node = ast.parse('f"{x.shape[0]}x{y!r:>{w}} {{literal}} {a + b:.1e}"', mode="eval").body
    assert template(node) == "{x.shape[0]}x{y!r:>{w}} {{literal}} {a + b:.1e}"


def test_code_names_units_and_math_are_no_language():
    assert not any(map(is_language, ["SDPA:", "d_k", "nn.MultiheadAttention", "GFLOP/s", "$QK^\\top$", "{x} MiB"]))
    assert all(map(is_language, ["its weights", "KiB/token", "X = I, so dW_Q = dQ", "Jacobian $J$", "in_proj weight"]))


def test_a_table_cell_gives_its_labels(tmp_path):
    page = tmp_path / "page.md"
    page.write_text('# T\n\n```{code-cell} ipython3\nrows = []\n'
                    'rows.append({"T": 1, "time (ms)": 2.0, "kind": "naive"})\n```\n\n'
                    '```{code-cell} ipython3\ndisplay(pd.DataFrame(rows).set_index("kind"))\n```\n')
    assert {s.text for s in page_strings(page)} == {"time (ms)", "kind", "naive"}


# --- the catalog and the pages agree ---------------------------------------------------------------

def catalog():
    from babel.messages import pofile

    with PAGES_PO.open("rb") as handle:
        return pofile.read_po(handle, locale="zh_CN")


def entries():
    return [m for m in catalog() if m.id]


def placeholders(text: str) -> set[tuple]:
    return {(field, conversion, spec) for _, field, spec, conversion in string.Formatter().parse(text)
            if field is not None}


@pytest.fixture(scope="module")
def used():
    return catalogs.page_messages()


def test_every_string_the_pages_show_is_in_the_catalog_translated_and_not_fuzzy(used):
    assert len(used) >= 400
    held = {m.id: m for m in entries()}
    missing = sorted(set(used) - set(held))
    assert missing == [], f"run `make translations` and translate: {missing[:5]}"
    assert [m for m in used if not held[m].string] == []
    assert [m for m in used if held[m].fuzzy] == []
    assert not catalog().fuzzy, "the catalog header is marked fuzzy"


def test_the_catalog_holds_no_string_that_no_page_shows(used):
    unused = sorted({m.id for m in entries()} - set(used))
    assert unused == [], "run `make translations` to drop them"


def test_every_translation_keeps_the_placeholders_of_its_message_and_is_chinese_but_a_layout():
    layout = {m.id for m in entries() if catalogs.LAYOUT_COMMENT in m.auto_comments}
    for m in entries():
        assert placeholders(m.string) == placeholders(m.id), (m.id, m.string)
        assert m.string != m.id or m.id in layout, (m.id, m.string)
    assert sum(bool(CJK.search(m.string)) for m in entries()) > 0.8 * len(entries())


def test_every_translation_keeps_the_math_of_its_message():
    maths = re.compile(r"\$[^$]*\$")
    for m in entries():
        assert sorted(maths.findall(m.string)) == sorted(maths.findall(m.id)), (m.id, m.string)
