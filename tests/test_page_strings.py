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
# attnlab.plots' helpers: the keywords (and the positions of their arguments) that carry figure text.
PLOT_HELPERS = {"heatmap": {2: "row_labels", 3: "col_labels", 4: "title"},
                "mask_grid": {2: "title", 3: "row_labels", 4: "col_labels", 5: "xlabel", 6: "ylabel"},
                "convex_picture": {4: "labels", 5: "title"}}
HELPER_KEYWORDS = {"title", "labels", "row_labels", "col_labels", "xlabel", "ylabel"}
# Figure text that is no language: names of code, tensors and units, the same in both editions.
NOT_LANGUAGE = {"GFLOP/s", "softmax"}


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


class _Flow:
    """Where the names of one cell get their values: enough to follow a label to the literal it came from.

    A value is a list of "shapes": an expression (the value is that expression), or a tuple of values
    (what unpacking ``zip(...)``, ``enumerate(...)`` or ``d.items()`` gives, position by position).
    A name the cell does not bind is looked up in the earlier cells' flow, ``outer``.
    """

    def __init__(self, tree, outer=None):
        self.outer = outer
        self.bindings: dict[str, list] = {}        # name: [(line, value(seen))], values read lazily
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._bind(target, node.lineno, lambda seen, v=node.value: [v])
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                self._bind(node.target, node.lineno, lambda seen, v=node.value: [v])
            elif isinstance(node, ast.For):
                self._bind(node.target, node.lineno, lambda seen, it=node.iter: self.element(it, seen))
            elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                for loop in node.generators:
                    self._bind(loop.target, node.lineno, lambda seen, it=loop.iter: self.element(it, seen))

    def _bind(self, target, line, value):
        if isinstance(target, ast.Name):
            self.bindings.setdefault(target.id, []).append((line, value))
        elif isinstance(target, (ast.Tuple, ast.List)):
            n = len(target.elts)
            for i, part in enumerate(target.elts):
                self._bind(part, line, lambda seen, i=i: [piece for shape in value(seen)
                                                          for piece in self._part(shape, i, n)])

    def _part(self, shape, i, n):
        """The i-th of n parts of one shape, unpacked."""
        if isinstance(shape, tuple):
            return shape[i] if i < len(shape) else []
        if isinstance(shape, (ast.Tuple, ast.List)) and len(shape.elts) == n:
            return [shape.elts[i]]
        return []

    def _elsewhere(self, name: ast.Name) -> bool:
        return name.id not in self.bindings and self.outer is not None

    def _resolve(self, name: ast.Name, seen):
        """The shapes ``name`` may hold where it is used: its latest binding above, else any of the cell's."""
        if name.id in seen:
            return []
        sites = self.bindings.get(name.id, [])
        above = [line for line, _ in sites if line <= name.lineno]
        chosen = [value for line, value in sites if not above or line == max(above)]
        return [shape for value in chosen for shape in value(seen | {name.id})]

    def element(self, node, seen=frozenset()):
        """The value of one element of iterating ``node`` (a dict gives its keys)."""
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return list(node.elts)
        if isinstance(node, ast.Dict):
            return [k for k in node.keys if k is not None]
        if isinstance(node, ast.Name) and self._elsewhere(node):
            return self.outer.element(node, seen)
        if isinstance(node, ast.Name):
            return [e for shape in self._resolve(node, seen) if not isinstance(shape, tuple)
                    for e in self.element(shape, seen | {node.id})]
        if isinstance(node, ast.Call):
            func, args = node.func, node.args
            if isinstance(func, ast.Name) and func.id == "zip":
                return [tuple(self.element(a, seen) for a in args)]
            if isinstance(func, ast.Name) and func.id == "enumerate" and args:
                return [([], self.element(args[0], seen))]
            if isinstance(func, ast.Name) and func.id in {"list", "tuple", "sorted", "reversed"} and args:
                return self.element(args[0], seen)
            if isinstance(func, ast.Attribute) and func.attr in {"items", "keys", "values"}:
                keys, values = self._dict(func.value, seen)
                return {"items": [(keys, values)], "keys": keys, "values": values}[func.attr]
        return []

    def _dict(self, node, seen):
        """(keys, values) of the dict ``node`` stands for: a literal, ``dict(zip(...))``, or a name of one."""
        if isinstance(node, ast.Dict):
            return [k for k in node.keys if k is not None], list(node.values)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and node.args:
            pairs = self.element(node.args[0], seen)
            return ([p for shape in pairs for p in self._part(shape, 0, 2)],
                    [p for shape in pairs for p in self._part(shape, 1, 2)])
        if isinstance(node, ast.Name) and self._elsewhere(node):
            return self.outer._dict(node, seen)
        if isinstance(node, ast.Name):
            keys, values = [], []
            for shape in self._resolve(node, seen):
                if not isinstance(shape, tuple):
                    k, v = self._dict(shape, seen | {node.id})
                    keys += k
                    values += v
            return keys, values
        return [], []

    def drawn(self, node, seen=frozenset()):
        """The string literals whose text ``node``, drawn into a figure, may show."""
        if tool.is_tr_call(node):
            return []
        if isinstance(node, ast.Constant):
            return [node] if isinstance(node.value, str) else []
        if isinstance(node, ast.JoinedStr):
            return [lit for v in node.values for lit in self.drawn(v.value if isinstance(v, ast.FormattedValue)
                                                                   else v, seen)]
        if isinstance(node, (ast.List, ast.Tuple)):
            return [lit for e in node.elts for lit in self.drawn(e, seen)]
        if isinstance(node, ast.Name) and self._elsewhere(node):
            return self.outer.drawn(node, seen)
        if isinstance(node, ast.Name):
            return [lit for shape in self._resolve(node, seen) for lit in self._drawn_shape(shape, seen | {node.id})]
        if isinstance(node, ast.Subscript):               # labels[j], legend[kind]: an element, a dict's value
            if isinstance(node.slice, ast.Slice):
                return self.drawn(node.value, seen)
            keys, values = self._dict(node.value, seen)
            parts = values or self.element(node.value, seen)
            return [lit for shape in parts for lit in self._drawn_shape(shape, seen)]
        if isinstance(node, ast.IfExp):
            return self.drawn(node.body, seen) + self.drawn(node.orelse, seen)
        if isinstance(node, ast.BinOp):
            return self.drawn(node.left, seen) + self.drawn(node.right, seen)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method == "join" and node.args:
                return self.element_drawn(node.args[0], seen)
            if method in {"format", "upper", "lower", "title", "capitalize", "strip", "replace"}:
                return self.drawn(node.func.value, seen) + [
                    lit for a in [*node.args, *(k.value for k in node.keywords)] for lit in self.drawn(a, seen)]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args \
                and node.func.id in {"list", "tuple", "str"}:
            return self.drawn(node.args[0], seen)
        return []

    def element_drawn(self, node, seen):
        return [lit for shape in self.element(node, seen) for lit in self._drawn_shape(shape, seen)]

    def _drawn_shape(self, shape, seen):
        if isinstance(shape, tuple):
            return []
        if isinstance(shape, list):
            return [lit for s in shape for lit in self._drawn_shape(s, seen)]
        return self.drawn(shape, seen)


def _figure_arguments(call: ast.Call) -> list[ast.AST]:
    """The arguments of ``call`` that carry text drawn into a figure."""
    func = call.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    args = list(call.args) if name in FIGURE_CALLS else []
    args += [k.value for k in call.keywords if k.arg in FIGURE_KEYWORDS]
    if name in PLOT_HELPERS:
        args += [a for i, a in enumerate(call.args) if i in PLOT_HELPERS[name]]
        args += [k.value for k in call.keywords if k.arg in HELPER_KEYWORDS - FIGURE_KEYWORDS]
    return args


def unwrapped_figure_text(source: str, earlier: str = "") -> list[tuple[int, str]]:
    """(line, text) of each English literal drawn into a figure in ``source`` without ``tr``.

    Besides the literals written in a figure call, it follows the names the call draws (its own
    arguments, an element ``labels[j]``, a dict's value ``legend[kind]``, an f-string's fields) back
    to where the cell binds them: an assignment, a ``for`` or a comprehension, unpacking from
    ``zip(...)``, ``enumerate(...)`` and ``d.items()``, and the list, tuple or dict literals there;
    a name the cell does not bind, to where the ``earlier`` cells bind it.
    """
    tree, before = ast.parse(source), ast.parse(earlier)
    wrapped = {id(n) for t in (tree, before) for call in ast.walk(t) if tool.is_tr_call(call)
               for n in ast.walk(call)}
    flow = _Flow(tree, outer=_Flow(before))
    found = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for arg in _figure_arguments(node):
            for literal in [*_literals(arg), *flow.drawn(arg)]:
                if id(literal) not in wrapped and _words(literal.value) and literal.value not in NOT_LANGUAGE:
                    found[id(literal)] = (literal.lineno, literal.value)
    return sorted(found.values())


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


def test_the_scan_follows_a_label_from_where_the_cell_binds_it_to_the_figure():
    source = '''
panels = {"uniform": U, "hard selection": H}
for ax, (title, W) in zip(axes, panels.items()):
    al.plots.heatmap(ax, W, title=title)
titles = {"max weight": "largest weight", "entropy": al.tr("entropy")}
for ax, (key, title) in zip(axes, titles.items()):
    for label, marker in [("scaled", "s-"), (al.tr("unscaled"), "o-")]:
        ax.plot(d, measure[key], marker, label=label)
    ax.set_title(title)
legend = dict(zip(kinds, ("plain", al.tr("soft-cap"))))
ax.plot(x, y, label=legend[kind])
for i, name in enumerate(["projection 1", "$P_2$"]):
    al.plots.convex_picture(ax, V, a, labels=names, title=f"{name}!")
names = ["first value", al.tr("second value")]
al.plots.mask_grid(ax, m, "causal", rows, ylabel="query" if labels else "")
ax.set_xlabel(unknown)
'''
    assert unwrapped_figure_text(source) == [
        (2, "hard selection"), (2, "uniform"), (5, "largest weight"), (7, "scaled"), (10, "plain"),
        (12, "projection 1"), (14, "first value"), (15, "causal"), (15, "query")]
    # what is not drawn is not flagged: dict keys read by the code, markers, the names' keys
    assert all(text not in {"max weight", "entropy", "s-", "o-"} for _, text in unwrapped_figure_text(source))


def test_the_scan_follows_a_name_the_cell_does_not_bind_to_an_earlier_cell_and_takes_the_latest_binding():
    earlier = '''points = {"naive": 1, al.tr("tiled"): 2}
kinds = ["old"]
'''
    source = '''
for name, p in points.items():
    ax.plot(p, label=name)
kinds = [al.tr("new")]
for name in kinds:
    ax.plot(p, label=name)
'''
    assert unwrapped_figure_text(source, earlier) == [(1, "naive")]
    assert unwrapped_figure_text(source) == []

CHAPTERS = sorted((ROOT / "chapters").glob("*.md"))


def page_figure_text(page: Path) -> list[tuple[int, str]]:
    """(line of the page, text) of each English literal drawn into a figure of ``page`` without ``tr``."""
    left, earlier = [], ""
    for first, source in tool.code_cells(page):
        source = "\n" * (first - 1) + source           # the page's line numbers
        left += unwrapped_figure_text(source, earlier)
        earlier += "\n" * (first - 1 - earlier.count("\n")) + source[first - 1:] + "\n"
    return sorted(set(left))


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_every_figure_label_of_a_chapter_is_translated(page):
    left = page_figure_text(page)
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
