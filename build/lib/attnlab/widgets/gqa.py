"""``gqa_explorer``: which query heads share which KV head, and what the KV cache costs."""
from __future__ import annotations

import functools
import html

import ipywidgets as W
import numpy as np

from . import state as st
from ._base import Explorer, Frames, frame, linked_stack, product_frames, table
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
    svg = Svg(760, 210)
    if s.error:
        svg.text(230, 105, "H_kv must divide H_q", size=14, color=RED)
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
    svg.text(x0 - 8, q_y + box / 2, "query heads h", size=10, anchor="end")
    svg.text(x0 - 8, kv_y + box / 2, "KV heads g", size=10, anchor="end")
    svg.text(x0 + span / 2, 22, f"{s.kind}: H_q = {H}, H_kv = {G}, group size r = {s.group_size}; g(h) = ⌊h / r⌋",
             size=11)
    sizes = np.array([s.mqa_bytes, s.cache_bytes, s.mha_bytes], dtype=float) / 2 ** 30
    names = ["MQA (H_kv=1)", f"this (H_kv={G})", f"MHA (H_kv={H})"]
    p = Panel(svg, 615, 40, 110, 110, xlim=(0, sizes.max() * 1.45), ylim=(-0.5, 2.5))
    p.axes(xlabel="KV cache, GiB", yticks=[], xticks=[0, sizes.max()], xfmt="{:.3g}", size=9)
    for i, (v, name) in enumerate(zip(sizes, names)):
        y0, y1 = p.Y(i + 0.35), p.Y(i - 0.35)
        svg.rect(p.X(0), y0, p.X(v) - p.X(0), y1 - y0, fill=ALLOWED_COLOR if i == 1 else "#a0aec0")
        svg.text(p.X(v) + 3, (y0 + y1) / 2, f"{v:.3g}", size=9, anchor="start")
        svg.text(p.X(0) - 5, (y0 + y1) / 2, name, size=9, anchor="end")
    return str(svg)


def describe(s: st.GQAState) -> str:
    if s.error:
        return f"<div style='color:#c53030'>{html.escape(s.error)}</div>"
    cfg = s.settings
    rows = [("query head h", [str(h) for h in range(s.n_heads)]),
            ("reads KV head", [str(g) for g in s.kv_for])]
    return (table(rows) + f"KV cache = 2 (K and V) × {cfg['n_layers']} layers × batch {cfg['batch']} × "
            f"{s.n_kv_heads} KV heads × T = {cfg['T']} × d_k = {cfg['d_k']} × "
            f"{st.DTYPE_BYTES[cfg['dtype']]} bytes ({cfg['dtype']}) = <b>{s.cache_bytes:,} bytes "
            f"({st.human_bytes(s.cache_bytes)})</b>; plain MHA would need {st.human_bytes(s.mha_bytes)} "
            f"({s.mha_bytes / s.cache_bytes:g}× as much), MQA {st.human_bytes(s.mqa_bytes)}. "
            f"In training, the gradient of each shared K, V sums over the {s.group_size} query head(s) of its group.")


def _compute(n_heads, n_kv_heads, n_layers, T, d_k, dtype, batch):
    return st.gqa_state(n_heads, n_kv_heads, n_layers, T, d_k, dtype, batch)


def gqa_explorer(offline: bool = False):
    """Choose H_q and H_kv: see which query heads share each KV head and the KV-cache size.

    Query head h reads KV head h // (H_q / H_kv) (``al.kv_head_for``); the cache holds K and
    V of shape (batch, H_kv, T, d_k) in every layer. Defaults: 32 layers, T = 4096,
    d_k = 128, float16, as in a 7B-parameter decoder.

    ``offline=True`` returns precomputed frames for H_q in {1, 2, 4, 8, 16} and every H_kv
    dividing it, switched in the browser (works in the static HTML book without a kernel).
    """
    if offline:
        return _offline()
    style = {"description_width": "initial"}
    c = {
        "n_heads": W.IntSlider(value=8, min=1, max=32, description="H_q (query heads)", style=style),
        "n_kv_heads": W.IntSlider(value=2, min=1, max=32, description="H_kv (KV heads)", style=style),
        "n_layers": W.BoundedIntText(value=32, min=1, max=1000, description="layers", style=style,
                                     layout=W.Layout(width="140px")),
        "T": W.BoundedIntText(value=4096, min=1, max=10_000_000, description="T (tokens)", style=style,
                              layout=W.Layout(width="180px")),
        "d_k": W.Dropdown(options=[32, 64, 80, 96, 128, 256], value=128, description="d_k", style=style,
                          layout=W.Layout(width="140px")),
        "dtype": W.Dropdown(options=list(st.DTYPE_BYTES), value="float16", description="dtype", style=style,
                            layout=W.Layout(width="200px")),
        "batch": W.BoundedIntText(value=1, min=1, max=4096, description="batch", style=style,
                                  layout=W.Layout(width="130px")),
    }
    rows = [W.HBox([c["n_heads"], c["n_kv_heads"]]),
            W.HBox([c["n_layers"], c["T"], c["d_k"], c["dtype"], c["batch"]], layout=W.Layout(flex_flow="row wrap"))]
    return Explorer("gqa_explorer", c, _compute, draw, describe, rows)


OFFLINE_HEADS = (1, 2, 4, 8, 16)


def _offline() -> Frames:
    heads = W.ToggleButtons(options=[f"H_q = {h}" for h in OFFLINE_HEADS], index=3, description="",
                            style={"button_width": "auto"})
    states, pages, kv_controls = {}, [], []
    for i, H in enumerate(OFFLINE_HEADS):
        divisors = [g for g in range(1, H + 1) if H % g == 0]
        kv = W.ToggleButtons(options=[f"H_kv = {g}" for g in divisors], index=min(1, len(divisors) - 1),
                             description="", style={"button_width": "auto"})
        kv_controls.append(kv)

        def leaf(idx, H=H, divisors=divisors, i=i):
            s = st.gqa_state(H, divisors[idx[0]])
            states[(i, *idx)] = s
            return frame(draw, describe, s)

        pages.append(W.VBox([kv, product_frames([kv], leaf)]))
    body = linked_stack(heads, pages)
    return Frames("gqa_explorer", [heads, body], {"n_heads": heads, "n_kv_heads": kv_controls}, states)
