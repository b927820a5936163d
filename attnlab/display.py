"""Showing values in a notebook: exact values with their decimals, and a block of numbers in words.

``show("A", A, "O", O)`` displays each SymPy value as ``A = <closed form> ≈ <decimals>``, the
decimals on their own line so that wide matrices still fit the page. Values that are already
integers, and expressions with free symbols, are shown without decimals.

``in_words(values)`` says what a block (or row) of numbers a computation returned is: all NaN,
all zeros, finite, or partly not finite, in the language of ``attnlab.set_language``, so that a page
can put what the installed library returns into a sentence of either edition.

``scientific(x)`` writes a small or large number as ``1.2 × 10⁻⁷``, in one piece that a table cell
or a line of text never breaks (``1.2e-07`` breaks after its hyphen in a narrow column).

``column(text, width)`` pads a label of a printed table as ``f"{text:>{width}}"`` does, counting a
Chinese character as the two columns it takes in a monospaced font, so that the columns of the
Chinese edition's printed tables line up as the English ones do. (A page's own tables need not call
it: their text is translated and padded where it is printed, ``attnlab.edge``.)

``glue(name, value)`` glues a value for the prose of the edition being built (``myst_nb.glue``,
not displayed): a text in the edition's language, a number as it is (the prose formats it). Hidden
cells call it; a reader never needs it.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ._shown import display_width
from .errors import AttentionInputError
from .i18n import N_, _, page_text


def _needs_decimals(value) -> bool:
    entries = list(value) if isinstance(value, sp.MatrixBase) else [value]
    return all(not e.free_symbols for e in entries) and not all(e.is_Integer for e in entries)


_ROW_GAP = r"\\[1ex]"   # between the exact line and the decimals: two matrices never touch


def _exact_and_decimals(value, digits: int) -> tuple[str, str | None]:
    """LaTeX of the exact value and of its decimals (None when it has none).

    The natural logarithm prints as ``\\ln`` (as the prose writes it): a bare ``log`` reads as base 10
    to many readers.
    """
    value = sp.sympify(value)
    exact = sp.latex(value, ln_notation=True)
    if not _needs_decimals(value):
        return exact, None
    to_decimal = lambda e: e if e.is_Integer else e.evalf(digits)   # exact integers stay as they are
    rounded = value.applyfunc(to_decimal) if isinstance(value, sp.MatrixBase) else to_decimal(value)
    return exact, sp.latex(rounded)


def latex_with_decimals(name: str, value, digits: int = 6) -> str:
    """LaTeX for ``name = value``, followed by ``≈ decimals`` when the value has any."""
    exact, decimals = _exact_and_decimals(value, digits)
    if decimals is None:
        return f"{name} = {exact}"
    return rf"\begin{{aligned}} {name} &= {exact} {_ROW_GAP} &\approx {decimals} \end{{aligned}}"


def show(*pairs, digits: int = 6) -> None:
    """Display name = value formulas side by side, each with its decimals: show("A", A, "O", O).

    Several pairs are one aligned display: the exact values share a line, and so do their decimals."""
    from IPython.display import Math, display

    if len(pairs) % 2:
        raise AttentionInputError(_("show takes name, value pairs; got {count} arguments").format(count=len(pairs)))
    names, values = pairs[::2], pairs[1::2]
    if len(names) == 1:
        display(Math(latex_with_decimals(names[0], values[0], digits)))
        return
    parts = [_exact_and_decimals(v, digits) for v in values]
    if all(decimals is None for _exact, decimals in parts):
        display(Math(r",\qquad ".join(f"{n} = {exact}" for n, (exact, _d) in zip(names, parts))))
        return
    last = len(names) - 1
    gap = lambda i: r",\qquad" if i < last else ""
    top = " & ".join(f"{n} &= {exact}{gap(i)}" for i, (n, (exact, _d)) in enumerate(zip(names, parts)))
    bottom = " & ".join(rf"&\approx {d}" + r"\qquad" * (i < last) if d is not None else "&"
                        for i, (_e, d) in enumerate(parts))
    display(Math(rf"\begin{{aligned}} {top} {_ROW_GAP} {bottom} \end{{aligned}}"))


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def scientific(x, digits: int = 1) -> str:
    """``x`` as ``1.2 × 10⁻⁷`` (``digits`` after the point), joined by no-break spaces; NaN as "—"."""
    x = float(x)
    if np.isnan(x):
        return "—"
    if not np.isfinite(x):
        return "∞" if x > 0 else "−∞"
    mantissa, exponent = f"{x:.{digits}e}".split("e")
    mantissa = mantissa.replace("-", "−")                     # a minus sign, not a hyphen
    if int(exponent) == 0:
        return mantissa
    return f"{mantissa}\u00a0×\u00a010{str(int(exponent)).translate(_SUPERSCRIPT)}"


_WORDS = {   # (all NaN, all zeros, all finite, some NaN or infinite)
    "block": (N_("a block of NaN"), N_("a block of zeros"), N_("finite numbers"),
              N_("numbers, some of them not finite")),
    "row": (N_("a row of NaN"), N_("a row of zeros"), N_("a finite nonzero row"),
            N_("a row with entries that are not finite")),
}


def in_words(values, shape: str = "block") -> str:
    """What ``values`` (array or tensor) is, in words: "a block of NaN", "a row of zeros", ..."""
    if shape not in _WORDS:
        raise AttentionInputError(_("in_words: shape must be one of {names}; got {shape!r}").format(
            names=tuple(_WORDS), shape=shape))
    if hasattr(values, "detach"):                                     # a torch tensor
        values = values.detach().cpu().numpy()
    arr = np.asarray(values, dtype=float)
    nan, zeros, finite, mixed = _WORDS[shape]
    if arr.size and np.isnan(arr).all():
        return _(nan)
    if arr.size and (arr == 0).all():
        return _(zeros)
    return _(finite) if np.isfinite(arr).all() else _(mixed)


def column(text: str, width: int, align: str = ">") -> str:
    """``text`` padded with spaces to ``width`` columns of monospaced output, right-aligned (``">"``)
    or left-aligned (``"<"``); a wide (CJK) character counts two columns. Longer text is kept whole."""
    if align not in (">", "<"):
        raise AttentionInputError(_("align must be '>' or '<'; got {align!r}").format(align=align))
    pad = " " * max(0, width - display_width(str(text)))
    return pad + str(text) if align == ">" else str(text) + pad


def glue(name: str, value, display: bool = False) -> None:
    """``myst_nb.glue(name, value)`` for the edition being built: a string through the pages catalog
    (``attnlab.i18n.page_text``, a template's output included), anything else as it is."""
    from myst_nb import glue as myst_glue

    myst_glue(name, page_text(value) if isinstance(value, str) else value, display=display)
