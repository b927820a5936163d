"""From "your output differs" to what the difference means.

Two jobs, both used by :meth:`.engine.Check.compare`:

- **Confirmation.** A mistake model that reproduces the student's output on one case is only a
  candidate: on a small integer case several mistakes coincide (2 bytes per element is also "the
  factor 2 of keys and values"). :func:`confirm` replays every candidate on the checker's other
  cases (:class:`Trial`: the student's output there, the reference, the inputs). A case on which the
  candidate gives another output than the student refutes it (also where the student is right: a
  mistake that only shows in some situations, an offset ignored only when T == S, is a model of its
  own); a candidate is *confirmed* once it also reproduced a wrong output on another case. A checker
  confirms within a family of cases (the unmasked ones, the masked ones), not across families.
- **Patterns.** When no mistake survives, :func:`describe_pattern` says what kind of difference it
  is: a constant factor, an offset, the opposite sign, a transpose, one factor per row, only some
  rows, the right values in other places, non-finite entries.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from ..i18n import _


@dataclass
class Trial:
    """One case of a checker: the student's output on it, the reference, and the inputs a model takes."""
    case: str
    got: Any
    reference: Any
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    pick: Callable | None = None     # selects the compared part of a model's output on this case (else the default)


@dataclass
class Verdict:
    survivors: list            # the candidates no case refuted, in catalogue order
    confirmed_on: dict         # mistake name -> the first other case where it matched and was wrong
    refuted_on: dict           # mistake name -> the first case that refuted it


def confirm(candidates: list, others: Iterable[Trial], same: Callable, run_model: Callable, pick=None) -> Verdict:
    """Replay each candidate mistake on the ``others`` (a lazy iterable: a case runs the student's function
    only when it is reached) and keep the candidates that reproduce every wrong output they can run on."""
    alive = list(candidates)
    confirmed, refuted = {}, {}
    for trial in others:
        if not alive:
            break
        for mistake in list(alive):
            out = run_model(mistake.model, *trial.args, **trial.kwargs)
            chosen = trial.pick or pick
            if out is not None and chosen is not None:
                out = run_model(chosen, out)
            if out is None:
                continue
            try:
                agrees, wrong = same(trial.got, out), not same(out, trial.reference)
            except (TypeError, ValueError):
                continue
            if not agrees:
                alive.remove(mistake)
                refuted.setdefault(mistake.name, trial.case)
            elif wrong:
                confirmed.setdefault(mistake.name, trial.case)
    return Verdict(alive, confirmed, refuted)


# ---------------------------------------------------------------------------------------------- patterns


def join(first: str, second: str) -> str:
    """Two sentences of a message: a space between them, except after a full-width (Chinese) stop."""
    if not first or not second:
        return first + second
    return first + ("" if first.endswith(("\u3002", "\uff1f", "\uff01", "\uff09", "\n")) else " ") + second


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _constant(values: np.ndarray, tol: float = 1e-6):
    """The common value of ``values`` if they agree to ``tol`` (relative), else None."""
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    centre = float(np.median(values))
    return centre if np.allclose(values, centre, rtol=tol, atol=tol * 1e-3) else None


def describe_pattern(got, expected) -> str:
    """One sentence naming the kind of difference between two arrays of one shape ("" if none is clear)."""
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    if got.shape != expected.shape or got.size == 0:
        return ""
    with np.errstate(all="ignore"):
        bad = ~np.isfinite(got) & np.isfinite(expected)
        if bad.any():
            rows = _rows(bad)
            return _("The non-finite entries sit in {rows}: an overflow of `np.exp`, a 0/0 or an -inf - (-inf) "
                     "there?").format(rows=rows)
        nonzero = np.abs(expected) > 1e-12
        if nonzero.sum() >= 2 and np.allclose(got[~nonzero], 0, atol=1e-12):
            ratio = _constant(got[nonzero] / expected[nonzero])
            if ratio is not None and abs(ratio - 1) > 1e-6:
                if abs(ratio + 1) < 1e-6:
                    return _("Every entry has the opposite sign: a sign error.")
                return _("Every entry is {ratio} times the reference (the inverse: {inverse}): a missing or "
                         "extra constant factor.").format(ratio=_fmt(ratio), inverse=_fmt(1 / ratio) if ratio else "-")
        offset = _constant(got - expected, 1e-9)
        if offset is not None and abs(offset) > 1e-9 and got.size >= 2:
            return _("Every entry is off by the same amount, {offset}: a constant offset.").format(
                offset=_fmt(offset))
        if got.ndim >= 2 and got.shape[-1] == got.shape[-2] and np.allclose(got, np.swapaxes(expected, -1, -2)):
            return _("Your result is the reference with its last two axes swapped: a transpose.")
        if got.ndim >= 2 and nonzero.all():
            per_row = got / expected
            row_factor = per_row[..., :1]
            if np.allclose(per_row, row_factor) and not np.allclose(row_factor, row_factor.flat[0]):
                return _("Each row is the reference times a factor of its own (from {low} to {high}): a "
                         "normalisation or scale that differs from row to row.").format(
                             low=_fmt(row_factor.min()), high=_fmt(row_factor.max()))
        differs = ~np.isclose(got, expected, rtol=1e-9, atol=1e-12)
        if got.ndim >= 2 and 0 < differs.any(axis=-1).mean() < 1:
            return _("Only {rows} differ; the others match: a problem limited to those rows (an edge case, "
                     "a mask, a boundary?).").format(rows=_rows(differs))
        if got.ndim >= 1 and got.size > 1 and np.allclose(np.sort(got, axis=None), np.sort(expected, axis=None)):
            return _("Your result holds the reference's values, in other places: an indexing or ordering "
                     "problem.")
        if got.ndim == 2 and len(got) > 2:
            rows = {tuple(r) for r in np.round(expected, 12)}
            found = sum(tuple(r) in rows for r in np.round(got, 12))
            moved = int((~np.isclose(got, expected).all(axis=1)).sum())
            if moved and found >= len(got) / 2:
                return _("{found} of your {n} rows are rows of the reference, {moved} of them in other places: an "
                         "indexing or ordering problem.").format(found=found, n=len(got), moved=moved)
    return ""


def _rows(mask: np.ndarray) -> str:
    """The rows (index along the second-last axis, with any leading index) where ``mask`` holds, in words."""
    if mask.ndim == 1:
        where = [int(i) for i in np.flatnonzero(mask)]
        return _("the entries {where}").format(where=_short(where))
    rows = sorted({tuple(int(i) for i in idx[:-1]) for idx in np.argwhere(mask)})
    shown = [r[0] if len(r) == 1 else r for r in rows]
    return _("the rows {rows}").format(rows=_short(shown))


def _short(items: list) -> str:
    text = ", ".join(str(i) for i in items[:6])
    return text + (", ..." if len(items) > 6 else "")


def describe_ratio(got: float, expected: float, trials: list[Trial], names: tuple = ()) -> str:
    """For a count: how many times the reference it is, and the argument the ratio follows, if one does."""
    if not expected:
        return ""
    ratio = got / expected
    text = _("Your count is {ratio} times the reference.").format(ratio=_fmt(ratio))
    usable = [t for t in trials if t.reference and _is_number(t.got)]
    for position, name in enumerate(names):
        values = [_number(t.args, position) for t in usable]
        if len(usable) < 2 or any(v is None or v == 0 for v in values):
            continue
        ratios = [float(t.got) / float(t.reference) for t in usable]
        if np.allclose(ratios, [1 / v for v in values]) and len(set(values)) > 1:
            return join(text, _("Over the cases the ratio is 1 / `{name}`: is `{name}` missing?").format(name=name))
        if np.allclose(ratios, values) and len(set(values)) > 1:
            return join(text, _("Over the cases the ratio is `{name}`: is `{name}` counted once too "
                                "often?").format(name=name))
    return text


def _is_number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _number(args: tuple, position: int):
    value = args[position] if position < len(args) else None
    return float(value) if _is_number(value) else None
