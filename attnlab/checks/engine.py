"""The matching engine: call student code safely, read what it returns, compare, diagnose.

A :class:`Mistake` is a classic error with the plain-words explanation a student reads, and
usually a *model*: a deliberately wrong implementation of the same task. :meth:`Check.compare`
is the one place where a student's output is compared with the reference and, when they differ,
with the output of every model on the same inputs; the first model the student's output
reproduces (while the reference does not) names the mistake. A :class:`Check` is created by the
registry for each run of a checker; it owns the task name, the time limit of one call, the budget
of the whole check, and the entry points the exercise forbids; every failure ends the run with
:class:`Stop`. A diagnosis is confirmed on the checker's other cases before it is given
(:mod:`.diagnosis`); when none holds, the message says what kind of difference it is.

The call path, for a process that runs student code on the checker's behalf::

    Check.call(fn, case, *args, forbid=("torch.Tensor.backward", ...), **kwargs)

runs ``fn(*args, **kwargs)`` on copies of the inputs, within the time limit and what is left of the
budget, with every entry point in ``forbid`` (default: the checker's own list, ``Check.forbid``)
replaced by a recorder (:func:`.forbidden.recording`, strings only, so the list can cross to a
sandboxed process as JSON); a recorded call ends the run with the mistake ``forbidden_call``:
"this exercise asks you to write X yourself; your function called Y".
"""
from __future__ import annotations

import copy
import sys
import time
import tracemalloc
import types
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..i18n import N_, _
from . import result as R
from .diagnosis import confirm, describe_pattern, join
from .forbidden import entry_point_of, recording
from .limits import check_budget, run_limited


@dataclass(frozen=True)
class Mistake:
    name: str                          # short name used in results, tests and the catalogue
    explanation: str                   # what the student reads: one sentence or a few, one string
    model: Callable | None = None      # the deliberately wrong implementation; None: found by a property

    @property
    def text(self) -> str:
        """The explanation in the current language (``explanation`` itself is the English msgid)."""
        return _(self.explanation)


@dataclass(frozen=True)
class Tolerance:
    rtol: float = 1e-6
    atol: float = 1e-8


FLOAT64 = Tolerance(1e-9, 1e-12)      # float64 rounding of a different but exact algorithm
FLOAT32 = Tolerance(1e-4, 1e-5)
SINGLE = Tolerance(1e-5, 1e-7)        # what a float32 computation of the same numbers reaches


class Stop(Exception):
    """Raised inside a checker to end the run with ``self.result``; ``unexplained`` marks a difference from the
    reference that :meth:`Check.compare` could not put down to any mistake."""

    def __init__(self, result: R.CheckResult):
        super().__init__(result.message)
        self.result = result
        self.unexplained = False


# ---------------------------------------------------------------------------------------------- values


def torch_module():
    return sys.modules.get("torch")


def is_tensor(x) -> bool:
    torch = torch_module()
    return torch is not None and isinstance(x, torch.Tensor)


def tensor_to_numpy(x) -> np.ndarray:
    torch = torch_module()
    x = x.detach().cpu()
    if x.dtype in (torch.bfloat16,) or x.is_complex():
        x = x.to(torch.complex128 if x.is_complex() else torch.float32)
    return x.resolve_conj().resolve_neg().numpy()


def kind_of(x) -> str:
    """The type of a value in words, for a message."""
    if is_tensor(x):
        return _("a torch tensor (dtype {dtype})").format(dtype=str(x.dtype).removeprefix('torch.'))
    if isinstance(x, np.ndarray):
        return _("a NumPy array (dtype {dtype})").format(dtype=x.dtype)
    if isinstance(x, types.GeneratorType):
        return _("a generator (a `(... for ...)` expression is computed lazily; build a list or an array)")
    name = type(x).__name__
    if name[:1].lower() in "aeiou":
        return _("an {type}").format(type=name)
    return _("a {type}").format(type=name)


def close(a, b, tol: Tolerance = FLOAT64) -> bool:
    """Same shape, same positions of nan and of each infinity, finite entries within ``tol``."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype == bool or b.dtype == bool:
        return bool(np.array_equal(a, b))
    try:
        a, b = a.astype(float), b.astype(float)
    except (TypeError, ValueError):
        return False
    if not np.array_equal(np.isnan(a), np.isnan(b)) or not np.array_equal(np.isinf(a), np.isinf(b)):
        return False
    finite = np.isfinite(a) & np.isfinite(b)
    return bool(np.allclose(a[finite], b[finite], rtol=tol.rtol, atol=tol.atol)
                and np.array_equal(a[~finite], b[~finite], equal_nan=True))


def exactly_equal(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.array_equal(a, b))


def fmt(shape) -> str:
    return "(" + ", ".join(str(int(n)) for n in shape) + ")"


def one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    first = text[0] if text else ""
    return first if len(first) <= 200 else first[:197] + "..."


def _clone(x):
    if isinstance(x, np.ndarray):
        return x.copy()
    if is_tensor(x):
        return x.detach().clone()
    if isinstance(x, (list, dict)):
        return copy.deepcopy(x)
    return x          # numbers, functions, random generators, modules: passed as they are


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    if is_tensor(a):
        return is_tensor(b) and a.shape == b.shape and bool(torch_module().equal(a, b) or
                                                             (a.isnan().any() and a.isnan().equal(b.isnan())))
    if isinstance(a, (list, dict)):
        return a == b
    return True


def run_model(model: Callable, *args, **kwargs):
    """Output of a mistake model, or None where the mistake cannot run on these inputs."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return model(*args, **kwargs)
    except Exception:
        return None


def describe_difference(got: np.ndarray, expected: np.ndarray) -> str:
    """One sentence locating the largest difference, or the first non-finite value."""
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    bad = ~np.isfinite(got) & np.isfinite(expected)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        return _("it contains {value} at index {where} where the reference has {expected:.6g}").format(
            value=got[where], where=where, expected=expected[where])
    with np.errstate(invalid="ignore"):
        diff = np.nan_to_num(np.abs(got - expected), nan=np.inf)
    where = tuple(int(i) for i in np.unravel_index(np.argmax(diff), diff.shape))
    return _("the largest difference is {diff:.3g} at index {where} (yours {got:.17g}, reference "
             "{expected:.17g})").format(diff=diff[where], where=where, got=got[where], expected=expected[where])


# ---------------------------------------------------------------------------------------------- a run


class Check:
    """One run of one checker: its task name, its time limit, and the helpers every checker uses."""

    def __init__(self, task: str, seconds: float, *, budget: float | None = None, forbid=()):
        self.task = task
        self.seconds = seconds                  # the limit of one call of student code
        self.budget = check_budget(seconds) if budget is None else budget   # all calls of this check
        self.forbid = tuple(forbid)             # entry points the exercise asks the student not to call
        self.spent = 0.0
        self.called: tuple[str, ...] = ()     # forbidden entry points the last call used (see call)

    # --- ending the run

    def fail(self, message: str, mistake: str = ""):
        raise Stop(R.failed(self.task, message, mistake))

    def passed(self, message: str) -> R.CheckResult:
        return R.passed(self.task, message)

    # --- calling student code

    def call(self, fn, case: str, *args, hint=None, expect=(), memory: dict | None = None, forbid=None,
             **kwargs):
        """Run ``fn(*args, **kwargs)`` on copies of the inputs, under the time limit and the budget.

        A stub's ``NotImplementedError`` ends the run as "not attempted yet"; any other exception
        ends it with one line (plus ``hint(err)`` when that gives a likely cause), except an
        instance of ``expect``, which is returned. A change to an input in place is reported.
        With a dict ``memory``, ``memory["peak"]`` receives the peak of memory traced by
        ``tracemalloc`` during the call itself, in bytes above what was allocated before it.
        ``forbid``: the entry points (dotted names, see :mod:`.forbidden`) this call may not use;
        None means the checker's own list ``self.forbid``, ``()`` none; ``self.called`` lists those
        the call used. In grading, ``fn`` lives in the student's sandboxed process and this call
        goes there (:mod:`attnlab.grading.remote`): the same verdicts, with the inputs sent as data
        and the forbidden calls recorded over there.
        """
        left = self.budget - self.spent
        if left <= 0:
            raise Stop(R.budget_spent(self.task, case, self.budget))
        limit = min(self.seconds, left)
        inputs = [_clone(a) for a in args]
        saved = [_clone(a) for a in inputs]
        forbid = self.forbid if forbid is None else tuple(forbid)
        itself = entry_point_of(fn, forbid)
        if itself is not None:
            self._forbidden([itself])
        start, failure = time.perf_counter(), None
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                finished, out = self._run(fn, case, inputs, kwargs, memory, forbid, limit)
        except BaseException as err:     # judged below, after the forbidden calls
            failure = err
        self.spent += time.perf_counter() - start
        if self.called and not isinstance(failure, NotImplementedError):
            self._forbidden(list(self.called))
        if failure is not None:
            return self._failed_call(failure, case, hint, expect)
        if not finished:
            if limit < self.seconds:
                raise Stop(R.budget_spent(self.task, case, self.budget))
            raise Stop(R.timed_out(self.task, case, self.seconds, still_running=out))
        for position, (now, before) in enumerate(zip(inputs, saved)):
            if not _same(now, before):
                self.fail(_("On {case}, your function changed its input number {number} in place (for "
                            "example `x -= x.max(...)` or `x[...] = ...`). Work on a new array instead: "
                            "`x = x - x.max(...)`.").format(case=_(case), number=position + 1), "changes_input")
        return out

    def _run(self, fn, case, inputs, kwargs, memory, forbid, limit):
        """``(finished, value)``: ``fn`` run here under ``recording``, or in the student's process."""
        self.called = ()
        remote = getattr(fn, "__attnlab_remote__", None)     # grading: the student's process runs fn
        if remote is not None:
            return remote.call(self, case, inputs, kwargs, memory, forbid)
        spaces = [fn.__globals__] if isinstance(getattr(fn, "__globals__", None), dict) else []
        with recording(forbid, spaces) as called:
            try:
                if memory is None:
                    return run_limited(fn, inputs, kwargs, limit)
                return _traced(memory, run_limited, fn, inputs, kwargs, limit)
            finally:
                self.called = tuple(called)

    def _forbidden(self, names: list):
        shown = ", ".join(f"`{n}`" for n in names)
        self.fail(_("This exercise ({task}) asks you to write the computation yourself; your function called "
                    "{names}. Use that only to compare with afterwards.").format(task=_(self.task), names=shown),
                  "forbidden_call")

    def _failed_call(self, failure: BaseException, case: str, hint, expect):
        """The result of a call that raised ``failure``: a Stop, or ``failure`` itself if it is expected."""
        try:
            raise failure
        except NotImplementedError:
            raise Stop(R.not_attempted(self.task)) from None
        except Stop:
            raise
        except expect as err:
            return err
        except SystemExit:
            self.fail(_("On {case}, your function called `exit()` (SystemExit); return a value instead.").format(
                case=_(case)))
        except RecursionError:
            self.fail(_("On {case}, your function called itself without end (RecursionError): check the case "
                        "that stops the recursion.").format(case=_(case)))
        except Exception as err:  # the student's code failed: report it, never a traceback
            message = _("On {case}, your function raised {error}: {text}").format(
                case=_(case), error=type(err).__name__, text=one_line(err))
            extra = (hint(err) if hint else None) or _name_error_hint(err)
            self.fail(message + (_("\nHint: {hint}").format(hint=extra) if extra else ""))
        except BaseException:     # KeyboardInterrupt and the like belong to the person, not the check
            raise

    # --- reading what came back

    def array(self, out, case: str, name: str = N_("the result"), *, shape=None, shape_hint=None,
              kind: str = "numpy", dtype: str = "float64") -> np.ndarray:
        """The returned value as an ndarray, after checking its type, dtype and shape.

        ``kind``: "numpy" (an ndarray is required), "torch" (a tensor is required) or "any"
        (ndarray, tensor, or nested lists of numbers). ``dtype``: "float64" (float64 required),
        "float" (any real floating dtype), "bool", "int" (integers) or "any".
        """
        case, name = _(case), _(name)
        if out is None:
            self.fail(_("On {case}, {name} is None. Did you forget `return`?").format(case=case, name=name),
                      "returns_none")
        if isinstance(out, tuple) and shape is not None:
            self.fail(_("On {case}, {name} is a tuple of {n} values; this task wants a single array of "
                        "shape {shape}.").format(case=case, name=name, n=len(out), shape=fmt(shape)))
        if kind == "numpy" and not isinstance(out, (np.ndarray, np.generic)):
            extra = (_(" Convert at the boundary with `.detach().numpy()` (after `.cpu()` for a GPU tensor).")
                     if is_tensor(out) else "")
            self.fail(_("On {case}, {name} is {kind}; this task asks for a NumPy array (`np.ndarray`).").format(
                case=case, name=name, kind=kind_of(out)) + extra, "wrong_type")
        if kind == "torch" and not is_tensor(out):
            self.fail(_("On {case}, {name} is {kind}; this task works on torch tensors and must return "
                        "a `torch.Tensor`.").format(case=case, name=name, kind=kind_of(out)), "wrong_type")
        if isinstance(out, (str, bytes, dict, set, types.GeneratorType)) or callable(out):
            self.fail(_("On {case}, {name} is {kind}; expected an array of numbers.").format(
                case=case, name=name, kind=kind_of(out)), "wrong_type")
        original = out
        if is_tensor(out):
            try:
                out = tensor_to_numpy(out)
            except Exception as err:   # e.g. a tensor on the "meta" device has no values
                self.fail(_("On {case}, {name} is a tensor on the device {device} whose values cannot be read "
                            "({error}: {text}); return a tensor on the CPU or the GPU.").format(
                                case=case, name=name, device=out.device, error=type(err).__name__,
                                text=one_line(err)), "wrong_type")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                arr = np.asarray(out)
                if arr.dtype == object:
                    arr = np.asarray(out, dtype=float)
        except (TypeError, ValueError) as err:
            self.fail(_("On {case}, {name} ({kind}) could not be read as an array of numbers: {text}").format(
                case=case, name=name, kind=kind_of(original), text=one_line(err)), "wrong_type")
        if shape is not None and arr.shape != tuple(shape):
            extra = shape_hint(arr.shape) if shape_hint else None
            self.fail(_("On {case}, {name} has shape {shape}; expected {expected}.").format(
                case=case, name=name, shape=fmt(arr.shape), expected=fmt(shape))
                + (_("\nHint: {hint}").format(hint=_(extra)) if extra else ""), "wrong_shape")
        self._check_dtype(arr, original, case, name, dtype)
        return arr

    def _check_dtype(self, arr, original, case, name, dtype):
        if dtype == "any":
            return
        if arr.dtype.kind == "c":
            self.fail(_("On {case}, {name} has complex entries (dtype {dtype}); expected real numbers.").format(
                case=case, name=name, dtype=arr.dtype), "wrong_type")
        if dtype == "bool":
            return        # the mask checkers explain non-boolean masks themselves
        if dtype == "int":
            if arr.dtype.kind not in "iu":
                self.fail(_("On {case}, {name} has dtype {dtype}; expected integers (e.g. `h // r`, not "
                            "`h / r`, which gives floats).").format(case=case, name=name, dtype=arr.dtype),
                          "wrong_type")
            return
        if arr.dtype.kind not in "fiub":
            self.fail(_("On {case}, {name} has dtype {dtype}; expected floating-point numbers.").format(
                case=case, name=name, dtype=arr.dtype), "wrong_type")
        if dtype == "float64" and arr.dtype != np.float64:
            how = (_(" (`torch.from_numpy` keeps float64; `torch.tensor(x, dtype=torch.float32)` and "
                     "`.float()` do not)") if is_tensor(original) else "")
            self.fail(_("On {case}, your result is {dtype}; compute in float64, the dtype of the inputs{how}. This "
                        "task compares to float64 rounding, which {dtype} cannot reach.").format(
                            case=case, dtype=arr.dtype, how=how), "not_float64")

    # --- comparing

    def compare(self, case: str, got, reference, mistakes=(), args=(), kwargs=None, *,
                tol: Tolerance | None = FLOAT64, name: str = N_("the output"), pick=None, fallback: str = "",
                what: str = "output", others=(), explain=None, properties=()) -> None:
        """Stop the run with a diagnosis unless ``got`` matches ``reference``.

        ``tol=None`` compares exactly (masks, counts, verdicts). ``pick(output)`` selects the part
        of a model's output to compare (one gradient of a triple, say). ``others``: the checker's
        other cases as :class:`~.diagnosis.Trial` s (lazily: see :meth:`each_case`), on which a
        mistake that matches here is confirmed or refuted before it is named. ``explain(got,
        reference)``: a sentence about the difference when no mistake holds (default: its pattern).
        ``properties``: pairs ``(mistake, test(got, reference, args))`` for mistakes without a model,
        tried when no model holds.
        """
        same = exactly_equal if tol is None else (lambda a, b: close(a, b, tol))
        if same(got, reference):
            return
        found = matching_mistakes(got, reference, mistakes, args, kwargs, same, pick, variants=True)
        verdict = confirm(found, others, same, run_model, pick)
        case, name = _(case), _(name)
        label = _("Case: {case}.").format(case=case) + "\n"
        survivors = one_per_name(verdict.survivors)
        if len(survivors) == 1:
            also = verdict.confirmed_on.get(survivors[0].name)
            text = (_("{name} matches a classic mistake (the same on {other}): {explanation}") if also else
                    _("{name} matches a classic mistake (on this case; no other case could confirm it): "
                      "{explanation}"))
            other = _(also) if also else ""
            self.fail(label + _capital(text.format(name=name, other=other, explanation=survivors[0].text)),
                      survivors[0].name)
        if survivors:      # different mistakes that give the same numbers on every case: name them all
            self.fail(label + _capital(_("{name} matches {n} classic mistakes that give the same numbers here. ")
                                       .format(name=name, n=len(survivors)))
                      + _(" Or: ").join(m.text for m in survivors), survivors[0].name)
        for mistake, test in properties:
            if _holds(test, got, reference, args):
                self.fail(label + _capital(mistake.text), mistake.name)
        if tol is not None and tol.rtol <= FLOAT64.rtol:
            self.single_precision(label, got, reference)
        if tol is None:      # the first differing entry, as a whole sentence
            text = _capital(_("{name} differs from the reference: {difference}").format(
                name=name, difference=_first_difference(got, reference)))
            if np.asarray(got).dtype == bool or np.asarray(got).ndim == 0:
                explain = explain or (lambda got, reference: "")
        else:
            text = _capital(_("{name} differs from the reference: {difference}.").format(
                name=name, difference=describe_difference(got, reference)))
        pattern = explain(got, reference) if explain else _pattern(got, reference)
        stop = Stop(R.failed(self.task, label + join(text, pattern)
                             + (_("\nHint: {hint}").format(hint=_(fallback)) if fallback else "")))
        stop.unexplained = True          # no mistake holds: a caller may look at the output further
        raise stop

    def single_precision(self, label: str, got, reference) -> None:
        """Fail with ``computed_in_float32`` when a float64 result carries only float32's digits."""
        got, reference = np.asarray(got), np.asarray(reference)
        if got.dtype != np.float64 or got.shape != reference.shape or not close(got, reference, SINGLE):
            return
        exact32 = bool(np.all(got[np.isfinite(got)].astype(np.float32).astype(np.float64) == got[np.isfinite(got)]))
        how = _(" Every entry is exactly a float32 number.") if exact32 else ""
        self.fail(label + _("Your result is float64, but it agrees with the reference only to float32 rounding "
                            "(about 7 significant digits), so your computation ran in float32 somewhere.{how} A "
                            "float32 array, `torch.float32`, `.float()` or `np.float32(...)` loses digits that "
                            "converting the result to float64 at the end cannot bring back: compute in float64 "
                            "throughout.").format(how=how), "computed_in_float32")

    def each_case(self, cases, trial_of, mistakes=(), **options) -> list:
        """Compare the student's output with the reference on every case, in order.

        ``trial_of(case)`` runs the student's function on one case (with :meth:`call` and :meth:`array`)
        and returns a :class:`~.diagnosis.Trial`. When a case fails, the cases before it (which passed)
        and after it (run now) confirm or refute each candidate mistake before one is named.
        ``options`` go to :meth:`compare`. Returns the trials.
        """
        cases, done = list(cases), []
        for i, case in enumerate(cases):
            trial = trial_of(case)
            if trial.pick is not None:
                options = {**options, "pick": trial.pick}
            self.compare(trial.case, trial.got, trial.reference, mistakes, trial.args, trial.kwargs,
                         others=self._others(done, cases[i + 1:], trial_of), **options)
            done.append(trial)
        return done

    def _others(self, done: list, rest: list, trial_of):
        """The trials of the other cases: those already run, then the rest, run one by one when reached
        (a case on which the student's function fails in another way is skipped; time or budget spent
        ends the list)."""
        yield from done
        for case in rest:
            try:
                yield trial_of(case)
            except Stop as stop:
                if stop.result.mistake in ("time_limit", "budget_spent"):
                    return


def _holds(test, got, reference, args) -> bool:
    try:
        with np.errstate(all="ignore"):
            return bool(test(got, reference, args))
    except Exception:       # a property that cannot be evaluated on this output does not hold
        return False


def _capital(text: str) -> str:
    """The first letter in upper case (English); a Chinese message keeps a leading Latin word as it is."""
    if any("\u4e00" <= ch <= "\u9fff" for ch in text[:40]):
        return text
    return text[:1].upper() + text[1:]


def _pattern(got, reference) -> str:
    try:
        return describe_pattern(got, reference)
    except (TypeError, ValueError):
        return ""


def _traced(memory: dict, call, *args):
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = call(*args)
        memory["peak"] = tracemalloc.get_traced_memory()[1] - before
        return result
    finally:
        if started:
            tracemalloc.stop()


def which_mistake(got, reference, mistakes, args=(), kwargs=None, same=close, pick=None):
    """The first mistake whose model's output matches ``got`` (and differs from ``reference``)."""
    found = matching_mistakes(got, reference, mistakes, args, kwargs, same, pick, first_only=True)
    return found[0] if found else None


def one_per_name(mistakes: list) -> list:
    kept = []
    for mistake in mistakes:
        if all(m.name != mistake.name for m in kept):
            kept.append(mistake)
    return kept


def matching_mistakes(got, reference, mistakes, args=(), kwargs=None, same=close, pick=None, first_only=False,
                      variants=False):
    """Every mistake (one per name, in order; with ``variants`` every model of a name) whose model's output
    matches ``got`` and not ``reference``."""
    kwargs = kwargs or {}
    found = []
    for mistake in mistakes:
        if mistake.model is None or (not variants and any(m.name == mistake.name for m in found)):
            continue
        out = run_model(mistake.model, *args, **kwargs)
        if out is not None and pick is not None:
            out = run_model(pick, out)
        if out is None:
            continue
        try:
            if same(got, out) and not same(out, reference):
                found.append(mistake)
                if first_only:
                    break
        except (TypeError, ValueError):
            continue
    return found


def _first_difference(got, expected) -> str:
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape or got.ndim == 0:
        return _("yours is {got!r}, the reference {expected!r}.").format(got=got.tolist(), expected=expected.tolist())
    where = tuple(int(i) for i in np.argwhere(got != expected)[0])
    return _("entry {where} is {got!r}; it should be {expected!r}.").format(
        where=where, got=got[where].item(), expected=expected[where].item())


def models(mistakes: list):
    """Decorator factory: ``@model(name, explanation)`` above a wrong implementation appends the
    :class:`Mistake` to ``mistakes`` (so the model and its explanation sit side by side) and
    returns the function unchanged."""
    def model(name: str, explanation: str):
        def add(fn):
            mistakes.append(Mistake(name, explanation, fn))
            return fn
        return add
    return model


def _name_error_hint(err: BaseException) -> str | None:
    """Every checker's hint for a NameError: a student's most common one is a typo."""
    if isinstance(err, NameError):
        return _("a name your function uses is not defined where it runs: a misspelt variable, or one "
                 "defined only in another cell or notebook.")
    return None


def error_hint(err: BaseException) -> str | None:
    """Explain the usual cause of a shape error, classified by what actually failed."""
    text = str(err)
    if "remapped shapes" in text:        # np.matmul's own broadcast of the batch axes: a transpose of a batch
        return _("a shape error inside a matrix product of batched arrays. `x.T` reverses every axis, batch "
                 "axes included: transpose only the last two, `np.swapaxes(x, -1, -2)` (torch: "
                 "`x.transpose(-2, -1)`).")
    if "could not be broadcast" in text or "must match the size of tensor" in text:
        shapes = _broadcast_shapes(text)
        if shapes and _drops_last_axis(*shapes):
            return _("a broadcasting error between an array and a reduction of it. Reductions such as "
                     "`x.max(axis=-1)` drop the axis; add `keepdims=True` (torch: `keepdim=True`) so that the "
                     "result lines up with each row.")
        return _("a broadcasting error: two arrays whose shapes do not line up were combined elementwise. "
                 "Print the shapes just before the failing line.")
    if ("matmul" in text or "mat1 and mat2" in text or "core dimension" in text or "batch1" in text
            or "batch2" in text or "shapes cannot be multiplied" in text or "not aligned" in text):
        return _("a shape error inside a matrix product. Scores are `q @ k^T`: keys must be transposed, and for "
                 "batched arrays transpose only the last two axes (`np.swapaxes(k, -1, -2)` in NumPy, "
                 "`k.transpose(-2, -1)` in torch); `k.T` reverses every axis.")
    return None


def _broadcast_shapes(text: str):
    import re
    found = re.findall(r"\(([\d, ]*)\)", text)
    if len(found) < 2:
        return None
    return [tuple(int(n) for n in part.replace(" ", "").split(",") if n) for part in found[:2]]


def _drops_last_axis(a, b) -> bool:
    return (len(a) == len(b) + 1 and a[:-1] == b) or (len(b) == len(a) + 1 and b[:-1] == a) \
        or (len(a) == len(b) + 1 and a[:-1][-len(b):] == b) or (len(b) == len(a) + 1 and b[:-1][-len(a):] == a)
