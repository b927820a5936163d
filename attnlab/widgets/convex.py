"""``convex_combination_explorer``: the output is a convex combination of the allowed values."""
from __future__ import annotations

import html

import ipywidgets as W
import numpy as np

from ..i18n import _
from . import state as st
from ._base import Explorer, Frames, frame, product_frames, table
from ._svg import ALLOWED_COLOR, GRAY, Panel, Svg

QUERY_COLOR = "#2f855a"
HULL_FILL = "#e6edf5"        # ALLOWED_COLOR at 12 % opacity on white, as in plots.convex_picture


def draw(s: st.ConvexState) -> str:
    """Values, their hull, the query arrow and the output (left, like plots.convex_picture); bars (right)."""
    svg = Svg(720, 320, alt=alt(s))
    p = Panel(svg, 58, 34, 340, 250, xlim=(-2.6, 2.6), ylim=(-2.0, 2.4), equal=True)
    title = (_("no allowed value: error") if s.error
             else _("output o = Σ a_j v_j   (τ = {tau})").format(tau=f"{s.temperature:g}"))
    if len(s.hull) >= 3:
        svg.polygon([(p.X(x), p.Y(y)) for x, y in s.hull], fill=HULL_FILL, stroke=ALLOWED_COLOR, sw=1)
    elif len(s.hull) == 2:
        svg.polyline([(p.X(x), p.Y(y)) for x, y in s.hull], stroke=ALLOWED_COLOR, sw=3, opacity=0.5)
    p.axes(title=title, xticks=[-2, -1, 0, 1, 2], yticks=[-2, -1, 0, 1, 2])
    svg.arrow(p.X(0), p.Y(0), p.X(s.query[0]), p.Y(s.query[1]), stroke=QUERY_COLOR, sw=1.8)
    mid = s.query * 0.5 + 0.18 * np.array([-s.query[1], s.query[0]]) / max(np.linalg.norm(s.query), 1e-9)
    svg.text(p.X(mid[0]), p.Y(mid[1]), "q", color=QUERY_COLOR, size=12, italic=True)
    for j, (x, y) in enumerate(s.values):
        if s.allowed[j]:
            svg.circle(p.X(x), p.Y(y), 1.2 * np.sqrt(40 + 400 * s.weights[j]) / 2, fill=ALLOWED_COLOR)
        else:
            svg.circle(p.X(x), p.Y(y), 4.5, fill="white", stroke=GRAY, sw=1.2)
        svg.text(p.X(x) + 9, p.Y(y) - 9, f"v{j + 1}", size=11, anchor="start", italic=True,
                 color="black" if s.allowed[j] else GRAY)
    if s.output is not None:
        svg.star(p.X(s.output[0]), p.Y(s.output[1]), 9)
    legend = [(_("hull of allowed values"), "hull"), (_("values (size = weight)"), "dot"), (_("output o"), "star")]
    for k, (label, kind) in enumerate(legend):
        lx, ly = p.x + 8, p.y + 10 + 14 * k
        if kind == "hull":
            svg.rect(lx - 5, ly - 5, 10, 10, fill=HULL_FILL, stroke=ALLOWED_COLOR, sw=0.8)
        elif kind == "dot":
            svg.circle(lx, ly, 4, fill=ALLOWED_COLOR)
        else:
            svg.star(lx, ly, 6)
        svg.text(lx + 10, ly, label, size=9, anchor="start")
    b = Panel(svg, 480, 34, 220, 250, xlim=(-0.6, len(s.values) - 0.4), ylim=(0, 1.12))
    b.axes(title=_("weights a_j"), xticks=[], yticks=[0, 0.2, 0.4, 0.6, 0.8, 1.0])
    for j, w in enumerate(s.weights):
        x0, x1 = b.X(j - 0.38), b.X(j + 0.38)
        if s.allowed[j]:
            svg.rect(x0, b.Y(w), x1 - x0, b.Y(0) - b.Y(w), fill=ALLOWED_COLOR)
            svg.text((x0 + x1) / 2, b.Y(w) - 7, f"{w:.2f}", size=9)
        else:
            svg.text((x0 + x1) / 2, b.Y(0) - 30, _("masked"), size=9, rotate=-90, color=GRAY)
        svg.text((x0 + x1) / 2, b.Y(0) + 13, f"v{j + 1}", size=11, italic=True)
    return str(svg)


def alt(s: st.ConvexState) -> str:
    """What the picture shows, in words."""
    if s.error:
        return _("Five values as points in the plane, every one masked: no hull and no output. "
                 "Beside them, no weight bars.")
    masked = [f"v{j + 1}" for j in range(len(s.values)) if not s.allowed[j]]
    text = _("Left: five values as points in the plane, dot size growing with the weight, the hull of the "
             "allowed values shaded, the query as an arrow from the origin and the output as a star inside the "
             "hull. Right: a bar for each value's weight.")
    if masked:
        text += " " + _("Masked, drawn hollow and without a bar: {names}.").format(names=", ".join(masked))
    return text


def reading(s: st.ConvexState) -> str:
    """The state in one sentence: the query, the temperature, every weight and the output."""
    angle = float(np.degrees(np.arctan2(s.query[1], s.query[0]))) % 360        # in [0°, 360°)
    if s.error:
        return _("query at {angle}°, τ = {tau}: every key is masked, no output (error)").format(
            angle=f"{angle:.0f}", tau=f"{s.temperature:g}")
    return _("query at {angle}°, τ = {tau}: weights {weights}; output ({o0}, {o1})").format(
        angle=f"{angle:.0f}", tau=f"{s.temperature:g}",
        weights=", ".join(f"{w:.2f}" if ok else _("masked") for w, ok in zip(s.weights, s.allowed)),
        o0=f"{s.output[0]:.2f}", o1=f"{s.output[1]:.2f}")


def describe(s: st.ConvexState) -> str:
    if s.error:
        return ("<div style='color:#c53030'>" + _("Every key is masked: {error}").format(error=html.escape(s.error))
                + "</div>")
    d_vertex = float(np.linalg.norm(s.output - s.values[s.argmax]))
    d_centroid = float(np.linalg.norm(s.output - s.centroid))
    masked = _("masked")
    rows = [(_("key j"), [str(j + 1) for j in range(len(s.values))]),
            (_("logit q·k_j/τ"), [f"{x:.2f}" if ok else masked for x, ok in zip(s.logits, s.allowed)]),
            (_("weight a_j"), [f"{w:.3f}" for w in s.weights])]
    n = int(s.allowed.sum())
    return (_("q = ({q0}, {q1}); τ = {tau} (the same as scaling by 1/√d_k with d_k = τ² = {d_k}); "
              "keys = values.").format(q0=f"{s.query[0]:.2f}", q1=f"{s.query[1]:.2f}", tau=f"{s.temperature:g}",
                                       d_k=f"{s.equivalent_d_k:g}")
            + "<br>" + table(rows)
            + _("output o = ({o0}, {o1}), inside the hull of the {n} allowed values; distance to v_{j} (largest "
                "logit, the τ → 0 limit) = {d_vertex}; to their centroid (the τ → ∞ limit) = {d_centroid}; "
                "entropy of the weights = {entropy} nats (max ln {n} = {max_entropy}).").format(
                o0=f"{s.output[0]:.3f}", o1=f"{s.output[1]:.3f}", n=n, j=s.argmax + 1, d_vertex=f"{d_vertex:.3f}",
                d_centroid=f"{d_centroid:.3f}", entropy=f"{s.entropy:.3f}", max_entropy=f"{np.log(n):.3f}"))


def _compute(angle, length, log10_temperature, masked):
    return st.convex_state(angle, length, 10.0 ** log10_temperature, masked)


def convex_combination_explorer(offline: bool = False):
    """Move a query and a temperature; watch the output walk inside the hull of the values.

    Five 2-D values (the keys are the values themselves, so the query points at the value it
    prefers). The output sum_j a_j v_j always lies in the convex hull of the allowed values:
    a low temperature walks it to the value with the largest logit, a high one to the
    centroid; masking a key removes its vertex.

    ``offline=True`` returns precomputed frames (8 directions x 4 temperatures x 3 masks),
    switched in the browser (works in the static HTML book without a kernel).
    """
    if offline:
        return _offline()
    style = {"description_width": "initial"}
    c = {
        "angle": W.FloatSlider(value=20, min=-180, max=180, step=5, description=_("query angle (°)"), style=style),
        "length": W.FloatSlider(value=1.5, min=0.0, max=3.0, step=0.1, description=_("query length"), style=style),
        "log10_temperature": W.FloatSlider(value=0.0, min=-1.5, max=1.5, step=0.1, readout_format=".1f",
                                           description="log₁₀ τ", style=style),
        "masked": W.SelectMultiple(options=[(f"v{j + 1}", j) for j in range(len(st.CONVEX_VALUES))], value=(),
                                   description=_("masked keys"), rows=5, style=style, layout=W.Layout(width="160px")),
    }
    rows = [W.HBox([W.VBox([c["angle"], c["length"], c["log10_temperature"]]), c["masked"]])]
    return Explorer("convex_combination_explorer", c, _compute, draw, describe, rows, read=reading)


OFFLINE_ANGLES = (0, 45, 90, 135, 180, 225, 270, 315)
OFFLINE_TEMPERATURES = (0.1, 0.5, 2.0, 10.0)
OFFLINE_MASKS = ((), (0,), (0, 1))


def _offline() -> Frames:
    style = {"description_width": "initial"}
    angle = W.SelectionSlider(options=[f"{a}°" for a in OFFLINE_ANGLES], index=1, description=_("query angle"),
                              style=style)
    temp = W.SelectionSlider(options=[f"{t:g}" for t in OFFLINE_TEMPERATURES], index=2,
                             description=_("temperature τ"),
                             style=style)
    mask = W.ToggleButtons(options=[_("no mask"), _("mask v1"), _("mask v1, v2")], index=0, description="",
                           style={"button_width": "auto"})
    states = {}

    def leaf(idx):
        s = st.convex_state(OFFLINE_ANGLES[idx[0]], 1.5, OFFLINE_TEMPERATURES[idx[1]], OFFLINE_MASKS[idx[2]])
        states[idx] = s
        return frame(draw, describe, s, reading)

    body = product_frames([angle, temp, mask], leaf)
    return Frames("convex_combination_explorer", [W.HBox([angle, temp]), mask, body],
                  {"angle": angle, "temperature": temp, "masked": mask}, states)
