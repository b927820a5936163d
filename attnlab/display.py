"""Showing exact values in a notebook: the closed form and, beneath it, its decimals.

``show("A", A, "O", O)`` displays each SymPy value as ``A = <closed form> ≈ <decimals>``, the
decimals on their own line so that wide matrices still fit the page. Values that are already
integers, and expressions with free symbols, are shown without decimals.
"""

from __future__ import annotations

import sympy as sp

from .errors import AttentionInputError
from .i18n import _


def _needs_decimals(value) -> bool:
    entries = list(value) if isinstance(value, sp.MatrixBase) else [value]
    return all(not e.free_symbols for e in entries) and not all(e.is_Integer for e in entries)


def latex_with_decimals(name: str, value, digits: int = 6) -> str:
    """LaTeX for ``name = value``, followed by ``≈ decimals`` when the value has any."""
    value = sp.sympify(value)
    exact = sp.latex(value)
    if not _needs_decimals(value):
        return f"{name} = {exact}"
    to_decimal = lambda e: e if e.is_Integer else e.evalf(digits)   # exact integers stay as they are
    rounded = value.applyfunc(to_decimal) if isinstance(value, sp.MatrixBase) else to_decimal(value)
    decimals = sp.latex(rounded)
    return rf"\begin{{aligned}} {name} &= {exact} \\ &\approx {decimals} \end{{aligned}}"


def show(*pairs, digits: int = 6) -> None:
    """Display name = value formulas side by side, each with its decimals: show("A", A, "O", O)."""
    from IPython.display import Math, display

    if len(pairs) % 2:
        raise AttentionInputError(_("show takes name, value pairs; got {count} arguments").format(count=len(pairs)))
    parts = [latex_with_decimals(n, v, digits) for n, v in zip(pairs[::2], pairs[1::2])]
    display(Math(r",\qquad ".join(parts)))
