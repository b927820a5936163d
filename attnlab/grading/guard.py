"""A snapshot of the grading code, so that a student's notebook cannot change what grades it.

Before any student code runs, the sandbox records the bindings of the modules the checkers rely
on: every attribute of every ``attnlab`` module and of ``attnlab``'s classes, and the functions,
classes and submodules of numpy, torch, sympy, math and the builtins. Before each check the
bindings are put back (undoing ``attnlab.checks.check_scores = fake`` or
``numpy.allclose = lambda *a, **k: True`` at the top of a cell); after each check they are
compared again, so that a function that patches them while it is being checked is caught.

New attributes are allowed (modules load submodules lazily); only the recorded ones are guarded.
This defends against rebinding and patching; it does not defend against code that reads the
checker's frames or forges the sandbox's output (see instructors.md, "What grading defends").
"""
from __future__ import annotations

import inspect
import sys
import types

_GUARDED_FULLY = ("attnlab",)
_GUARDED_CALLABLES = ("numpy", "numpy.linalg", "numpy.random", "numpy.testing", "torch", "torch.nn",
                      "torch.nn.functional", "torch.linalg", "torch.testing", "sympy", "math", "builtins",
                      "json", "os", "io", "copy", "functools", "warnings", "signal")


_FUNCTION_PARTS = ("__code__", "__defaults__", "__kwdefaults__")


def _is_code(value) -> bool:
    return callable(value) or isinstance(value, (type, types.ModuleType, property, staticmethod, classmethod))


def _guarded_modules():
    for name, module in list(sys.modules.items()):
        if not isinstance(module, types.ModuleType):
            continue
        if name.split(".")[0] in _GUARDED_FULLY:
            yield module, True
        elif name in _GUARDED_CALLABLES:
            yield module, False


def _guarded_classes():
    import torch
    yield torch.Tensor
    yield torch.nn.Module
    for module, _ in _guarded_modules():
        if module.__name__.startswith("attnlab"):
            for value in list(vars(module).values()):
                if inspect.isclass(value) and value.__module__.startswith("attnlab"):
                    yield value


class Snapshot:
    """The recorded bindings: (owner, name, value) for modules' and classes' attributes."""

    def __init__(self):
        self._entries = []
        for module, fully in _guarded_modules():
            for key, value in list(vars(module).items()):
                if not key.startswith("__") and (fully or _is_code(value)):
                    self._entries.append((module, key, value))
        for cls in dict.fromkeys(_guarded_classes()):
            for key, value in list(vars(cls).items()):
                if _is_code(value) and key not in ("__dict__", "__weakref__"):
                    self._entries.append((cls, key, value))
        for module, _ in _guarded_modules():                  # the code of attnlab's own functions
            if module.__name__.startswith("attnlab"):
                for value in list(vars(module).values()):
                    if isinstance(value, types.FunctionType):
                        self._entries += [(value, key, getattr(value, key)) for key in _FUNCTION_PARTS]

    def changed(self) -> list[str]:
        """Dotted names of the recorded bindings that now point elsewhere (or are gone)."""
        missing = object()
        out = []
        for owner, key, value in self._entries:
            now = getattr(owner, key, missing) if key in _FUNCTION_PARTS else vars(owner).get(key, missing)
            if now is not value and value is not None:      # None: a cache filled on first use
                out.append(f"{_name(owner)}.{key}")
        return out

    def restore(self) -> None:
        """Put every recorded binding back."""
        for owner, key, value in self._entries:
            now = getattr(owner, key, None) if key in _FUNCTION_PARTS else vars(owner).get(key)
            if now is not value:
                try:
                    setattr(owner, key, value)
                except (AttributeError, TypeError):
                    pass


def _name(owner) -> str:
    if isinstance(owner, (type, types.FunctionType)):
        return f"{owner.__module__}.{owner.__qualname__}"
    return owner.__name__
