"""The strings a page's code shows, read from its code cells: what goes into the pages catalog.

A page's code is plain English (``attnlab.edge`` translates its text where it is shown), so its
shown strings are found where they leave the code, the *sinks*:

- ``print(...)`` and ``Markdown(...)``: their arguments;
- figure text: ``set_title``, ``set_xlabel``, ``text``, ``annotate``, ``suptitle``, tick labels,
  ``label=``/``title=`` keywords, the text arguments of ``attnlab.plots`` (``heatmap``,
  ``mask_grid``, ``convex_picture``, ``describe``);
- ``attnlab.display.glue(name, text)``;
- pandas tables: in a cell that makes or shows one, the labels it may give them (the keys of its
  dicts, ``set_index``/``rename_axis`` names, ``columns=``/``index=``/``name=``, assigned columns),
  the strings it replaces cells with, and the keys and strings of the dicts (in earlier cells too)
  a ``DataFrame(...)`` is built from;
- ``tr("...")`` (``attnlab.tr``), which hidden cells may still call.

From a sink an argument is followed back to its literals (:mod:`bookbuild.i18n.flow`): through
names, loops, dicts, ``zip``/``enumerate``/``items``, ``"\\n".join``, ``textwrap.fill``, f-string
fields. A literal becomes a message; an f-string (or a literal formatted with ``.format``) becomes
a *template*, its fields written as the code writes them (``"worst error {err:.1e}"``), whose
formatted output ``attnlab.i18n.page_text`` recognises at run time. Text without words of a
language (code names, units, numbers, math) is left out; a template whose literal parts have no
words (a table row's layout) is kept, with itself as its translation, when a field of it can show
a word.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from ..pages import ROOT, code_cells, pages
from .flow import Flow

PRINT_CALLS = {"print", "Markdown"}
FIGURE_CALLS = {"set_xlabel", "set_ylabel", "set_title", "suptitle", "supxlabel", "supylabel", "title", "xlabel",
                "ylabel", "annotate", "text", "set_text", "figtext"}
TICK_CALLS = {"set_xticks": 1, "set_yticks": 1, "xticks": 1, "yticks": 1, "set_xticklabels": 0, "set_yticklabels": 0}
FIGURE_KEYWORDS = {"label", "title", "xlabel", "ylabel", "labels", "row_labels", "col_labels"}
PLOT_HELPERS = {"heatmap": {2: "row_labels", 3: "col_labels", 4: "title"},
                "mask_grid": {2: "title", 3: "row_labels", 4: "col_labels", 5: "xlabel", 6: "ylabel"},
                "convex_picture": {4: "labels", 5: "title"},
                "describe": {1: "text"}}
TR_CALLS = {"tr", "page_text"}
PASS_THROUGH = {"fill", "dedent", "indent", "shorten", "str", "list", "tuple", "sorted", "upper", "lower",
                "capitalize", "strip", "lstrip", "rstrip"}
TABLE_LABEL_CALLS = {"set_index", "rename_axis", "rename", "replace", "DataFrame", "Series"}
TABLE_LABEL_KEYWORDS = {"columns", "index", "name", "names"}

# Words that are code, units or names, the same in both editions: text made of these alone is no language.
CODE_WORDS = {
    "SDPA", "NumPy", "torch", "attnlab", "softmax", "GPU", "CPU", "MiB", "KiB", "GiB", "GFLOP", "TFLOP", "FLOP",
    "FLOPs", "dtype", "eps", "max", "min", "cos", "sin", "sqrt", "exp", "log", "MHA", "GQA", "MQA", "MLA", "True",
    "False", "None", "nan", "inf", "float", "bfloat", "int", "bool", "atol", "rtol", "argmax", "PyTorch", "CUDA",
    "cuda", "DRAM", "HBM", "SRAM", "BERT", "MiniLM", "CLS", "SEP", "PAD", "RoPE", "ALiBi", "FlashAttention", "sdpa",
    "np", "nn", "al", "pd", "plt", "len", "abs", "tril", "triu", "std", "var", "alpha", "beta", "sigma", "sig",
    "delta", "gamma", "lambda", "tau",
}
SHORT_WORDS = {"in", "at", "so", "of", "is", "to", "by", "or", "an", "on", "as", "if", "no", "vs", "be", "it", "we",
               "up", "per", "and", "the"}
# Text with words that is no language all the same: names of models, backends and code.
NOT_LANGUAGE = {
    "GPT-2 small", "GPT-2 medium", "GPT-2 large", "GPT-2 XL", "Transformer base (2017)", "Transformer big (2017)",
    "Llama 2 7B", "Llama 2 70B", "Mistral 7B", "Gemma 7B", "Gemma 2 9B", "DeepSeek 67B", "DeepSeek-V2",
    "flash", "cudnn", "math", "memory-efficient", "softmax(scores) @ values =", "EmptyVisibilityError: {err}",
    "view             (B, T, H, d_k)", "reshape          (B, T, H*d_v)", "tr(CqCk)",
}
# Strings a page shows that come from data rather than from a literal the scanner follows (a table of the
# processor's caches names their types as Linux does; ch08's FLOP table has a column per key of the dict
# its counter returns): in the catalog all the same.
DATA_STRINGS = {"Data", "Instruction", "Unified", "interaction"}
_NOT_WORDS = re.compile(r"\$[^$]*\$|\{[^{}]*\}|`[^`]*`|\w+(?:[._]\w+)+|\b\w+\(")   # math, fields, code, names
_WORD = re.compile(r"[A-Za-z]+")


def is_language(text: str) -> bool:
    """Whether ``text`` has a word to translate, outside math, fields, code and identifiers (``d_k``,
    ``nn.Linear``, ``f(``): a word of three letters or more that is not a code word (:data:`CODE_WORDS`),
    or a short English word (:data:`SHORT_WORDS`)."""
    if text in NOT_LANGUAGE:
        return False
    words = _WORD.findall(_NOT_WORDS.sub(" ", text))
    return any(w in SHORT_WORDS or (len(w) > 2 and w not in CODE_WORDS) for w in words)


def template(node: ast.JoinedStr) -> str:
    """The text of an f-string as a format string: its fields as the code writes them."""
    out = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            out.append(str(value.value).replace("{", "{{").replace("}", "}}"))
            continue
        conversion = {-1: "", 115: "!s", 114: "!r", 97: "!a"}[value.conversion]
        spec = ":" + template(value.format_spec) if value.format_spec is not None else ""
        out.append("{" + ast.unparse(value.value) + conversion + spec + "}")
    return "".join(out)


def _literal_text(tmpl: str) -> str:
    """The literal parts of a format string."""
    from attnlab._shown import _parse

    parsed = _parse(tmpl) or []
    return "".join(literal for literal, _key, _spec in parsed)


def _name(func: ast.AST) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


@dataclass(frozen=True)
class Shown:
    """One message or template of a page, where the page writes it."""
    text: str
    line: int
    template: bool = False
    layout: bool = False          # a template with no words of its own: its translation is itself


class Cell:
    """The shown strings of one cell, its names followed through ``flow``; ``printers`` are the page's
    own functions that show an argument (``def shape(name, t): print(f"{name:<34} ...")``), by the
    indexes and names of their parameters that reach a sink."""

    def __init__(self, tree: ast.AST, flow: Flow, printers: dict | None = None):
        self.tree, self.flow = tree, flow
        self.printers = {} if printers is None else printers
        self.layouts: list[Shown] = []     # the formats of the page's printers, whose fields show their arguments
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                params = [a.arg for a in node.args.args]
                inside = ast.Module(body=node.body, type_ignores=[])
                body = Cell(inside, Flow(inside), self.printers)
                sinks = body.sink_arguments()
                used = {n.id for arg in sinks for n in ast.walk(arg) if isinstance(n, ast.Name)}
                shown = [(i, name) for i, name in enumerate(params) if name in used]
                if shown:
                    self.printers[node.name] = shown
                    self.layouts += [Shown(template(arg), arg.lineno, template=True,
                                           layout=not is_language(_literal_text(template(arg))))
                                     for arg in sinks if isinstance(arg, ast.JoinedStr)]

    def shown(self, node: ast.AST, seen=frozenset()) -> list[Shown]:
        """The messages ``node`` may show: its literals, its f-strings as templates, through names."""
        if node is None:
            return []
        if isinstance(node, ast.Constant):
            text = node.value
            return [Shown(text, node.lineno)] if isinstance(text, str) and is_language(text) else []
        if isinstance(node, ast.JoinedStr):
            return self._template(node, template(node), [v.value for v in node.values
                                                          if isinstance(v, ast.FormattedValue)], seen)
        if isinstance(node, ast.Call):
            return self._call(node, seen)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return [s for e in node.elts for s in self.shown(e, seen)]
        if isinstance(node, ast.Starred):
            return self.shown(node.value, seen)
        if isinstance(node, ast.Name):
            if node.id in seen:             # a cycle: an earlier cell's name that this cell rebinds
                outer = self.flow.outer
                return [] if outer is None else [s for shape in outer.resolve(node) if isinstance(shape, ast.AST)
                                                 for s in Cell(self.tree, outer, self.printers).shown(shape)]
            found = [s for shape in self.flow.resolve(node, seen) for s in self._shape(shape, seen | {node.id})]
            return found + self.element_shown(node, seen | {node.id}) if self._appended(node) else found
        if isinstance(node, ast.Subscript):              # labels[j], legend[kind]: an element, a dict's value
            if isinstance(node.slice, ast.Slice):
                return self.shown(node.value, seen)
            _keys, values = self.flow.dict_of(node.value, seen)
            parts = values or self.flow.element(node.value, seen)
            return [s for shape in parts for s in self._shape(shape, seen)]
        if isinstance(node, ast.IfExp):
            return self.shown(node.body, seen) + self.shown(node.orelse, seen)
        if isinstance(node, ast.BinOp):
            return self.shown(node.left, seen) + self.shown(node.right, seen)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return self.shown(node.elt, seen)
        return []

    def _appended(self, node: ast.Name) -> bool:
        flow = self.flow
        while flow is not None and node.id not in flow.bindings and node.id not in flow.appended \
                and node.id not in flow.items:
            flow = flow.outer
        return flow is not None and node.id in flow.appended

    def element_shown(self, node, seen) -> list[Shown]:
        return [s for shape in self.flow.element(node, seen) for s in self._shape(shape, seen)]

    def _shape(self, shape, seen) -> list[Shown]:
        if isinstance(shape, tuple):
            return []
        if isinstance(shape, list):
            return [s for part in shape for s in self._shape(part, seen)]
        return self.shown(shape, seen)

    def _template(self, node, text: str, fields: list, seen) -> list[Shown]:
        inner = [s for field in fields for s in self.shown(field, seen)]
        own_words = text not in NOT_LANGUAGE and is_language(_literal_text(text))
        if own_words or (inner and text not in NOT_LANGUAGE):
            return [Shown(text, node.lineno, template=True, layout=not own_words), *inner]
        return inner

    def _call(self, node: ast.Call, seen) -> list[Shown]:
        func, name = node.func, _name(node.func)
        if name in TR_CALLS and node.args and isinstance(node.args[0], ast.Constant):
            text = node.args[0].value
            return [Shown(text, node.lineno, template="{" in text)] if is_language(text) else []
        if name == "format" and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Constant) \
                and isinstance(func.value.value, str):
            return self._template(func.value, func.value.value, [*node.args, *(k.value for k in node.keywords)],
                                  seen)
        if name == "join" and node.args:
            return self.element_shown(node.args[0], seen) + self.shown(node.args[0], seen)
        if name == "format" and isinstance(func, ast.Attribute):     # tr("...").format(...)
            return self.shown(func.value, seen) + [s for a in [*node.args, *(k.value for k in node.keywords)]
                                                   for s in self.shown(a, seen)]
        if name in PASS_THROUGH:
            target = func.value if isinstance(func, ast.Attribute) and name not in {"fill", "dedent", "indent",
                                                                                      "shorten"} else None
            return self.shown(target if target is not None and not node.args else
                              (node.args[0] if node.args else target), seen)
        return []

    def sink_arguments(self) -> list[ast.AST]:
        """The expressions of the cell whose text is shown."""
        found = []
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            name = _name(node.func)
            if name in PRINT_CALLS or name in FIGURE_CALLS or name in TR_CALLS:
                found += node.args
            if name in TICK_CALLS and len(node.args) > TICK_CALLS[name]:
                found.append(node.args[TICK_CALLS[name]])
            if name in PLOT_HELPERS:
                found += [a for i, a in enumerate(node.args) if i in PLOT_HELPERS[name]]
            if name == "glue" and isinstance(node.func, ast.Attribute) and len(node.args) > 1:
                found.append(node.args[1])                        # al.display.glue(name, text)
            found += [k.value for k in node.keywords if k.arg in FIGURE_KEYWORDS]
            for index, param in self.printers.get(name, []):
                found += node.args[index:index + 1] + [k.value for k in node.keywords if k.arg == param]
        return found

    def table_labels(self) -> list[ast.AST]:
        """The labels and string cells the cell gives a pandas table (see the module's docstring)."""
        found = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Dict):
                found += [k for k in node.keys if k is not None]
            if isinstance(node, ast.Call):
                name = _name(node.func)
                if name in {"DataFrame", "Series"}:
                    found += [piece for a in node.args[:1] for piece in self._rows(a)]
                if name in TABLE_LABEL_CALLS:
                    found += [a for a in node.args if not isinstance(a, ast.Dict)]
                    found += [v for a in node.args if isinstance(a, ast.Dict) and name in {"replace", "rename"}
                              for v in a.values]
                for k in node.keywords:
                    if k.arg in TABLE_LABEL_KEYWORDS:
                        found += k.value.values if isinstance(k.value, ast.Dict) else [k.value]
            elif isinstance(node, ast.Assign):
                found += [t.slice for t in node.targets if isinstance(t, ast.Subscript)]
        return [item for node in found
                for item in (node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node])
                if isinstance(item, (ast.Constant, ast.JoinedStr, ast.Name))]

    def _rows(self, node, seen=frozenset()) -> list[ast.AST]:
        """The keys and string values of the dicts a table is built from, through names and appends."""
        if isinstance(node, ast.Dict):
            return [k for k in node.keys if k is not None] + [
                v for v in node.values if isinstance(v, (ast.Constant, ast.Name))] + [
                piece for v in node.values if isinstance(v, ast.Dict) for piece in self._rows(v, seen)]
        if isinstance(node, (ast.List, ast.Tuple)):
            return [piece for e in node.elts for piece in self._rows(e, seen)]
        if isinstance(node, (ast.ListComp, ast.DictComp)):
            return self._rows(node.elt if isinstance(node, ast.ListComp) else node.value, seen)
        if isinstance(node, ast.Name) and node.id not in seen:
            shapes = self.flow.resolve(node, seen) + self.flow.element(node, seen)
            return [piece for shape in shapes if isinstance(shape, ast.AST)
                    for piece in self._rows(shape, seen | {node.id})]
        if isinstance(node, ast.Call) and _name(node.func) in {"DataFrame", "Series", "dict", "list"}:
            return [piece for a in node.args[:1] for piece in self._rows(a, seen)] + [
                k.value for k in node.keywords if isinstance(k.value, ast.Constant)]
        return []


def _shows_tables(cell) -> bool:
    return bool(re.search(r"\bDataFrame\(|\bSeries\(|tr_table\(|\bdisplay\(", cell.source))


def page_strings(page: Path) -> list[Shown]:
    """The messages and templates ``page`` shows, with their lines in the page, in order."""
    cells, found, printers = code_cells(page), [], {}
    earlier = ""                                     # the earlier cells, at their lines of the page
    for cell in cells:
        tree = ast.parse("\n" * (cell.line - 1) + cell.source, filename=str(page))
        scan = Cell(tree, Flow(tree, outer=Flow(ast.parse(earlier)) if earlier else None), printers)
        found += scan.layouts
        for arg in scan.sink_arguments():
            found += scan.shown(arg)
        if _shows_tables(cell):
            found += [s for node in scan.table_labels() for s in scan.shown(node)]
        earlier += "\n" * (cell.line - 1 - earlier.count("\n")) + cell.source + "\n"
    unique = {(s.text, s.line): s for s in found}
    return sorted(unique.values(), key=lambda s: (s.line, s.text))


def book_strings(root: Path = ROOT) -> dict[str, list[tuple[str, int]]]:
    """Every message and template of every page: {text: [(page, line), ...]}."""
    found: dict[str, list[tuple[str, int]]] = {}
    for page in pages(root):
        name = page.relative_to(root).as_posix()
        for s in page_strings(page):
            found.setdefault(s.text, []).append((name, s.line))
    return found


def layouts(root: Path = ROOT) -> set[str]:
    """The templates that are a layout only (their translation is themselves)."""
    return {s.text for page in pages(root) for s in page_strings(page) if s.layout}
