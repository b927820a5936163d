"""Which of a page's visible cells can run in the reader's browser ("Run the code", attnlab.live).

The browser has NumPy, SymPy, pandas, matplotlib and attnlab's NumPy parts; it lacks PyTorch and the
rest of :data:`UNAVAILABLE`. A cell cannot run there when a statement that shows something
uses one of them (``print(torch.randn(3))``, ``al.torch_ops``, a checker that builds torch tensors,
the cell's last expression), or when it reads a name that a cell which cannot run would have made.
A statement that only binds names (an import, a ``def``, ``v = torch.tensor(...)``, see
:func:`binds_only`) or a setup call of the library itself (``torch.manual_seed(0)``)
is skipped in the browser with a note, its names becoming stand-ins that say why when used; so a
page's first cell, which imports torch beside numpy, runs.

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

ATTNLAB = Path(__file__).resolve().parent   # this package: which of its modules need torch is read here


# what the browser lacks, by top-level module: what a reader calls it (attnlab.live gives stand-ins)
UNAVAILABLE = {"torch": "PyTorch", "transformers": "transformers", "tokenizers": "tokenizers",
               "triton": "Triton", "ipywidgets": "ipywidgets", "myst_nb": "myst-nb"}


@dataclass(frozen=True)
class Verdict:
    runs: bool
    library: str = ""    # what it needs: "PyTorch", "ipywidgets", ... (UNAVAILABLE's values)
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
def functions_needing_torch() -> dict[str, frozenset[str]]:
    """For each attnlab module that imports without torch (``occupancy``; a package counts as one,
    ``checks``), its functions whose body, or a function of the same file they call, uses torch."""
    found: dict[str, set[str]] = {}
    for path in sorted(ATTNLAB.rglob("*.py")):
        parts = path.relative_to(ATTNLAB).with_suffix("").parts
        module = parts[0] if parts[0] != "__init__" else ""
        if module in attnlab_needs():
            continue
        functions = {f.name: f for f in ast.walk(ast.parse(path.read_text())) if isinstance(f, ast.FunctionDef)}
        reads = {name: {n.id for n in ast.walk(f) if isinstance(n, ast.Name)}
                 | {n.attr for n in ast.walk(f) if isinstance(n, ast.Attribute)} for name, f in functions.items()}
        uses = {name for name, names in reads.items() if names & {"torch", "_torch", "torch_generator"}}
        while True:
            more = {name for name, names in reads.items() if names & uses} - uses
            if not more:
                break
            uses |= more
        found.setdefault(module, set()).update(uses)
    return {module: frozenset(names) for module, names in found.items()}


def checkers_needing_torch() -> frozenset[str]:
    """The ``check_*`` functions that use torch."""
    return frozenset(n for n in functions_needing_torch().get("checks", ()) if n.startswith("check_"))


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
        parts = module.split(".")
        if parts[0] == "attnlab" and a.name in functions_needing_torch().get(parts[1] if len(parts) > 1 else "", ()):
            needs = "PyTorch"
        found[a.asname or a.name] = needs
    return found


def attnlab_modules(node: ast.Import | ast.ImportFrom) -> dict[str, str]:
    """The names an import binds to attnlab or one of its modules: the module's name ("" for attnlab)."""
    if isinstance(node, ast.Import):
        return {a.asname or "attnlab": ".".join(a.name.split(".")[1:2]) for a in node.names
                if a.name.split(".")[0] == "attnlab" and (a.asname or a.name == "attnlab")}
    if node.module == "attnlab":
        return {a.asname or a.name: a.name for a in node.names}
    return {}


def symbols(source: str) -> tuple[set[str], set[str]]:
    """(the names ``source`` binds at its top level, every global name it or its functions read); also
    the lint of visible cells' (``bookbuild.lint.cells``)."""
    table = symtable.symtable(source, "<cell>", "exec")
    bound = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    read, tables = set(), [table]
    while tables:
        t = tables.pop()
        read |= {s.get_name() for s in t.get_symbols() if s.is_referenced() and (t is table or s.is_global())}
        tables += t.get_children()
    return bound, read


def _names(statement: ast.stmt) -> tuple[set[str], set[str]]:
    return symbols(ast.unparse(statement))


def bound_names(statement: ast.stmt) -> list[str]:
    """The names ``statement`` binds, sorted (none for an expression)."""
    return sorted(_names(statement)[0])


def binds_only(statement: ast.stmt) -> bool:
    """An import, a definition or an assignment to names: it shows nothing, it only binds names."""
    if isinstance(statement, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.ClassDef):
        return True
    targets = statement.targets if isinstance(statement, ast.Assign) else \
        [statement.target] if isinstance(statement, ast.AnnAssign | ast.AugAssign) else None
    return targets is not None and all(isinstance(n, ast.Name | ast.Tuple | ast.List | ast.Starred)
                                       for t in targets for n in ast.walk(t) if not isinstance(n, ast.expr_context))


def _attnlab_attributes(statement: ast.stmt, modules: dict[str, str]) -> str:
    """What ``al.torch_ops``, ``occupancy.split_kv_speedup`` and the like in the statement need ("" if none)."""
    for node in ast.walk(statement):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            module = modules[node.value.id]
            if module == "" and node.attr in attnlab_needs():
                return attnlab_needs()[node.attr]
            if node.attr in functions_needing_torch().get(module, ()):
                return "PyTorch"
    return ""


@dataclass
class Judgement:
    verdict: Verdict
    skipped: dict[int, str]       # index of a statement the browser skips -> the library it needs


class Tracker:
    """The names of a page's cells, followed cell by cell in the order they run: the build follows the
    page's visible cells (:func:`verdicts`); the browser follows the cells as the reader runs them
    (``attnlab.live.Page``), so that an edited cell is judged the same way."""

    def __init__(self):
        self.tainted: dict[str, str] = {}   # name -> the library it is a stand-in of, or "" if a cell
        self.defined: set[str] = set()      # that cannot run would have made it; defined: what ran
        self.modules = {"attnlab": ""}      # names of attnlab and its modules: al -> "", occupancy -> "occupancy"

    def judge(self, source: str) -> Judgement:
        try:
            body = ast.parse(source).body
        except SyntaxError:                 # IPython syntax (a magic): Pyodide's Python cannot run it
            return Judgement(Verdict(False, library="IPython"), {})
        verdict, skipped, tainted = Verdict(True), {}, self.tainted
        for index, statement in enumerate(body):
            if isinstance(statement, ast.Import | ast.ImportFrom):
                runs = self._import(statement)
                if runs:                    # importing attnlab's torch modules runs torch: skip it
                    skipped[index] = runs
                continue
            bound, read = _names(statement)
            library = _attnlab_attributes(statement, self.modules) or next(
                (tainted[name] for name in sorted(read) if tainted.get(name)), "")
            computed = next((name for name in sorted(read) if tainted.get(name) == ""), "")
            if not (library or computed):
                for name in bound:
                    tainted.pop(name, None)
                continue
            if library and not computed and (binds_only(statement)
                                             or self._setup_call(statement, last=statement is body[-1])):
                skipped[index] = library    # with a note; its names become stand-ins
                for name in bound:
                    tainted[name] = library
                continue
            if verdict.runs:
                verdict = Verdict(False, library=library) if library else Verdict(False, name=computed)
        if verdict.runs:
            self.defined |= {name for statement in body for name in _names(statement)[0]}
        else:                               # the page skips the whole cell: nothing it binds exists,
            for statement in body:          # unless an earlier cell bound the same module
                for name in _names(statement)[0]:
                    if not (isinstance(statement, ast.Import | ast.ImportFrom) and name in self.defined):
                        tainted[name] = tainted.get(name) or ""
        return Judgement(verdict, skipped)

    def _import(self, statement: ast.Import | ast.ImportFrom) -> str:
        """Follow the names an import binds; what running it needs that the browser lacks ("" if nothing)."""
        for name, library in imported(statement).items():
            if library:
                self.tainted[name] = library
            else:
                self.tainted.pop(name, None)
        self.modules.update(attnlab_modules(statement))
        return import_runs(statement)

    def _setup_call(self, statement: ast.stmt, last: bool) -> bool:
        """``torch.manual_seed(0)`` before a cell's last line: a call of the library itself, whose value
        nothing keeps or shows (``print(torch.ones(2))`` shows something: not a setup call)."""
        if last or not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
            return False
        root = statement.value.func
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and bool(self.tainted.get(root.id))


def import_runs(statement: ast.Import | ast.ImportFrom) -> str:
    """What an import of attnlab's runs that the browser lacks ("" if nothing): ``attnlab.torch_ops``
    imports torch and uses it at once. (``import torch`` itself gives a stand-in, and importing a
    checker that needs torch runs nothing.)"""
    if isinstance(statement, ast.Import):
        modules = [a.name for a in statement.names]
    else:
        modules = [statement.module or ""] + [f"{statement.module}.{a.name}" for a in statement.names]
    return next((_module_needs(m) for m in modules if m.split(".")[0] == "attnlab" and _module_needs(m)), "")


def verdicts(sources: list[str]) -> list[Verdict]:
    """Whether each cell (visible, in page order) runs in the browser, and if not, why."""
    tracker = Tracker()
    return [tracker.judge(source).verdict for source in sources]
