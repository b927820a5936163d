"""Which forbidden library entry points a student's function calls (``run.call(..., forbid=names)``).

A task may forbid a shortcut, say ``torch.nn.functional.scaled_dot_product_attention`` in an
exercise that asks for attention written by hand. While the student's function runs,
:func:`recording` replaces each named function by a recorder that notes the call and passes it
on: wherever a loaded module of the same package binds it (``F.scaled_dot_product_attention``),
and wherever the student's namespace does (``from torch.nn.functional import
scaled_dot_product_attention``). A torch function is also caught under any other name, through a
``TorchFunctionMode``, which sees every call of a torch function. In grading the recorder runs in
the student's process: it catches a shortcut taken in good faith, not code written to evade it.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import sys


def resolve(name: str):
    """The object a dotted name such as "torch.nn.functional.softmax" binds (importing its module)."""
    parts = name.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for part in parts[split:]:
            value = getattr(value, part)
        return value
    raise ImportError(f"no module in {name!r}")


def _bindings(original, top: str, namespaces):
    """(owner dict, key) for every place that binds ``original``: modules of package ``top``, namespaces."""
    for module_name, module in list(sys.modules.items()):
        if module_name == top or module_name.startswith(top + "."):
            space = getattr(module, "__dict__", None)
            if isinstance(space, dict):
                yield from ((space, key) for key, value in list(space.items()) if value is original)
    for space in namespaces:
        if isinstance(space, dict):
            yield from ((space, key) for key, value in list(space.items()) if value is original)


def _torch_mode(originals: dict, called: list):
    torch = sys.modules.get("torch")
    if torch is None or not any(name.startswith("torch.") for name in originals):
        return contextlib.nullcontext()
    from torch.overrides import TorchFunctionMode

    class Recorder(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            for name, original in originals.items():
                if func is original and name not in called:
                    called.append(name)
            return func(*args, **(kwargs or {}))

    return Recorder()


@contextlib.contextmanager
def recording(names=(), namespaces=()):
    """Yield a list that receives each of ``names`` the first time it is called, until the block ends."""
    called: list[str] = []
    originals = {}
    for name in names:
        try:
            originals[name] = resolve(name)
        except (ImportError, AttributeError):
            continue                                         # not installed: it cannot be called either
    patched = []
    for name, original in originals.items():
        def recorder(*args, __name=name, __original=original, **kwargs):
            if __name not in called:
                called.append(__name)
            return __original(*args, **kwargs)
        try:
            recorder = functools.wraps(original)(recorder)
        except (AttributeError, TypeError):
            pass
        seen = set()
        for space, key in _bindings(original, name.split(".")[0], namespaces):
            if (id(space), key) not in seen:
                seen.add((id(space), key))
                patched.append((space, key, original))
                space[key] = recorder
    try:
        with _torch_mode(originals, called):
            yield called
    finally:
        for space, key, original in reversed(patched):
            space[key] = original
