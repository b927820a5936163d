"""The registry of checkers: ``@checker`` turns a check function into a public ``check_*``.

The decorated function receives a :class:`~.engine.Check` as its first argument and the
student's function as its second. The public function the registry builds takes the student's
function (and the checker's own keyword options), plus ``timeout=`` (seconds per call of student
code; default ``$ATTNLAB_CHECK_TIMEOUT`` or 5 s; the whole check may spend three times that, at
least 15 s), and always returns a :class:`~.result.CheckResult`: a :class:`~.engine.Stop` becomes
its result, a bad ``timeout`` or environment variable a failed result that says so, and any other
exception inside the checker an "internal error" result, never a traceback. ``forbid`` lists the
entry points the exercise asks the student not to call (see :mod:`.forbidden`).
"""
from __future__ import annotations

import functools
import inspect
import traceback
from dataclasses import dataclass, field
from typing import Callable

from ..i18n import N_, _
from . import result as R
from .engine import Check, Mistake, Stop
from .limits import limit_seconds


@dataclass
class Checker:
    name: str                       # the public name, e.g. "check_softmax"
    task: str                       # the short task name shown in each result
    topic: str                      # the module that defines it, e.g. "softmax"
    function: Callable              # the public function
    mistakes: list = field(default_factory=list)   # every Mistake it can name, models first
    forbid: tuple = ()              # entry points the student's function may not call

    def mistake_names(self) -> list[str]:
        seen = []
        for mistake in self.mistakes:
            if mistake.name not in seen:
                seen.append(mistake.name)
        return seen


REGISTRY: dict[str, Checker] = {}

# Failures any checker can report, whatever its topic (the registry test also covers these).
COMMON_MISTAKES = [
    Mistake("time_limit", N_("the function ran past the time limit (a loop that never ends, usually).")),
    Mistake("changes_input", N_("the function changed one of its inputs in place.")),
    Mistake("returns_none", N_("the function returned None (a missing `return`).")),
    Mistake("wrong_type", N_("the function returned a value of the wrong type (e.g. a tensor where a NumPy array "
                             "is asked, or a string).")),
    Mistake("wrong_shape", N_("the function returned an array of the wrong shape.")),
    Mistake("not_float64", N_("the function returned float32 (or another lower precision) where float64 is asked.")),
    Mistake("not_a_function", N_("the checker was given a value instead of a function.")),
    Mistake("bad_arguments", N_("the checker was called with arguments it does not take.")),
    Mistake("checker_bug", N_("the checker itself failed (a bug of the checker, reported with folded details).")),
    Mistake("budget_spent", N_("the function is right so far but so slow that the check's overall time budget ran "
                               "out.")),
    Mistake("forbidden_call", N_("the function called a library function that does the exercise's work (the "
                                 "exercise asks for it written by hand).")),
    Mistake("computed_in_float32", N_("the result is float64 but was computed in float32 (it agrees with the "
                                      "reference only to about 7 digits).")),
]


def checker(task: str, mistakes=(), *, takes_function: bool = True, forbid=()):
    """Register ``check(run, fn, ...)`` as the public ``check_<name>`` with the given mistakes.

    ``mistakes`` lists every :class:`Mistake` the checker can name (with or without a model), in
    the order they are tried. With ``takes_function=False`` the first argument is not a
    function (``check_answer``'s question name). ``forbid``: the entry points (dotted names) the
    student's function may not call, given to every :meth:`~.engine.Check.call`.
    """
    def register(check):
        name = check.__name__
        if not name.startswith("check_") or name in REGISTRY:
            raise ValueError(_("checker name {name!r} must start with 'check_' and be unique").format(name=name))

        signature = inspect.signature(check)

        @functools.wraps(check)
        def public(fn, *args, timeout: float | None = None, **kwargs):
            try:
                seconds = limit_seconds(timeout)
            except ValueError as err:
                return R.bad_setting(task, err)
            if takes_function and not callable(fn):
                return R.not_a_function(task, fn)
            try:
                signature.bind(None, fn, *args, **kwargs)
            except TypeError as err:
                return R.failed(task, _("`{name}` was called with arguments it does not take ({err}).").format(
                    name=name, err=err), "bad_arguments")
            try:
                return check(Check(task, seconds, forbid=forbid), fn, *args, **kwargs)
            except Stop as stop:
                return stop.result
            except Exception:   # a bug of the checker: say so, fold the details
                return R.internal_error(task, traceback.format_exc(limit=-8))

        REGISTRY[name] = Checker(name, task, check.__module__.rsplit(".", 1)[-1], public, list(mistakes),
                                 tuple(forbid))
        return public
    return register


def public_functions() -> dict[str, Callable]:
    return {name: entry.function for name, entry in sorted(REGISTRY.items())}
