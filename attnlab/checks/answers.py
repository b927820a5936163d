"""Numeric answers: ``check_answer(name, value)`` for the exercises whose answer is a number.

A numeric answer lives in one place, the solution page that computes it: next to the computation, a
hidden cell declares it with :func:`question` (its name, the value, what it is in words, how exactly
it must match, the known wrong values with what each means, and older names that still grade).
``python -m bookbuild answers`` executes the solution pages, collects the declarations and writes
:mod:`.answer_table`, which holds a fingerprint of each answer, not the answer: every entry is
rounded to a fixed quantum (exact for integers, about four significant digits for reals) and hashed
with the question's name and the entry's index. A value is accepted when its rounded entries hash
to the stored fingerprints (one quantum either way is tolerated for reals). This keeps the answers
out of plain sight; it is not meant to resist someone who sets out to break it. A wrong value that
a simple slip explains (a sign, a factor of 2, off by one, units) is recognised from the same
fingerprints.
"""
from __future__ import annotations

import hashlib
import types
from dataclasses import dataclass, field

import numpy as np

from ..i18n import N_, _
from . import result as R
from .engine import Mistake, is_tensor, kind_of, tensor_to_numpy
from .registry import checker


@dataclass(frozen=True)
class Answer:
    question: str                      # what the number is, in words
    shape: tuple                       # () for a scalar, (n,) or (r, c)
    exponent: int                      # entries are compared in units of 10**exponent
    exact: bool                        # True: integers, no tolerance
    digests: tuple                     # one fingerprint per entry (row-major)
    hints: tuple = field(default=())   # ((digests of a known wrong answer, what it means), ...)


def question(name: str, value, text: str, *, exponent: int = 0, exact: bool = True, hints=(), aliases=()):
    """Declare the numeric answer ``name`` where a solution computes it (``python -m bookbuild answers`` collects
    the declarations). ``text`` says what the number is (shown in every message about it), ``exponent``
    the unit of comparison (entries in units of 10**exponent; 0 with ``exact`` for integers), ``hints``
    ``(wrong value, what it means)`` pairs with each wrong value computed the way the slip computes it,
    ``aliases`` the older names a submitted notebook may still use. In a page it only checks the value
    against the table and returns the result."""
    return check_answer(name, value)


def _digest(name: str, index: int, units: int) -> str:
    return hashlib.sha256(f"attnlab/{name}/{index}/{units}".encode()).hexdigest()[:16]


def _units(value: float, exponent: int) -> int:
    return int(np.round(value / 10.0 ** exponent))


def fingerprint(name: str, value, exponent: int = 0) -> tuple:
    """Digests for ``value`` (used by bookbuild.answers)."""
    flat = np.asarray(value, dtype=float).reshape(-1)
    return tuple(_digest(name, i, _units(x, exponent)) for i, x in enumerate(flat))


def _entry_ok(name, index, x, exponent, exact, digest) -> bool:
    units = _units(x, exponent)
    if exact and abs(x - units * 10.0 ** exponent) > 1e-9 * max(1.0, abs(x)):
        return False
    spread = (0,) if exact else (0, -1, 1)
    return any(_digest(name, index, units + d) == digest for d in spread)


def _as_entries(value, answer: Answer):
    """The answer's entries as floats, or a sentence saying why the value cannot be read."""
    if isinstance(value, (str, bytes)):
        return None, _("you gave the text {text!r}; give the number itself (without quotes), computed in "
                       "Python").format(text=value[:40])
    if isinstance(value, (bool, np.bool_)):
        return None, _("you gave a boolean (True/False); give a number")
    if isinstance(value, (types.GeneratorType, dict, set)) or callable(value):
        return None, _("you gave {kind}; give a number or a list of numbers").format(kind=kind_of(value))
    if is_tensor(value):
        try:
            value = tensor_to_numpy(value)
        except Exception:   # e.g. the "meta" device holds no values
            return None, _("could not read the values of a tensor on the device {device}").format(device=value.device)
    text = _text_inside(value)
    if text is not None:
        return None, _("your answer holds the text {text!r}; give numbers (without quotes), computed in "
                       "Python").format(text=text[:40])
    try:
        arr = np.asarray(value, dtype=float)
    except OverflowError:
        return None, _("the number is too large for a floating-point number (beyond about 1.8e308); check its "
                       "exponent or units")
    except (TypeError, ValueError):
        try:      # SymPy matrices and nested lists of SymPy numbers
            arr = np.array(np.asarray(value, dtype=object).tolist(), dtype=float)
        except OverflowError:
            return None, _("the number is too large for a floating-point number (beyond about 1.8e308); check "
                           "its exponent or units")
        except Exception:
            return None, _("could not read {kind} as a number or an array of numbers").format(kind=kind_of(value))
    if arr.shape != tuple(answer.shape):
        want = (_("a single number") if answer.shape == () else
                _("an array of shape {shape}").format(shape=tuple(answer.shape)))
        return None, _("the answer is {want}; you gave shape {shape}").format(want=want, shape=arr.shape)
    if not np.all(np.isfinite(arr)):
        return None, _("the answer contains nan or inf")
    return arr.reshape(-1), None


def _text_inside(value, depth: int = 0):
    """The first string (or bytes) inside nested lists or tuples, else None: NumPy would quietly read "4" as 4."""
    if isinstance(value, (str, bytes)):
        return value if isinstance(value, str) else value.decode(errors="replace")
    if isinstance(value, (list, tuple)) and depth < 8:
        for item in value:
            found = _text_inside(item, depth + 1)
            if found is not None:
                return found
    if isinstance(value, np.ndarray) and value.dtype.kind in "USO" and depth < 8:
        return _text_inside(value.tolist(), depth + 1)
    return None


# A wrong answer that a simple slip explains: the transform turns the student's value into the right one.
SLIPS = [
    (lambda v: -v, N_("The size is right but the sign is not: check the sign of each term.")),
    (lambda v: v / 2, N_("Your answer is twice the right one: a factor of 2 too many (something counted twice?).")),
    (lambda v: v * 2, N_("Your answer is half the right one: a factor of 2 is missing (keys and values? a "
                         "multiply-add as 2 FLOPs?).")),
    (lambda v: v - 1, N_("Off by one: your answer is one more than the right one (does the range include its end? "
                         "is position 0 counted?).")),
    (lambda v: v + 1, N_("Off by one: your answer is one less than the right one (does the range include its end? "
                         "is position 0 counted?).")),
    (lambda v: v / 8, N_("Your answer is 8 times the right one: bits where bytes are asked?")),
    (lambda v: v * 8, N_("Your answer is an eighth of the right one: bytes where bits are asked, or a factor of 8 "
                         "missing?")),
    (lambda v: v * 2**20, N_("Your answer is in MiB: the question asks for bytes (1 MiB = 2**20 bytes).")),
    (lambda v: v * 2**30, N_("Your answer is in GiB: the question asks for bytes (1 GiB = 2**30 bytes).")),
    (lambda v: v * 1000 ** 2, N_("Your answer is in MB (10**6 bytes): the question asks for bytes.")),
    (lambda v: v * 1000 ** 3, N_("Your answer is in GB (10**9 bytes): the question asks for bytes.")),
    (lambda v: np.sqrt(v), N_("Your answer is the square of the right one: a variance where a standard deviation is "
                              "asked?")),
    (lambda v: v ** 2, N_("Your answer is the square root of the right one: a standard deviation where a variance "
                          "is asked?")),
    (lambda v: 1 / v, N_("Your answer is the inverse of the right one: a ratio upside down?")),
    (lambda v: v / 100, N_("Your answer is 100 times the right one: a percentage where a fraction is asked?")),
]
TRANSPOSED = N_("Your matrix is the transpose of the right one: rows and columns swapped (which index is the "
                "row?).")


def _slip(name, flat, answer) -> str | None:
    """The explanation of the first simple slip that turns the given entries into the right answer, if any."""
    def right(candidate):
        candidate = np.asarray(candidate, dtype=float).reshape(-1)
        return bool(np.all(np.isfinite(candidate))) and all(
            _entry_ok(name, i, x, answer.exponent, answer.exact, d)
            for i, (x, d) in enumerate(zip(candidate, answer.digests)))
    with np.errstate(all="ignore"):
        if len(answer.shape) == 2 and answer.shape[0] == answer.shape[1] and right(
                flat.reshape(answer.shape).T):
            return TRANSPOSED
        for transform, meaning in SLIPS:
            if right(transform(flat)):
                return meaning
    return None


UNKNOWN_QUESTION = Mistake("unknown_question", N_("there is no question of that name."))
UNREADABLE = Mistake("unreadable", N_("the value is not a number (or array of numbers) of the expected shape."))
KNOWN_WRONG = Mistake("known_wrong_answer", N_("a known wrong number, with what it usually means (e.g. the unscaled "
                                               "value, the MHA cache)."))
SLIP = Mistake("simple_slip", N_("a wrong number that a simple slip turns into the right one: the sign, a factor of 2, "
                                 "off by one, bits or MiB for bytes, a square or a square root, an inverse, a "
                                 "transpose."))


@checker(N_("answer"), [KNOWN_WRONG, SLIP, UNKNOWN_QUESTION, UNREADABLE], takes_function=False)
def check_answer(run, name, value=...):
    """Check a numeric answer to the question called ``name``.

    ``value`` may be a number, a fraction, a SymPy number or matrix, a NumPy array, a torch tensor (even one
    that requires grad, on any device) or a (nested) list of them; ``...`` (the placeholder in the exercise
    notebooks) or None means "not attempted yet".
    """
    from .answer_table import ALIASES, ANSWERS

    task = _("answer {name}").format(name=name)
    if not isinstance(name, str):
        return R.failed(_("answer"), _("The first argument is the question's name, a string such as \"qkv.shapes\"; "
                                    "got {kind}.").format(kind=kind_of(name)), UNKNOWN_QUESTION.name)
    name = ALIASES.get(name, name)          # an older name of the question, from a notebook submitted before
    answer = ANSWERS.get(name)
    if answer is None:
        close = ", ".join(n for n in ANSWERS if n.split(".")[0] == name.split(".")[0])
        return R.failed(task, _("There is no question called {name!r}.").format(name=name) +
                        (_(" Questions of this chapter: {names}.").format(names=close) if close else ""),
                        UNKNOWN_QUESTION.name)
    question = _(answer.question)
    if value is ... or value is None:
        return R.CheckResult(task, R.NOT_ATTEMPTED, _("Replace `...` with your answer: {question}.").format(
            question=question))
    flat, problem = _as_entries(value, answer)
    if problem is not None:
        return R.failed(task, _("{problem}. ({question})").format(problem=problem[0].upper() + problem[1:],
                                                                 question=question), UNREADABLE.name)
    ok = [_entry_ok(name, i, x, answer.exponent, answer.exact, d) for i, (x, d) in enumerate(zip(flat, answer.digests))]
    if all(ok):
        return R.passed(task, _("Correct: {question} = {value}.").format(question=question, value=_show(flat, answer)))
    for wrong, meaning in answer.hints:
        if all(_entry_ok(name, i, x, answer.exponent, answer.exact, d) for i, (x, d) in enumerate(zip(flat, wrong))):
            return R.failed(task, _("Not yet ({question}). {meaning}").format(question=question, meaning=_(meaning)),
                            KNOWN_WRONG.name)
    slip = _slip(name, flat, answer)
    if slip is not None:
        return R.failed(task, _("Not yet ({question}). {meaning}").format(question=question, meaning=_(slip)),
                        SLIP.name)
    precision = (_("exactly") if answer.exact else
                 _("to within {step:g} (compute it in Python rather than typing a rounded value)").format(
                     step=10.0 ** answer.exponent))
    if answer.shape == ():
        return R.failed(task, _("Not yet ({question}). The answer must match {precision}.").format(
            question=question, precision=precision))
    index = [tuple(int(i) for i in np.unravel_index(j, answer.shape)) for j, good in enumerate(ok) if not good]
    shown = ", ".join(str(i if len(i) > 1 else i[0]) for i in index)
    if len(index) == 1:
        text = _("Not yet ({question}). Entry {shown} does not match; the answer must match {precision}.")
    else:
        text = _("Not yet ({question}). Entries {shown} do not match; the answer must match {precision}.")
    return R.failed(task, text.format(question=question, shown=shown, precision=precision))


def _show(flat, answer: Answer) -> str:
    values = [int(round(x)) if answer.exact else float(f"{x:.6g}") for x in flat]
    if answer.shape == ():
        return str(values[0])
    return str(np.array(values, dtype=object).reshape(answer.shape).tolist())
