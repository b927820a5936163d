"""A time limit on every call of student code, in a notebook, a script or a grading run.

``run_limited(fn, args, kwargs, seconds)`` returns ``(True, value)``, raises what ``fn`` raised,
or returns ``(False, still_running)`` when the call ran past ``seconds``:

- in the main thread of a process with ``SIGALRM`` (a Jupyter kernel, a script, pytest, the
  kernel or subprocess of an otter-grader run), an interval timer raises :class:`TimeLimit`
  inside the student's code; this interrupts any Python loop. A previous ``SIGALRM`` handler and
  a running interval timer (pytest-timeout's, say) are restored afterwards, the timer with the
  time it had left. A single long library call (one enormous matrix product) cannot be
  interrupted by a signal: the call finishes, and the elapsed time is then compared with the
  limit, so the verdict is still "too slow";
- anywhere else (a worker thread, a platform without ``SIGALRM``), the call runs in a daemon
  thread that is waited for ``seconds``; past that, :class:`TimeLimit` is raised asynchronously
  inside it (again this stops Python loops, not a long library call), and the verdict comes back
  at once with ``still_running`` saying whether the thread could not be stopped;
- in a browser (Pyodide, ``sys.platform == "emscripten"``: no threads, no timer signal), the call
  runs to its end and its time is compared with the limit afterwards, as for a long library call.
  The book's "Run the code" mode runs Python in a Web Worker, so a call that never ends leaves the
  page responsive, and its Stop button ends the worker (``_assets/live-code.js``).
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

from ..i18n import _

DEFAULT_SECONDS = 5.0
ENVIRONMENT_VARIABLE = "ATTNLAB_CHECK_TIMEOUT"
BUDGET_CALLS = 3           # a whole check may spend three per-call limits in student code ...
MINIMUM_BUDGET = 15.0      # ... and at least this many seconds


class TimeLimit(BaseException):
    """Raised inside student code that ran past its limit (a BaseException: `except Exception` in
    the student's code does not swallow it)."""


def limit_seconds(override: float | None = None) -> float:
    """The per-call limit: ``override`` if given, else ``$ATTNLAB_CHECK_TIMEOUT``, else 5 s."""
    if override is not None:
        return _positive(override, "timeout")
    text = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    if text:
        try:
            return _positive(float(text), ENVIRONMENT_VARIABLE)
        except ValueError:
            raise ValueError(_("{name} must be a positive number of seconds; got {value!r}").format(
                name=ENVIRONMENT_VARIABLE, value=text)) from None
    return DEFAULT_SECONDS


def _positive(value, name) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        number = float("nan")
    if isinstance(value, bool) or not 0 < number < float("inf"):
        raise ValueError(_("{name} must be a positive number of seconds; got {value!r}").format(name=name, value=value))
    return number


def check_budget(seconds: float) -> float:
    """The time one whole check may spend in student code, for a per-call limit of ``seconds``: a right
    but slow function is stopped with a message instead of keeping the cell busy for minutes."""
    return max(BUDGET_CALLS * seconds, MINIMUM_BUDGET)


def _can_use_signal() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


def run_limited(fn, args=(), kwargs=None, seconds: float = DEFAULT_SECONDS):
    """Call ``fn(*args, **kwargs)`` with a time limit (see the module docstring)."""
    kwargs = kwargs or {}
    if sys.platform == "emscripten":
        return _afterwards(fn, args, kwargs, seconds)
    if _can_use_signal():
        return _with_signal(fn, args, kwargs, seconds)
    return _with_thread(fn, args, kwargs, seconds)


def _with_signal(fn, args, kwargs, seconds):
    def on_alarm(signum, frame):
        raise TimeLimit()

    start = time.perf_counter()
    previous_handler = signal.signal(signal.SIGALRM, on_alarm)
    # repeat every 0.2 s after the first alarm, in case the student's code catches one of them
    previous_delay, previous_interval = signal.setitimer(signal.ITIMER_REAL, seconds, 0.2)
    try:
        try:
            value = fn(*args, **kwargs)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except TimeLimit:
        return False, False
    finally:
        signal.signal(signal.SIGALRM, previous_handler if previous_handler is not None else signal.SIG_DFL)
        if previous_delay > 0:   # give the outer timer back what it had left (at least a tick)
            left = max(previous_delay - (time.perf_counter() - start), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, previous_interval)
    if time.perf_counter() - start > seconds:
        return False, False    # one long library call that no signal could interrupt
    return True, value


def _afterwards(fn, args, kwargs, seconds):
    """Where nothing can interrupt the call: run it, then compare its time with the limit."""
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    if time.perf_counter() - start > seconds:
        return False, False
    return True, value


def _with_thread(fn, args, kwargs, seconds):
    box = {}

    def target():
        try:
            box["value"] = fn(*args, **kwargs)
        except TimeLimit:
            box["stopped"] = True
        except BaseException as err:   # handed to the caller's thread below
            box["error"] = err

    worker = threading.Thread(target=target, name="attnlab-check", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident), ctypes.py_object(TimeLimit))
        worker.join(0.5)
        return False, worker.is_alive()
    if "error" in box:
        raise box["error"]
    if box.get("stopped"):
        return False, False
    return True, box.get("value")
