"""Which of a page's visible cells can run in the reader's browser ("Run the code", attnlab.live).

The browser has NumPy, SymPy, pandas, matplotlib and attnlab's NumPy parts; it lacks PyTorch and the
rest of ``attnlab.live.UNAVAILABLE``. A cell cannot run there when it uses one of them, directly
(``torch.randn``, ``al.torch_ops``, a checker that builds torch tensors) or through a name that such a
statement computed, in this cell or an earlier one (``v_l`` from ``v_l = torch.tensor(...)``). Importing
them is not a use: the stand-ins of ``attnlab.live`` make the imports succeed, and a setup line whose
value nothing keeps (``_ = torch.manual_seed(0)``, :func:`attnlab.live.is_setup`) is skipped with a note.

:func:`verdicts` follows the names through the cells in page order, statement by statement
(``symtable`` sees the globals a function's body reads: a ``def`` that calls torch runs, and a cell
calling the function needs PyTorch). Which attnlab modules and checkers need torch is read from the
package's source, not listed.
"""
from __future__ import annotations

import ast
import functools
import symtable
from dataclasses import dataclass
from pathlib import Path

from attnlab.live import UNAVAILABLE, is_setup

ATTNLAB = Path(__file__).resolve().parent.parent / "attnlab"


@dataclass(frozen=True)
class Verdict:
    runs: bool
    library: str = ""    # what it needs: "PyTorch", "ipywidgets", ... (attnlab.live.UNAVAILABLE's values)
    name: str = ""       # or the name it reads that a cell which cannot run computed


def _top_level_imports(tree: ast.Module) -> set[str]:
    """The modules a module imports when it is imported (its top level, not inside functions)."""
    found = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.add(node.module)
    return found


@functools.cache
def attnlab_needs() -> dict[str, str]:
    """attnlab's submodules (``torch_ops``) that cannot be imported in the browser: what they need."""
    needs = {}
    modules = [p for p in sorted(ATTNLAB.glob("*.py")) if p.name != "__init__.py"]
    for path in modules + sorted(ATTNLAB.glob("*/__init__.py")):
        name = path.stem if path.name != "__init__.py" else path.parent.name
        package = path.parent if path.name == "__init__.py" else None
        files = sorted(package.rglob("*.py")) if package else [path]
        for module in (m for f in files for m in _top_level_imports(ast.parse(f.read_text()))):
            if module.split(".")[0] in UNAVAILABLE:
                needs.setdefault(name, UNAVAILABLE[module.split(".")[0]])
    return needs


@functools.cache
def checkers_needing_torch() -> frozenset[str]:
    """The ``check_*`` functions whose body, or a function of their module they call, uses torch."""
    found = set()
    for path in sorted((ATTNLAB / "checks").glob("*.py")):
        functions = {f.name: f for f in ast.walk(ast.parse(path.read_text())) if isinstance(f, ast.FunctionDef)}
        reads = {name: {n.id for n in ast.walk(f) if isinstance(n, ast.Name)}
                 | {n.attr for n in ast.walk(f) if isinstance(n, ast.Attribute)} for name, f in functions.items()}
        torch = {name for name, names in reads.items() if names & {"torch", "_torch", "torch_generator"}}
        while True:
            more = {name for name, names in reads.items() if names & torch} - torch
            if not more:
                break
            torch |= more
        found |= {name for name in torch if name.startswith("check_")}
    return frozenset(found)


def _module_needs(module: str) -> str:
    """What importing ``module`` needs that the browser lacks ("" if nothing)."""
    parts = module.split(".")
    if parts[0] in UNAVAILABLE:
        return UNAVAILABLE[parts[0]]
    if parts[0] == "attnlab" and len(parts) > 1:
        return attnlab_needs().get(parts[1], "")
    return ""


def imported(node: ast.Import | ast.ImportFrom) -> dict[str, str]:
    """The names an import binds: what each needs that the browser lacks ("" if nothing)."""
    if isinstance(node, ast.Import):
        return {(a.asname or a.name.split(".")[0]): _module_needs(a.name) for a in node.names}
    module = node.module or ""
    found = {}
    for a in node.names:
        needs = _module_needs(module) or _module_needs(f"{module}.{a.name}")
        if module == "attnlab.checks" and a.name in checkers_needing_torch():
            needs = "PyTorch"
        found[a.asname or a.name] = needs
    return found


def _names(statement: ast.stmt) -> tuple[set[str], set[str]]:
    """(names the statement binds, global names it or its functions read)."""
    table = symtable.symtable(ast.unparse(statement), "<statement>", "exec")
    bound = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    read, tables = set(), [table]
    while tables:
        t = tables.pop()
        read |= {s.get_name() for s in t.get_symbols() if s.is_referenced() and (t is table or s.is_global())}
        tables += t.get_children()
    return bound, read


def _attnlab_attributes(statement: ast.stmt, aliases: set[str]) -> str:
    """What ``al.torch_ops`` and the like in the statement need ("" if none)."""
    for node in ast.walk(statement):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            if node.attr in attnlab_needs():
                return attnlab_needs()[node.attr]
            if node.attr in checkers_needing_torch():
                return "PyTorch"
    return ""


def verdicts(sources: list[str]) -> list[Verdict]:
    """Whether each cell (visible, in page order) runs in the browser, and if not, why."""
    tainted: dict[str, str] = {}   # name -> the library it is a stand-in of, or "" if a statement that
    aliases = {"attnlab"}          # cannot run computed it; aliases: the names of the attnlab package
    found = []
    for source in sources:
        try:
            body = ast.parse(source).body
        except SyntaxError:        # IPython syntax (a magic): Pyodide's Python cannot run it
            found.append(Verdict(False, library="IPython"))
            continue
        verdict = Verdict(True)
        for statement in body:
            if isinstance(statement, ast.Import | ast.ImportFrom):
                for name, needs in imported(statement).items():
                    tainted.pop(name, None) if not needs else tainted.__setitem__(name, needs)
                aliases |= {a.asname or a.name for a in statement.names if isinstance(statement, ast.Import)
                            and a.name == "attnlab"}
                continue
            bound, read = _names(statement)
            library = _attnlab_attributes(statement, aliases) or next(
                (tainted[name] for name in sorted(read) if tainted.get(name)), "")
            computed = next((name for name in sorted(read) if tainted.get(name) == ""), "")
            if not (library or computed):
                for name in bound:
                    tainted.pop(name, None)
                continue
            if library and not computed and is_setup(statement, last=statement is body[-1]):
                continue                # skipped in the browser, with a note
            if library and isinstance(statement, ast.FunctionDef | ast.ClassDef):
                tainted[statement.name] = library    # defining it is harmless; calling it needs the library
                continue
            if verdict.runs:
                verdict = Verdict(False, library=library) if library else Verdict(False, name=computed)
        if not verdict.runs:            # the page skips the whole cell: nothing it computes exists
            for statement in body:
                if not isinstance(statement, ast.Import | ast.ImportFrom):
                    tainted.update({name: tainted.get(name) or "" for name in _names(statement)[0]})
        found.append(verdict)
    return found
