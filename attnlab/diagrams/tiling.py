"""(g) The online softmax / FlashAttention schedule: blocks of the score matrix, running statistics, memory levels."""
from __future__ import annotations

from ..i18n import N_, _
from ._draw import FAINT, INPUT, KEY, MATH, MUTED, OUTPUT, QUERY, REGISTER, SCORE, SMALL, SRAM, VALUE, Canvas, Diagram

ALT = N_("The schedule of exact attention by blocks, as in FlashAttention. The {nq} × {nk} grid of score blocks: "
          "query block i (in parallel over i) loops over key blocks j, computing the tile U_ij in fast on-chip "
          "memory (SRAM, shared memory) and updating a running maximum m, sum ℓ and output o kept in registers; "
          "{skip}Q, K, V and O stay in the large, slow HBM: Q_i is loaded once, K_j and V_j once per step, and "
          "O_i = o/ℓ is written once at the end. No T × S matrix is ever stored.")
SKIP = N_("with the causal mask the blocks above the diagonal are skipped and the diagonal blocks are masked inside; ")


def _hatch(c: Canvas, x, y, w, h, step=7.0):
    """Diagonal hatching (explicit lines, as the explorers draw it: rsvg and browsers agree on lines)."""
    k = -h
    while k < w:
        x1, y1, x2, y2 = x + k, y + h, x + k + h, y
        if x1 < x:
            y1, x1 = y1 - (x - x1), x
        if x2 > x + w:
            y2, x2 = y2 + (x2 - (x + w)), x + w
        c.line(x1, y1, x2, y2, stroke=FAINT, sw=0.9)
        k += step


def flash_tiling(n_query_blocks: int = 4, n_key_blocks: int = 4, causal: bool = True, current=(2, 1)) -> Diagram:
    """The blockwise schedule; ``current`` = (i, j) is the tile being computed (drawn in the SRAM colour)."""
    nq, nk = int(n_query_blocks), int(n_key_blocks)
    i0, j0 = current
    if not (1 <= nq <= 8 and 1 <= nk <= 8 and 0 <= i0 < nq and 0 <= j0 < nk):
        raise ValueError(f"need 1..8 blocks each way and current inside the grid; got {nq} x {nk}, {current}")
    if causal and j0 > i0:
        raise ValueError(f"current={current} is a block the causal schedule skips")

    def draw() -> Canvas:
        c = Canvas(720, 500)
        size = min(52.0, 220.0 / max(nq, nk))
        gx, gy = 70, 96
        c.text(gx + nk * size / 2, 26, _("key blocks $j$: $K_j$, $V_j$"), color=KEY.text)
        c.arrow([(gx, 56), (gx + nk * size, 56)], color=KEY.stroke)
        c.text(gx + nk * size / 2, 74, _("inner loop, one block after another"), size=SMALL, color=MUTED)
        for i in range(nq):
            c.text(gx - 14, gy + (i + 0.5) * size, f"$Q_{i}$", size=SMALL + 2, color=QUERY.text)
            for j in range(nk):
                x, y = gx + j * size, gy + i * size
                skipped = causal and j * nq > i * nk + (nq - 1)          # wholly above the diagonal
                if skipped:
                    c.rect(x, y, size, size, fill="#ffffff", stroke=FAINT, sw=1)
                    _hatch(c, x, y, size, size)
                    continue
                c.rect(x, y, size, size, fill=SCORE.fill if (i, j) != (i0, j0) else SRAM.cell, stroke=SCORE.stroke,
                       sw=1)
                if causal and i == j and nq == nk:                      # masked inside: the upper triangle
                    c.polygon([(x, y), (x + size, y), (x + size, y + size)], fill="#ffffff")
                    c.line(x, y, x + size, y + size, stroke=SCORE.stroke, sw=1)
        cur = c.rect(gx + j0 * size, gy + i0 * size, size, size, fill="none", stroke=SRAM.stroke, sw=3)
        lower = causal and i0 == j0                       # a diagonal tile: the label in its lower triangle
        c.text(cur.cx - size * 0.12 * lower, cur.cy + size * 0.14 * lower, f"$U_{{{i0}{j0}}}$", size=SMALL + 1,
               color=SRAM.text, within=cur)
        c.text(gx + nk * size / 2, gy + nq * size + 18, _("query blocks $i$: in parallel"), size=SMALL,
               color=QUERY.text)
        if causal:
            c.text(gx + nk * size + 10, gy + 14, _("skipped"), size=SMALL, anchor="start", color=MUTED)
        # the memory levels
        mx, mw = 380, 324
        hbm = c.rect(mx, 30, mw, 96, fill=INPUT.fill, stroke=INPUT.stroke, sw=1.5, rx=8)
        c.text(mx + 12, 50, _("HBM: large, slow"), anchor="start", bold=True, within=hbm)
        for k, (name, role) in enumerate((("Q", QUERY), ("K", KEY), ("V", VALUE), ("O", OUTPUT))):
            c.box(mx + 16 + k * 76, 70, 64, 40, f"${name}$", role, size=MATH)
        sram = c.rect(mx, 190, mw, 126, fill=SRAM.fill, stroke=SRAM.stroke, sw=1.5, rx=8)
        c.text(mx + 12, 210, _("SRAM (shared memory): small, fast"), anchor="start", bold=True, within=sram)
        c.box(mx + 16, 230, 84, 36, "$Q_i$", QUERY, size=MATH)
        c.box(mx + 112, 230, 84, 36, "$K_j$, $V_j$", KEY, size=MATH)
        c.box(mx + 208, 230, 100, 36, "$U_{ij}$", SCORE, size=MATH)
        c.text(mx + 12, 292, _("one tile: $U_{ij} = Q_iK_j^⊤/√d_k$"), anchor="start", size=SMALL, color=SRAM.text,
               within=sram)
        regs = c.rect(mx, 362, mw, 62, fill=REGISTER.fill, stroke=REGISTER.stroke, sw=1.5, rx=8)
        c.text(mx + 12, 380, _("registers: per query row"), anchor="start", bold=True, within=regs)
        c.text(mx + 12, 405, _("running max $m$, sum $ℓ$, output $o$"), anchor="start", size=SMALL, within=regs)
        c.arrow([(mx + 60, 126), (mx + 60, 188)], color=MUTED)
        c.text(mx + 68, 146, _("load $Q_i$ once,"), anchor="start", size=SMALL, color=MUTED)
        c.text(mx + 68, 168, _("$K_j$, $V_j$ every step"), anchor="start", size=SMALL, color=MUTED)
        c.arrow([(mx + mw - 20, 188), (mx + mw - 20, 126)], color=OUTPUT.stroke)
        c.text(mx + mw - 28, 146, _("store $O_i = o/ℓ$"), anchor="end", size=SMALL, color=OUTPUT.text)
        c.text(mx + mw - 28, 168, _("once, at the end"), anchor="end", size=SMALL, color=OUTPUT.text)
        c.arrow([(mx + 160, 316), (mx + 160, 360)], color=REGISTER.stroke, both=True)
        # the update of one step
        fy = gy + nq * size + 62
        c.text(16, fy, _("each step, for every query row:"), anchor="start", size=SMALL, bold=True)
        c.text(16, fy + 30, r"$m′ = \op{max}(m, \op{rowmax}\,U_{ij})$", anchor="start", size=SMALL + 2)
        c.text(16, fy + 60, r"$ℓ′ = e^{m − m′}ℓ + \op{rowsum}\,e^{U_{ij} − m′}$", anchor="start", size=SMALL + 2)
        c.text(16, fy + 90, r"$o′ = e^{m − m′}o + e^{U_{ij} − m′}V_j$", anchor="start", size=SMALL + 2)
        return c

    return Diagram("diag-flash-tiling", ALT, draw, {"nq": nq, "nk": nk, "skip": (lambda: _(SKIP)) if causal else ""})
