"""No page asserts on a time it measured.

A reader's build runs on a machine that may be busy: a live timing is an indication, and an
assertion on it fails the build by chance (chapter 8 once asserted that SDPA beat the chunked path
at T = 1024 and failed one build in two under load). A page may show what it measured and say so
conditionally; the speed facts its prose relies on come from ``attnlab/recorded/``.

The rule follows values through a page, cell after cell: a value is *measured* if it comes from a
timer (``perf_counter``, ``attnlab.bench.median_time`` ..., or a function of the page that calls
one), or is computed from a measured value. A column or key named for memory, bytes or FLOPs
(``df["peak memory growth (MiB)"]``) is not measured even where its table is: those quantities are
deterministic and may be asserted.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from ..pages import code_cells
from . import Finding

TIMERS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "process_time", "timeit",
          "median_time", "interleaved_times", "op_time_breakdown", "device_comparison"}
DOTTED_TIMERS = {"time.time", "time.time_ns"}
# a column or key named for a deterministic quantity (and not a rate: "GFLOP/s" is measured)
DETERMINISTIC_KEY = re.compile(r"MiB|KiB|GiB|bytes|memory|\bFLOPs?\b(?!/)|params|shape", re.I)


def _call_name(func: ast.AST) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


class _Measured:
    """Which names of a page hold measured values, statement by statement."""

    def __init__(self):
        self.names: set[str] = set()
        self.timers = set(TIMERS)

    def is_timer_call(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and (
            _call_name(node.func) in self.timers or ast.unparse(node.func) in DOTTED_TIMERS)

    def measured(self, node: ast.AST) -> bool:
        if node is None:
            return False
        if self.is_timer_call(node):
            return True
        if isinstance(node, ast.Name):
            return node.id in self.names
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and isinstance(node.slice.value, str):
            return self.measured(node.value) and not DETERMINISTIC_KEY.search(node.slice.value)
        if isinstance(node, (ast.Lambda, ast.FunctionDef)):
            return False
        return any(self.measured(child) for child in ast.iter_child_nodes(node))

    def _bind(self, target: ast.AST, measured: bool) -> None:
        """Names bound by ``target``: measured, or rebound to a deterministic value."""
        if isinstance(target, (ast.Attribute, ast.Subscript, ast.Starred)):
            return
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                (self.names.add if measured else self.names.discard)(node.id)

    def _root(self, node: ast.AST) -> ast.Name | None:
        while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
            node = node.func if isinstance(node, ast.Call) else node.value
        return node if isinstance(node, ast.Name) else None

    def statement(self, node: ast.stmt) -> None:
        """Update the measured names after ``node``."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(self.is_timer_call(n) for n in ast.walk(node)):
                self.timers.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript):          # table["x"] = measured: the table holds it
                    root = self._root(target)
                    if root is not None and self.measured(node.value):
                        self.names.add(root.id)
                else:
                    self._bind(target, self.measured(node.value))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            root = self._root(node.target)
            if root is not None and self.measured(node.value):
                self.names.add(root.id)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self._bind(node.target, self.measured(node.iter))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value                                   # rows.append(measured), d.update(...)
            root = self._root(call.func)
            if root is not None and isinstance(call.func, ast.Attribute) and any(
                    self.measured(a) for a in [*call.args, *(k.value for k in call.keywords)]):
                self.names.add(root.id)


def _statements(body: list[ast.stmt]):
    """The statements of ``body`` in execution order, nested ones (loops, with, if) included."""
    for node in body:
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, field, None)
            if inner:
                yield from _statements(inner)


def _checks(node: ast.stmt):
    """The expressions ``node`` asserts on: an assert's test, an ``assert_*(...)`` call's arguments."""
    if isinstance(node, ast.Assert):
        yield node.test
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
            and _call_name(node.value.func).startswith("assert"):
        yield from node.value.args


def measured_time_assertions(sources: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """(line, code) of each assertion on a measured time in cells given as (first line, source)."""
    state, found = _Measured(), []
    for first, source in sources:
        tree = ast.parse(source)
        for node in _statements(tree.body):
            for expr in _checks(node):
                if state.measured(expr):
                    found.append((first + node.lineno - 1, ast.unparse(node)))
                    break
            state.statement(node)
    return found


def lint(page: Path) -> list[Finding]:
    return [Finding(page, line, f"asserts on a measured time: {code}")
            for line, code in measured_time_assertions([(c.line, c.source) for c in code_cells(page)])]
