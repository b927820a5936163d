"""Compare a student's output with the reference and with the outputs of known mistakes.

A :class:`Mistake` is a deliberately wrong implementation (a "mistake model" from
:mod:`attnlab.checks.mistakes`) together with the plain-words explanation a student should
read when their output matches it. Diagnosis runs every applicable model on the same inputs
and reports the first one whose output the student's reproduces while the reference does not.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import result as R
from .runner import Stop, fmt


@dataclass(frozen=True)
class Mistake:
    name: str                       # short name used in tests and reports
    explanation: str                # what the student reads
    model: Callable                 # the deliberately wrong implementation


@dataclass(frozen=True)
class Tolerance:
    rtol: float = 1e-6
    atol: float = 1e-8


FLOAT64 = Tolerance(1e-6, 1e-8)
FLOAT32 = Tolerance(1e-4, 1e-5)


def close(a, b, tol: Tolerance = FLOAT64) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if not np.array_equal(np.isnan(a), np.isnan(b)) or not np.array_equal(np.isinf(a), np.isinf(b)):
        return False
    finite = np.isfinite(a) & np.isfinite(b)
    return bool(np.allclose(a[finite], b[finite], rtol=tol.rtol, atol=tol.atol)
                and np.array_equal(a[~finite], b[~finite], equal_nan=True))


def run_model(model: Callable, *args, **kwargs):
    """Output of a mistake model, or None where the mistake cannot run on these inputs."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return model(*args, **kwargs)
    except Exception:
        return None


def which_mistake(got, reference, mistakes, args=(), kwargs=None, tol: Tolerance = FLOAT64,
                  pick=None):
    """The first mistake whose model output matches ``got`` (and differs from ``reference``).

    ``pick(output)`` selects the part of a model's output to compare (e.g. one gradient of a
    triple); by default the whole output is compared.
    """
    kwargs = kwargs or {}
    for mistake in mistakes:
        out = run_model(mistake.model, *args, **kwargs)
        if out is None:
            continue
        if pick is not None:
            out = run_model(pick, out)
            if out is None:
                continue
        out = np.asarray(out, dtype=float)
        if close(got, out, tol) and not close(out, reference, tol):
            return mistake
    return None


def describe_difference(got: np.ndarray, expected: np.ndarray) -> str:
    """One sentence locating the largest difference, or the first non-finite value."""
    bad = ~np.isfinite(got)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        return (f"it contains {got[where]} at index {where} where the reference has "
                f"{expected[where]:.6g}")
    diff = np.abs(got - expected)
    where = tuple(int(i) for i in np.unravel_index(np.argmax(diff), diff.shape))
    return (f"the largest difference is {diff[where]:.3g} at index {where} "
            f"(yours {got[where]:.6g}, reference {expected[where]:.6g})")


def compare(task: str, case: str, got: np.ndarray, reference: np.ndarray, mistakes, args=(),
            kwargs=None, tol: Tolerance = FLOAT64, name: str = "the output", pick=None,
            fallback: str = "") -> None:
    """Stop the check with a diagnosis unless ``got`` matches ``reference``."""
    if close(got, reference, tol):
        return
    mistake = which_mistake(got, reference, mistakes, args, kwargs, tol, pick)
    if mistake is not None:
        raise Stop(R.failed(task, f"On {case}, {name} matches a classic mistake: {mistake.explanation}",
                            mistake.name))
    text = f"On {case}, {name} differs from the reference: {describe_difference(got, reference)}."
    if fallback:
        text += f"\nHint: {fallback}"
    raise Stop(R.failed(task, text))


def shape_of(x) -> str:
    return fmt(np.shape(x))
