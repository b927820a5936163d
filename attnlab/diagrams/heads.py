"""(e) Splitting the features into heads and merging them back; (f) query heads sharing key/value heads."""
from __future__ import annotations

from ..i18n import N_, _
from ._draw import INPUT, KEY, MUTED, OUTPUT, QUERY, SMALL, VALUE, Canvas, Diagram, Role, labelled_matrix

# one colour per head (purple, pink, teal, yellow): Q, K and V keep blue, orange and green
HEADS = (Role("#805ad5", "#faf5ff", "#e9d8fd", "#553c9a"), Role("#d53f8c", "#fff5f7", "#fed7e2", "#97266d"),
         Role("#319795", "#e6fffa", "#b2f5ea", "#285e61"), Role("#d69e2e", "#fffff0", "#fefcbf", "#744210"))

SPLIT_ALT = N_("Splitting into {H} heads and merging them back: the queries Q = X W_Q, of shape T × H d_k, are "
                "viewed as T × H × d_k and transposed to H × T × d_k, so that each head gets d_k = {d_k} of the "
                "{d} features; each head attends on its own; the heads' outputs are transposed back and concatenated "
                "into C, T × H d_v, and multiplied by W_O into the output Y, T × d.")


def head_split(n_heads: int = 2, d_model: int = 4, T: int = 4) -> Diagram:
    """The head split and merge with every shape; defaults: the running example (H = 2, d = 4, T = 4)."""
    if n_heads not in (1, 2, 3, 4) or d_model % n_heads or T < 1:
        raise ValueError(f"n_heads must be 1..4 and divide d_model; got n_heads={n_heads}, d_model={d_model}")
    d_k = d_model // n_heads

    def draw() -> Canvas:
        c = Canvas(720, 384)
        cell, top, bottom = 14.0, 108, 306
        rows = min(T, 6)
        head_fills = [[HEADS[h].cell for h in range(n_heads) for _k in range(d_k)]] * rows
        X = labelled_matrix(c, 70, top, rows, d_model, INPUT, "$X$", f"$T × d$ = {T} × {d_model}", cell)
        Q = labelled_matrix(c, 262, top, rows, d_model, QUERY, "$Q = XW_Q$", f"$T × Hd_k$ = {T} × {d_model}",
                            cell, fills=head_fills)
        c.arrow([(X.right + 10, top), (Q.x - 12, top)], color=QUERY.stroke)
        c.text((X.right + Q.x) / 2, top + 16, _("$K$, $V$ alike"), size=SMALL, color=MUTED)
        # the split: each head's block of d_k columns becomes its own T x d_k matrix
        x_heads = 540
        pitch = d_k * cell + 40
        xs = [x_heads + (h - (n_heads - 1) / 2) * pitch for h in range(n_heads)]
        fills = lambda h: [[HEADS[h].cell] * d_k] * rows
        for h, x in enumerate(xs):
            labelled_matrix(c, x, top, rows, d_k, HEADS[h], f"$Q_{h}$", None, cell, fills=fills(h))
            labelled_matrix(c, x, bottom, rows, d_k, HEADS[h], f"$O_{h}$", None, cell, fills=fills(h))
            c.arrow([(x, top + rows * cell / 2 + 34), (x, bottom - rows * cell / 2 - 30)], color=HEADS[h].stroke)
        left = xs[0] - d_k * cell / 2
        c.text(x_heads, top + rows * cell / 2 + 18, f"$H × T × d_k$ = {n_heads} × {T} × {d_k}", color=MUTED)
        c.text(x_heads, bottom + rows * cell / 2 + 16, f"$H × T × d_v$ = {n_heads} × {T} × {d_k}", color=MUTED)
        c.arrow([(Q.right + 10, top), (left - 12, top)], color=QUERY.stroke)
        c.text((Q.right + left) / 2, top - 16, _("split"), bold=True)
        c.text((Q.right + left) / 2, top + 18, "$(T, H, d_k) → (H, T, d_k)$", size=SMALL, color=MUTED)
        mid = (top + bottom) / 2
        c.text(left - 16, mid - 10, _("attention"), anchor="end", bold=True)
        c.text(left - 16, mid + 12, _("each head alone"), anchor="end", size=SMALL, color=MUTED)
        # the merge: heads side by side again, then W_O mixes them
        C = labelled_matrix(c, 262, bottom, rows, d_model, OUTPUT, "$C$", f"$T × Hd_v$ = {T} × {d_model}", cell,
                            fills=head_fills)
        Y = labelled_matrix(c, 70, bottom, rows, d_model, INPUT, "$Y = CW_O$", f"$T × d$ = {T} × {d_model}", cell)
        c.arrow([(left - 12, bottom), (C.right + 10, bottom)], color=OUTPUT.stroke)
        c.text((C.right + left) / 2, bottom - 16, _("merge"), bold=True)
        c.text((C.right + left) / 2, bottom + 18, "$(H, T, d_v) → (T, Hd_v)$", size=SMALL, color=MUTED)
        c.arrow([(C.x - 12, bottom), (Y.right + 10, bottom)], color=OUTPUT.stroke)
        c.text((C.x + Y.right) / 2, bottom - 18, "$W_O$", size=17, color=OUTPUT.text)
        c.text(16, 22, _("each head reads $d_k = d/H$ of the features: here {d_k} of {d}").format(d_k=d_k, d=d_model),
               size=SMALL, anchor="start", color=MUTED)
        return c

    return Diagram("diag-head-split", SPLIT_ALT, draw, {"H": n_heads, "d_k": d_k, "d": d_model})


SHARING_ALT = N_("Query heads sharing key and value heads, with {H} query heads: multi-head attention gives every "
                  "query head its own key/value head, grouped-query attention lets a group of query heads share one "
                  "({groups}), and multi-query attention lets all of them share a single one. Query head h reads "
                  "key/value head h divided by the group size, rounded down; the cache holds only the key/value heads.")
KINDS = {"mha": N_("MHA: multi-head"), "gqa": N_("GQA: grouped-query"), "mqa": N_("MQA: multi-query")}


def kv_sharing(n_heads: int = 8, kv_heads=(8, 2, 1)) -> Diagram:
    """MHA, GQA and MQA as rows: query heads above, the key/value heads they read below."""
    kv_heads = tuple(kv_heads)
    if not 1 <= n_heads <= 12 or any(n_heads % g or g < 1 for g in kv_heads) or not kv_heads:
        raise ValueError(f"each of kv_heads must divide n_heads (1..12); got n_heads={n_heads}, kv_heads={kv_heads}")

    def name(g):
        return _(KINDS["mha"] if g == n_heads else KINDS["mqa"] if g == 1 else KINDS["gqa"])

    def draw() -> Canvas:
        row_h = 128
        c = Canvas(720, 50 + row_h * len(kv_heads))
        left, right = 200, 704
        pitch = (right - left) / n_heads
        box_w = min(pitch - 6, 44)
        for r, g in enumerate(kv_heads):
            y0 = 38 + r * row_h
            ratio = n_heads // g
            c.text(16, y0 + 18, name(g), anchor="start", bold=True)
            c.text(16, y0 + 42, f"$H_{{kv}}$ = {g}", anchor="start", color=MUTED)
            c.text(16, y0 + 68, _("cached per token:"), anchor="start", size=SMALL, color=MUTED)
            c.text(16, y0 + 90, f"${g}(d_k + d_v)$", anchor="start", size=SMALL, color=MUTED)
            qx = [left + pitch * (h + 0.5) for h in range(n_heads)]
            for h, x in enumerate(qx):
                c.box(x - box_w / 2, y0, box_w, 26, f"$q_{{{h}}}$", QUERY)
            for k in range(g):
                members = qx[k * ratio:(k + 1) * ratio]
                kx = sum(members) / len(members)
                w = members[-1] - members[0] + box_w
                kb = c.box(kx - w / 2, y0 + 56, w, 24, f"$k_{{{k}}}$", KEY, size=SMALL)
                c.box(kx - w / 2, y0 + 80, w, 24, f"$v_{{{k}}}$", VALUE, size=SMALL)
                for x in members:
                    c.line(x, y0 + 27, x, kb.y - 1, stroke=MUTED, sw=1.2)
        c.text(16, 32 + row_h * len(kv_heads), _("query head $h$ reads key/value head $⌊h/r⌋$, $r = H/H_{kv}$"),
               anchor="start", size=SMALL, color=MUTED)
        return c

    groups = ", ".join(str(n_heads // g) for g in kv_heads if 1 < g < n_heads) or "-"
    return Diagram("diag-kv-sharing", SHARING_ALT, draw, {"H": n_heads, "groups": groups})
