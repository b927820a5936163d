"""(a) Where attention sits: one decoder block on the residual stream (pre-norm, decoder-only)."""
from __future__ import annotations

from ..i18n import N_, _
from ._draw import INPUT, MUTED, QUERY, SMALL, VALUE, Canvas, Diagram

ALT = N_("One decoder block of a Transformer. The residual stream carries one vector per token from left to right. "
          "Two branches leave it and are added back: a norm followed by causal self-attention, the only step where "
          "tokens read each other, and a norm followed by an MLP, which works on each token alone. A model stacks "
          "many such blocks.")


def transformer_block() -> Diagram:
    """A decoder-only Transformer block: residual stream, norm, attention, norm, MLP, two additions."""

    def draw() -> Canvas:
        c = Canvas(720, 290)
        stream_y, branch_y, gap = 212, 106, 16
        branches = [(_("causal self-attention"), _("tokens read each other"), QUERY),
                    (_("MLP"), _("each token on its own"), VALUE)]
        norm_w = c.fit(_("norm"), minimum=60)
        widths = [max(100, c.fit(name, bold=True), c.fit(note, SMALL)) for name, note, _role in branches]
        x, splits, pluses = 66, [], []                   # where each branch leaves and rejoins the stream
        for w in widths:
            splits.append(x)
            pluses.append(x + gap + norm_w + gap + w + gap + 4)
            x = pluses[-1] + 30
        end = min(706, max(pluses[-1] + 60, 16 + c.fit(_("residual stream: one row per token, $T × d$"), SMALL)
                           + c.fit(_("to the next block"), SMALL)))
        c.width = end + 14                               # as wide as the drawing: a narrower one on a phone
        c.arrow([(14, stream_y), (end, stream_y)], color=MUTED, sw=4, head=14)
        c.text(16, stream_y - 20, "$X$", anchor="start", size=17)
        c.text(16, stream_y + 60, _("residual stream: one row per token, $T × d$"), size=SMALL, anchor="start",
               color=MUTED)
        c.text(end, stream_y + 60, _("to the next block"), size=SMALL, anchor="end", color=MUTED)
        for (name, note, role), w, split_x, plus_x in zip(branches, widths, splits, pluses):
            norm = c.box(split_x + gap, branch_y - 19, norm_w, 38, _("norm"), INPUT)
            main = c.rect(norm.right + gap, branch_y - 33, w, 66, fill=role.fill, stroke=role.stroke, sw=2.2, rx=8)
            c.text(main.cx, branch_y - 11, name, bold=True, color=role.text, within=main)
            c.text(main.cx, branch_y + 14, note, size=SMALL, color=MUTED, within=main)
            c.arrow([(split_x, stream_y - 2), (split_x, branch_y), (norm.x - 2, branch_y)])
            c.arrow([(norm.right, branch_y), (main.x - 2, branch_y)])
            c.arrow([(main.right, branch_y), (plus_x, branch_y), (plus_x, stream_y - 16)])
            c.circle(plus_x, stream_y, 12, fill="white", stroke=MUTED, sw=2)
            c.line(plus_x - 6, stream_y, plus_x + 6, stream_y, sw=2)
            c.line(plus_x, stream_y - 6, plus_x, stream_y + 6, sw=2)
        left, right = 44, pluses[-1] + 22
        c.rect(left, 26, right - left, 228, fill="none", stroke=MUTED, sw=1.2, rx=10, dash="6 5")
        c.text(left + 14, 46, _("one decoder block; a model stacks many"), size=SMALL, anchor="start", color=MUTED)
        c.text(pluses[0], stream_y + 28, _("add back: residual connection"), size=SMALL, color=MUTED)
        return c

    return Diagram("diag-transformer-block", ALT, draw)


__all__ = ["transformer_block"]
