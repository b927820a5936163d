"""Median update latency of the live explorers, per control change (state + redraw), T <= 16.

Each change sets one control of a live explorer; its observer recomputes the state with the
pure function and redraws the SVG picture and the readout, synchronously, so the time of the
assignment is the time of the update (the browser's own SVG rendering is not included).
Target: 50 ms or less. For comparison the table ends with the same pictures drawn the other
way considered, matplotlib with the al.plots helpers saved as PNG for an Image widget.

    .venv/bin/python benchmarks/widget_latency.py            # about half a minute on 2 cores
    .venv/bin/python benchmarks/widget_latency.py --repeat 3 # fewer rounds
"""
from __future__ import annotations

import argparse
import io
import itertools
import statistics
import time

import attnlab as al
from attnlab.widgets import state as st


def time_changes(explorer, setup: dict, name: str, values: list, repeat: int):
    """Set ``name`` to each of ``values`` in turn, ``repeat`` rounds; wall and CPU ms per change."""
    for k, v in setup.items():
        explorer.controls[k].value = v
    wall, cpu = [], []
    control = explorer.controls[name]
    for v in itertools.islice(itertools.cycle(values), repeat * len(values)):
        if control.value == v:                    # no change, no update: skip
            continue
        before = explorer.updates
        t0, c0 = time.perf_counter(), time.process_time()
        control.value = v
        wall.append(1000 * (time.perf_counter() - t0))
        cpu.append(1000 * (time.process_time() - c0))
        assert explorer.updates == before + 1 and explorer.error is None, (name, v, explorer.error)
    return statistics.median(wall), statistics.median(cpu), len(wall)


CASES = [  # (explorer factory, label, setup, control, values)
    (al.widgets.mask_explorer, "pattern (T=16)", {"T": 16}, "pattern", list(st.PATTERNS)),
    (al.widgets.mask_explorer, "T 1..16 (causal)", {"pattern": "causal"}, "T", [1, 4, 8, 12, 16]),
    (
        al.widgets.mask_explorer,
        "after softmax (T=16, padding)",
        {"pattern": "causal+padding", "T": 16, "lengths": "16 9 5", "seq": 1},
        "after_softmax",
        [True, False],
    ),
    (al.widgets.mask_explorer, "window (T=16)", {"pattern": "sliding window", "T": 16}, "window", [1, 3, 8, 16]),
    (
        al.widgets.mask_explorer,
        "offset (T=8, S=16)",
        {"pattern": "cached decoding", "T": 8, "S": 16},
        "offset",
        [-1, 0, 4, 8],
    ),
    (
        al.widgets.mask_explorer,
        "doc ids (T=16)",
        {"pattern": "documents"},
        "doc_ids",
        ["0 0 0 0 1 1 1 1 2 2 2 2 3 3 -1 -1", "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15"],
    ),
    (al.widgets.convex_combination_explorer, "query angle", {}, "angle", [-180, -90, 0, 45, 90, 135]),
    (al.widgets.convex_combination_explorer, "log10 temperature", {}, "log10_temperature", [-1.5, -0.5, 0.0, 0.5, 1.5]),
    (al.widgets.convex_combination_explorer, "masked keys", {}, "masked", [(), (0,), (0, 1), (2, 3, 4)]),
    (al.widgets.scaling_explorer, "d_k", {}, "d_k", list(st.D_K_VALUES)),
    (al.widgets.scaling_explorer, "scaled / unscaled", {}, "scaled", ["scaled by 1/√d_k", "unscaled"]),
    (al.widgets.gqa_explorer, "H_kv (H_q=32)", {"n_heads": 32}, "n_kv_heads", [1, 2, 4, 8, 16, 32]),
    (al.widgets.gqa_explorer, "T (tokens)", {}, "T", [1024, 4096, 32768, 131072]),
]


def matplotlib_png(state, kind: str) -> tuple[float, float]:
    """Wall and CPU ms to draw ``state`` with al.plots helpers in a fresh 2-panel figure, saved as PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    t0, c0 = time.perf_counter(), time.process_time()
    fig = Figure(figsize=(8.4, 3.6), dpi=80)
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)
    if kind == "mask":
        al.plots.mask_grid(ax1, state.allowed, title="allowed")
        al.plots.heatmap(ax2, state.weights, title="weights", annotate=state.T * state.S <= 64)
    else:
        al.plots.convex_picture(ax1, state.values, state.weights, state.allowed)
        ax2.bar(range(len(state.weights)), state.weights)
    fig.savefig(io.BytesIO(), format="png", pil_kwargs={"compress_level": 1})
    return 1000 * (time.perf_counter() - t0), 1000 * (time.process_time() - c0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds through each list of values")
    args = parser.parse_args()
    al.plots.book_style()
    rows = []
    for factory, label, setup, name, values in CASES:
        ex = factory()
        wall, cpu, n = time_changes(ex, setup, name, values, args.repeat)
        rows.append((factory.__name__, label, n, wall, cpu))
    for label, state, kind in (("matplotlib+PNG, mask T=16", st.mask_state("causal", T=16), "mask"),
                               ("matplotlib+PNG, mask T=6", st.mask_state("causal", T=6), "mask"),
                               ("matplotlib+PNG, convex", st.convex_state(), "convex")):
        times = [matplotlib_png(state, kind) for _ in range(args.repeat)]
        rows.append(("(alternative, not used)", label, len(times), statistics.median(t[0] for t in times),
                     statistics.median(t[1] for t in times)))
    print(f"{'explorer':<28} {'control changed':<32} {'n':>3} {'median ms':>10} {'CPU ms':>8}  target <= 50 ms")
    for name, label, n, wall, cpu in rows:
        flag = "" if wall <= 50 else "  over"
        print(f"{name:<28} {label:<32} {n:>3} {wall:>10.1f} {cpu:>8.1f}{flag}")


if __name__ == "__main__":
    main()
