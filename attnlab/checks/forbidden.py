"""Record calls of library functions that an exercise asks the student not to use.

Some sheets ask for a computation written by hand: the softmax backward without autograd, grouped-query
attention without SDPA's ``enable_gqa=True``, ``nn.MultiheadAttention`` rebuilt without calling it.
``recording(entry_points)`` replaces each named entry point by a wrapper that notes the call and then
calls the original, so the student's function still runs to the end; on leaving the block every
original is put back (also after a time limit or an exception)::

    with recording(("torch.Tensor.backward", "attnlab.grad.attention_backward")) as called:
        fn(q, k, v, g)
    called            # ["torch.Tensor.backward"]: the names, in the order of the first call

An entry point is a dotted name, a module attribute (``"attnlab.masks.causal"``) or a class attribute
(``"torch.nn.MultiheadAttention.forward"``), optionally followed by the keyword arguments that make the
call a forbidden one: ``"torch.nn.functional.scaled_dot_product_attention(enable_gqa=True)"`` records
only calls that pass ``enable_gqa`` with a true value. Entry points are plain strings so that they can
cross the channel to a sandboxed student process as JSON. A name whose module is not imported (torch in
a NumPy-only session) is skipped: nothing imported it, so nothing calls it.

A function object is also replaced wherever the student's own namespace (``namespaces``, e.g. the
function's globals) or a module of attnlab holds it under another name (``from attnlab import
attention``, ``al.attention`` for ``attnlab.reference.attention``), so every usual route to it is
recorded. A message names the entry point as written (``attnlab.reference.attention``).
"""
from __future__ import annotations

import contextlib
import functools
import re
import sys
import threading
import types

_SPEC = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(?:\((.*)\))?\s*$")
_LOCK = threading.RLock()


def parse(entry_point: str) -> tuple[str, tuple[str, ...]]:
    """``"pkg.mod.f(flag=True)"`` -> ``("pkg.mod.f", ("flag",))``; the keywords must be ``=True``."""
    match = _SPEC.match(entry_point)
    if match is None:
        raise ValueError(f"not an entry point: {entry_point!r}")
    name, inside = match.group(1), match.group(2) or ""
    flags = []
    for part in filter(None, (p.strip() for p in inside.split(","))):
        key, _sep, value = part.partition("=")
        if value.strip() != "True":
            raise ValueError(f"only `keyword=True` conditions are supported: {entry_point!r}")
        flags.append(key.strip())
    return name, tuple(flags)


def _resolve(name: str):
    """(owner, attribute) for a dotted name whose module is already imported, else None (nothing is imported
    here: a module nobody imported cannot have been called, and importing torch would cost seconds)."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        owner = sys.modules.get(".".join(parts[:cut]))
        if owner is None:
            continue
        try:
            for attr in parts[cut:-1]:
                owner = _attribute(owner, attr)
            _attribute(owner, parts[-1])
        except (AttributeError, KeyError):
            return None
        return owner, parts[-1]
    return None


def _attribute(owner, name: str):
    """``owner.name``, without a module's lazy ``__getattr__``: ``attnlab.torch_ops``, never imported, would
    be imported (and torch with it, seconds; in the browser, where torch is missing, an error)."""
    return vars(owner)[name] if isinstance(owner, types.ModuleType) else getattr(owner, name)


_DEPTH = threading.local()        # recorded calls in progress: a forbidden function's own inner calls are not noted


def _recorder(original, shown: str, flags: tuple, called: list):
    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        outer = getattr(_DEPTH, "n", 0) == 0
        if outer and (not flags or all(kwargs.get(flag) for flag in flags)) and shown not in called:
            called.append(shown)
        _DEPTH.n = getattr(_DEPTH, "n", 0) + 1
        try:
            return original(*args, **kwargs)
        finally:
            _DEPTH.n -= 1
    wrapper.__attnlab_recorder__ = True
    return wrapper


def _aliases(target, namespaces: list[dict]):
    """Every (dict, key) of ``namespaces`` and of attnlab's modules that holds ``target`` itself."""
    found = []
    spaces = list(namespaces) + [vars(module) for name, module in list(sys.modules.items())
                                 if module is not None and (name == "attnlab" or name.startswith("attnlab."))]
    for space in spaces:
        for key, value in list(space.items()):
            if value is target:
                found.append((space, key))
    return found


def entry_point_of(fn, entry_points) -> str | None:
    """The entry point (as written) that ``fn`` itself is, if it is one: a student may pass the library
    function to the checker directly, and then no call goes through a replaced name."""
    target = getattr(fn, "__func__", fn)
    for entry in entry_points:
        name, flags = parse(entry)
        where = _resolve(name)
        if where is not None and not flags and getattr(getattr(*where), "__func__", getattr(*where)) is target:
            return name
    return None


def _torch_mode(originals: list, called: list):
    """A torch function mode that notes a replaced torch function called under a name no wrapper
    covers (``torch._C._nn.scaled_dot_product_attention``); a no-op without torch entry points."""
    if sys.modules.get("torch") is None or not any(shown.startswith("torch.") for _f, shown, _k in originals):
        return contextlib.nullcontext()
    from torch.overrides import TorchFunctionMode

    class Recorder(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if getattr(_DEPTH, "n", 0) == 0:
                for original, shown, flags in originals:
                    if func is original and shown not in called and all(kwargs.get(f) for f in flags):
                        called.append(shown)
            return func(*args, **kwargs)

    return Recorder()


@contextlib.contextmanager
def recording(entry_points=(), namespaces=()):
    """Replace ``entry_points`` by recording wrappers for the duration of the block; yield the list of the
    entry points called (as written, without the keyword condition unless it has one). ``namespaces``:
    further dicts to patch (the student function's globals), where the same objects appear by other
    names."""
    called: list[str] = []
    if not entry_points:
        yield called
        return
    patched = []          # (setter, restore) pairs, undone in reverse order
    originals = []        # (function, name as shown, keyword conditions) of every entry point replaced
    with _LOCK:
        try:
            for entry in entry_points:
                name, flags = parse(entry)
                where = _resolve(name)
                if where is None:
                    continue
                owner, attr = where
                original = getattr(owner, attr)
                if getattr(original, "__attnlab_recorder__", False):
                    continue
                shown = name + ("(" + ", ".join(f"{f}=True" for f in flags) + ")" if flags else "")
                wrapper = _recorder(original, shown, flags, called)
                before = vars(owner).get(attr)
                try:
                    setattr(owner, attr, wrapper)
                except (AttributeError, TypeError):     # a built-in type: nothing to patch
                    continue
                patched.append((owner, attr, before))
                originals.append((original, shown, flags))
                target = getattr(original, "__func__", original)
                for space, key in _aliases(target, list(namespaces)):
                    if space.get(key) is target:
                        space[key] = wrapper
                        patched.append((space, key, target))
            with _torch_mode(originals, called):
                yield called
        finally:
            for owner, attr, before in reversed(patched):
                if isinstance(owner, dict):
                    owner[attr] = before
                elif before is None:
                    with contextlib.suppress(AttributeError, TypeError):
                        delattr(owner, attr)
                else:
                    setattr(owner, attr, before)
