"""``online_softmax_explorer``: the online softmax, one block of keys at a time.

One query's scores u_j and scalar values v_j are cut into blocks of ``block_size`` keys. After
block b the explorer shows what the online softmax keeps (chapter 9): the running maximum m_b,
the rescaling factor exp(m_{b-1} - m_b) applied to everything summed so far, the running sum
l_b = sum exp(u_j - m_b) and the running output a_b = sum exp(u_j - m_b) v_j over the keys seen,
and the partial output a_b / l_b, which after the last block is softmax(u) . v exactly.
``online_softmax_state`` computes these numbers (a pure function, no widget); the picture draws
the scores block by block with the running maximum, and the partial outputs converging.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import ipywidgets as W
import numpy as np

from ..errors import AttentionInputError
from ..i18n import _
from ..reference import softmax
from ._base import Explorer, Frames, frame, linked_stack, table
from ._svg import ALLOWED_COLOR, GRAY, RED, Panel, Svg

SCORES = (0.5, 2.0, -1.0, 3.5, 0.0, 1.0, 5.0, -2.0)     # the row of chapter 9's trace table
VALUES = (1.0, -2.0, 0.5, 3.0, 1.0, -1.0, 2.0, 4.0)
BLOCK_SIZES = (1, 2, 3, 4, 8)
CURRENT_COLOR = "#dd6b20"                                # the block being folded in
CURRENT_TEXT_COLOR = "#b7471b"     # the same orange, dark enough for small text (5.3:1 on white, WCAG AA)
UNSEEN_COLOR = "#cbd5e0"


@dataclass(frozen=True)
class OnlineSoftmaxState:
    """The online softmax of one row after ``step`` of its blocks (1 <= step <= n_blocks).

    ``m``, ``l``, ``a`` and ``factor`` hold one entry per block folded in so far (index b - 1 for
    block b): the running maximum, sum and output after it, and the factor exp(m_{b-1} - m_b) that
    rescaled the earlier sums when it arrived (0 for the first block: there was nothing yet).
    """

    scores: np.ndarray           # (S,) float64
    values: np.ndarray           # (S,) float64
    block_size: int
    step: int
    m: np.ndarray                # (step,)
    l: np.ndarray                # (step,)
    a: np.ndarray                # (step,)
    factor: np.ndarray           # (step,)

    @property
    def S(self) -> int:
        return len(self.scores)

    @property
    def n_blocks(self) -> int:
        return math.ceil(self.S / self.block_size)

    @property
    def block(self) -> tuple[int, int]:
        """Keys [lo, hi) of the block folded in last."""
        lo = (self.step - 1) * self.block_size
        return lo, min(lo + self.block_size, self.S)

    @property
    def seen(self) -> int:
        """How many keys have been folded in."""
        return self.block[1]

    @property
    def partial(self) -> np.ndarray:
        """(step,) the partial outputs a_b / l_b: the output if the keys seen so far were all."""
        return self.a / self.l

    @property
    def exact(self) -> float:
        """softmax(scores) . values: what the last partial output equals."""
        return float(softmax(self.scores) @ self.values)

    @property
    def weights_now(self) -> np.ndarray:
        """(S,) exp(u_j - m_b) for the keys seen, 0 for the others: the terms of l_b."""
        w = np.exp(self.scores - self.m[-1])
        w[self.seen:] = 0.0
        return w

    @property
    def max_rose(self) -> bool:
        return self.step > 1 and self.m[-1] > self.m[-2]


def online_softmax_state(block_size: int = 3, step: int = 2, scores=SCORES, values=VALUES) -> OnlineSoftmaxState:
    """The running (m, l, a) of the online softmax of ``scores`` with ``values`` after ``step`` blocks."""
    u = np.asarray(scores, dtype=float)
    v = np.asarray(values, dtype=float)
    if u.ndim != 1 or u.shape != v.shape or not len(u) or not (np.isfinite(u).all() and np.isfinite(v).all()):
        raise AttentionInputError(_("scores and values must be two finite 1-D arrays of the same length, at least "
                                    "one; got shapes {u} and {v}").format(u=u.shape, v=v.shape))
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise AttentionInputError(_("block_size must be a positive integer; got {value!r}").format(value=block_size))
    n = math.ceil(len(u) / block_size)
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or not 1 <= step <= n:
        raise AttentionInputError(_("step must be a whole number of blocks from 1 to {n}; got {value!r}").format(
            n=n, value=step))
    m_run, l_run, a_run = -np.inf, 0.0, 0.0
    m, l, a, factor = [], [], [], []
    for lo in range(0, step * block_size, block_size):
        u_blk, v_blk = u[lo:lo + block_size], v[lo:lo + block_size]
        m_new = max(m_run, u_blk.max())
        c = math.exp(m_run - m_new)                       # 0 for the first block: exp(-inf)
        p = np.exp(u_blk - m_new)
        l_run = c * l_run + p.sum()
        a_run = c * a_run + p @ v_blk
        m_run = m_new
        m.append(m_new), l.append(l_run), a.append(a_run), factor.append(c)
    return OnlineSoftmaxState(u, v, int(block_size), int(step), *(np.array(x) for x in (m, l, a, factor)))


def draw(s: OnlineSoftmaxState) -> str:
    """Scores per key, coloured by block, with the running maximum (left); partial outputs (right)."""
    svg = Svg(720, 290, alt=alt(s))    # the column's width at 1280 px: shown at its drawn size
    lo_u = min(0.0, s.scores.min()) - 0.5
    hi_u = max(s.scores.max(), 0.0) + 0.8
    p = Panel(svg, 60, 40, 370, 190, xlim=(-0.5, s.S - 0.5), ylim=(lo_u, hi_u))
    lo, hi = s.block
    for b in range(s.n_blocks):                                         # block backgrounds, alternating
        x0, x1 = b * s.block_size - 0.5, min((b + 1) * s.block_size, s.S) - 0.5
        if b % 2:
            svg.rect(p.X(x0), p.y, p.X(x1) - p.X(x0), p.h, fill="#f7fafc")
        svg.text((p.X(x0) + p.X(x1)) / 2, p.y + p.h + 30, _("block {b}").format(b=b + 1), size=9, color=GRAY)
    width = 0.7 * (p.X(1) - p.X(0))
    for j, u in enumerate(s.scores):
        color = CURRENT_COLOR if lo <= j < hi else ALLOWED_COLOR if j < lo else UNSEEN_COLOR
        top, bottom = (p.Y(u), p.Y(0)) if u >= 0 else (p.Y(0), p.Y(u))
        svg.rect(p.X(j) - width / 2, top, width, max(bottom - top, 0.5), fill=color)
        svg.text(p.X(j), (top - 8) if u >= 0 else (bottom + 8), f"{u:g}", size=9)
    svg.line(p.x, p.Y(0), p.x + p.w, p.Y(0), stroke=GRAY, sw=0.6)
    if s.max_rose:                                                      # where the maximum was
        svg.line(p.x, p.Y(s.m[-2]), p.x + p.w, p.Y(s.m[-2]), stroke=GRAY, sw=1, dash="2,3")
        svg.text(p.x + p.w - 2, p.Y(s.m[-2]) + 9, _("old m = {m}").format(m=f"{s.m[-2]:g}"), size=9,
                 anchor="end", color=GRAY)
    svg.line(p.x, p.Y(s.m[-1]), p.x + p.w, p.Y(s.m[-1]), stroke=RED, sw=1.2, dash="5,3")
    svg.text(p.x + p.w - 2, p.Y(s.m[-1]) - 8, _("running max m = {m}").format(m=f"{s.m[-1]:g}"), size=9,
             anchor="end", color=RED)
    p.axes(title=_("scores u_j of one query, in blocks of {k}").format(k=s.block_size), ylabel=_("score"),
           xticks=list(range(s.S)), xfmt="{:g}")
    svg.text(p.x + p.w / 2, p.y + p.h + 44, _("key j"), size=10)
    partial = s.partial
    q_lo = min(partial.min(), s.exact) - 0.4
    q_hi = max(partial.max(), s.exact) + 0.4
    q = Panel(svg, 500, 40, 200, 190, xlim=(0.5, s.n_blocks + 0.5), ylim=(q_lo, q_hi))
    svg.line(q.x, q.Y(s.exact), q.x + q.w, q.Y(s.exact), stroke=GRAY, sw=1, dash="4,3")
    svg.text(q.x + q.w - 2, q.Y(s.exact) - 8, _("exact: softmax(u) · v = {x}").format(x=f"{s.exact:.4f}"), size=9,
             anchor="end", color=GRAY)
    pts = [(q.X(b + 1), q.Y(x)) for b, x in enumerate(partial)]
    if len(pts) > 1:
        svg.polyline(pts, stroke=ALLOWED_COLOR, sw=1.5)
    for b, (x, y) in enumerate(pts):
        svg.circle(x, y, 4.5, fill=CURRENT_COLOR if b == s.step - 1 else ALLOWED_COLOR)
    q.axes(title=_("partial output a_b / l_b"), xticks=list(range(1, s.n_blocks + 1)), yfmt="{:.2g}")
    svg.text(q.x + q.w / 2, q.y + q.h + 30, _("after block b"), size=10)
    return str(svg)


def alt(s: OnlineSoftmaxState) -> str:
    """What the picture shows, in words."""
    lo, hi = s.block
    return _("Left: a bar chart of the {S} scores of one query, in blocks of {k}; the blocks before block {b} are "
             "blue, block {b} (keys {lo} to {last}) orange, the later ones grey, and a dashed red line marks the "
             "running maximum {m}. Right: the partial output after each block so far, approaching the dashed line "
             "of the exact softmax output {exact}.").format(
                 S=s.S, k=s.block_size, b=s.step, lo=lo, last=hi - 1, m=f"{s.m[-1]:g}", exact=f"{s.exact:.4f}")


def reading(s: OnlineSoftmaxState) -> str:
    """The state in one sentence: the block, the maximum, the rescaling, the sums and the partial output."""
    lo, hi = s.block
    if s.step == 1:
        what = _("nothing to rescale yet")
    elif s.max_rose:
        what = _("the maximum rose from {old} to {new}, so the earlier sum and output are multiplied by "
                 "{factor}").format(old=f"{s.m[-2]:g}", new=f"{s.m[-1]:g}", factor=f"{s.factor[-1]:.4f}")
    else:
        what = _("the maximum stays {m}, so the rescaling factor is 1").format(m=f"{s.m[-1]:g}")
    return _("Block {b} of {n} (keys {lo} to {last}): {what}; running sum {l}, running output {a}, partial output "
             "{partial}; the exact output is {exact}.").format(
                 b=s.step, n=s.n_blocks, lo=lo, last=hi - 1, what=what, l=f"{s.l[-1]:.4f}", a=f"{s.a[-1]:.4f}",
                 partial=f"{s.partial[-1]:.4f}", exact=f"{s.exact:.4f}")


def describe(s: OnlineSoftmaxState) -> str:
    """The trace so far, one column per block folded in, the current one highlighted."""
    blocks = range(s.step)
    keys = [f"{b * s.block_size}..{min((b + 1) * s.block_size, s.S) - 1}" for b in blocks]
    rows = [(_("block"), [str(b + 1) for b in blocks]), (_("keys"), keys),
            (_("running max m_b"), [f"{x:g}" for x in s.m]),
            (_("rescaling factor"), ["—" if b == 0 else f"{s.factor[b]:.4f}" for b in blocks]),
            (_("running sum l_b"), [f"{x:.4f}" for x in s.l]),
            (_("running output a_b"), [f"{x:.4f}" for x in s.a]),
            (_("partial output a_b / l_b"), [f"{x:.4f}" for x in s.partial])]
    highlight = {(r, s.step - 1): CURRENT_TEXT_COLOR for r in range(2, len(rows))}
    return table(rows, highlight)


def _n_blocks(block_size: int, S: int = len(SCORES)) -> int:
    return math.ceil(S / block_size)


def online_softmax_explorer(offline: bool = False):
    """Step through the online softmax of one row, block of keys by block of keys.

    Choose the block size and how many blocks have been folded in; see the running maximum, the
    factor that rescales the earlier sums when the maximum rises, the running sum and output, and
    the partial output converge to softmax(u) . v (the row of chapter 9's trace table).

    ``offline=True`` returns precomputed frames for every block size and step, switched in the
    browser (works in the static HTML book without a kernel).
    """
    if offline:
        return _offline()
    style = {"description_width": "initial"}
    c = {"block_size": W.ToggleButtons(options=list(BLOCK_SIZES), value=3, description=_("block size"),
                                       style={"button_width": "auto", "description_width": "initial"}),
         "step": W.IntSlider(value=2, min=1, max=_n_blocks(3), description=_("blocks folded in"), style=style)}

    def refresh(ex: Explorer) -> None:
        c["step"].max = _n_blocks(c["block_size"].value)              # clamps the value too

    return Explorer("online_softmax_explorer", c, online_softmax_state, draw, describe,
                    [W.HBox([c["block_size"], c["step"]], layout=W.Layout(flex_flow="row wrap"))], refresh,
                    read=reading)


def _offline() -> Frames:
    style = {"description_width": "initial"}
    sizes = W.ToggleButtons(options=[str(k) for k in BLOCK_SIZES], index=BLOCK_SIZES.index(3),
                            description=_("block size"), style={"button_width": "auto", **style})
    states, sliders, pages = {}, [], []
    for i, k in enumerate(BLOCK_SIZES):
        n = _n_blocks(k)
        step = W.SelectionSlider(options=[str(b) for b in range(1, n + 1)], index=min(1, n - 1),
                                 description=_("blocks folded in"), style=style)
        frames = []
        for b in range(1, n + 1):
            s = online_softmax_state(k, b)
            states[(i, b - 1)] = s
            frames.append(frame(draw, describe, s, reading))
        sliders.append(step)
        pages.append(W.VBox([step, linked_stack(step, frames)]))
    body = linked_stack(sizes, pages)
    return Frames("online_softmax_explorer", [sizes, body], {"block_size": sizes, "step": sliders}, states)


__all__ = ["OnlineSoftmaxState", "alt", "describe", "draw", "online_softmax_explorer", "online_softmax_state",
           "reading"]
