"""attnlab speaks the reader's language: every message a reader may see is marked for translation.

A message is marked where it is written, ``_("...")`` (translated when shown) or ``N_("...")``
(translated later, for tables built at import), and its variable parts are filled in afterwards
with ``str.format``, so that a translator sees whole sentences (``attnlab.i18n``). Three rules:

- ``unwrapped_messages``: a raised exception's or a warning's text is marked (and is not an
  f-string inside ``_()``, which could not be looked up);
- ``unwrapped_checker_messages``: a checker's verdicts and its mistakes' explanations are marked;
- ``unmarked_ui_texts``: what the explorers and figure helpers show (labels, titles, control
  descriptions and options, SVG text, notes) is marked;

and one trap: a function that binds ``_`` (``batch, _ = x.shape``) makes its ``_("...")`` an
UnboundLocalError (``rebinds_translation``).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from ..pages import ROOT
from . import Finding

PACKAGE = ROOT / "attnlab"
# The modules whose messages are translated (the others speak English only: measurement and grading code).
TRANSLATED = ["reference.py", "_validate.py", "masks.py", "grad.py", "exact.py", "display.py", "errors.py",
              "checks/result.py", "checks/engine.py", "checks/registry.py", "checks/limits.py", "checks/catalogue.py",
              "checks/softmax.py", "checks/attention.py", "checks/masks.py", "checks/causal.py", "checks/backward.py",
              "checks/cost.py", "checks/chunked.py", "checks/structure.py", "checks/heads.py",
              "checks/kv_cache.py", "checks/pretrained.py", "checks/answers.py", "checks/answer_table.py",
              "torch_ops/_checks.py", "torch_ops/attention.py", "torch_ops/mha.py", "torch_ops/kv_cache.py",
              "torch_ops/mla.py", "plots.py", "widgets/_base.py", "widgets/_svg.py", "widgets/state.py",
              "widgets/convex.py", "widgets/gqa.py", "widgets/heads.py", "widgets/mask.py", "widgets/scaling.py"]
CHECKERS = [m for m in TRANSLATED if m.startswith("checks/")]


def unwrapped_messages(source: str) -> list[str]:
    """String literals in a raised exception's or a warning's arguments that are not inside _() or N_()."""
    found = []

    def visit(node, wrapped):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("_", "N_"):
            for arg in node.args:
                if isinstance(arg, ast.JoinedStr):
                    found.append(f"line {arg.lineno}: an f-string inside {node.func.id}() cannot be translated")
            wrapped = True
        if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            if not wrapped and not (isinstance(node, ast.Constant) and not node.value.strip()):   # no words
                found.append(f"line {node.lineno}: {ast.unparse(node)[:60]}")
            return
        for child in ast.iter_child_nodes(node):
            visit(child, wrapped)

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            for arg in node.exc.args:
                visit(arg, False)
        is_warn = isinstance(node, ast.Call) and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "warn")
            or (isinstance(node.func, ast.Name) and node.func.id == "warn"))
        if is_warn and node.args:
            visit(node.args[0], False)
    return found


def unwrapped_checker_messages(source: str) -> list[str]:
    """A checker's verdicts (``run.fail``/``run.passed``/``self.fail`` and ``R.failed``/``R.passed``) and its mistake
    explanations (``@model(name, ...)``, ``Mistake(name, ...)``) that are not marked with _() or N_()."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        message = None
        if isinstance(func, ast.Attribute) and func.attr in ("fail", "passed") and node.args:
            message = node.args[0]
        elif isinstance(func, ast.Attribute) and func.attr in ("failed",) and len(node.args) > 1:
            message = node.args[1]
        elif isinstance(func, ast.Name) and func.id in ("model", "Mistake") and len(node.args) > 1:
            message = node.args[1]
        if message is not None:      # the same rule as for a raised message, applied to this one
            found += [f"line {message.lineno}: {problem}"
                      for problem in unwrapped_messages(f"raise Message({ast.unparse(message)})")]
    return found


UI_MODULES = ["plots.py", *(f"widgets/{p.name}" for p in sorted((PACKAGE / "widgets").glob("*.py"))
                            if p.name != "__init__.py")]
UI_KEYWORDS = {"description", "title", "xlabel", "ylabel", "label"}
# Literals a reader sees that have no words to translate: symbols, units, numbers and code names.
SYMBOLS = {"", "d_k", "log₁₀ τ", "dtype", "q", "MQA (H_kv=1)", "[PAD]", "softmax", "soft→mask", "T"}


def unmarked_ui_texts(source: str) -> list[str]:
    """String literals shown as a label, title, control description, option, note or SVG text
    (``svg.text(x, y, "...")``) that are not inside _() or N_()."""
    found = []

    def literals(node):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("_", "N_"):
            return
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value not in SYMBOLS and re.search("[A-Za-z]{2}", node.value):
                found.append(f"line {node.lineno}: {node.value[:50]!r}")
            return
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
            if re.search("[A-Za-z]{3}", text):
                found.append(f"line {node.lineno}: {ast.unparse(node)[:50]}")
            return
        for child in ast.iter_child_nodes(node):
            literals(child)

    def option_labels(node):               # options: labels, or (label, value) pairs whose values stay
        if isinstance(node, ast.Tuple) and len(node.elts) == 2:
            literals(node.elts[0])
        elif isinstance(node, (ast.List, ast.Tuple)):
            for elt in node.elts:
                option_labels(elt)
        elif isinstance(node, ast.ListComp):
            option_labels(node.elt)
        else:
            literals(node)

    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg in UI_KEYWORDS:
                literals(kw.value)
            elif kw.arg == "options":
                option_labels(kw.value)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "text" and len(node.args) >= 3:
            literals(node.args[2])
        if isinstance(func, ast.Attribute) and func.attr in ("set_title", "set_xlabel", "set_ylabel") and node.args:
            literals(node.args[0])
        if isinstance(func, ast.Name) and func.id == "note" and node.args:
            literals(node.args[0])
    return found


def rebinds_translation(source: str) -> list[int]:
    """Lines where ``source`` binds the name ``_``."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Name) and node.id == "_" and isinstance(node.ctx, ast.Store)]


def lint(package: Path = PACKAGE) -> list[Finding]:
    """Every rule on the modules it applies to."""
    found = []
    for module in TRANSLATED:
        path = package / module
        source = path.read_text()
        found += [Finding(path, int(p.split()[1].rstrip(":")), f"unmarked message: {p}")
                  for p in unwrapped_messages(source)]
        found += [Finding(path, line, "binds _, the translation function") for line in rebinds_translation(source)]
        if module in CHECKERS:
            found += [Finding(path, int(p.split()[1].rstrip(":")), f"unmarked verdict or explanation: {p}")
                      for p in unwrapped_checker_messages(source)]
    for module in UI_MODULES:
        path = package / module
        found += [Finding(path, int(p.split()[1].rstrip(":")), f"unmarked label: {p}")
                  for p in unmarked_ui_texts(path.read_text())]
    return sorted(found)
