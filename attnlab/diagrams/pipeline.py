"""(b) The Q/K/V pipeline: X -> (W_Q, W_K, W_V) -> Q, K, V -> QK^T/sqrt(d_k) -> softmax -> A V, every shape."""
from __future__ import annotations

import math

from ..i18n import N_, _
from ._draw import INPUT, KEY, MATH, MUTED, OUTPUT, QUERY, SCORE, SMALL, TEXT, VALUE, Canvas, Diagram, labelled_matrix

ALT = N_("The attention pipeline: the input X is multiplied by three projection matrices into queries Q, keys K "
          "and values V; the scaled scores U = QK transposed over the square root of d_k go through a softmax along "
          "each row to the weights A, and A times V gives the output O. Shapes: X {x}, Q {q}, K {k}, V {v}, U and A "
          "{a}, O {o}.")


def _shape(symbols: str, numbers, two_lines: bool = False) -> str:
    """'$T × d_k$' and, when the sizes are known, '= 4 × 2' after it (or on a second line)."""
    if any(n is None for n in numbers):
        return f"${symbols}$"
    return f"${symbols}$" + ("\n" if two_lines else " ") + "= " + " × ".join(str(n) for n in numbers)


def _weight_fills(weights):
    """Cell colours of a weight matrix: the score role's colour, stronger for a larger weight."""
    def mix(w):
        lo, hi = (0xfa, 0xf5, 0xff), (0xb7, 0x94, 0xf4)       # purple 100 .. 300: dark text stays legible
        r, g, b = (round(a + (z - a) * min(max(w, 0.0), 1.0)) for a, z in zip(lo, hi))
        return f"#{r:02x}{g:02x}{b:02x}"
    return [[mix(float(w)) for w in row] for row in weights]


def qkv_pipeline(T=None, S=None, d_model=None, d_k=None, d_v=None, tokens=None, weights=None,
                 example: bool = False) -> Diagram:
    """The pipeline of one attention head with the shape of every matrix.

    Sizes left as None are shown as symbols only; given, each shape shows its numbers too.
    ``example=True`` fills them from the running example (``attnlab.example``: T = S = 4, d_model = 4,
    d_k = d_v = 2, its pronoun head's weights in A, its words beside X's rows).
    """
    if example:
        from .. import example as ex
        T = S = ex.T
        d_model, d_k, d_v = ex.d_model, ex.d_k, ex.d_v
        weights = ex.attention(ex.PRONOUN)[1] if weights is None else weights
        tokens = "example"
    shapes = {"x": ("T × d", (T, d_model)), "q": ("T × d_k", (T, d_k)), "k": ("S × d_k", (S, d_k)),
              "v": ("S × d_v", (S, d_v)), "a": ("T × S", (T, S)), "o": ("T × d_v", (T, d_v))}
    params = {key: " × ".join(str(n) for n in nums) if None not in nums else sym for key, (sym, nums) in shapes.items()}

    def draw() -> Canvas:
        from .. import example as ex
        words = ex.words() if tokens == "example" else tokens
        c = Canvas(720, 420)
        n = lambda v, default: default if v is None else min(int(v), 6)     # cells drawn per axis
        rows_t, rows_s = n(T, 4), n(S, 4)
        cell = 16.0
        ys = {"q": 96, "k": 224, "v": 352}
        x_col, qkv_col, s_col, a_col = 100, 270, 440, 640
        c.text(16, 22, _("self-attention: $S = T$, keys and values come from the same $X$"), size=SMALL,
               anchor="start", color=MUTED)
        X = labelled_matrix(c, x_col, ys["k"], rows_t, n(d_model, 4), INPUT, "$X$", _shape(*shapes["x"], True), cell)
        if words:
            for i, w in enumerate(words[:rows_t]):
                c.text(X.x - 8, X.y + (i + 0.5) * cell, w, size=SMALL, anchor="end", color=MUTED)
        grids = {}
        for key, role, w_name, cols, name in (("q", QUERY, "W_Q", d_k, "Q"), ("k", KEY, "W_K", d_k, "K"),
                                              ("v", VALUE, "W_V", d_v, "V")):
            rows = rows_t if key == "q" else rows_s
            g = grids[key] = labelled_matrix(c, qkv_col, ys[key], rows, n(cols, 2), role, f"${name}$",
                                             _shape(*shapes[key]), cell)
            start = (X.right + 8, ys["k"] + (ys[key] - ys["k"]) * 0.15)
            end = (g.x - 10, ys[key])
            c.arrow([start, end], color=role.stroke)
            mx, my = (start[0] + end[0]) / 2, (start[1] + end[1]) / 2
            dx, dy = end[0] - start[0], end[1] - start[1]
            nx, ny = -dy / math.hypot(dx, dy), dx / math.hypot(dx, dy)       # the arrow's normal
            side = 1 if key == "v" else -1                                     # labels outside the fan
            c.text(mx + side * nx * 20, my + side * ny * 20, f"$W_{name}$", size=MATH, color=role.text)
        # scores, from Q and K
        y_s = (ys["q"] + ys["k"]) / 2
        S_grid = labelled_matrix(c, s_col, y_s, rows_t, rows_s, SCORE, "$U = QK^⊤/√d_k$", _shape(*shapes["a"]), cell)
        join = S_grid.x - 48                     # left of the shape label under the scores
        c.arrow([(grids["q"].right + 8, ys["q"]), (join, ys["q"]), (join, y_s - 9), (S_grid.x - 10, y_s - 9)],
                color=QUERY.stroke)
        c.arrow([(grids["k"].right + 8, ys["k"]), (join, ys["k"]), (join, y_s + 9), (S_grid.x - 10, y_s + 9)],
                color=KEY.stroke)
        c.text((grids["k"].right + join) / 2, ys["k"] - 15, "$K^⊤$", size=MATH, color=KEY.text)
        # weights: a softmax along each row
        a_cell, a_h = (30.0, 20.0) if weights is not None else (cell, cell)
        values = None if weights is None else [[f"{w:.2f}".lstrip("0") if w < 1 else "1" for w in row]
                                               for row in weights]
        A_grid = labelled_matrix(c, a_col, y_s, rows_t, rows_s, SCORE, "$A$", _shape(*shapes["a"]), a_cell,
                                 values=values, fills=None if weights is None else _weight_fills(weights),
                                 cell_h=a_h)
        c.arrow([(S_grid.right + 8, y_s), (A_grid.x - 10, y_s)], color=SCORE.stroke)
        gap_x = (S_grid.right + A_grid.x) / 2
        c.text(gap_x, y_s - 16, _("softmax"), size=TEXT, color=SCORE.text)
        c.text(gap_x, y_s + 16, _("each row"), size=SMALL, color=MUTED)
        # the output, under A: A times V
        O = labelled_matrix(c, a_col, ys["v"], rows_t, n(d_v, 2), OUTPUT, None, _shape(*shapes["o"]), cell)
        c.text(O.x - 14, O.y - 6, "$O = AV$", size=MATH, color=OUTPUT.text, anchor="end")
        c.arrow([(a_col, A_grid.bottom + 30), (a_col, O.y - 8)], color=SCORE.stroke)
        c.arrow([(grids["v"].right + 8, ys["v"]), (O.x - 10, ys["v"])], color=VALUE.stroke)
        return c

    return Diagram("diag-qkv-pipeline", ALT, draw, params)
