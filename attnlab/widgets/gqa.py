"""``gqa_explorer``: which query heads share which KV head, and what the KV cache costs."""
from __future__ import annotations

import functools
import html

import ipywidgets as W
import numpy as np

from ..i18n import _
from . import state as st
from ._base import Explorer, Frames, frame, product_frames, table
from ._svg import ALLOWED_COLOR, RED, Panel, Svg


@functools.lru_cache(maxsize=1)
def _palette() -> list[str]:
    import matplotlib
    from matplotlib.colors import to_hex
    return [to_hex(c) for c in matplotlib.colormaps["tab20"].colors]


def _color(g: int, n: int) -> str:
    pal = _palette()
    return pal[(2 * g) % 20] if n <= 10 else pal[g % 20]


def draw(s: st.GQAState) -> str:
    """Query heads (top) wired to the KV head they read (bottom); KV-cache sizes as bars (right)."""
    svg = Svg(720, 210, alt=alt(s))    # the column's width at 1280 px: shown at its drawn size
    if s.error:
        svg.text(360, 92, _("H_kv = {h_kv} does not divide H_q = {h_q}").format(h_kv=s.n_kv_heads, h_q=s.n_heads),
                 size=14, color=RED)
        svg.text(360, 118, _("every KV head serves a group of r = H_q / H_kv ≥ 1 query heads"), size=12, color=RED)
        return str(svg)
    H, G = s.n_heads, s.n_kv_heads
    x0, span = 100.0, 380.0
    step = span / H
    box = min(26.0, 0.8 * step)
    q_x = x0 + (np.arange(H) + 0.5) * step
    kv_x = np.array([q_x[list(g)].mean() for g in s.groups])                # each KV head under its group
    q_y, kv_y = 52.0, 150.0
    for h in range(H):
        svg.line(q_x[h], q_y + box, kv_x[s.kv_for[h]], kv_y, stroke=_color(s.kv_for[h], G), sw=1.2)
    for h in range(H):
        svg.rect(q_x[h] - box / 2, q_y, box, box, fill=_color(s.kv_for[h], G))
        if H <= 16:
            svg.text(q_x[h], q_y + box / 2, str(h), size=9)
    for g in range(G):
        svg.rect(kv_x[g] - box / 2, kv_y, box, box, fill=_color(g, G), stroke="black", sw=0.8)
        if G <= 16:
            svg.text(kv_x[g], kv_y + box / 2, str(g), size=9)
    svg.text(x0 - 8, q_y + box / 2, _("query heads h"), size=10, anchor="end")
    svg.text(x0 - 8, kv_y + box / 2, _("KV heads g"), size=10, anchor="end")
    svg.text(x0 + span / 2, 22, _("{kind}: H_q = {h_q}, H_kv = {h_kv}, group size r = {r}; g(h) = ⌊h / r⌋").format(
             kind=s.kind, h_q=H, h_kv=G, r=s.group_size), size=11)
    sizes = np.array([s.mqa_bytes, s.cache_bytes, s.mha_bytes], dtype=float) / 2 ** 30
    names = ["MQA (H_kv=1)", _("this (H_kv={h_kv})").format(h_kv=G), f"MHA (H_kv={H})"]
    p = Panel(svg, 585, 40, 110, 110, xlim=(0, sizes.max() * 1.45), ylim=(-0.5, 2.5))
    p.axes(xlabel=_("KV cache, GiB"), yticks=[], xticks=[0, sizes.max()], xfmt="{:.3g}", size=10)
    for i, (v, name) in enumerate(zip(sizes, names)):
        y0, y1 = p.Y(i + 0.35), p.Y(i - 0.35)
        svg.rect(p.X(0), y0, p.X(v) - p.X(0), y1 - y0, fill=ALLOWED_COLOR if i == 1 else "#a0aec0")
        svg.text(p.X(v) + 3, (y0 + y1) / 2, f"{v:.3g}", size=9, anchor="start")
        svg.text(p.X(0) - 5, (y0 + y1) / 2, name, size=9, anchor="end")
    return str(svg)


def alt(s: st.GQAState) -> str:
    """What the picture shows, in words."""
    if s.error:
        return _("No diagram: H_kv = {h_kv} does not divide H_q = {h_q}.").format(h_kv=s.n_kv_heads, h_q=s.n_heads)
    return _("{h_q} query heads in a row, each joined by a line to the one of {h_kv} KV heads below that it "
             "reads, in groups of {r}; beside them, bars of the KV cache's size for MQA, for this model and "
             "for MHA.").format(h_q=s.n_heads, h_kv=s.n_kv_heads, r=s.group_size)


def reading(s: st.GQAState) -> str:
    """The state in one sentence: the head counts, the group size and the cache sizes."""
    if s.error:
        return _("H_q = {h_q}, H_kv = {h_kv}: H_kv does not divide H_q (error)").format(
            h_q=s.n_heads, h_kv=s.n_kv_heads)
    return _("H_q = {h_q}, H_kv = {h_kv}: group size r = {r}; KV cache {size}, "
             "MHA {mha}, MQA {mqa}").format(h_q=s.n_heads, h_kv=s.n_kv_heads, r=s.group_size,
                                            size=st.human_bytes(s.cache_bytes), mha=st.human_bytes(s.mha_bytes),
                                            mqa=st.human_bytes(s.mqa_bytes))


def describe(s: st.GQAState) -> str:
    if s.error:
        return f"<div style='color:#c53030'>{html.escape(s.error)}</div>"
    cfg = s.settings
    rows = [(_("query head h"), [str(h) for h in range(s.n_heads)]),
            (_("reads KV head"), [str(g) for g in s.kv_for])]
    return table(rows) + _(
        "KV cache = 2 (K and V) × {layers} layers × batch {batch} × {h_kv} KV heads × T = {T} × d_k = {d_k} × "
        "{width} bytes ({dtype}) = <b>{size} bytes ({human})</b>; plain MHA would need {mha} ({ratio}× as much), "
        "MQA {mqa}. In training, the gradient of each shared K, V sums over the {r} query head(s) of its group."
    ).format(layers=cfg["n_layers"], batch=cfg["batch"], h_kv=s.n_kv_heads, T=cfg["T"], d_k=cfg["d_k"],
             width=st.DTYPE_BYTES[cfg["dtype"]], dtype=cfg["dtype"], size=f"{s.cache_bytes:,}",
             human=st.human_bytes(s.cache_bytes), mha=st.human_bytes(s.mha_bytes),
             ratio=f"{s.mha_bytes / s.cache_bytes:g}", mqa=st.human_bytes(s.mqa_bytes), r=s.group_size)


def _compute(n_heads, n_kv_heads, n_layers, T, d_k, dtype, batch):
    return st.gqa_state(n_heads, n_kv_heads, n_layers, T, d_k, dtype, batch)


def gqa_explorer(offline: bool = False):
    """Choose H_q and H_kv: see which query heads share each KV head and the KV-cache size.

    Query head h reads KV head h // (H_q / H_kv) (``al.kv_head_for``); the cache holds K and
    V of shape (batch, H_kv, T, d_k) in every layer. Defaults: 32 layers, T = 4096,
    d_k = 128, float16, as in a 7B-parameter decoder.

    ``offline=True`` returns precomputed frames for H_q and H_kv in {1, 2, 4, 8, 16}, switched
    in the browser (works in the static HTML book without a kernel).
    """
    if offline:
        return _offline()
    style = {"description_width": "initial"}
    c = {
        "n_heads": W.IntSlider(value=8, min=1, max=32, description=_("H_q (query heads)"), style=style),
        "n_kv_heads": W.IntSlider(value=2, min=1, max=32, description=_("H_kv (KV heads)"), style=style),
        "n_layers": W.BoundedIntText(value=32, min=1, max=1000, description=_("layers"), style=style,
                                     layout=W.Layout(width="140px")),
        "T": W.BoundedIntText(value=4096, min=1, max=10_000_000, description=_("T (tokens)"), style=style,
                              layout=W.Layout(width="180px")),
        "d_k": W.Dropdown(options=[32, 64, 80, 96, 128, 256], value=128, description="d_k", style=style,
                          layout=W.Layout(width="140px")),
        "dtype": W.Dropdown(options=list(st.DTYPE_BYTES), value="float16", description="dtype", style=style,
                            layout=W.Layout(width="200px")),
        "batch": W.BoundedIntText(value=1, min=1, max=4096, description=_("batch"), style=style,
                                  layout=W.Layout(width="130px")),
    }
    rows = [W.HBox([c["n_heads"], c["n_kv_heads"]]),
            W.HBox([c["n_layers"], c["T"], c["d_k"], c["dtype"], c["batch"]], layout=W.Layout(flex_flow="row wrap"))]
    return Explorer("gqa_explorer", c, _compute, draw, describe, rows, read=reading)


OFFLINE_HEADS = (1, 2, 4, 8, 16)


def _offline() -> Frames:
    """Two independent controls, H_q and H_kv, over the same values: changing one keeps the other.

    A pair where H_kv does not divide H_q (here: H_kv > H_q) is a frame too, saying why.
    """
    heads = W.ToggleButtons(options=[f"H_q = {h}" for h in OFFLINE_HEADS], index=OFFLINE_HEADS.index(8),
                            description="", style={"button_width": "auto"})
    kv = W.ToggleButtons(options=[f"H_kv = {g}" for g in OFFLINE_HEADS], index=OFFLINE_HEADS.index(2),
                         description="", style={"button_width": "auto"})
    states = {}

    def leaf(idx):
        s = st.gqa_state(OFFLINE_HEADS[idx[0]], OFFLINE_HEADS[idx[1]])
        states[idx] = s
        return frame(draw, describe, s, reading)

    body = product_frames([heads, kv], leaf)
    return Frames("gqa_explorer", [heads, kv, body], {"n_heads": heads, "n_kv_heads": kv}, states)
