"""(i) A paged KV cache: fixed-size blocks anywhere in a pool, found through one block table per sequence."""
from __future__ import annotations

from ..i18n import N_, _
from ._draw import FAINT, MUTED, SMALL, Canvas, Diagram
from .heads import HEADS

ALT = N_("A paged KV cache with blocks of {b} positions. Sequence A has {la} tokens and sequence B {lb}; each is cut "
          "into logical blocks, and its block table maps logical block k to a physical block of a shared pool, in "
          "any order: A to {ta}, B to {tb}. Free blocks stay in the pool for whoever needs one; only a sequence's "
          "last block can have unused slots.")


def paged_cache(block_size: int = 4, lengths=(10, 6), tables=((5, 1, 6), (3, 0)), n_blocks: int = 8) -> Diagram:
    """Two sequences of ``lengths`` tokens in a pool of ``n_blocks`` blocks; ``tables`` are their block tables."""
    lengths, tables = tuple(lengths), tuple(tuple(t) for t in tables)
    if len(lengths) != 2 or len(tables) != 2:
        raise ValueError(f"need two sequences and two block tables; got lengths={lengths}, tables={tables}")
    for L, t in zip(lengths, tables):
        if len(t) != -(-L // block_size):
            raise ValueError(f"a sequence of {L} tokens needs {-(-L // block_size)} blocks of {block_size}; "
                             f"its table {t} has {len(t)}")
    used = [b for t in tables for b in t]
    if len(set(used)) != len(used) or not all(0 <= b < n_blocks for b in used):
        raise ValueError(f"block tables must use distinct blocks 0..{n_blocks - 1}; got {tables}")
    colours = (HEADS[0], HEADS[2])

    def draw() -> Canvas:
        rows = sum(len(t) for t in tables)
        c = Canvas(720, max(92 + 34 * n_blocks, 246 + 30 * rows + 24) + 40)
        names = (_("sequence A"), _("sequence B"))
        cell, x0, px, pw = 22.0, 20, 440, 220
        block_w = block_size * cell
        # each sequence cut into logical blocks
        for s, (L, role) in enumerate(zip(lengths, colours)):
            y = 48 + s * 84
            c.text(x0, y - 22, names[s], anchor="start", bold=True, color=role.text)
            for p in range(L):
                x = x0 + p * cell + (p // block_size) * 10
                r = c.rect(x, y, cell, 24, fill=role.cell, stroke="#ffffff", sw=1.5)
                c.text(x + cell / 2, y + 12, str(p), size=SMALL, color=role.text, within=r)
            for k in range(len(tables[s])):
                bx = x0 + k * (block_w + 10)
                c.rect(bx, y, block_w, 24, stroke=role.stroke, sw=1.5)
                c.text(bx + block_w / 2, y + 40, _("block {k}").format(k=k), size=SMALL, color=MUTED)
        # the block tables: logical block -> physical block, one row each
        ty = 244
        c.text(x0, ty - 24, _("block tables"), anchor="start", bold=True)
        entry_y, row = {}, 0
        for s, (table, role) in enumerate(zip(tables, colours)):
            for k, b in enumerate(table):
                y = ty + row * 30 + s * 8
                c.text(x0, y + 13, _("{seq}, block {k}").format(seq="AB"[s], k=k), anchor="start", size=SMALL,
                       color=role.text)
                c.arrow([(x0 + 112, y + 13), (x0 + 140, y + 13)], color=MUTED, sw=1.2, head=6)
                e = c.box(x0 + 146, y, 40, 26, str(b), role, size=SMALL, bold=True)
                entry_y[(s, k)] = (e.right, e.cy)
                row += 1
        # the pool
        c.text(px, 24, _("physical blocks: one shared pool"), anchor="start", bold=True)
        owner = {b: (s, k) for s, t in enumerate(tables) for k, b in enumerate(t)}
        for b in range(n_blocks):
            y = 44 + b * 34
            c.text(px - 10, y + 13, str(b), anchor="end", size=SMALL, color=MUTED)
            if b not in owner:
                c.rect(px, y, pw, 26, fill="#ffffff", stroke=FAINT, sw=1.2, rx=4, dash="4 3")
                c.text(px + pw / 2, y + 13, _("free"), size=SMALL, color=MUTED)
                continue
            s, k = owner[b]
            role = colours[s]
            first = k * block_size
            filled = min(block_size, lengths[s] - first)
            w = pw / block_size
            for slot in range(block_size):
                fill = role.cell if slot < filled else "#ffffff"
                r = c.rect(px + slot * w, y, w, 26, fill=fill, stroke="#ffffff" if slot < filled else FAINT, sw=1.2)
                if slot < filled:
                    c.text(r.cx, r.cy, str(first + slot), size=SMALL, color=role.text, within=r)
            c.rect(px, y, pw, 26, stroke=role.stroke, sw=1.5, rx=3)
            c.text(px + pw + 8, y + 13, f"{'AB'[s]}{k}", anchor="start", size=SMALL, color=role.text)
            ex_, ey = entry_y[(s, k)]
            c.arrow([(ex_ + 3, ey), (px - 28, y + 13)], color=role.stroke, sw=1.3, head=7)
        c.text(x0, c.height - 42, _("a sequence's blocks need not be neighbours in memory;"), anchor="start",
               size=SMALL, color=MUTED)
        c.text(x0, c.height - 20, _("only its last block has unused slots"), anchor="start", size=SMALL,
               color=MUTED)
        return c

    return Diagram("diag-paged-cache", ALT, draw, {
        "b": block_size, "la": lengths[0], "lb": lengths[1], "ta": ", ".join(map(str, tables[0])),
        "tb": ", ".join(map(str, tables[1]))})
