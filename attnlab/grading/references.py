"""Objects the grader hands to a student's function by reference, rebuilt in the student's process.

A checker may pass more than data: a callable (the probe a student's leak test receives, the
``dropout`` stand-in of the causal checker), a random generator whose state must advance, a
module, an ``nn.MultiheadAttention`` or a dataclass of parameters. None of them is pickled. The
grader names each (:func:`encode_reference`) and the student's process rebuilds it
(:func:`rebuild`) from its own read-only copy of the packages:

* ``{"$global": [module, qualname]}``: a function or class importable under its name;
* ``{"$code": {...}}``: any other function defined in a module's source (a closure, a lambda),
  named by the index of its code object among those compiled from that module's source, with
  its defaults and the contents of its closure's cells, each encoded again;
* ``{"$rng": state}`` and ``{"$torch_rng": blob}``: a generator by its state (the student's
  process sends the new state back after the call, so a generator shared by two calls advances
  as it would in one process);
* ``{"$instance": [class, attributes]}``: an object of an importable class, by its ``__dict__``
  (a dataclass, an ``nn.Module`` with its parameters);
* ``$module``, ``$partial``, ``$method``, ``$odict``, ``$slice``, ``$np_dtype``, ``$torch_device``.
"""
from __future__ import annotations

import collections
import functools
import importlib
import sys
import types

import numpy as np

from .wire import ChannelError, array_bytes, read_array

_CODES: dict[str, list[types.CodeType]] = {}


def _codes(module_name: str) -> list[types.CodeType]:
    """Every code object compiled from the module's source, in a fixed (depth-first) order."""
    if module_name not in _CODES:
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
        top = module.__spec__.loader.get_code(module_name)
        found, stack = [], [top]
        while stack:
            code = stack.pop()
            found.append(code)
            stack += reversed([c for c in code.co_consts if isinstance(c, types.CodeType)])
        _CODES[module_name] = found
    return _CODES[module_name]


def _resolve(module_name: str, qualname: str):
    value = importlib.import_module(module_name)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def _importable(value) -> list[str] | None:
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    try:
        return [module, qualname] if _resolve(module, qualname) is value else None
    except Exception:                                        # not importable under that name
        return None


# ---------------------------------------------------------------------------------------------- grader side


def encode_reference(encoder, value, depth: int):
    """Name ``value`` for the student's process (the grader's ``by_reference`` of :class:`.wire.Encoder`)."""
    again = functools.partial(encoder, depth=depth + 1)
    if isinstance(value, np.random.Generator):
        return {"$rng": again(value.bit_generator.state)}
    if isinstance(value, types.ModuleType):
        return {"$module": value.__name__}
    if isinstance(value, slice):
        return {"$slice": [again(value.start), again(value.stop), again(value.step)]}
    if isinstance(value, np.dtype):
        return {"$np_dtype": value.str}
    if isinstance(value, collections.OrderedDict):
        return {"$odict": [[again(k), again(v)] for k, v in value.items()]}
    if isinstance(value, functools.partial):
        return {"$partial": [again(value.func), again(value.args), again(value.keywords)]}
    if isinstance(value, types.MethodType):
        return {"$method": [again(value.__self__), value.__func__.__name__]}
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(value, torch.Generator):
            return {"$torch_rng": encoder.blob(array_bytes(value.get_state().numpy()))}
        if isinstance(value, torch.dtype):
            return {"$global": ["torch", str(value).removeprefix("torch.")]}
        if isinstance(value, torch.device):
            return {"$torch_device": str(value)}
    name = _importable(value)
    if name is not None:
        return {"$global": name}
    if isinstance(value, types.FunctionType):
        return {"$code": _function(value, again)}
    cls = _importable(type(value))
    if cls is not None and hasattr(value, "__dict__") and not isinstance(value, type):
        return {"$instance": [cls, again(dict(vars(value)))]}
    raise ValueError(f"a {type(value).__name__} cannot be sent to the student's process")


def _function(f: types.FunctionType, again) -> dict:
    codes = _codes(f.__module__)
    index = next((i for i, code in enumerate(codes) if code == f.__code__), None)
    if index is None:
        raise ValueError(f"the code of {f.__qualname__} is not in the source of {f.__module__}")
    cells = []
    for cell in f.__closure__ or ():
        try:
            cells.append([again(cell.cell_contents)])
        except ValueError as err:
            if "empty" not in str(err):
                raise
            cells.append([])
    return {"module": f.__module__, "index": index, "qualname": f.__qualname__, "name": f.__name__,
            "defaults": again(f.__defaults__), "kwdefaults": again(f.__kwdefaults__), "cells": cells}


# ---------------------------------------------------------------------------------------------- student side


def rebuild(decoder, tag: str, data: dict, depth: int):
    """The object a reference names (the student's process's ``by_reference`` of :class:`.wire.Decoder`)."""
    value = data[tag]
    again = functools.partial(decoder, depth=depth + 1)
    if tag == "$module":
        return importlib.import_module(value)
    if tag == "$global":
        return _resolve(*value)
    if tag == "$code":
        return _rebuild_function(value, again)
    if tag == "$rng":
        state = again(value)
        generator = np.random.Generator(getattr(np.random, state["bit_generator"])())
        generator.bit_generator.state = state
        return generator
    if tag == "$torch_rng":
        import torch
        generator = torch.Generator()
        generator.set_state(torch.from_numpy(read_array(decoder.blob(value)).copy()))
        return generator
    if tag == "$instance":
        cls, attributes = _resolve(*value[0]), again(value[1])
        obj = cls.__new__(cls)
        obj.__dict__.update(attributes)
        return obj
    if tag == "$odict":
        return collections.OrderedDict((again(k), again(v)) for k, v in value)
    if tag == "$partial":
        func, args, keywords = (again(v) for v in value)
        return functools.partial(func, *args, **keywords)
    if tag == "$method":
        return getattr(again(value[0]), value[1])
    if tag == "$slice":
        return slice(*(again(v) for v in value))
    if tag == "$np_dtype":
        return np.dtype(value)
    if tag == "$torch_device":
        import torch
        return torch.device(value)
    raise ChannelError(f"the tag {tag[:40]!r} is not a reference")


def _rebuild_function(spec: dict, again) -> types.FunctionType:
    module = importlib.import_module(spec["module"])
    code = _codes(spec["module"])[spec["index"]]
    if code.co_qualname != spec["qualname"]:
        raise ChannelError(f"{spec['qualname']} is not where the grader's copy of {spec['module']} has it")
    cells = tuple(types.CellType(again(c[0])) if c else types.CellType() for c in spec["cells"])
    function = types.FunctionType(code, module.__dict__, spec["name"], again(spec["defaults"]), cells or None)
    function.__kwdefaults__ = again(spec["kwdefaults"])
    function.__qualname__ = spec["qualname"]
    return function
