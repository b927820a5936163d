"""``scaling_explorer``: why the scores are divided by sqrt(d_k)."""
from __future__ import annotations

import functools

import ipywidgets as W
import numpy as np

from ..i18n import N_, _
from . import state as st
from ._base import Explorer, Frames, frame, product_frames, table
from ._svg import ALLOWED_COLOR, Panel, Svg

UNSCALED_COLOR = "#c05621"
SCALED = N_("scaled by 1/√d_k")           # the toggle's values (what _compute compares); labels are translated
UNSCALED = N_("unscaled")
LOGIT_AXIS = 4 * np.sqrt(max(st.D_K_VALUES))   # the histogram's fixed x-range: 4 std of the widest logits


@functools.lru_cache(maxsize=4)
def _sweep(S: int, n: int):
    return st.scaling_sweep(S=S, n=n)


def draw(s: st.ScalingState) -> str:
    """Histogram of the logits with the N(0, sigma^2) density (left); softmax statistics vs d_k (right)."""
    svg = Svg(720, 300, alt=alt(s))    # the column's width at 1280 px: shown at its drawn size
    sigma = s.logit_std_theory
    lim = LOGIT_AXIS                             # the same x-axis for every d_k: the spread visibly grows
    half = min(lim, 4 * sigma)                   # bins and density curve where the logits are
    counts, edges = np.histogram(s.logits.ravel(), bins=40, range=(-half, half), density=True)
    peak = 1 / (sigma * np.sqrt(2 * np.pi))
    top = 1.15 * max(peak, counts.max())
    p = Panel(svg, 62, 34, 276, 210, xlim=(-lim, lim), ylim=(0, top))
    color = ALLOWED_COLOR if s.scaled else UNSCALED_COLOR
    for c, x0, x1 in zip(counts, edges[:-1], edges[1:]):
        svg.rect(p.X(x0), p.Y(c), p.X(x1) - p.X(x0), p.Y(0) - p.Y(c), fill=color, opacity=0.6)
    x = np.linspace(-half, half, 120)
    svg.polyline([(p.X(a), p.Y(b)) for a, b in zip(x, np.exp(-x ** 2 / (2 * sigma ** 2)) * peak)], sw=1.2)
    title = (_("logits, d_k = {d_k}, scaled by 1/√d_k") if s.scaled else _("logits, d_k = {d_k}, unscaled"))
    p.axes(title=title.format(d_k=s.d_k), xlabel=_("logit"), ylabel=_("density"), yfmt="{:.2g}")
    svg.text(p.x + p.w - 4, p.y + 8, f"— N(0, {sigma:.3g}²)", size=9, anchor="end")
    sweep = _sweep(s.S, s.logits.shape[0])
    d = np.array(st.D_K_VALUES)
    q = Panel(svg, 424, 34, 276, 210, xlim=(1, 512), ylim=(0, 1.05), xlog2=True)
    q.axes(title=_("means over {n} rows, S = {S}").format(n=s.logits.shape[0], S=s.S), xlabel="d_k",
           yticks=[0, 0.2, 0.4, 0.6, 0.8, 1.0], xticks=[1, 4, 16, 64, 256])
    curves = [(_("max weight, unscaled"), sweep[False]["max_weight"], UNSCALED_COLOR, "5,3", 1.0),
              (_("max weight, scaled"), sweep[True]["max_weight"], ALLOWED_COLOR, None, 1.0),
              (_("‖J‖_F, unscaled"), sweep[False]["jacobian_norm"], UNSCALED_COLOR, "5,3", 0.45),
              (_("‖J‖_F, scaled"), sweep[True]["jacobian_norm"], ALLOWED_COLOR, None, 0.45)]
    for k, (label, ys, c, dash, alpha) in enumerate(curves):
        svg.polyline([(q.X(a), q.Y(b)) for a, b in zip(d, ys)], stroke=c, sw=1.8, dash=dash, opacity=alpha)
        svg.line(q.x + 8, q.y + 8 + 13 * k, q.x + 28, q.y + 8 + 13 * k, stroke=c, sw=1.8, dash=dash, opacity=alpha)
        svg.text(q.x + 32, q.y + 8 + 13 * k, label, size=9, anchor="start")
    svg.circle(q.X(s.d_k), q.Y(s.max_weight), 5, fill=color)
    svg.rect(q.X(s.d_k) - 4, q.Y(s.jacobian_norm) - 4, 8, 8, fill=color, opacity=0.6)
    return str(svg)


def alt(s: st.ScalingState) -> str:
    """What the picture shows, in words."""
    text = (_("Left: a histogram of the logits for d_k = {d_k}, scaled by 1/√d_k, with the normal density of "
              "standard deviation {sigma} over it.") if s.scaled else
            _("Left: a histogram of the logits for d_k = {d_k}, unscaled, with the normal density of "
              "standard deviation {sigma} over it."))
    return (text.format(d_k=s.d_k, sigma=f"{s.logit_std_theory:.3g}") + " " + _(
        "Right: the mean largest weight and the size of the softmax Jacobian against d_k from 1 to 512, "
        "scaled (flat) and unscaled (the largest weight rising towards 1, the Jacobian falling), "
        "the current d_k marked."))


def reading(s: st.ScalingState) -> str:
    """The state in one sentence: d_k, scaled or not, and the softmax statistics."""
    text = (_("d_k = {d_k}, scaled: logit standard deviation {std}; mean largest weight {max_w}; "
              "mean entropy {entropy} nats; Jacobian size {jac}; {saturated} % of rows saturated") if s.scaled
            else _("d_k = {d_k}, unscaled: logit standard deviation {std}; mean largest weight {max_w}; "
                   "mean entropy {entropy} nats; Jacobian size {jac}; {saturated} % of rows saturated"))
    return text.format(d_k=s.d_k, std=f"{s.logit_std:.2f}", max_w=f"{s.max_weight:.2f}", entropy=f"{s.entropy:.2f}",
                       jac=f"{s.jacobian_norm:.2f}", saturated=f"{100 * s.saturated:.0f}")


def describe(s: st.ScalingState) -> str:
    uniform = _("uniform: {value}")
    rows = [(_("logit std (sample / theory)"), [f"{s.logit_std:.3f}", f"{s.logit_std_theory:.3f}"]),
            (_("mean max weight"), [f"{s.max_weight:.3f}", uniform.format(value=f"{1 / s.S:.3f}")]),
            (_("mean entropy (nats)"), [f"{s.entropy:.3f}",
                                        _("max ln S: {value}").format(value=f"{s.max_entropy:.3f}")]),
            (_("mean ‖J‖_F of softmax"), [f"{s.jacobian_norm:.3f}",
                                          uniform.format(value=f"{s.jacobian_norm_uniform:.3f}")]),
            (_("rows with max weight > 0.99"), [f"{100 * s.saturated:.1f} %", ""])]
    head = (_("q, k with i.i.d. N(0, 1) entries, d_k = {d_k}, S = {S} keys, scaled by 1/√d_k.") if s.scaled
            else _("q, k with i.i.d. N(0, 1) entries, d_k = {d_k}, S = {S} keys, not scaled."))
    return (head.format(d_k=s.d_k, S=s.S) + " " + table(rows) + "<div>"
            + _("A Jacobian near 0 means the softmax is saturated: almost no gradient reaches the scores.") + "</div>")


def _compute(d_k, scaled):
    return st.scaling_state(d_k=d_k, scaled=scaled == SCALED)


def scaling_explorer(offline: bool = False):
    """Choose d_k and whether to scale; see the logits, the max weight, entropy and Jacobian size.

    For random q, k with unit-variance entries, q.k has variance d_k. Unscaled, the softmax
    saturates as d_k grows (max weight -> 1, entropy and Jacobian -> 0); scaled by
    1/sqrt(d_k), the logits keep variance 1 and the statistics stay put.

    ``offline=True`` returns precomputed frames for every d_k in the slider, switched in the
    browser (works in the static HTML book without a kernel).
    """
    if offline:
        return _offline()
    style = {"description_width": "initial"}
    c = {"d_k": W.SelectionSlider(options=list(st.D_K_VALUES), value=64, description="d_k", style=style),
         "scaled": W.ToggleButtons(options=[(_(SCALED), SCALED), (_(UNSCALED), UNSCALED)], value=UNSCALED,
                                   description="", style={"button_width": "auto"})}
    return Explorer("scaling_explorer", c, _compute, draw, describe, [W.HBox([c["d_k"], c["scaled"]])],
                    read=reading)


def _offline() -> Frames:
    d_k = W.SelectionSlider(options=[str(d) for d in st.D_K_VALUES], index=st.D_K_VALUES.index(64),
                            description="d_k", style={"description_width": "initial"})
    scaled = W.ToggleButtons(options=[_(SCALED), _(UNSCALED)], index=1, description="",
                             style={"button_width": "auto"})
    states = {}

    def leaf(idx):
        s = st.scaling_state(d_k=st.D_K_VALUES[idx[0]], scaled=idx[1] == 0)
        states[idx] = s
        return frame(draw, describe, s, reading)

    body = product_frames([d_k, scaled], leaf)
    return Frames("scaling_explorer", [W.HBox([d_k, scaled]), body], {"d_k": d_k, "scaled": scaled}, states)
