"""Run a page's cells in the reader's browser, as Jupyter would, for the book's "Run the code" mode.

The HTML book's script ``_assets/live-code.js`` starts Pyodide (CPython compiled to WebAssembly) in a
Web Worker, installs this package, and hands each cell to :func:`run_cell`, which returns what Jupyter
would show under it as a list of outputs, one dict each:

- ``{"kind": "stream", "text": ...}``: what the cell printed (stdout and stderr, in order);
- ``{"kind": "display", "data": {mime type: content}}``: the value of the cell's last expression (as
  Jupyter shows it, unless the line ends with ``;``), each ``display(...)``, and every figure left open,
  drawn as a PNG (base64) the way the book draws it (translated, legible, with its description);
- ``{"kind": "error", "text": ...}``: the exception, with the traceback through the cell's own lines;
- ``{"kind": "note", "text": ...}``: a line that shows nothing, skipped because its library does not
  run here (see :meth:`Page._execute`).

The cells share one namespace, as in a notebook. ``print``, ``display`` and tables speak the
edition's language (``attnlab.edge``), as they do when the book is built.

Some libraries the book uses cannot run in a browser (PyTorch, transformers, Triton; the page marks
the cells that need them, ``attnlab.live_cells``). :func:`install_browser_modules` makes their imports
succeed with a stand-in whose every use raises :class:`UnavailableHere`, saying so in plain words: a
page's first cell imports torch beside numpy, and the NumPy cells after it should still run.
"""
from __future__ import annotations

import ast
import base64
import builtins
import importlib.abc
import importlib.machinery
import importlib.util
import io
import linecache
import sys
import traceback
import types
from contextlib import redirect_stderr, redirect_stdout

from .i18n import _, get_language
from .live_cells import UNAVAILABLE, Tracker, bound_names, import_runs

_current: dict[str, Page] = {}   # "page": the page whose cells run now; IPython.display's display shows there
MIME_ORDER = ("text/html", "image/svg+xml", "image/png", "text/latex", "text/markdown")


class UnavailableHere(ImportError):
    """A library that does not run in the browser was used; ``library`` names it."""

    def __init__(self, library: str):
        super().__init__(_("{library} does not run in the browser, so this line cannot run here; the book's own "
                           "output of such a cell was computed with it. Run the page in Jupyter to use it.").format(
            library=library))
        self.library = library


def stand_in(name: str, library: str) -> type:
    """A stand-in for ``name``, a thing of ``library``: its attributes are stand-ins, and calling it raises."""
    return _StandIn(name, (), {"_library": library})


def _library(module: str) -> str:
    return UNAVAILABLE[module.split(".")[0]]


class _StandIn(type):
    """The class of a stand-in: any attribute is another stand-in, and calling one raises."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return stand_in(f"{cls.__name__}.{name}", cls._library)

    def __call__(cls, *args, **kwargs):
        raise UnavailableHere(cls._library)


class _UnavailableModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return stand_in(f"{self.__name__}.{name}", _library(self.__name__))


class _UnavailableFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in UNAVAILABLE:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _UnavailableModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def install_browser_modules() -> None:
    """In the browser only (call it there): ``import torch`` and the like succeed with stand-ins, and
    where IPython is missing, ``IPython.display`` is :func:`ipython_display` (the book's cells and
    ``attnlab.display`` use its ``display``, ``Math`` and ``Markdown``)."""
    if not any(isinstance(f, _UnavailableFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _UnavailableFinder())    # first: where torch is installed, as if it were not
    if importlib.util.find_spec("IPython") is None:
        ipython = types.ModuleType("IPython")
        ipython.display = sys.modules["IPython.display"] = ipython_display()
        ipython.get_ipython = lambda: None    # not a kernel: attnlab.edge and attnlab.plots install nothing
        sys.modules["IPython"] = ipython


class _Shown:
    """IPython's rich-display objects, each holding a text shown as one mime type."""

    def __init__(self, data: str = ""):
        self.data = data

    def __repr__(self):
        return f"<{type(self).__name__} object>"


def ipython_display() -> types.ModuleType:
    """A module with IPython.display's ``display``, ``HTML``, ``Markdown``, ``Math`` and ``Latex``."""
    module = types.ModuleType("IPython.display")
    module.display = lambda *values, **kwargs: _current["page"].display(*values)
    module.HTML = type("HTML", (_Shown,), {"_repr_html_": lambda self: self.data})
    module.Markdown = type("Markdown", (_Shown,), {"_repr_markdown_": lambda self: self.data})
    module.Math = type("Math", (_Shown,), {"_repr_latex_": lambda self: f"$\\displaystyle {self.data.strip('$')}$"})
    module.Latex = type("Latex", (_Shown,), {"_repr_latex_": lambda self: self.data})
    return module


def _png(fig) -> dict:
    from . import edge, plots
    edge.translate_figure(fig)
    plots.make_legible(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    data = {"image/png": base64.b64encode(buffer.getvalue()).decode("ascii")}
    alt = plots.figure_alt(fig)
    if alt:
        data["text/plain"] = alt
    return data


def mime_bundle(value) -> dict:
    """What Jupyter would show for ``value``: its rich representations and its ``repr``."""
    from matplotlib.figure import Figure

    from . import edge
    if isinstance(value, Figure):
        return _png(value)
    value = edge.shown(value) if get_language() != "en" else value
    data = {}
    if hasattr(value, "_repr_mimebundle_"):
        bundle = value._repr_mimebundle_()
        data.update(bundle[0] if isinstance(bundle, tuple) else bundle)
    for mime, method in zip(MIME_ORDER, ("_repr_html_", "_repr_svg_", "_repr_png_", "_repr_latex_",
                                         "_repr_markdown_")):
        if mime not in data and hasattr(value, method) and not isinstance(value, type):
            shown = getattr(value, method)()
            if shown is not None:
                data[mime] = shown[0] if isinstance(shown, tuple) else shown
    if "text/markdown" in data and get_language() != "en":
        data["text/markdown"] = edge.shown(data["text/markdown"])
    data["text/plain"] = repr(value)
    return data


class Page:
    """The namespace and outputs of one page's cells."""

    def __init__(self):
        from . import edge
        self.namespace = {"__name__": "__main__", "__builtins__": builtins, "display": self.display,
                          "print": edge.edition_print}
        self.outputs: list[dict] = []
        self.count = 0
        self.tracker = Tracker()     # which statements the browser skips
        _current["page"] = self

    def display(self, *values) -> None:
        for value in values:
            self.outputs.append({"kind": "display", "data": mime_bundle(value)})

    def _write(self, text: str) -> int:
        if self.outputs and self.outputs[-1]["kind"] == "stream":
            self.outputs[-1]["text"] += text
        else:
            self.outputs.append({"kind": "stream", "text": text})
        return len(text)

    def run_cell(self, source: str) -> list[dict]:
        """Run ``source`` in the page's namespace; the outputs it produced (see the module docstring)."""
        import matplotlib.pyplot as plt

        self.count += 1
        self.outputs = []
        name = f"<cell {self.count}>"
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)
        stream = types.SimpleNamespace(write=self._write, flush=lambda: None)
        try:
            with redirect_stdout(stream), redirect_stderr(stream):
                self._execute(source, name)
        except BaseException as err:   # the reader's code: every error is an output, never the runtime's
            self.outputs.append({"kind": "error", "text": _cell_traceback(err, name)})
        for number in plt.get_fignums():
            self.outputs.append({"kind": "display", "data": _png(plt.figure(number))})
        plt.close("all")
        return self.outputs

    def _skip(self, statement: ast.stmt, library: str, name: str) -> None:
        """Bind stand-ins for what ``statement`` would have made, and say so. Of an import, only the names
        that need ``library`` (``traffic`` of ``from attnlab import occupancy, traffic``) are stand-ins."""
        for target in bound_names(statement):
            self.namespace[target] = stand_in(target, library)
        if isinstance(statement, ast.Import | ast.ImportFrom):
            for single in _single_imports(statement):
                if not import_runs(single):
                    exec(compile(ast.Module([single], []), name, "exec"), self.namespace)
        self.outputs.append({"kind": "note", "text": _("Line {line} was skipped: {why}").format(
            line=statement.lineno, why=UnavailableHere(library))})

    def _execute(self, source: str, name: str) -> None:
        """The cell's statements one by one, as Jupyter runs them, with one difference: a statement that
        needs a library the browser lacks and shows nothing is skipped with a note, its names becoming
        stand-ins that say why when used: a setup call of the library (``torch.manual_seed(0)``) or
        one that only binds names (``attnlab.live_cells.binds_only``: ``f64 = torch.float64``, ``from attnlab.decoder
        import patterns``). Which statements those are, ``attnlab.live_cells`` decides, as it did for the
        build, following the names from the cells run before."""
        body = ast.parse(source, name).body
        skipped = self.tracker.judge(source).skipped
        for index, statement in enumerate(body):
            if index in skipped:
                self._skip(statement, skipped[index], name)
            elif statement is body[-1] and isinstance(statement, ast.Expr):
                value = eval(compile(ast.Expression(statement.value), name, "eval"), self.namespace)
                if value is not None and not source.rstrip().endswith(";"):
                    self.display(value)
            else:
                exec(compile(ast.Module([statement], []), name, "exec"), self.namespace)


def _single_imports(statement: ast.Import | ast.ImportFrom) -> list[ast.stmt]:
    """``from attnlab import occupancy, traffic`` as two imports."""
    make = (lambda alias: ast.Import(names=[alias])) if isinstance(statement, ast.Import) else \
        (lambda alias: ast.ImportFrom(module=statement.module, names=[alias], level=statement.level))
    return [ast.fix_missing_locations(ast.copy_location(make(alias), statement)) for alias in statement.names]


def _cell_traceback(err: BaseException, name: str) -> str:
    """The traceback from the cell's first frame on (the runtime's own frames left out)."""
    frames = traceback.extract_tb(err.__traceback__)
    first = next((i for i, frame in enumerate(frames) if frame.filename == name), len(frames))
    lines = traceback.format_list(frames[first:])
    return "".join((["Traceback (most recent call last):\n"] + lines if lines else [])
                   + traceback.format_exception_only(type(err), err))
