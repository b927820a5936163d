"""The grader's side of the channel: a student's process, and its functions as local stand-ins.

:class:`StudentProcess` sends the requests of :mod:`.untrusted` and waits for each reply until a
deadline; past it, or when a reply is not a message of :mod:`.wire`, the process is killed and
:class:`Ended` says why. :class:`StudentFunction` is what a checker receives in place of the
student's function: ``Check.call`` (:mod:`attnlab.checks.engine`) sees its ``__attnlab_remote__``
and hands the call to :meth:`StudentFunction.call`, which sends the inputs as data, and turns the
reply into what a call in one process gives: the returned value (numbers and arrays only; any
other object by its type's name), or an exception of the same builtin class with the same name and
one scrubbed line of text (:mod:`.scrub`), or a time-out; changed inputs and advanced generators
are copied back into the checker's objects.
"""
from __future__ import annotations

import time

import numpy as np

from ..i18n import N_
from . import references, wire
from .sandbox import Limits, launch
from .scrub import scrub, scrub_text

GRACE = 5.0          # seconds a call may run past its limit before the process is killed (time to reply)


ENDED = N_("ended the notebook's process (a crash, `os._exit`, a signal or the memory limit)")
BROKE = N_("wrote on the grading channel, which broke it")


class Ended(Exception):
    """The student's process ended, or was ended: ``reason`` says how, in words for the feedback."""

    def __init__(self, reason: str, hung: bool = False):
        super().__init__(reason)
        self.reason, self.hung = reason, hung


class StudentProcess:
    """One sandboxed process serving one notebook."""

    def __init__(self, kind: str, notebook: bytes, name: str, limits: Limits | None = None,
                 slot: int = 0):
        self.launched = launch(kind, notebook, name, limits or Limits(), slot)
        self.reader = wire.Reader(self.launched.from_student)
        self.alive, self.next_id = True, 0
        self.deadline = float("inf")           # no request may wait past it (the notebook's time limit)

    def request(self, header: dict, blobs=(), seconds: float = 60.0) -> tuple[dict, list[bytes]]:
        """Send one request and return its reply, or raise :class:`Ended`."""
        if not self.alive:
            raise Ended(ENDED)
        self.next_id += 1
        try:
            wire.write_message(self.launched.to_student, dict(header, id=self.next_id), blobs)
            reply, blobs = self.reader.read(min(time.monotonic() + seconds, self.deadline))
        except wire.ChannelTimeout:
            self.close()
            raise Ended(N_("ran past its time limit and was stopped"), hung=True) from None
        except (wire.ChannelError, OSError) as err:
            self.close()
            closed = isinstance(err, (wire.ChannelClosed, BrokenPipeError))
            raise Ended(ENDED if closed else BROKE) from None
        if reply.get("id") != self.next_id:
            self.close()
            raise Ended(BROKE)
        return reply, blobs

    def close(self) -> None:
        if self.alive:
            self.alive = False
            self.reader.close()
            self.launched.stop()

    def run_cell(self, source: str, index: int, seconds: float) -> str:
        """Execute one cell; return "" or the exception it raised, as "Class: one line"."""
        reply, _ = self.request({"op": "cell", "source": source, "index": index}, seconds=seconds)
        if reply.get("ok") is True:
            return ""
        return describe(reply.get("error"))

    def resolve(self, name: str, seconds: float = 30.0):
        """The notebook's ``name``: a :class:`StudentFunction` for a callable, else its value as data."""
        reply, blobs = self.request({"op": "resolve", "name": name}, seconds=seconds)
        if reply.get("missing") is True:
            raise NameError(name)
        if type(reply.get("function")) is int:
            kind = wire.opaque_type(scrub(str(reply.get("type", "function")))).__name__
            cls = type(kind, (StudentFunction,), {"__module__": "student"})
            return cls(self, reply["function"], scrub(str(reply.get("name", name)))[:60])
        if "too_large" in reply:
            return wire.opaque_type("too_large_for_the_grading_channel")()
        try:
            return wire.decode(reply.get("value"), blobs, text=scrub_text)
        except wire.ChannelError:
            self.close()
            raise Ended(BROKE) from None


def describe(error) -> str:
    """An exception reported by the student's process, as "Class: one short scrubbed line"."""
    if not isinstance(error, dict):
        return "an error"
    name = wire.opaque_type(scrub(str(error.get("class", "Exception")))).__name__
    text = scrub(str(error.get("text", "")))[:160]
    return f"{name}: {text}" if text else name


_SYNTHETIC: dict[tuple[str, type], type] = {}


def synthetic_exception(error) -> BaseException:
    """An exception like the student's: the same name, the nearest builtin base, one scrubbed line."""
    import builtins
    error = error if isinstance(error, dict) else {}
    base = Exception
    for name in error.get("bases") or ():
        found = getattr(builtins, str(name), None)
        if isinstance(found, type) and issubclass(found, BaseException):
            base = found
            break
    if not issubclass(base, Exception) and base is not SystemExit:
        base = RuntimeError                                   # KeyboardInterrupt must not stop the grader
    name = wire.opaque_type(scrub(str(error.get("class", base.__name__)))).__name__
    key = (name, base)
    if key not in _SYNTHETIC:
        _SYNTHETIC[key] = type(name, (base,), {"__module__": "student"})
    return _SYNTHETIC[key](scrub(str(error.get("text", "")))[:160])


class StudentFunction:
    """A student's function living in their process; calling it sends the inputs there."""

    def __init__(self, process: StudentProcess, handle: int, name: str):
        self.process, self.handle, self.__name__ = process, handle, name
        self.__qualname__ = name

    @property
    def __attnlab_remote__(self):
        return self

    def __repr__(self) -> str:
        return f"<the student's {self.__name__}>"

    def __call__(self, *args, **kwargs):
        """A call outside ``Check.call``: the value, or the student's exception (5 s, or
        ``$ATTNLAB_CHECK_TIMEOUT``)."""
        from ..checks.limits import TimeLimit, limit_seconds

        class _Bare:
            task, seconds, called = "", limit_seconds(), ()
        finished, out = self.call(_Bare(), "", list(args), kwargs)
        if not finished:
            raise TimeLimit()
        return out

    def call(self, check, case: str, inputs: list, kwargs: dict, memory: dict | None = None, forbid=()):
        """``(finished, value)`` as ``run_limited`` gives it, for ``Check.call``; raises the student's
        exception; copies changed inputs back into ``inputs``; sets ``check.called``."""
        from ..checks.engine import Stop
        from ..checks.result import failed, internal_error

        check.called = ()
        encoder = wire.Encoder(references.encode_reference)
        try:
            args, kwargs_data = encoder(list(inputs)), encoder(dict(kwargs))
        except ValueError as err:                             # a checker passed what cannot travel
            raise Stop(internal_error(check.task, f"cannot send the inputs to the student's process: {err}")) from None
        blobs = encoder.blobs
        request = {"op": "call", "handle": self.handle, "args": args, "kwargs": kwargs_data,
                   "seconds": check.seconds, "memory": memory is not None, "forbid": list(forbid)}
        try:
            reply, blobs = self.process.request(request, blobs, seconds=check.seconds + max(GRACE, check.seconds))
        except Ended as ended:
            if ended.hung:
                return False, False
            raise Stop(failed(check.task, _ended_message(case, ended))) from None
        check.called = tuple(str(n) for n in reply.get("called") or () if str(n) in forbid)
        if "raised" in reply:
            raise synthetic_exception(reply["raised"])
        if reply.get("timeout") is True:
            return False, False
        if "too_large" in reply:
            raise Stop(failed(check.task, _too_large_message(case)))
        try:
            value = wire.decode(reply.get("value"), blobs, text=scrub_text)
            out = value["returned"]
        except (wire.ChannelError, KeyError, TypeError):
            self.process.close()
            raise Stop(failed(check.task, _ended_message(case, Ended(BROKE)))) from None
        _copy_back(inputs, kwargs, value)
        if memory is not None:
            peak = reply.get("peak")
            memory["peak"] = int(peak) if type(peak) is int and peak >= 0 else 0
        return True, out


def _ended_message(case: str, ended: Ended) -> str:
    from ..i18n import _
    return _("On {case}, your function {what}, so this check stops here.").format(case=_(case), what=_(ended.reason))


def _too_large_message(case: str) -> str:
    from ..i18n import _
    return _("On {case}, your function returned more data than the grader reads ({mib} MiB at most).").format(
        case=_(case), mib=wire.MAX_BLOBS >> 20)


def _copy_back(inputs: list, kwargs: dict, value) -> None:
    """Put the student's changes to the inputs, and generators' new states, into the checker's objects."""
    if not isinstance(value, dict):
        return
    changed = value.get("changed") if isinstance(value.get("changed"), dict) else {}
    for key, after in changed.items():
        if not (isinstance(key, str) and key.isdigit() and int(key) < len(inputs) and isinstance(after, dict)):
            continue
        position = int(key)
        if "value" in after:
            inputs[position] = _write_into(inputs[position], after["value"])
        elif isinstance(after.get("fields"), dict):
            for name, field in after["fields"].items():
                if isinstance(name, str) and hasattr(inputs[position], name):
                    object.__setattr__(inputs[position], name, _write_into(getattr(inputs[position], name), field))
    rngs = value.get("rngs") if isinstance(value.get("rngs"), dict) else {}
    targets = [(inputs, k) for k in range(len(inputs))] + [(kwargs, k) for k in kwargs]
    for container, key in targets:
        where = "args" if container is inputs else "kwargs"
        state = (rngs.get(where) or {}).get(str(key)) if isinstance(rngs.get(where), dict) else None
        if isinstance(state, dict):
            _set_generator_state(container[key], state)


def _write_into(target, after):
    """``after`` written into ``target`` in place where the two are arrays of one shape, else ``after``."""
    if isinstance(target, np.ndarray) and isinstance(after, np.ndarray) and target.shape == after.shape:
        try:
            target[...] = after
            return target
        except (TypeError, ValueError):
            return after
    return after


def _set_generator_state(generator, state: dict) -> None:
    try:
        if isinstance(generator, np.random.Generator) and isinstance(state.get("numpy"), dict):
            generator.bit_generator.state = state["numpy"]
        elif type(generator).__name__ == "Generator" and isinstance(state.get("torch"), np.ndarray):
            import torch
            generator.set_state(torch.from_numpy(state["torch"].astype(np.uint8)))
    except (TypeError, ValueError, KeyError, RuntimeError):
        pass                                                  # a state that is not one: the generator stays
