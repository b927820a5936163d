"""``mask_explorer``: mask patterns, the weights they produce, and what happens to empty rows."""
from __future__ import annotations

import html

import ipywidgets as W
import numpy as np

from ..i18n import N_, _
from . import state as st
from ._base import Explorer, Frames, frame, linked_stack, product_frames, table
from ._svg import ALLOWED_COLOR, FORBIDDEN_COLOR, GRAY, RED, Svg, viridis

PATTERN_NAMES = {  # the short name of each pattern, in the pictures' titles
    "none": N_("none"), "padding": N_("padding"), "causal": N_("causal"), "causal+padding": N_("causal + padding"),
    "documents": N_("documents"), "sliding window": N_("sliding window"), "cached decoding": N_("cached decoding"),
}


def draw(s: st.MaskState) -> str:
    """Allowed grid (left, like plots.mask_grid) and weights with row sums (right, like plots.heatmap).

    Padding query rows are hatched (zero rows by design); a valid query that may read no
    key is outlined in red.
    """
    T, S = s.T, s.S
    cell = min(32.0, 250.0 / max(T, S))
    fs = 10 if max(T, S) <= 8 else 8
    top, lx = 42, 62
    gw, gh = cell * S, cell * T
    rx = lx + gw + 78
    svg = Svg(int(rx + gw + 70), int(top + gh + 48), alt=alt(s))
    rows = [str(p) for p in s.q_positions]
    heat_title = _("weights, mask AFTER softmax (wrong)") if s.after_softmax else _("weights (mask before softmax)")
    allowed_title = _("allowed: {pattern}").format(pattern=_(PATTERN_NAMES[s.pattern]))
    for x0, title in ((lx, allowed_title), (rx, heat_title)):
        svg.text(x0 + gw / 2, top - 22, title, size=11)
        svg.text(x0 + gw / 2, top + gh + 32, _("key position j"), size=10)
        for i in range(T):
            svg.text(x0 - 5, top + (i + 0.5) * cell, rows[i], size=fs, anchor="end")
        for j in range(S):
            svg.text(x0 + (j + 0.5) * cell, top + gh + 12, str(j), size=fs)
    svg.text(lx - 40, top + gh / 2, _("query position i"), size=10, rotate=-90)
    w = s.weights
    mid = 0.5                  # colours span [0, 1], so light text on the dark lower half
    annotate = T * S <= 64
    svg.group(stroke="white", stroke_width="1.5")                          # the grid, as plots.mask_grid
    for i in range(T):
        for j in range(S):
            svg.rect(
                lx + j * cell, top + i * cell, cell, cell, fill=ALLOWED_COLOR if s.allowed[i, j] else FORBIDDEN_COLOR
            )
    svg.end()
    for i in range(T):
        for j in range(S):
            svg.rect(rx + j * cell, top + i * cell, cell, cell, fill=viridis(w[i, j]))
    if annotate:
        svg.group(font_size=f"{min(9, cell / 3.4):.1f}")
        for i in range(T):
            for j in range(S):
                svg.text(rx + (j + 0.5) * cell, top + (i + 0.5) * cell, f"{w[i, j]:.2f}", size=None,
                         color="white" if w[i, j] < mid else "black")
        svg.end()
    svg.text(rx + gw + 6, top - 6, _("row sum"), size=9, anchor="start")
    for i, (status, total) in enumerate(zip(s.row_status, s.row_sums)):
        y = top + i * cell
        if status == "padding":
            for x0 in (lx, rx):
                svg.hatch(x0, y, gw, cell)
        elif status == "empty":
            for x0 in (lx, rx):
                svg.rect(x0 + 1, y + 1, gw - 2, cell - 2, stroke=RED, sw=2.5)
        if status == "empty" and not s.after_softmax:
            text, color = _("error"), RED
        elif status == "padding":
            text, color = _("0 (pad)"), GRAY
        else:
            text, color = f"{total:.2f}", RED if abs(total - 1.0) > 1e-9 else "black"
        svg.text(rx + gw + 6, y + cell / 2, text, size=fs, anchor="start", color=color)
    return str(svg)


def alt(s: st.MaskState) -> str:
    """What the picture shows, in words."""
    text = [_("Two grids of {T} queries by {S} keys for the mask \u201c{pattern}\u201d: on the left the allowed "
              "(query, key) pairs, filled; on the right the weights, each row with its sum.").format(
                  T=s.T, S=s.S, pattern=_(PATTERN_NAMES[s.pattern]))]
    if "padding" in s.row_status:
        text.append(_("Hatched rows are padding queries."))
    if "empty" in s.row_status:
        text.append(_("Rows outlined in red are valid queries that may read no key."))
    return " ".join(text)


def reading(s: st.MaskState) -> str:
    """The state in one sentence: the pattern, where the mask goes, the allowed pairs, every row's sum."""
    sums = [_("pad") if h == "padding" else (_("error") if np.isnan(x) or (h == "empty" and not s.after_softmax)
                                             else f"{x:.2f}")
            for h, x in zip(s.row_status, s.row_sums)]
    when = _("mask after softmax (wrong)") if s.after_softmax else _("mask before softmax")
    return _("{pattern}, {when}: {T} queries, {S} keys, {n_allowed} of {n_pairs} pairs allowed; "
             "row sums {sums}").format(pattern=_(PATTERN_NAMES[s.pattern]), when=when, T=s.T, S=s.S,
                                       n_allowed=int(s.allowed.sum()), n_pairs=s.T * s.S, sums=", ".join(sums))


def describe(s: st.MaskState) -> str:
    """Per-query table (position, keys readable, row sum, handling) and what the rows teach."""
    handled = {"ok": "softmax" if not s.after_softmax else "soft→mask", "padding": _("zero row"),
               "empty": _("ERROR") if not s.after_softmax else _("zeros!")}
    sums = [_("pad") if h == "padding" else (_("error") if np.isnan(x) else f"{x:.2f}")
            for h, x in zip(s.row_status, s.row_sums)]
    hl = {}
    for i, h in enumerate(s.row_status):
        if h == "empty":
            hl[(3, i)] = hl[(4, i)] = "#c53030"
        elif h == "ok" and abs(s.row_sums[i] - 1) > 1e-9:
            hl[(3, i)] = "#c53030"
    rows = [(_("query i"), [str(i) for i in range(s.T)]),
            (_("position"), [str(p) for p in s.q_positions]),
            (_("keys readable"), [str(n) for n in s.allowed.sum(axis=1)]),
            (_("row sum"), sums),
            (_("handled as"), [handled[h] for h in s.row_status])]
    lines = [_("<b>T = {T} queries, S = {S} keys</b>; {n_allowed} of {n_pairs} (query, key) pairs allowed; "
               "{n_pad} padding queries (zero rows by design).").format(
                 T=s.T, S=s.S, n_allowed=int(s.allowed.sum()), n_pairs=s.T * s.S,
                 n_pad=sum(h == "padding" for h in s.row_status)), table(rows, hl)]
    if s.error:
        lines.append("<div style='color:#c53030'>" + _(
            "The reference refuses this mask: <code>EmptyVisibilityError</code>: {error}").format(
            error=html.escape(s.error)) + "</div>")
    if s.after_softmax:
        short = [i for i, h in enumerate(s.row_status) if h != "padding" and abs(s.row_sums[i] - 1) > 1e-9]
        lines.append("<div>" + _(
            "Mask applied after the softmax: the forbidden keys took part in the normalisation, so {n} valid row(s) "
            "sum to less than 1 and the output shrinks; an empty row silently becomes zeros instead of an error. "
            "Renormalising afterwards repairs the non-empty rows but divides 0 by 0 in empty ones.").format(
            n=len(short)) + "</div>")
    return "".join(lines)


def _compute(pattern, T, S, offset, lengths, seq, side, pad_queries_valid, doc_ids, window, after_softmax):
    return st.mask_state(pattern, T=T, S=S, offset=offset, lengths=lengths, seq=seq, side=side,
                         pad_queries_valid=pad_queries_valid, doc_ids=doc_ids, window=window,
                         after_softmax=after_softmax)


_USES = {  # which parameter controls each pattern shows
    "none": {"T"}, "causal": {"T"}, "sliding window": {"T", "window"},
    "padding": {"T", "lengths", "seq", "side", "pad_queries_valid"},
    "causal+padding": {"T", "lengths", "seq", "side", "pad_queries_valid"},
    "documents": {"doc_ids"}, "cached decoding": {"T", "S", "offset"},
}


def _refresh(ex: Explorer) -> None:
    c = ex.controls
    used = _USES[c["pattern"].value]
    for name, w in c.items():
        if name not in ("pattern", "after_softmax"):
            w.layout.display = None if name in used else "none"
    c["offset"].description = _("offset (S−T = {gap})").format(gap=c["S"].value - c["T"].value)


def mask_explorer(offline: bool = False, pattern: str = "causal", T: int = 6):
    """Explore visibility masks: the allowed grid, the weights, and fully masked rows.

    Choose a pattern and its parameters; the left picture is the allowed grid (True = may
    read), the right one the weights of fixed random queries and keys, with each row's sum.
    Padding queries are hatched (zero rows by design); a valid query that may read nothing
    is outlined in red (the reference raises EmptyVisibilityError). The switch applies the
    mask after the softmax instead, and the row sums show what that breaks.

    ``offline=True`` returns precomputed frames for a few values per pattern, switched in
    the browser (works in the static HTML book without a kernel).
    """
    if offline:
        return _offline()
    style = {"description_width": "initial"}
    c = {
        "pattern": W.Dropdown(options=[(_(st.PATTERN_LABELS[p]), p) for p in st.PATTERNS], value=pattern,
                              description=_("pattern"), style=style),
        "T": W.IntSlider(value=T, min=1, max=16, description=_("T (queries)"), style=style),
        "S": W.IntSlider(value=8, min=1, max=16, description=_("S (keys)"), style=style),
        "offset": W.IntSlider(value=8 - T, min=-2, max=15, description=_("offset"), style=style),
        "lengths": W.Text(value="6, 4, 1, 0", description=_("lengths"), style=style),
        "seq": W.BoundedIntText(value=0, min=0, max=15, description=_("sequence b"), style=style,
                                layout=W.Layout(width="150px")),
        "side": W.ToggleButtons(options=[(_("right"), "right"), (_("left"), "left")], value="right",
                                description=_("padding side"),
                                style={"description_width": "initial", "button_width": "auto"}),
        "pad_queries_valid": W.Checkbox(value=False, description=_("padding queries count as valid"), style=style),
        "doc_ids": W.Text(value="0 0 0 1 1 2 -1 -1", description=_("doc ids (−1 = pad)"), style=style),
        "window": W.IntSlider(value=3, min=1, max=16, description=_("window"), style=style),
        "after_softmax": W.Checkbox(value=False, description=_("apply mask after softmax (wrong)"), style=style),
    }
    rows = [W.HBox([c["pattern"], c["after_softmax"]]),
            W.HBox([c["T"], c["S"], c["offset"], c["window"]], layout=W.Layout(flex_flow="row wrap")),
            W.HBox([c["lengths"], c["seq"], c["side"], c["pad_queries_valid"], c["doc_ids"]],
                   layout=W.Layout(flex_flow="row wrap"))]
    return Explorer("mask_explorer", c, _compute, draw, describe, rows, _refresh, read=reading)


# Offline frames: a few instructive values per pattern, T <= 8. An option's label is a message, or a
# (message, fields) pair formatted after translation.
SEQUENCE = N_("sequence {b}: length {n}")
OFFLINE_GRID = [  # (pattern, parameter label, [(option label, mask_state kwargs)])
    ("none", "T", [(str(t), {"T": t}) for t in (1, 3, 6)]),
    (
        "padding",
        N_("sequence of a right-padded batch (lengths 6, 4, 1, 0)"),
        [((SEQUENCE, {"b": b, "n": n}), {"T": 6, "seq": b}) for b, n in enumerate((6, 4, 1, 0))],
    ),
    ("causal", "T", [(str(t), {"T": t}) for t in (1, 2, 4, 6)]),
    (
        "causal+padding",
        N_("sequence of a left-padded batch (lengths 6, 4, 1, 0)"),
        [((SEQUENCE, {"b": b, "n": n}), {"T": 6, "seq": b, "side": "left"})
         for b, n in enumerate((6, 4, 1, 0))]
        + [(N_("sequence 2, pads counted as queries"),
            {"T": 6, "seq": 2, "side": "left", "pad_queries_valid": True})],
    ),
    (
        "documents",
        N_("doc ids"),
        [
            (" ".join(map(str, d)), {"doc_ids": d})
            for d in ((0, 0, 0, 1, 1, 1), (0, 0, 1, 1, 1, 2), (0, 1, 2, 3, 4, 5), (0, 0, 0, 1, -1, -1))
        ],
    ),
    ("sliding window", N_("window"), [(str(w), {"T": 6, "window": w}) for w in (1, 2, 3, 6)]),
    (
        "cached decoding",
        N_("offset (T=2 new queries, S=6 keys; S−T = 4 is right)"),
        [(str(o), {"T": 2, "S": 6, "offset": o}) for o in (-1, 0, 1, 2, 3, 4)],
    ),
]


# The option each pattern opens at: one that shows what the pattern does (the padding patterns
# open at a sequence with both real tokens and padding, not at length 0, an all-padding grid).
# Patterns not listed open at their last option.
OFFLINE_START = {"padding": 1, "causal+padding": 1, "documents": 1, "sliding window": 2}


def _option_label(label) -> str:
    """An option's label in the current language: a message, or a (message, fields) pair."""
    if isinstance(label, tuple):
        message, fields = label
        return _(message).format(**fields)
    return _(label)


def _offline() -> Frames:
    style = {"description_width": "initial"}
    pattern = W.Dropdown(options=[(_(st.PATTERN_LABELS[row[0]]), i) for i, row in enumerate(OFFLINE_GRID)],
                         value=2, description=_("pattern"), style=style)
    after = W.ToggleButtons(options=[_("mask before softmax"), _("mask after softmax (wrong)")], index=0,
                            description="", style={"button_width": "auto"})
    states, params, pages = {}, [], []
    for p_index, (name, label, options) in enumerate(OFFLINE_GRID):
        param = W.SelectionSlider(options=[_option_label(o) for o, kwargs in options],
                                  index=OFFLINE_START.get(name, len(options) - 1), description=_(label),
                                  style=style, layout=W.Layout(width="95%"), continuous_update=True)
        params.append(param)

        def leaf(idx, name=name, options=options, p_index=p_index):
            s = st.mask_state(name, after_softmax=bool(idx[1]), **options[idx[0]][1])
            states[(p_index, *idx)] = s
            return frame(draw, describe, s, reading)

        pages.append(W.VBox([param, product_frames([param, after], leaf)]))
    body = linked_stack(pattern, pages)
    return Frames("mask_explorer", [W.HBox([pattern, after], layout=W.Layout(flex_flow="row wrap")), body],
                  {"pattern": pattern, "after_softmax": after, "params": params}, states)
