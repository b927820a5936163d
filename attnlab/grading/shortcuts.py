"""Which submitted functions call attnlab itself, or a library's attention: a list to read.

The checkers compare a student's function with attnlab's reference. A function that calls that
reference (``al.attention``, ``attnlab.masks.causal``) or torch's own attention
(``F.scaled_dot_product_attention``, ``nn.MultiheadAttention``) passes them without doing the
exercise, and no grader can refuse it: the call is ordinary Python, in the student's own process,
of a package the student needs installed. The sheets ask for the computation written out; this
lists, for each notebook of a folder, every function whose body makes such a call, for the
instructor to read (a call may be legitimate, e.g. a mask built with ``al.masks`` in a later
chapter's exercise)::

    python -m attnlab.grading.shortcuts submissions/ex01
"""
from __future__ import annotations

import ast
import pathlib
import sys

SHORTCUTS = ("attnlab.", "torch.nn.functional.scaled_dot_product_attention", "torch.nn.MultiheadAttention",
             "torch.nn.functional.multi_head_attention_forward", "torch.nn.modules.activation.MultiheadAttention")
ALLOWED = ("attnlab.tr", "attnlab.page_text", "attnlab.checks.", "attnlab.plots.", "attnlab.display.")


def _aliases(tree: ast.AST) -> dict[str, str]:
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]                     # `import torch.nn` binds torch
                names[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def shortcuts(sources: list[str]) -> dict[str, list[str]]:
    """{function name: the shortcut calls in its body} for a notebook's code cells."""
    trees = []
    for source in sources:
        try:
            trees.append(ast.parse(source))
        except SyntaxError:
            continue
    aliases = {k: v for tree in trees for k, v in _aliases(tree).items()}
    found: dict[str, list[str]] = {}
    for tree in trees:
        for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            for call in (n for n in ast.walk(function) if isinstance(n, ast.Call)):
                name = _dotted(call.func)
                if name is None:
                    continue
                root, _, rest = name.partition(".")
                full = aliases.get(root, root) + ("." + rest if rest else "")
                if full.startswith(SHORTCUTS) and not full.startswith(ALLOWED):
                    found.setdefault(function.name, [])
                    if full not in found[function.name]:
                        found[function.name].append(full)
    return found


def main(argv=None) -> None:
    from .notebook import code_cells, problem_with

    folder = pathlib.Path((argv or sys.argv[1:])[0])
    listed = 0
    for path in sorted(folder.glob("*.ipynb")):
        data = path.read_bytes()
        if problem_with(data):
            continue
        for function, calls in shortcuts([c.source for c in code_cells(data)]).items():
            print(f"{path.stem}: {function}() calls {', '.join(calls)}")
            listed += 1
    if not listed:
        print(f"No function in {folder}/*.ipynb calls attnlab or a library's attention.")


if __name__ == "__main__":
    main()
