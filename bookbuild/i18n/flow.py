"""Where the names of a page's code get their values: enough to follow a shown text to its literals.

``ax.set_title(title)`` shows whatever ``title`` holds; the page bound it in ``for ax, (title, W) in
zip(axes, panels.items())`` from the keys of ``panels = {"uniform": U, "hard selection": H}``. A
:class:`Flow` reads one cell's bindings (assignments, ``for`` loops, comprehensions, appends) and
falls back on the earlier cells' flow for a name the cell does not bind.

A value is a list of *shapes*: an expression (the value is that expression), or a tuple of values
(what unpacking ``zip(...)``, ``enumerate(...)`` or ``d.items()`` gives, position by position).
"""
from __future__ import annotations

import ast


class Flow:
    def __init__(self, tree: ast.AST, outer: Flow | None = None):
        self.outer = outer
        self.bindings: dict[str, list] = {}        # name: [(line, value(seen))], values read lazily
        self.appended: dict[str, list] = {}        # name: [expression appended to it]
        self.items: dict[str, list] = {}           # name: [(key, value)] of ``name[key] = value``
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                        self.items.setdefault(target.value.id, []).append((target.slice, node.value))
                    self._bind(target, node.lineno, lambda seen, v=node.value: [v])
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                self._bind(node.target, node.lineno, lambda seen, v=node.value: [v])
            elif isinstance(node, ast.For):
                self._bind(node.target, node.lineno, lambda seen, it=node.iter: self.element(it, seen))
            elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                for loop in node.generators:
                    self._bind(loop.target, node.lineno, lambda seen, it=loop.iter: self.element(it, seen))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) and node.func.attr in {"append", "extend", "insert"}:
                added = node.args[-1:] if node.func.attr != "extend" else node.args
                self.appended.setdefault(node.func.value.id, []).extend(
                    added if node.func.attr != "extend" else [ast.Starred(a) for a in added])

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
        return (name.id not in self.bindings and name.id not in self.appended and name.id not in self.items
                and self.outer is not None)

    def resolve(self, name: ast.Name, seen=frozenset()) -> list:
        """The shapes ``name`` may hold where it is used: its latest binding above, else any of the cell's."""
        if self._elsewhere(name):
            return self.outer.resolve(name, seen)
        if name.id in seen:        # a cycle: a name this cell rebinds, used in an earlier cell's expression
            return self.outer.resolve(name) if self.outer is not None else []
        sites = self.bindings.get(name.id, [])
        if not sites and self.outer is not None:      # appended to or filled here, bound in an earlier cell
            return self.outer.resolve(name, seen)
        above = [line for line, _ in sites if line <= name.lineno]
        chosen = [value for line, value in sites if not above or line == max(above)]
        return [shape for value in chosen for shape in value(seen | {name.id})]

    def element(self, node, seen=frozenset()) -> list:
        """The value of one element of iterating ``node`` (a dict gives its keys)."""
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return [e.value if isinstance(e, ast.Starred) else e for e in node.elts]
        if isinstance(node, ast.Dict):
            return [k for k in node.keys if k is not None]
        if isinstance(node, ast.Name) and self._elsewhere(node):
            return self.outer.element(node, seen)
        if isinstance(node, ast.Name):
            found = [e for shape in self.resolve(node, seen) if not isinstance(shape, tuple)
                     for e in self.element(shape, seen | {node.id})]
            for added in self.appended.get(node.id, []):
                found += self.element(added.value, seen) if isinstance(added, ast.Starred) else [added]
            return found
        if isinstance(node, ast.Call):
            func, args = node.func, node.args
            if isinstance(func, ast.Name) and func.id == "zip":
                return [tuple(self.element(a, seen) for a in args)]
            if isinstance(func, ast.Name) and func.id == "enumerate" and args:
                return [([], self.element(args[0], seen))]
            if isinstance(func, ast.Name) and func.id in {"list", "tuple", "sorted", "reversed", "set"} and args:
                return self.element(args[0], seen)
            if isinstance(func, ast.Attribute) and func.attr in {"items", "keys", "values"}:
                keys, values = self.dict_of(func.value, seen)
                return {"items": [(keys, values)], "keys": keys, "values": values}[func.attr]
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return [node.elt]
        if isinstance(node, ast.Subscript):                   # rows[32]: iterate one of the dict's values
            _keys, values = self.dict_of(node.value, seen)
            return [e for value in values for e in self.element(value, seen)]
        return []

    def dict_of(self, node, seen=frozenset()) -> tuple[list, list]:
        """(keys, values) of the dict ``node`` stands for: a literal, ``dict(zip(...))``, or a name of one."""
        if isinstance(node, ast.Dict):
            return [k for k in node.keys if k is not None], list(node.values)
        if isinstance(node, ast.DictComp):
            return [node.key], [node.value]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and node.args:
            pairs = self.element(node.args[0], seen)
            return ([p for shape in pairs for p in self._part(shape, 0, 2)],
                    [p for shape in pairs for p in self._part(shape, 1, 2)])
        if isinstance(node, ast.Name) and self._elsewhere(node):
            return self.outer.dict_of(node, seen)
        if isinstance(node, ast.Name):
            keys, values = [], []
            for shape in self.resolve(node, seen):
                if not isinstance(shape, tuple):
                    k, v = self.dict_of(shape, seen | {node.id})
                    keys += k
                    values += v
            for key, value in self.items.get(node.id, []):      # d[key] = value
                keys.append(key)
                values.append(value)
            return keys, values
        return [], []
