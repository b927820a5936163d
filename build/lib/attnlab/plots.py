"""Figures shared by the chapters: weight heatmaps, mask grids and convex-hull pictures.

Every chapter draws with these helpers so the figures look alike. Call :func:`book_style`
once per page (it only sets matplotlib rcParams).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

ALLOWED_COLOR = "#2b6cb0"
FORBIDDEN_COLOR = "#edf2f7"


def book_style() -> None:
    """Consistent figure size, resolution and fonts across chapters."""
    plt.rcParams.update({
        "figure.figsize": (6.0, 3.6), "figure.dpi": 110, "savefig.dpi": 110,
        "font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10,
        "axes.spines.top": False, "axes.spines.right": False, "figure.constrained_layout.use": True,
    })


def _label_axes(ax, rows, cols, row_labels, col_labels, xlabel, ylabel, title):
    """Ticks on every row and column (with labels if given), axis labels, title."""
    ax.set_xticks(range(cols), col_labels if col_labels is not None else range(cols))
    ax.set_yticks(range(rows), row_labels if row_labels is not None else range(rows))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)


def heatmap(ax, matrix, row_labels=None, col_labels=None, title=None, annotate=True, fmt="{:.2f}",
            cmap="viridis", vmin=None, vmax=None, xlabel="key j", ylabel="query i"):
    """Draw a matrix (e.g. attention weights, rows = queries) with optional numbers in the cells."""
    m = np.asarray(matrix, dtype=float)
    im = ax.imshow(m, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    rows, cols = m.shape
    _label_axes(ax, rows, cols, row_labels, col_labels, xlabel, ylabel, title)
    if annotate and rows * cols <= 100:
        lo, hi = np.nanmin(m), np.nanmax(m)
        mid = (lo + hi) / 2
        for i in range(rows):
            for j in range(cols):
                ax.text(j, i, fmt.format(m[i, j]), ha="center", va="center", fontsize=8,
                        color="white" if m[i, j] < mid else "black")
    return im


def mask_grid(ax, allowed, title=None, row_labels=None, col_labels=None, xlabel="key position j",
              ylabel="query position i"):
    """Draw a boolean allowed mask as a grid: filled = may read, pale = forbidden."""
    a = np.asarray(allowed, dtype=bool)
    rows, cols = a.shape
    ax.imshow(np.where(a, 1.0, 0.0), cmap=plt.matplotlib.colors.ListedColormap([FORBIDDEN_COLOR, ALLOWED_COLOR]),
              vmin=0, vmax=1, aspect="equal")
    ax.set_xticks(np.arange(cols + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(rows + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    _label_axes(ax, rows, cols, row_labels, col_labels, xlabel, ylabel, title)


def _hull(points: np.ndarray) -> np.ndarray:
    """Convex hull of 2-D points (Andrew's monotone chain), counter-clockwise, no repeats."""
    pts = sorted(map(tuple, np.unique(points, axis=0)))
    if len(pts) <= 2:
        return np.array(pts)

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.array(lower[:-1] + upper[:-1])


def convex_picture(ax, values, weights, allowed=None, labels=None, title=None):
    """Values as points in the plane, the hull of the allowed ones, and the output sum_j a_j v_j.

    ``values`` (S, 2), ``weights`` (S,). Point sizes grow with the weights; forbidden values
    are drawn hollow and left out of the hull.
    """
    v = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    ok = np.ones(len(v), dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    hull = _hull(v[ok])
    if len(hull) >= 3:
        ax.fill(hull[:, 0], hull[:, 1], color=ALLOWED_COLOR, alpha=0.12, label="convex hull of allowed values")
        ax.plot(np.r_[hull[:, 0], hull[0, 0]], np.r_[hull[:, 1], hull[0, 1]], color=ALLOWED_COLOR, lw=1)
    elif len(hull) == 2:
        ax.plot(hull[:, 0], hull[:, 1], color=ALLOWED_COLOR, lw=2, alpha=0.5, label="hull of allowed values")
    ax.scatter(v[ok, 0], v[ok, 1], s=40 + 400 * w[ok], color=ALLOWED_COLOR, zorder=3, label="values (size = weight)")
    if (~ok).any():
        ax.scatter(v[~ok, 0], v[~ok, 1], s=60, facecolors="none", edgecolors="gray", zorder=3, label="forbidden values")
    out = w @ v
    ax.scatter([out[0]], [out[1]], marker="*", s=220, color="#c53030", zorder=4, label="output")
    for j, p in enumerate(v):
        ax.annotate(labels[j] if labels is not None else f"$v_{{{j + 1}}}$", p, textcoords="offset points",
                    xytext=(6, 6))
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend(loc="best", fontsize=8)
    if title:
        ax.set_title(title)
    return out
