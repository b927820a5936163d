"""(j) Multi-head latent attention: the latent cache, and W_UK absorbed into the query, W_UV into W_O."""
from __future__ import annotations

from ..i18n import N_, _
from ._draw import FAINT, KEY, MATH, MUTED, OUTPUT, QUERY, REGISTER, SCORE, SMALL, TEXT, VALUE, Canvas, Diagram

ALT = N_("Multi-head latent attention. Each token's input is compressed by W_DKV into one latent vector c of width "
          "d_c, and only these latents are cached. Explicit path: every step rebuilds each head's keys C W_UK and "
          "values C W_UV from the cache, attends, and applies W_O. Absorbed path: W_UK moves to the query side, "
          "q W_UK transposed, which scores the latents directly; the weighted sum of latents is multiplied by the "
          "product W_UV W_O, computed once. Both give the same output, because q (C W_UK) transposed equals "
          "(q W_UK transposed) C transposed.")


def mla_absorption() -> Diagram:
    """The latent cache of MLA and the two ways to read it (explicit, absorbed), for one head h."""

    def draw() -> Canvas:
        c = Canvas(720, 470)
        # the latent cache, shared by both paths and by all heads
        new = c.box(16, 40, 150, 40, "$c_t = x_tW_{DKV}$", REGISTER, size=TEXT + 1)
        c.text(new.cx, 24, _("new token"), size=SMALL, color=MUTED)
        cx0, cw, top, rows = 46, 90, 122, 7
        for i in range(rows):
            r = c.rect(cx0, top + i * 30, cw, 30, fill=REGISTER.cell, stroke="#ffffff", sw=2)
            label = f"$c_{i}$" if i < rows - 2 else ("⋮" if i == rows - 2 else "$c_t$")
            c.text(r.cx, r.cy, label, size=SMALL + 2, within=r)
        cache = c.rect(cx0, top, cw, rows * 30, stroke=REGISTER.stroke, sw=2, rx=3)
        c.arrow([(new.cx, new.bottom + 2), (new.cx, cache.y - 4)], color=REGISTER.stroke)
        c.text(cache.cx, cache.bottom + 18, _("latent cache $C$"), size=SMALL, bold=True, color=REGISTER.text)
        c.text(cache.cx, cache.bottom + 40, "$T × d_c$", size=SMALL + 2, color=MUTED)
        c.text(16, cache.bottom + 66, _("cached per token: $d_c$ numbers,"), anchor="start", size=SMALL, color=MUTED)
        c.text(16, cache.bottom + 86, _("not $2Hd_h$ as in MHA"), anchor="start", size=SMALL, color=MUTED)

        def box(x, y, w, h, lines, role):
            r = c.rect(x, y, w, h, fill=role.fill, stroke=role.stroke, sw=1.6, rx=7)
            step = h / (len(lines) + 1)
            for k, (text, size) in enumerate(lines):
                c.text(r.cx, y + step * (k + 1), text, size=size, within=r)
            return r

        # explicit: rebuild keys and values of head h from the cache
        y1 = 118
        c.text(196, y1 - 26, _("explicit: rebuild keys and values"), anchor="start", bold=True)
        K = box(196, y1, 150, 40, [("$K^{(h)} = CW_{UK}^{(h)}$", TEXT)], KEY)
        V = box(196, y1 + 52, 150, 40, [("$V^{(h)} = CW_{UV}^{(h)}$", TEXT)], VALUE)
        att = box(386, y1 + 2, 160, 88, [(_("attention"), TEXT), ("$q^{(h)}$, $K^{(h)}$, $V^{(h)}$", TEXT)],
                  SCORE)
        out = box(586, y1 + 22, 118, 48, [("$·W_O^{(h)}$", MATH)], OUTPUT)
        for r, role in ((K, KEY), (V, VALUE)):
            c.arrow([(cache.right + 4, r.cy), (r.x - 4, r.cy)], color=role.stroke)
            c.arrow([(r.right + 2, r.cy), (att.x - 4, r.cy)], color=role.stroke)
        c.arrow([(att.right + 2, att.cy), (out.x - 4, att.cy)], color=SCORE.stroke)
        c.text(271, y1 + 112, _("every step, for every head"), size=SMALL, color=MUTED)
        # absorbed: the query meets the latents directly
        y2 = 300
        c.line(196, y2 - 52, 704, y2 - 52, stroke=FAINT, sw=1, dash="4 4")
        c.text(196, y2 - 34, _("absorbed: attend to the latents"), anchor="start", bold=True)
        q = box(196, y2 + 14, 150, 68, [(r"$q̃^{(h)} = q^{(h)}W_{UK}^{(h)⊤}$", TEXT), (_("width $d_c$"), SMALL)],
                QUERY)
        att2 = box(386, y2 - 14, 160, 96, [(_("attention"), TEXT), (r"$q̃^{(h)}$, $C$, $C$", TEXT)], SCORE)
        out2 = box(586, y2 + 4, 118, 48, [("$·W_{UV}^{(h)}W_O^{(h)}$", TEXT)], OUTPUT)
        c.arrow([(q.right + 2, q.cy), (att2.x - 4, q.cy)], color=QUERY.stroke)
        c.arrow([(cache.right + 4, y2), (att2.x - 4, y2)], color=REGISTER.stroke)
        c.arrow([(att2.right + 2, out2.cy), (out2.x - 4, out2.cy)], color=SCORE.stroke)
        c.text(out2.cx, out2.bottom + 18, _("one matrix,"), size=SMALL, color=MUTED)
        c.text(out2.cx, out2.bottom + 38, _("computed once"), size=SMALL, color=MUTED)
        c.text(196, 446, r"$q\,(CW_{UK})^⊤ = (qW_{UK}^⊤)\,C^⊤$: " + _("the same scores"), anchor="start",
               size=TEXT, color=MUTED)
        return c

    return Diagram("diag-mla-absorption", ALT, draw)
