"""Translation at the edge: a page's code is plain English Python, and its text is translated
where it leaves the code.

A chapter's cell is what a student would write::

    print(f"worst error {err:.1e}")
    print("'cat' seen through slot 3:", x)
    ax.set_title("its weights")
    al.plots.heatmap(ax, w, title="weights")
    display(pd.DataFrame(rows))

In English nothing happens to it; copied into a fresh notebook it runs as it reads. In a kernel
whose language is Chinese (``ATTNLAB_LANG=zh_CN``, as the Chinese edition executes its pages),
:func:`install` (called by ``attnlab.plots.book_style``, the first cell of every page) makes the
text that leaves the code speak the edition's language, through the pages catalog
(``attnlab.i18n.page_text``, which finds a formatted text by the template it came from):

- ``print``: each string argument, a label, an f-string's output or a line of a table (the
  kernel's namespace gets a ``print`` that does this; ``builtins.print`` is left alone);
- ``display(Markdown(...))``: its text; pandas tables: their labels and string cells;
- figures: every text of a figure (titles, axis and tick labels, legends, annotations) when the
  figure is drawn into its PNG (:func:`translate_figure`, called by ``book_style``'s formatter);
- glue: ``attnlab.display.glue(name, value)`` in a hidden cell, a text in the edition's language.

Printing goes argument by argument rather than line by line: the arguments are the units the
author wrote (a label, a value), while a line of output may mix them with the lines of an array.

The strings themselves are collected from the pages' code by ``python -m bookbuild translations``
(``bookbuild.i18n.page_strings``) into ``attnlab/locale/<lang>/LC_MESSAGES/pages.po``.
"""
from __future__ import annotations

import builtins

from matplotlib.ticker import Formatter

from .i18n import get_language, page_table, page_text


def shown(value):
    """``value`` as a page shows it in the current language: a string through ``page_text``, a
    pandas table through ``page_table``; anything else as it is."""
    if isinstance(value, str):
        return page_text(value)
    if type(value).__module__.startswith("pandas") and hasattr(value, "index"):
        return page_table(value)
    return value


def edition_print(*args, **kwargs) -> None:
    """``print``, with each argument in the current language (see :func:`shown`)."""
    if get_language() != "en":
        args = tuple(shown(a) for a in args)
    builtins.print(*args, **kwargs)


def _markdown(obj):
    data = obj._repr_markdown_()
    if isinstance(data, tuple):
        data = data[0]
    return page_text(data) if isinstance(data, str) else data


def _table_html(table) -> str:
    return page_table(table)._repr_html_()


def _table_text(table, printer, cycle) -> None:        # IPython's plain-text printers write to ``printer``
    printer.text(repr(page_table(table)))


def install(shell=None) -> bool:
    """In an IPython kernel whose language is not English: print, Markdown and pandas tables in the
    current language. Returns whether it installed anything (not in English, not outside a kernel)."""
    if get_language() == "en":
        return False
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return False
    shell.user_ns["print"] = edition_print
    formatters = shell.display_formatter.formatters
    from IPython.display import Markdown
    formatters["text/markdown"].for_type(Markdown, _markdown)
    # by name, so pandas is not imported for it (pandas 3 names its module "pandas", older ones "pandas.core.*")
    for module, name in (("pandas", "DataFrame"), ("pandas", "Series"), ("pandas.core.frame", "DataFrame"),
                         ("pandas.core.series", "Series")):
        formatters["text/plain"].for_type_by_name(module, name, _table_text)
        if name == "DataFrame":
            formatters["text/html"].for_type_by_name(module, name, _table_html)
    return True


def translate_figure(fig) -> None:
    """Every text of ``fig`` in the current language: its texts now, its tick labels when drawn."""
    if get_language() == "en":
        return
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        old = text.get_text()
        if old and old.strip():
            new = page_text(old)
            if new != old:
                text.set_text(new)
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if not isinstance(axis.get_major_formatter(), _Translated):
                axis.set_major_formatter(_Translated(axis.get_major_formatter()))
            if not isinstance(axis.get_minor_formatter(), _Translated):
                axis.set_minor_formatter(_Translated(axis.get_minor_formatter()))


class _Translated(Formatter):
    """A tick formatter whose labels are ``inner``'s, in the current language."""

    def __init__(self, inner: Formatter):
        self.inner = inner

    def set_axis(self, axis):
        super().set_axis(axis)
        self.inner.set_axis(axis)

    def __call__(self, x, pos=None):
        return shown(self.inner(x, pos))

    def format_ticks(self, values):           # a fixed formatter's labels need not be strings
        return [shown(label) for label in self.inner.format_ticks(values)]

    def set_locs(self, locs):
        self.inner.set_locs(locs)

    def get_offset(self):
        return self.inner.get_offset()

    def format_data(self, value):
        return self.inner.format_data(value)

    def format_data_short(self, value):
        return self.inner.format_data_short(value)
