"""The matching engine: call student code safely, read what it returns, compare, diagnose.

A :class:`Mistake` is a classic error with the plain-words explanation a student reads, and
usually a *model*: a deliberately wrong implementation of the same task. :meth:`Check.compare`
is the one place where a student's output is compared with the reference and, when they differ,
with the output of every model on the same inputs; the first model the student's output
reproduces (while the reference does not) names the mistake. A :class:`Check` is created by the
registry for each run of a checker; it owns the task name and the time limit, and every failure
ends the run with :class:`Stop`.
"""
from __future__ import annotations

import copy
import sys
import tracemalloc
import types
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..i18n import N_, _
from . import result as R
from .limits import run_limited


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


FLOAT64 = Tolerance(1e-6, 1e-8)
FLOAT32 = Tolerance(1e-4, 1e-5)


class Stop(Exception):
    """Raised inside a checker to end the run with ``self.result``."""

    def __init__(self, result: R.CheckResult):
        super().__init__(result.message)
        self.result = result


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

    def __init__(self, task: str, seconds: float):
        self.task = task
        self.seconds = seconds
        self.called: tuple[str, ...] = ()     # forbidden entry points the last call used (see call)

    # --- ending the run

    def fail(self, message: str, mistake: str = ""):
        raise Stop(R.failed(self.task, message, mistake))

    def passed(self, message: str) -> R.CheckResult:
        return R.passed(self.task, message)

    # --- calling student code

    def call(self, fn, case: str, *args, hint=None, expect=(), memory: dict | None = None, forbid=(), **kwargs):
        """Run ``fn(*args, **kwargs)`` on copies of the inputs, under the time limit.

        A stub's ``NotImplementedError`` ends the run as "not attempted yet"; any other exception
        ends it with one line (plus ``hint(err)`` when that gives a likely cause), except an
        instance of ``expect``, which is returned. A change to an input in place is reported.
        With a dict ``memory``, ``memory["peak"]`` receives the peak of memory traced by
        ``tracemalloc`` during the call itself, in bytes above what was allocated before it.
        ``forbid`` names library entry points the task forbids (dotted, e.g.
        ``"torch.nn.functional.scaled_dot_product_attention"``): afterwards ``self.called`` lists
        those the call used, in the order of their first use (:mod:`attnlab.grading.recording`).
        In grading, ``fn`` lives in the student's sandboxed process and this call goes there
        (:mod:`attnlab.grading.remote`): same verdicts, with the inputs sent as data.
        """
        inputs = [_clone(a) for a in args]
        saved = [_clone(a) for a in inputs]
        self.called = ()
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                finished, out = self._run(fn, case, inputs, kwargs, memory, tuple(forbid))
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
            extra = hint(err) if hint else None
            self.fail(message + (_("\nHint: {hint}").format(hint=extra) if extra else ""))
        if not finished:
            raise Stop(R.timed_out(self.task, case, self.seconds, still_running=out))
        for position, (now, before) in enumerate(zip(inputs, saved)):
            if not _same(now, before):
                self.fail(_("On {case}, your function changed its input number {number} in place (for "
                            "example `x -= x.max(...)` or `x[...] = ...`). Work on a new array instead: "
                            "`x = x - x.max(...)`.").format(case=_(case), number=position + 1), "changes_input")
        return out

    def _run(self, fn, case, inputs, kwargs, memory, forbid):
        remote = getattr(fn, "__attnlab_remote__", None)     # grading: the student's process runs fn
        if remote is not None:
            return remote.call(self, case, inputs, kwargs, memory, forbid)
        from ..grading.recording import recording
        with recording(forbid, [getattr(fn, "__globals__", None)]) as called:
            if memory is None:
                result = run_limited(fn, inputs, kwargs, self.seconds)
            else:
                result = _traced(memory, run_limited, fn, inputs, kwargs, self.seconds)
        self.called = tuple(called)
        return result

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
                what: str = "output") -> None:
        """Stop the run with a diagnosis unless ``got`` matches ``reference``.

        ``tol=None`` compares exactly (masks, counts, verdicts). ``pick(output)`` selects the part
        of a model's output to compare (one gradient of a triple, say).
        """
        same = exactly_equal if tol is None else (lambda a, b: close(a, b, tol))
        if same(got, reference):
            return
        found = matching_mistakes(got, reference, mistakes, args, kwargs, same, pick)
        case, name = _(case), _(name)
        if len(found) == 1:
            self.fail(_("On {case}, {name} matches a classic mistake: {explanation}").format(
                case=case, name=name, explanation=found[0].text), found[0].name)
        if found:      # different mistakes that give the same numbers here: name them all, first one first
            self.fail(_("On {case}, {name} matches {n} classic mistakes that give the same numbers here. ").format(
                case=case, name=name, n=len(found)) + _(" Or: ").join(m.text for m in found), found[0].name)
        if tol is None:      # the first differing entry, as a whole sentence
            text = _("On {case}, {name} differs from the reference: {difference}").format(
                case=case, name=name, difference=_first_difference(got, reference))
        else:
            text = _("On {case}, {name} differs from the reference: {difference}.").format(
                case=case, name=name, difference=describe_difference(got, reference))
        self.fail(text + (_("\nHint: {hint}").format(hint=_(fallback)) if fallback else ""))


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


def matching_mistakes(got, reference, mistakes, args=(), kwargs=None, same=close, pick=None, first_only=False):
    """Every mistake (one per name, in order) whose model's output matches ``got`` and not ``reference``."""
    kwargs = kwargs or {}
    found = []
    for mistake in mistakes:
        if mistake.model is None or any(m.name == mistake.name for m in found):
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


def error_hint(err: BaseException) -> str | None:
    """Explain the usual cause of a shape error, classified by what actually failed."""
    text = str(err)
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
