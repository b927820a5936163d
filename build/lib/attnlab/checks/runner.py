"""Call a student's function safely and turn what it returns into arrays.

Everything that can go wrong on the student's side becomes a :class:`CheckResult`, never a
traceback: a stub that raises ``NotImplementedError`` is "not attempted yet"; any other exception
is reported in one line naming the case and the exception; a result of the wrong type or shape
gets a message that names the expected shape. Inputs are passed as copies, and a function that
changes its input in place is told so.
"""
from __future__ import annotations

import copy
import functools
import sys
import warnings

import numpy as np

from . import result as R


class Stop(Exception):
    """Raised inside a checker to end the battery with ``self.result``."""

    def __init__(self, result: R.CheckResult):
        super().__init__(result.message)
        self.result = result


def checker(task: str):
    """Decorator for a check function ``check(fn, ...)``: a :class:`Stop` becomes the result."""
    def wrap(check):
        @functools.wraps(check)
        def run(fn, *args, **kwargs):
            if not callable(fn):
                return R.failed(task, f"Expected a function; got {type(fn).__name__}. Pass the "
                                      f"function itself, without calling it.")
            try:
                return check(fn, *args, **kwargs)
            except Stop as stop:
                return stop.result
        return run
    return wrap


def _torch():
    return sys.modules.get("torch")


def is_tensor(x) -> bool:
    torch = _torch()
    return torch is not None and isinstance(x, torch.Tensor)


def _clone(x):
    if isinstance(x, np.ndarray):
        return x.copy()
    if is_tensor(x):
        return x.detach().clone()
    if isinstance(x, (list, dict)):
        return copy.deepcopy(x)
    return x          # numbers, functions, random generators: passed as they are


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    if is_tensor(a):
        return bool(a.shape == b.shape and _torch().equal(a, b))
    return True


def one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    first = text[0] if text else ""
    return first if len(first) <= 160 else first[:157] + "..."


def call(task: str, fn, case: str, *args, error_hint=None, expect=(), **kwargs):
    """Run ``fn(*args, **kwargs)`` on copies of the inputs; stop the check on any failure.

    ``error_hint(err)`` may return a sentence that explains a likely cause of an exception.
    An exception that is an instance of ``expect`` is returned instead of reported.
    """
    inputs = [_clone(a) for a in args]
    saved = [_clone(a) for a in inputs]
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*inputs, **kwargs)
    except NotImplementedError:
        raise Stop(R.not_attempted(task)) from None
    except Stop:
        raise
    except expect as err:
        return err
    except Exception as err:  # the student's code failed: report it, never a traceback
        message = f"On {case}, your function raised {type(err).__name__}: {one_line(err)}"
        hint = error_hint(err) if error_hint else None
        raise Stop(R.failed(task, message + (f"\nHint: {hint}" if hint else ""))) from None
    for position, (now, before) in enumerate(zip(inputs, saved)):
        if not _same(now, before):
            raise Stop(R.failed(task, f"On {case}, your function changed its input number {position + 1} in "
                                      f"place (for example `x -= x.max(...)`). Work on a new array instead: "
                                      f"`x = x - x.max(...)`."))
    return out


def matmul_hint(err: BaseException) -> str | None:
    """Explain the usual causes of a shape error inside a matrix product."""
    text = str(err)
    if "matmul" in text or "mat1 and mat2" in text or "size of tensor" in text or "shapes" in text \
            or "mismatch" in text:
        return ("a shape error inside a matrix product. Scores are `q @ k^T`: keys must be transposed, and "
                "for batched arrays transpose only the last two axes (`np.swapaxes(k, -1, -2)` in NumPy, "
                "`k.transpose(-2, -1)` in torch); `k.T` reverses every axis.")
    if "broadcast" in text:
        return ("a broadcasting error. Reductions such as `x.max(axis=-1)` drop the axis; add "
                "`keepdims=True` (torch: `keepdim=True`) so the result lines up with each row.")
    return None


def to_array(task: str, out, case: str, name: str = "the result", shape=None, shape_hint=None,
             dtype=float) -> np.ndarray:
    """Convert a returned value (ndarray, tensor, list) to an ndarray; check its shape."""
    if out is None:
        raise Stop(R.failed(task, f"On {case}, {name} is None. Did you forget `return`?"))
    if is_tensor(out):
        out = out.detach().cpu()
        out = out.numpy() if out.dtype != _torch().bfloat16 else out.float().numpy()
    if isinstance(out, tuple) and len(out) == 2 and shape is not None:
        raise Stop(R.failed(task, f"On {case}, {name} is a pair of values; this task wants a single array "
                                  f"of shape {fmt(shape)}."))
    try:
        arr = np.asarray(out, dtype=dtype) if dtype is not None else np.asarray(out)
    except (TypeError, ValueError) as err:
        raise Stop(R.failed(task, f"On {case}, {name} could not be read as an array "
                                  f"({type(out).__name__}: {one_line(err)})")) from None
    if shape is not None and arr.shape != tuple(shape):
        hint = shape_hint(arr.shape) if shape_hint else None
        raise Stop(R.failed(task, f"On {case}, {name} has shape {fmt(arr.shape)}; expected {fmt(shape)}."
                                  + (f"\nHint: {hint}" if hint else "")))
    return arr


def fmt(shape) -> str:
    return "(" + ", ".join(str(int(n)) for n in shape) + ")"
