"""(k) RoPE as rotations of 2-D pairs: a query and a key turned by their position angles keep their relative angle."""
from __future__ import annotations

import math

from ..i18n import N_, _
from ._draw import FAINT, KEY, MUTED, QUERY, SCORE, SMALL, Canvas, Diagram

ALT = N_("Rotary position embedding on one pair of features, drawn as arrows in the plane. A query at position m is "
          "turned by the angle m θ and a key at position n by n θ; in the left panel m = {m1} and n = {n1}, in the "
          "right panel both positions are {shift} larger. The angle between the turned query and key is (n − m) θ "
          "in both panels, so their dot product, the score, depends only on the distance n − m.")


def _point(cx, cy, r, angle):
    return cx + r * math.cos(angle), cy - r * math.sin(angle)          # SVG's y grows downwards


def _arc(c: Canvas, cx, cy, r, a1, a2, color, sw=1.8):
    x1, y1 = _point(cx, cy, r, a1)
    x2, y2 = _point(cx, cy, r, a2)
    large = 1 if abs(a2 - a1) > math.pi else 0
    sweep = 0 if a2 > a1 else 1                                         # counter-clockwise on the page
    c.path(f"M{x1:.1f},{y1:.1f} A{r:.1f},{r:.1f} 0 {large} {sweep} {x2:.1f},{y2:.1f}", stroke=color, sw=sw)


def rope_rotation(m: int = 1, n: int = 3, shift: int = 3, theta_degrees: float = 30.0) -> Diagram:
    """Query at position m, key at n (left), both moved by ``shift`` (right); pair angle θ per position."""
    if not (0 <= m and 0 <= n and shift >= 1 and 5 <= theta_degrees <= 60):
        raise ValueError(f"need positions m, n >= 0, shift >= 1 and 5 <= theta <= 60 degrees; got "
                         f"m={m}, n={n}, shift={shift}, theta={theta_degrees}")
    theta = math.radians(theta_degrees)

    def draw() -> Canvas:
        c = Canvas(720, 412)
        for p, (mm, nn) in enumerate(((m, n), (m + shift, n + shift))):
            x0 = 10 + p * 360
            cx, cy, R = x0 + 170, 196, 104
            c.text(x0 + 170, 24, _("query at $m = {m}$, key at $n = {n}$").format(m=mm, n=nn), bold=True)
            c.line(cx - R - 14, cy, cx + R + 14, cy, stroke=FAINT, sw=1)
            c.line(cx, cy - R - 14, cx, cy + R + 14, stroke=FAINT, sw=1)
            c.circle(cx, cy, R, stroke=FAINT, sw=1, dash="3 4")
            aq, ak = mm * theta, nn * theta
            c.arrow([(cx, cy), _point(cx, cy, R * 0.96, 0.0)], color=FAINT, sw=1.4, dash="5 4")
            _arc(c, cx, cy, 34, 0.0, aq, QUERY.stroke)
            _arc(c, cx, cy, 52, 0.0, ak, KEY.stroke)
            _arc(c, cx, cy, R * 0.72, aq, ak, SCORE.stroke, sw=2.4)
            c.arrow([(cx, cy), _point(cx, cy, R, aq)], color=QUERY.stroke, sw=2.4)
            c.arrow([(cx, cy), _point(cx, cy, R * 0.82, ak)], color=KEY.stroke, sw=2.4)
            qx, qy = _point(cx, cy, R + 20, aq)
            kx, ky = _point(cx, cy, R * 0.82 + 20, ak)
            c.text(qx, qy, "$q_m$", size=17, color=QUERY.text)
            c.text(kx, ky, "$k_n$", size=17, color=KEY.text)
            mid = (aq + ak) / 2
            lx, ly = _point(cx, cy, R * 0.72 + 28, mid)
            c.text(lx, ly, f"${nn - mm}θ$", size=16, color=SCORE.text)
            c.text(x0 + 170, cy + R + 40, _("turned by $mθ$ = {a}° and $nθ$ = {b}°").format(
                a=round(math.degrees(aq)), b=round(math.degrees(ak))), size=SMALL, color=MUTED)
        c.text(360, 372, _("dashed: the pair before turning (query and key drawn the same way)"), size=SMALL,
               color=MUTED)
        c.text(360, 396, _("the angle between them, and so the score $q_m · k_n$, depends only on $n − m$"),
               size=SMALL, color=MUTED)
        return c

    return Diagram("diag-rope-rotation", ALT, draw, {"m1": m, "n1": n, "shift": shift})
