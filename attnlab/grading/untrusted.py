"""The student's process: it runs a notebook's cells and calls its functions when the grader asks.

Started in the sandbox (:mod:`.sandbox`) as ``main(read_fd, write_fd)``. It holds nothing worth
stealing: no checker has run in it, no reference value, no case, no score; what it sends back is
data (:mod:`.wire`), which the grader reads as the student's output and nothing more. The
notebook's output goes to ``/dev/null``. Requests and replies (each reply repeats its request's
``"id"``)::

    {"op": "cell", "source": "..."}           -> {"ok": true} or {"error": EXCEPTION}
    {"op": "resolve", "name": "scores"}       -> {"function": handle, "type": ..., "name": ...},
                                                 {"value": VALUE} or {"missing": true}
    {"op": "call", "handle": 1, "args": [...], "kwargs": {...}, "seconds": 5.0,
     "memory": false, "forbid": ["torch.nn.functional.scaled_dot_product_attention"]}
                                              -> {"value": {"returned": VALUE, "changed": {...},
                                                  "rngs": {...}}, "called": [...], "peak": bytes}
                                                 or {"raised": EXCEPTION, "called": [...]}
                                                 or {"timeout": true, "called": [...]}
    {"op": "quit"}

A value too large for the channel (or nested too deep) is replied as ``{"too_large": why}``.

EXCEPTION is ``{"class": name, "bases": [builtin exception classes], "text": first line}``.
The arguments of a call are decoded with :func:`.references.rebuild`; a changed input comes
back so that the checker can say so, and a generator's new state so that a generator shared by
two calls advances as it would in one process.
"""
from __future__ import annotations

import builtins
import os
import signal
import sys
import tracemalloc
import types

import numpy as np

from ..checks.forbidden import recording
from . import references, wire

MAX_REPLY = 192 << 20          # bytes of arrays in one reply (the grader reads at most wire.MAX_BLOBS)


class TimeLimit(BaseException):
    """Raised in the student's code past its time limit (not an Exception: ``except Exception`` misses it)."""


class _Shell:
    """Stands in for ``get_ipython()``: line magics and shell escapes do nothing."""

    def __init__(self, namespace):
        self.namespace = namespace

    def run_line_magic(self, *args, **kwargs):
        return None

    def run_cell_magic(self, name, line, cell):
        if name in ("time", "timeit", "capture"):
            exec(compile(cell, "<cell magic>", "exec"), self.namespace)

    def system(self, *args, **kwargs):
        return None

    getoutput = system


def _limited(work, seconds: float):
    """``(True, work())`` or ``(False, None)`` past ``seconds`` (a Python loop is interrupted)."""
    def on_alarm(signum, frame):
        raise TimeLimit()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.2)      # again every 0.2 s, if the code catches one
    try:
        try:
            return True, work()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except TimeLimit:
        return False, None
    finally:
        signal.signal(signal.SIGALRM, previous)


def describe(error: BaseException) -> dict:
    """An exception as data: its class name, its builtin bases, the first line of its text."""
    bases = [c.__name__ for c in type(error).__mro__ if c.__module__ == "builtins" and issubclass(c, BaseException)]
    finished, text = _limited(lambda: str(error), 2.0)
    line = (text or "").strip().splitlines()[0][:200] if finished and (text or "").strip() else ""
    return {"class": type(error).__name__[:60], "bases": bases, "text": line}


def _same(a, b, depth=0) -> bool:
    """Whether an input is unchanged by the call (an unknown kind counts as unchanged)."""
    try:
        if isinstance(a, np.ndarray):
            return isinstance(b, np.ndarray) and a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(a, torch.Tensor):
            return isinstance(b, torch.Tensor) and a.shape == b.shape and bool(
                torch.equal(a, b) or (a.isnan().any() and a.isnan().equal(b.isnan())))
        if isinstance(a, (list, dict, tuple)):
            return bool(a == b)
        if hasattr(a, "__dict__") and depth < 3 and not isinstance(a, (type, types.ModuleType, types.FunctionType)):
            return all(_same(v, getattr(b, k, None), depth + 1) for k, v in vars(a).items())
    except Exception:                                        # a comparison that cannot be made
        return True
    return True


def _changed_value(now, before):
    """What a changed input looks like now: the value, or the attributes that changed (a dataclass)."""
    if isinstance(now, (np.ndarray, list, dict, tuple)) or type(now).__module__.startswith("torch") \
            or not hasattr(now, "__dict__"):
        return {"value": now}
    fields = {k: v for k, v in vars(now).items() if not _same(v, getattr(before, k, None))}
    return {"fields": fields}


def _generator_state(value):
    if isinstance(value, np.random.Generator):
        return {"numpy": value.bit_generator.state}
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Generator):
        return {"torch": value.get_state().numpy()}
    return None


class Student:
    """The notebook's namespace and the functions the grader has asked for."""

    def __init__(self, write_fd: int):
        self.write_fd = write_fd
        self.namespace = {"__name__": "__main__", "__builtins__": builtins, "display": lambda *a, **k: None}
        shell = _Shell(self.namespace)
        self.namespace["get_ipython"] = lambda: shell
        self.handles: dict[int, object] = {}

    def reply(self, request: dict, header: dict, blobs=()) -> None:
        wire.write_message(self.write_fd, dict(header, id=request.get("id")), blobs)

    def cell(self, request):
        try:
            exec(compile(request["source"], f"<cell {request.get('index', '?')}>", "exec"), self.namespace)
        except BaseException as error:                        # noqa: BLE001 - SystemExit included
            return self.reply(request, {"error": describe(error)})
        self.reply(request, {"ok": True})

    def resolve(self, request):
        name = request["name"]
        if name not in self.namespace:
            return self.reply(request, {"missing": True})
        value = self.namespace[name]
        if callable(value):
            handle = len(self.handles) + 1
            self.handles[handle] = value
            return self.reply(request, {"function": handle, "type": type(value).__name__,
                                        "name": str(getattr(value, "__name__", name))[:60]})
        self.send_value(request, {}, value)

    def send_value(self, request, header, value):
        try:
            data, blobs = wire.encode(value, limit=MAX_REPLY)
        except ValueError as error:                          # too large or too deep
            return self.reply(request, dict(header, too_large=str(error)[:100]))
        self.reply(request, dict(header, value=data), blobs)

    def call(self, request):
        function = self.handles[request["handle"]]
        decode = lambda key: wire.decode(request[key], self.blobs, references.rebuild)   # noqa: E731
        args, kwargs, before = decode("args"), decode("kwargs"), decode("args")
        memory = bool(request.get("memory"))
        namespaces = [self.namespace, getattr(function, "__globals__", {})]
        with recording(request.get("forbid") or (), namespaces) as called:
            if memory:
                tracemalloc.start()
            try:
                finished, out = _limited(lambda: function(*args, **kwargs), float(request["seconds"]))
            except BaseException as error:                    # noqa: BLE001 - the student's code raised
                return self.reply(request, {"raised": describe(error), "called": list(called)})
            finally:
                peak = tracemalloc.get_traced_memory()[1] if memory else None
                tracemalloc.stop()
        if not finished:
            return self.reply(request, {"timeout": True, "called": list(called)})
        changed = {str(i): _changed_value(a, b) for i, (a, b) in enumerate(zip(args, before)) if not _same(a, b)}
        rngs = {"args": {str(i): s for i, a in enumerate(args) if (s := _generator_state(a)) is not None},
                "kwargs": {k: s for k, a in kwargs.items() if (s := _generator_state(a)) is not None}}
        header = {"called": list(called), "peak": peak}
        self.send_value(request, header, {"returned": out, "changed": changed, "rngs": rngs})

    def serve(self, read_fd: int) -> None:
        reader = wire.Reader(read_fd)
        while True:
            request, self.blobs = reader.read()
            op = request.get("op")
            if op == "quit":
                os._exit(0)
            getattr(self, op)(request)


def main(read_fd: int, write_fd: int) -> None:
    """Serve the grader's requests; the notebook's own output goes to /dev/null."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    sys.stdout = sys.stderr = open(os.devnull, "w")
    sys.stdin = open(os.devnull)
    try:
        Student(write_fd).serve(read_fd)
    except wire.ChannelError:
        pass
    os._exit(0)
