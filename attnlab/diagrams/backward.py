"""(d) Attention forward and backward as one computational graph: values down the left, gradients up the right."""
from __future__ import annotations

from ..i18n import N_, _
from ._draw import (
    FAINT,
    GRADIENT,
    INPUT,
    KEY,
    MATH,
    MUTED,
    OUTPUT,
    QUERY,
    SCORE,
    SMALL,
    TEXT,
    VALUE,
    Canvas,
    Diagram,
    Rect,
)

ALT = N_("The computational graph of attention. Forward, on the left: Q and K give the scaled scores U, the softmax "
          "gives the weights A, A times V gives the output O, and O gives the loss L. Backward, on the right, each "
          "gradient has the shape of its value: dO from the loss, dA = dO V transposed and dV = A transposed dO, "
          "dU = A times (dA minus delta) entry by entry, with delta the row sums of A times dA, then dQ = dU K over "
          "the square root of d_k and dK = dU transposed Q over the square root of d_k.")


def _node(c: Canvas, cx, cy, w, formula, shape, role) -> Rect:
    r = c.rect(cx - w / 2, cy - 28, w, 56, fill=role.fill, stroke=role.stroke, sw=1.6, rx=7)
    c.text(cx, cy - 10, formula, size=TEXT + 1, within=r, color=role.text)
    c.text(cx, cy + 15, shape, size=SMALL, within=r, color=MUTED)
    return r


def backward_graph() -> Diagram:
    """Forward values (Q, K, V, U, A, O, L) and backward gradients (dO, dA, dV, dU, dQ, dK) with their shapes."""

    def draw() -> Canvas:
        c = Canvas(720, 510)
        rows = [96, 176, 256, 336, 416]
        fx, bx = 176, 540                         # centres of the forward and the backward column
        c.text(fx, 24, _("forward: values"), bold=True)
        c.text(bx, 24, _("backward: gradients"), bold=True, color=GRADIENT.text)
        c.text(bx, 46, _("each the shape of its value"), size=SMALL, color=MUTED)
        fwd = {
            "Q": _node(c, fx - 62, rows[0], 104, "$Q$", "$T × d_k$", QUERY),
            "K": _node(c, fx + 62, rows[0], 104, "$K$", "$S × d_k$", KEY),
            "U": _node(c, fx, rows[1], 190, "$U = QK^⊤/√d_k$", "$T × S$", SCORE),
            "A": _node(c, fx, rows[2], 190, r"$A = \op{softmax}(U)$", "$T × S$", SCORE),
            "V": _node(c, fx - 96, rows[3], 90, "$V$", "$S × d_v$", VALUE),
            "O": _node(c, fx + 50, rows[3], 130, "$O = AV$", "$T × d_v$", OUTPUT),
            "L": _node(c, fx + 50, rows[4], 130, "$L$", _("a number"), INPUT),
        }
        bwd = {
            "Q": _node(c, bx - 86, rows[0], 164, r"$dQ = dU\,K/√d_k$", "$T × d_k$", GRADIENT),
            "K": _node(c, bx + 86, rows[0], 164, "$dK = dU^⊤Q/√d_k$", "$S × d_k$", GRADIENT),
            "U": _node(c, bx, rows[1], 206, "$dU = A ∘ (dA − δ)$", "$T × S$", GRADIENT),
            "A": _node(c, bx, rows[2], 206, r"$dA = dO\,V^⊤$", "$T × S$", GRADIENT),
            "V": _node(c, bx - 96, rows[3], 130, "$dV = A^⊤dO$", "$S × d_v$", GRADIENT),
            "O": _node(c, bx + 76, rows[3], 130, "$dO = ∂L/∂O$", "$T × d_v$", GRADIENT),
        }
        down = lambda a, b, dx=0.0: c.arrow([(a.cx + dx, a.bottom + 1), (b.cx + dx, b.y - 3)])
        c.arrow([(fwd["Q"].cx, fwd["Q"].bottom + 1), (fwd["U"].cx - 30, fwd["U"].y - 3)])
        c.arrow([(fwd["K"].cx, fwd["K"].bottom + 1), (fwd["U"].cx + 30, fwd["U"].y - 3)])
        down(fwd["U"], fwd["A"])
        c.arrow([(fwd["O"].cx, fwd["A"].bottom + 1), (fwd["O"].cx, fwd["O"].y - 3)])
        c.arrow([(fwd["V"].right + 1, rows[3]), (fwd["O"].x - 3, rows[3])])
        down(fwd["O"], fwd["L"])
        up = lambda a, b, ax=None, bx_=None: c.arrow(
            [(a.cx if ax is None else ax, a.y - 1), (b.cx if bx_ is None else bx_, b.bottom + 3)],
            color=GRADIENT.stroke)
        c.arrow([(fwd["L"].right + 2, rows[4]), (bwd["O"].cx, rows[4]), (bwd["O"].cx, bwd["O"].bottom + 3)],
                color=GRADIENT.stroke)
        c.text((fwd["L"].right + bwd["O"].cx) / 2, rows[4] - 14, _("upstream gradient $G$"), size=TEXT,
               color=GRADIENT.text)
        c.arrow([(bwd["O"].x - 1, rows[3]), (bwd["V"].right + 3, rows[3])], color=GRADIENT.stroke)
        up(bwd["O"], bwd["A"], bwd["O"].cx, bwd["O"].cx)
        up(bwd["A"], bwd["U"])
        up(bwd["U"], bwd["Q"], bwd["U"].cx - 40, bwd["Q"].cx)
        up(bwd["U"], bwd["K"], bwd["U"].cx + 40, bwd["K"].cx)
        for key in ("U", "A"):                            # a value and its gradient, side by side
            c.line(fwd[key].right + 4, rows[1 if key == "U" else 2], bwd[key].x - 4, rows[1 if key == "U" else 2],
                   stroke=FAINT, sw=1.2, dash="2 4")
        c.text(fx, 484, _("forward: each step uses the values above it"), size=SMALL, color=MUTED)
        c.text(bx, 464, r"$δ = \op{rowsum}(A ∘ dA)$", size=MATH, color=GRADIENT.text)
        c.text(bx, 492, _("backward: each step uses the gradient below it"), size=SMALL, color=MUTED)
        return c

    return Diagram("diag-backward-graph", ALT, draw)
