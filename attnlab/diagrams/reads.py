"""(c) A mask as "who may read whom": the example's tokens as nodes, an arrow for every allowed read."""
from __future__ import annotations

import numpy as np

from .. import masks
from ..i18n import N_, _, get_language
from ._draw import KEY, MUTED, PAD_ROLE, QUERY, SMALL, TEXT, Canvas, Diagram

ALT = N_("Masks drawn as who may read whom, for the sentence {sentence}: each panel has the tokens twice, as "
          "readers (queries) above and as the tokens read (keys) below, and an arrow for every allowed read. {panels}")
PANEL_ALT = {
    "full": N_("Without a mask every token reads every token."),
    "causal": N_("With the causal mask each token reads itself and the tokens before it."),
    "padding": N_("With the padding mask the shorter sentence {short} reads none of its two padding slots, "
                  "and the padding slots read nothing."),
}
TITLES = {"full": N_("no mask"), "causal": N_("causal mask"), "padding": N_("padding mask")}
SUBTITLES = {"full": N_("every token reads every token"), "causal": N_("a token reads itself and earlier tokens"),
             "padding": N_("nobody reads a pad")}
KINDS = tuple(TITLES)
PAD_WORD = N_("pad")


def _panel(kind: str):
    """(readers, read, allowed (T, S), valid query (T,), valid key (S,)) of one panel."""
    from .. import example as ex
    words = list(ex.words())
    if kind == "full":
        return words, words, np.ones((ex.T, ex.T), bool), np.ones(ex.T, bool), np.ones(ex.T, bool)
    if kind == "causal":
        return words, words, masks.causal(ex.T), np.ones(ex.T, bool), np.ones(ex.T, bool)
    batch = ex.padded_batch()
    short = [words[ex.tokens.index(t)] if t != ex.PAD else _("pad") for t in batch.tokens[1]]
    keys = batch.allowed[1, 0]                                     # (S,) True = a real key
    return short, short, np.broadcast_to(keys, (ex.T, ex.T)) & batch.query_valid[1][:, None], \
        batch.query_valid[1], keys


def who_reads_whom(kinds=("causal", "padding"), highlight: str | None = "she") -> Diagram:
    """One panel per mask in ``kinds`` ("full", "causal", "padding"), on the running example.

    ``highlight`` draws the reads of one token (an English token of ``attnlab.example``) in the query colour.
    """
    from .. import example as ex
    kinds = tuple(kinds)
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise ValueError(f"kinds must be a non-empty subset of {KINDS}; got {kinds!r}")
    if highlight is not None and highlight not in ex.tokens:
        raise ValueError(f"highlight must be one of {ex.tokens} or None; got {highlight!r}")

    def alt_panels() -> str:
        words = dict(zip(ex.tokens, ex.words()))
        short = " ".join(words[w] for w in ex.padded_batch().tokens[1] if w != ex.PAD)
        between = "" if get_language() == "zh_CN" else " "          # Chinese sentences follow without a space
        return between.join(_(PANEL_ALT[k]).format(short=f"“{short}”") for k in kinds)

    def draw() -> Canvas:
        panel_w = 340 if len(kinds) <= 2 else 220
        c = Canvas(panel_w * len(kinds) + 16 * (len(kinds) - 1) + 24, 300)
        for p, kind in enumerate(kinds):
            x0 = 12 + p * (panel_w + 16)
            readers, read, allowed, valid_q, valid_k = _panel(kind)
            c.text(x0 + panel_w / 2, 22, _(TITLES[kind]), bold=True)
            c.text(x0 + panel_w / 2, 44, _(SUBTITLES[kind]), size=SMALL, color=MUTED)
            T = len(readers)
            step = (panel_w - 20) / T
            node_w, node_h, top, bottom = min(step - 8, 70), 30, 84, 236
            xs = [x0 + 10 + step * (i + 0.5) for i in range(T)]
            hl = ex.tokens.index(highlight) if highlight is not None and kind != "padding" else None
            spread = lambda k, n: (k - (n - 1) / 2) * 8.0       # fan the ends of several arrows out
            for i in range(T):                    # reads: from key j (below) up to query i (above)
                for j in range(T):
                    if allowed[i, j]:
                        strong = i == hl
                        into = spread(int(allowed[i, :j].sum()), int(allowed[i].sum()))
                        out = spread(int(allowed[:i, j].sum()), int(allowed[:, j].sum()))
                        c.arrow([(xs[j] + out, bottom - 2), (xs[i] + into, top + node_h + 3)],
                                color=QUERY.stroke if strong else "#a0aec0", sw=2.2 if strong else 1.3,
                                head=9 if strong else 7)
            for i, w in enumerate(readers):
                role = QUERY if valid_q[i] else PAD_ROLE
                c.box(xs[i] - node_w / 2, top, node_w, node_h, w, role, size=TEXT if valid_q[i] else SMALL,
                      dash=None if valid_q[i] else "4 3")
            for j, w in enumerate(read):
                role = KEY if valid_k[j] else PAD_ROLE
                c.box(xs[j] - node_w / 2, bottom, node_w, node_h, w, role, size=TEXT if valid_k[j] else SMALL,
                      dash=None if valid_k[j] else "4 3")
            c.text(x0 + 4, top - 14, _("reads (queries)"), size=SMALL, anchor="start", color=QUERY.text)
            c.text(x0 + 4, bottom + node_h + 16, _("is read (keys)"), size=SMALL, anchor="start", color=KEY.text)
        return c

    sentence = lambda: "“" + " ".join(ex.words()) + "”"
    return Diagram("diag-who-reads-whom", ALT, draw, {"sentence": sentence, "panels": alt_panels})
