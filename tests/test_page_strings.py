"""The strings the pages' own code writes (figure labels, tables, printed sentences) in both editions.

They are wrapped in ``al.tr("...")`` in the code cells and translated in the package's second
catalog, ``attnlab/locale/zh_CN/LC_MESSAGES/pages.po`` (``tools/compile_messages.py extract``
collects them). Fast: reads the page sources and the catalog, builds nothing.
"""
import ast
import importlib.util
import re
import string
from pathlib import Path

import pytest

import attnlab as al
from attnlab import i18n

ROOT = Path(__file__).resolve().parents[1]
PAGES_PO = ROOT / "attnlab" / "locale" / "zh_CN" / "LC_MESSAGES" / "pages.po"
CJK = re.compile(r"[\u4e00-\u9fff]")

_spec = importlib.util.spec_from_file_location("compile_messages", ROOT / "tools" / "compile_messages.py")
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)


@pytest.fixture(autouse=True)
def english_afterwards():
    yield
    i18n.set_language("en")


def catalog():
    from babel.messages import pofile

    with PAGES_PO.open("rb") as handle:
        return pofile.read_po(handle, locale="zh_CN")


def entries():
    return [m for m in catalog() if m.id]


def placeholders(text: str) -> set[tuple]:
    return {(field, conversion, spec) for _, field, spec, conversion in string.Formatter().parse(text)
            if field is not None}


# --- the catalog and the pages agree -------------------------------------------------------------

def test_every_string_the_pages_translate_is_in_the_catalog_translated_and_not_fuzzy():
    used = tool.page_messages()
    assert len(used) >= 40, "the pages wrap their figure labels in al.tr"
    held = {m.id: m for m in entries()}
    missing = sorted(set(used) - set(held))
    assert missing == [], f"run `python tools/compile_messages.py extract` and translate: {missing[:5]}"
    assert [m for m in used if not held[m].string] == []
    assert [m for m in used if held[m].fuzzy] == []
    assert not catalog().fuzzy, "the catalog header is marked fuzzy"


def test_the_catalog_holds_no_string_that_no_page_uses():
    unused = sorted({m.id for m in entries()} - set(tool.page_messages()))
    assert unused == [], "run `python tools/compile_messages.py extract` to drop them"


# Table labels that are units or code names, the same in Chinese (their msgstr repeats the msgid).
SAME_IN_CHINESE = {"GFLOP/s", "GQA S=8192", "KiB", "MiB", "KiB/token", "KiB/token/layer", "atol = 8 eps max|v|",
                   "dtype", "eps"}


def test_every_translation_keeps_the_placeholders_of_its_message_and_is_chinese():
    for m in entries():
        assert placeholders(m.string) == placeholders(m.id), (m.id, m.string)
        assert m.string != m.id or m.id in SAME_IN_CHINESE, (m.id, m.string)
    assert sum(bool(CJK.search(m.string)) for m in entries()) > 0.8 * len(entries())


def test_every_translation_keeps_the_math_of_its_message():
    maths = re.compile(r"\$[^$]*\$")
    for m in entries():
        assert sorted(maths.findall(m.string)) == sorted(maths.findall(m.id)), (m.id, m.string)


# --- al.tr ----------------------------------------------------------------------------------------

def test_tr_gives_the_chinese_under_zh_cn_and_the_english_under_en():
    m = next(m for m in entries() if m.string and not m.fuzzy)
    assert al.tr is al.page_text is i18n.page_text
    assert al.tr(m.id) == m.id                          # English by default
    al.set_language("zh_CN")
    assert al.tr(m.id) == m.string
    al.set_language("en")
    assert al.tr(m.id) == m.id


def test_tr_leaves_an_unknown_string_as_it_is_in_both_languages():
    al.set_language("zh_CN")
    assert al.tr("no page writes this {x}").format(x=1) == "no page writes this 1"


def test_tr_formats_after_translating():
    m = next(m for m in entries() if "{" in m.id)
    fields = {name: 7 for _, name, _, _ in string.Formatter().parse(m.id) if name}
    al.set_language("zh_CN")
    assert al.tr(m.id).format(**fields) == m.string.format(**fields)


@pytest.mark.parametrize("bad", [None, 3, b"query", ["query"]])
def test_tr_of_something_other_than_a_string_is_a_clear_input_error(bad):
    with pytest.raises(al.AttentionInputError, match=f"tr\\(\\) translates one string.*got {type(bad).__name__}"):
        al.tr(bad)


def test_the_compile_tool_compiles_pages_po_into_a_mo(tmp_path):
    import gettext
    import shutil

    folder = tmp_path / "zh_CN" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    shutil.copy(PAGES_PO, folder / "pages.po")
    assert tool.compile_all(tmp_path) == [folder / "pages.mo"]
    with (folder / "pages.mo").open("rb") as handle:
        compiled = gettext.GNUTranslations(handle)
    for m in entries():
        assert compiled.gettext(m.id) == m.string


# --- extraction -----------------------------------------------------------------------------------

PAGE = '''# A page

```{code-cell} ipython3
:tags: [hide-input]
%matplotlib inline
import attnlab as al
ax.set_xlabel(al.tr("key position"))
print(al.tr("worst error {err}").format(err=1))
```

Some prose with tr("not code").

```{code-cell} ipython3
---
tags: [remove-input]
---
from attnlab import tr
ax.set_title(tr("key position"))
```
'''


def test_extraction_finds_tr_literals_in_code_cells_only_with_their_lines(tmp_path):
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "x.md").write_text(PAGE)
    for folder in ("exercises", "solutions"):
        (tmp_path / folder).mkdir()
    found = tool.page_messages(tmp_path)
    assert found == {"key position": [("chapters/x.md", 7), ("chapters/x.md", 18)],
                     "worst error {err}": [("chapters/x.md", 8)]}


def test_extraction_refuses_a_tr_call_without_one_literal_string(tmp_path):
    for folder in ("chapters", "exercises", "solutions"):
        (tmp_path / folder).mkdir()
    (tmp_path / "chapters" / "x.md").write_text("```{code-cell} ipython3\nal.tr(name)\n```\n")
    with pytest.raises(SystemExit, match=r"chapters/x.md:2: tr\(\) needs one literal string"):
        tool.page_messages(tmp_path)


# --- the defect: English text drawn into a figure without al.tr -----------------------------------

# Calls whose string arguments are drawn into a figure, and keywords that carry figure text.
FIGURE_CALLS = {"set_xlabel", "set_ylabel", "set_title", "suptitle", "title", "xlabel", "ylabel", "annotate",
                "text", "set_text"}
FIGURE_KEYWORDS = {"label", "title", "xlabel", "ylabel"}
# Figure text that is no language: names of code, tensors and units, the same in both editions.
NOT_LANGUAGE = {"GFLOP/s"}


def _words(text: str) -> list[str]:
    text = re.sub(r"\$[^$]*\$", "", text)           # math stays as it is
    text = re.sub(r"\{[^}]*\}", "", text)           # so do placeholders
    return re.findall(r"[A-Za-z]{3,}", text)


def _literals(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, ast.JoinedStr):
        yield from (v for v in node.values if isinstance(v, ast.Constant))
    elif isinstance(node, (ast.List, ast.Tuple)):
        for element in node.elts:
            yield from _literals(element)


def unwrapped_figure_text(source: str) -> list[tuple[int, str]]:
    """(line, text) of each English literal drawn into a figure in ``source`` without ``tr``."""
    tree = ast.parse(source)
    wrapped = {id(n) for call in ast.walk(tree) if tool.is_tr_call(call) for n in ast.walk(call)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        args = list(node.args) if name in FIGURE_CALLS else []
        args += [k.value for k in node.keywords if k.arg in FIGURE_KEYWORDS]
        for arg in args:
            for literal in _literals(arg):
                if id(literal) not in wrapped and _words(literal.value) and literal.value not in NOT_LANGUAGE:
                    found.append((literal.lineno, literal.value))
    return sorted(found)


def test_the_scan_finds_unwrapped_figure_text_and_accepts_wrapped_text_and_math():
    source = '''
ax.set_xlabel("key position")
ax.set_ylabel(al.tr("query position"))
ax.plot(x, y, label=f"head {h}")
ax.plot(x, y, label=al.tr("head {h}").format(h=h))
ax.set_title("$QK^T$")
ax.legend(title=tr("heads"))
ax.text(0, 1, "worst")
'''
    assert unwrapped_figure_text(source) == [(2, "key position"), (4, "head "), (8, "worst")]


CHAPTERS = sorted((ROOT / "chapters").glob("*.md"))


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_every_figure_label_of_a_chapter_is_translated(page):
    left = [(first + line - 1, text) for first, source in tool.code_cells(page)
            for line, text in unwrapped_figure_text(source)]
    assert left == [], f"wrap in al.tr(...) and run tools/compile_messages.py extract: {left[:5]}"


# --- the defect: English sentences printed by a page's code without al.tr -------------------------

# Calls that write their string arguments into a page's output.
PRINT_CALLS = {"print", "Markdown"}
# Printed text that is no language: names of code, maths and units, the same in both editions.
NOT_PRINTED_LANGUAGE = {
    "attnlab:", "torch", "max |nn.MultiheadAttention - attnlab| = ", "max |SDPA - attnlab|                  = ",
    "SDPA:           ", "al.attention:   ", "al.softmax:          ", "torch.softmax:       ", "NumPy:",
    "torch.backends.cuda.", "default_device():", "GPU:", "attention_mask:", " query_valid:",
    "cos(q, k) =", "   cos(q, 2k) =", "softmax(scores) @ values =", "alpha(1 - alpha)          = ",
    "c = 1/sqrt(2) = ", " MiB", " KiB", "max |f(PX) - P f(X)|       = ", "max |A(PX) - P A(X) P^T|   = ",
    "                       a_n / l_n - softmax(u) V =", "alpha = ", "attnlab: max |dQ| =",
    "torch ", "SDPA in torch ", "max |sum_h O^(h) W_O^(h) - C W_O| = ",
    "nn.MultiheadAttention = attnlab torch = attnlab NumPy",
    "attnlab MultiHeadAttention(n_kv_heads=2) = SDPA(enable_gqa=True)",
    " max |rowsum(A dA) - rowsum(dO O)| = ",
}


def unwrapped_printed_text(source: str) -> list[tuple[int, str]]:
    """(line, text) of each English literal of ``source`` that a ``print`` or ``Markdown`` call
    writes without ``tr``: its string arguments and the constant parts of its f-strings."""
    tree = ast.parse(source)
    wrapped = {id(n) for call in ast.walk(tree) if tool.is_tr_call(call) for n in ast.walk(call)}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in PRINT_CALLS):
            continue
        for arg in node.args:
            for literal in _literals(arg):
                if (id(literal) not in wrapped and _words(literal.value)
                        and literal.value not in NOT_PRINTED_LANGUAGE):
                    found.append((literal.lineno, literal.value))
    return sorted(found)


def test_the_scan_finds_unwrapped_printed_text_and_accepts_wrapped_text_and_code_names():
    source = '''
print("max error", err)
print(al.tr("max error"), err)
print(f"worst error {err:.1e} at row {i}")
print(al.tr("worst error {err:.1e}").format(err=err))
display(Markdown(f"**{n}** heads agree"))
display(Markdown(al.tr("**{n}** heads agree").format(n=n)))
print("SDPA:           ", x, "$QK^T$", "\\n".join(lines), f"{x:.2f}")
print(tr("tied"), 3)
'''
    assert unwrapped_printed_text(source) == [(2, "max error"), (4, " at row "), (4, "worst error "),
                                              (6, "** heads agree")]


PAGES_WITH_PRINTED_TEXT = [*CHAPTERS, *sorted((ROOT / "solutions").glob("*.md")),
                           *sorted((ROOT / "exercises").glob("*.md")),
                           *(ROOT / name for name in ("checking.md", "instructors.md", "notation.md"))]


@pytest.mark.parametrize("page", PAGES_WITH_PRINTED_TEXT, ids=lambda p: p.stem)
def test_every_printed_sentence_of_a_page_is_translated(page):
    left = [(first + line - 1, text) for first, source in tool.code_cells(page)
            for line, text in unwrapped_printed_text(source)]
    assert left == [], f"wrap in al.tr(...) and run tools/compile_messages.py extract: {left[:5]}"
