"""Plumbing shared by the explorers: the live explorer and the precomputed (offline) one.

A live explorer (``Explorer``) wires controls to a pure state function and, on every change,
redraws an SVG picture into an ``ipywidgets.HTML``; it needs a running kernel. An offline
explorer (``Frames``) draws every combination of a few discrete control values once, stacks
the frames in ``ipywidgets.Stack`` widgets, and links each control's ``index`` to a stack's
``selected_index`` with ``jslink``: the browser switches frames by itself, so it works in the
static HTML book, where no kernel runs.

Both say what they show in words: the picture carries its description (``Svg(alt=...)``), and
every state has a reading, one sentence of its numbers (``read``), kept visually hidden in a
``role="status"`` element beside the readout. A screen reader announces it when the state
changes: in Jupyter as the readout is redrawn, in the HTML book through one live region per
explorer (``_assets/explorer-access.js``, which also names the sliders' handles).
"""
from __future__ import annotations

import base64
import html
import re
from typing import Callable

import ipywidgets as W

from ..i18n import N_, _

LIVE_NOTE = N_("Live explorer, computed in Python: the controls respond in Jupyter (<code>make lab</code>, "
             "then open this page as a notebook); a static page shows its initial state.")
OFFLINE_NOTE = N_("Precomputed frames: the controls work without a kernel, also in the HTML book. "
                "For every parameter value, run <code>al.widgets.{name}()</code> in Jupyter (<code>make lab</code>).")


STATIC_CAPTION = N_("*Above: the initial state of `{name}`, a static picture. The interactive version is in the "
                  "HTML book, and live in Jupyter (`make lab`).*")
_SVG = re.compile(r"<svg\b.*?</svg>", re.DOTALL)
_TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)


# visually hidden, still read by a screen reader (inline: Jupyter has no stylesheet of the book's)
SCREEN_READER_ONLY = ("position:absolute;width:1px;height:1px;margin:-1px;padding:0;border:0;overflow:hidden;"
                      "clip:rect(0 0 0 0);clip-path:inset(50%);white-space:nowrap")
EXPLORER_CLASS = "attnlab-explorer"     # the outer box of every explorer (the book's script looks for it)


def reading_html(text: str) -> str:
    """The reading of a state, one sentence for a screen reader: hidden on screen, announced on change."""
    return (f"<div class='attnlab-reading' role='status' aria-live='polite' style='{SCREEN_READER_ONLY}'>"
            f"{html.escape(text)}</div>")


def note(text: str) -> W.HTML:
    """The explorer's footer; its colours come from the page (class ``attnlab-note``, light and dark)."""
    return W.HTML(f"<div class='attnlab-note' style='font-size:0.85em;margin-top:4px;line-height:1.4'>"
                  f"{text}</div>")


def block(html_text: str) -> str:
    """Readout HTML in a div with normal line spacing (widget HTML inherits a 28 px line height)."""
    return f"<div class='attnlab-readout' style='line-height:1.45;margin-top:4px'>{html_text}</div>"


def table(rows: list[tuple[str, list[str]]], highlight: dict[tuple[int, int], str] | None = None) -> str:
    """A compact HTML table: each row is (header, cells); highlight[(r, c)] is a CSS colour."""
    highlight = highlight or {}
    out = ["<table style='border-collapse:collapse;font-size:0.8em;font-family:monospace;margin:4px 0;"
           "line-height:1.3' cellpadding=2>"]
    for r, (head, cells) in enumerate(rows):
        out.append(f"<tr><th align=left>{html.escape(head)}</th>")
        for c, cell in enumerate(cells):
            color = highlight.get((r, c))
            style = f" style='color:{color};font-weight:bold'" if color else ""
            out.append(f"<td align=right{style}>{html.escape(cell)}</td>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def visible_svgs(widget: W.Widget) -> list[str]:
    """The SVG pictures a reader sees before touching a control: all of a box, a stack's selected page."""
    if isinstance(widget, W.Stack):
        i = widget.selected_index
        return [] if i is None else visible_svgs(widget.children[i])
    if isinstance(widget, W.Box):
        return [svg for child in widget.children for svg in visible_svgs(child)]
    if isinstance(widget, W.HTML):
        return _SVG.findall(widget.value)
    return []


def svg_title(svg: str) -> str | None:
    """The description an SVG picture carries (its first ``<title>``), as plain text on one line."""
    match = _TITLE.search(svg)
    return " ".join(html.unescape(match.group(1)).split()) if match else None


class StaticPicture:
    """An explorer's display where no widget can run: its pictures of the initial state and a caption.

    Jupyter and the HTML book show the widget view (first in their mime order) and ignore the rest.
    The PDF book cannot show a widget: myst-nb's LaTeX order has no widget view, HTML or SVG but takes
    text/markdown before text/plain, so there the explorer is its initial SVG pictures (data URIs,
    converted for LaTeX by sphinxcontrib-svg2pdfconverter) with one caption line, instead of the
    ``VBox(children=(SelectionSlider(...`` repr.
    """

    name: str

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        data["text/plain"] = _("{name}: an interactive explorer (shown by a Jupyter front end)").format(name=self.name)
        images = [f"```{{image}} data:image/svg+xml;base64,{base64.b64encode(svg.encode()).decode()}\n"
                  f":alt: {svg_title(svg) or self.name}\n:align: center\n```" for svg in visible_svgs(self)]
        data["text/markdown"] = "\n\n".join([*images, _(STATIC_CAPTION).format(name=self.name)])
        return data


class Explorer(StaticPicture, W.VBox):
    """controls -> state (a pure function of the control values) -> picture (SVG) + readout.

    ``controls`` maps keyword names of ``compute`` to widgets. After every change,
    ``state`` holds what ``compute`` returned and ``readout.value`` the numbers shown; if
    ``compute`` refused the inputs, ``error`` holds its message and the picture is kept.
    ``refresh`` (optional) adjusts the controls themselves (visibility, ranges) first.
    """

    def __init__(self, name: str, controls: dict[str, W.Widget], compute: Callable, draw: Callable,
                 describe: Callable, control_rows: list, refresh: Callable | None = None,
                 read: Callable | None = None):
        self.name = name
        self.controls = controls
        self._compute, self._draw, self._describe, self._refresh = compute, draw, describe, refresh
        self._read = read
        self.picture = W.HTML()
        self.readout = W.HTML()
        self.message = W.HTML()
        self.state = None
        self.error: str | None = None
        self.updates = 0
        self.reading: str | None = None          # the state's reading, what a screen reader announces
        super().__init__([*control_rows, self.picture, self.message, self.readout, note(_(LIVE_NOTE))])
        self.add_class(EXPLORER_CLASS)
        for c in controls.values():
            c.observe(self._changed, names="value")
        self.update()

    def values(self) -> dict:
        return {k: c.value for k, c in self.controls.items()}

    def _changed(self, _change=None):
        self.update()

    def update(self):
        """Recompute the state and redraw (called by every control change)."""
        if self._refresh is not None:
            self._refresh(self)
        try:
            state = self._compute(**self.values())
        except ValueError as exc:
            self.error = str(exc)
            self.message.value = (f"<div class='attnlab-reading' role='status' style='color:#c53030'>"
                                  f"{html.escape(self.error)}</div>")
            return
        self.error = None
        self.message.value = ""
        self.state = state
        self.picture.value = self._draw(state)
        self.reading = self._read(state) if self._read is not None else None
        self.readout.value = block(self._describe(state)) + (reading_html(self.reading) if self.reading else "")
        self.updates += 1


def linked_stack(control: W.Widget, pages: list[W.Widget]) -> W.Stack:
    """A Stack showing page ``control.index``, switched in the browser by ``jslink``."""
    stack = W.Stack(pages, selected_index=control.index)
    stack._links = [W.jslink((control, "index"), (stack, "selected_index"))]
    return stack


def frame(draw: Callable, describe: Callable, state, read: Callable | None = None) -> W.HTML:
    """One precomputed frame: the picture, the readout and the reading of ``state`` in one HTML widget."""
    return W.HTML(draw(state) + block(describe(state)) + (reading_html(read(state)) if read is not None else ""))


def product_frames(controls: list[W.Widget], leaf: Callable[[tuple], W.Widget], prefix: tuple = ()) -> W.Widget:
    """Nested stacks over the options of ``controls`` (in order); ``leaf(indices)`` makes a frame."""
    if not controls:
        return leaf(prefix)
    pages = [product_frames(controls[1:], leaf, prefix + (i,)) for i in range(len(controls[0].options))]
    return linked_stack(controls[0], pages)


class Frames(StaticPicture, W.VBox):
    """An offline explorer: controls and nested stacks of precomputed frames.

    ``states[indices]`` is the state shown when the controls' indices are ``indices`` (for
    tests and for the reader who wants the numbers).
    """

    def __init__(self, name: str, children: list[W.Widget], controls: dict[str, W.Widget], states: dict):
        super().__init__([*children, note(_(OFFLINE_NOTE).format(name=name))])
        self.add_class(EXPLORER_CLASS)
        self.name = name
        self.controls = controls
        self.states = states
