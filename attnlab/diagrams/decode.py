"""(h) One decoding step reading the KV cache; (l) split-KV decoding, merged by log-sum-exp."""
from __future__ import annotations

from ..i18n import N_, _
from ._draw import KEY, MATH, MUTED, OUTPUT, QUERY, SCORE, SMALL, VALUE, Canvas, Diagram, Rect

STEP_ALT = N_("One decoding step with a KV cache, on the sentence {sentence}: the new token {token} at position {t} "
               "makes a query, a key and a value; its key and value are appended to the cached keys and values of "
               "the earlier tokens; its query is scored against every cached key, the scores go through a softmax "
               "(weights {weights}), and the weighted sum of the cached values is its output. No mask is needed: the "
               "cache holds no future token.")


def _num(x: float) -> str:
    return "0" if abs(x) < 5e-3 else f"{x:.2f}".rstrip("0").rstrip(".") if abs(x) >= 1 else f"{x:.2f}".lstrip("0")


def _row(c: Canvas, x, y, values, role, cell_w=46.0, cell_h=26.0, fill=None) -> Rect:
    """A row vector as cells with their numbers, left edge at x, centred on y."""
    return c.matrix(x, y - cell_h / 2, 1, len(values), cell_w, role, values=[[_num(v) for v in values]],
                    cell_h=cell_h, fills=None if fill is None else [[fill] * len(values)])


def decode_step(step: int = 2, head=None) -> Diagram:
    """Step ``step`` of decoding the running example (default: "she", whose query finds "Mia")."""
    from .. import example as ex
    head = ex.PRONOUN if head is None else head
    if not 0 <= step < ex.T:
        raise ValueError(f"step must be 0..{ex.T - 1}; got {step}")
    s = ex.decode(head)[step]

    def draw() -> Canvas:
        words = ex.words()
        c = Canvas(720, 420)
        t = s.t
        ch, cw = 26.0, 40.0
        c.text(16, 22, _("step $t$ = {t}: the new token reads the cache").format(t=t), anchor="start", bold=True)
        ys = {"q": 104, "k": 228, "v": 352}
        new = c.box(16, ys["k"] - 20, max(72, c.fit(words[t])), 40, words[t], QUERY, bold=True)
        c.text(new.cx, new.bottom + 16, _("new token"), size=SMALL, color=MUTED)
        vec = {}
        for key, role, v in (("q", QUERY, s.q), ("k", KEY, s.k), ("v", VALUE, s.v)):
            vec[key] = _row(c, 150, ys[key], v, role, cw, ch)
            c.text(vec[key].cx, ys[key] - 28, f"${key}_t$", size=MATH, color=role.text)
            start = (new.right + 2, ys["k"] + (ys[key] - ys["k"]) * 0.2)
            c.arrow([start, (vec[key].x - 8, ys[key])], color=role.stroke)
        caches = {}
        for key, role, M, name in (("k", KEY, s.K_cache, _("key cache")), ("v", VALUE, s.V_cache, _("value cache"))):
            top = ys[key] + ch / 2 - ch * (t + 1)
            grid = c.matrix(286, top, t + 1, M.shape[1], cw, role, values=[[_num(x) for x in row] for row in M],
                            cell_h=ch)
            c.rect(286, top + ch * t, cw * M.shape[1], ch, stroke=role.stroke, sw=2.5, dash="5 3")
            for i in range(t + 1):
                c.text(grid.right + 8, top + ch * (i + 0.5), words[i], size=SMALL, anchor="start", color=MUTED)
            c.text(grid.cx, top - 14, name, size=SMALL, color=role.text)
            c.arrow([(vec[key].right + 6, ys[key]), (grid.x - 6, ys[key])], color=role.stroke)
            caches[key] = grid
        c.text(226, ys["k"] + 26, _("append"), size=SMALL, color=MUTED)
        c.text(226, ys["v"] + 26, _("append"), size=SMALL, color=MUTED)
        # scores, weights, output
        x_r = 470
        scores = [float(v) for v in s.q @ s.K_cache.T / (ex.d_k ** 0.5)]
        S_row = _row(c, x_r, ys["q"], scores, KEY, 46, ch, fill=SCORE.cell)
        c.text(S_row.cx, ys["q"] - 28, "$q_tK^⊤/√d_k$", size=MATH, color=SCORE.text)
        c.arrow([(vec["q"].right + 6, ys["q"]), (S_row.x - 8, ys["q"])], color=QUERY.stroke)
        c.arrow([(caches["k"].cx, caches["k"].y - 26), (caches["k"].cx, ys["q"] + 18), (S_row.x - 8, ys["q"] + 8)],
                color=KEY.stroke)
        W_row = _row(c, x_r, ys["k"], s.weights, SCORE, 46, ch, fill=SCORE.cell)
        c.arrow([(S_row.cx, ys["q"] + ch / 2 + 4), (W_row.cx, ys["k"] - ch / 2 - 6)], color=SCORE.stroke)
        c.text(S_row.cx + 8, (ys["q"] + ys["k"]) / 2, _("softmax"), anchor="start", color=SCORE.text)
        for i in range(t + 1):
            c.text(W_row.x + 46 * (i + 0.5), ys["k"] + 26, words[i], size=SMALL, color=MUTED)
        O_row = _row(c, x_r, ys["v"], s.output, OUTPUT, cw, ch)
        c.text(O_row.right + 10, ys["v"], "$o_t$", size=MATH, color=OUTPUT.text, anchor="start")
        c.arrow([(W_row.cx, ys["k"] + 40), (O_row.cx, ys["v"] - ch / 2 - 6)], color=SCORE.stroke)
        c.arrow([(caches["v"].right + 48, ys["v"]), (O_row.x - 8, ys["v"])], color=VALUE.stroke)
        c.text(W_row.cx + 8, (ys["k"] + ys["v"]) / 2 + 8, _("weighted sum\nof the values"), anchor="start",
               size=SMALL, color=MUTED)
        c.text(16, 404, _("no mask: the cache holds only tokens $0 … t$"), anchor="start", size=SMALL, color=MUTED)
        return c

    sentence = lambda: "“" + " ".join(ex.words()) + "”"
    weights = ", ".join(_num(w) for w in s.weights)
    return Diagram("diag-decode-step", STEP_ALT, draw,
                   {"sentence": sentence, "token": lambda: "“" + ex.words()[step] + "”", "t": step,
                    "weights": weights})



SPLIT_ALT = N_("Split-KV decoding: the cache of one query's {S} keys and values is cut into {n} chunks that are "
                "processed in parallel. Each chunk c gives a partial result: the maximum m_c and sum ℓ_c of its "
                "exponentiated scores and its own normalised output o_c, summarised as lse_c = m_c + log ℓ_c. The "
                "partials are merged by log-sum-exp: lse = log of the sum of e to the lse_c, and the output is the "
                "sum of e to the (lse_c minus lse) times o_c, exactly the attention over all keys.")


def split_kv(n_splits: int = 3, S: int = 12) -> Diagram:
    """Decoding one query against a long cache cut into ``n_splits`` chunks, merged by log-sum-exp."""
    if not 1 <= n_splits <= 4 or S < n_splits or S > 24:
        raise ValueError(f"need 1 <= n_splits <= 4 and n_splits <= S <= 24; got n_splits={n_splits}, S={S}")

    def draw() -> Canvas:
        c = Canvas(720, 412)
        q = c.box(16, 56, 56, 40, "$q$", QUERY, size=MATH)
        c.text(q.cx, q.bottom + 16, _("one query"), size=SMALL, color=MUTED)
        left, right = 130, 704
        c.text(left - 6, 64, "$K$", anchor="end", size=SMALL + 2, color=KEY.text)
        c.text(left - 6, 88, "$V$", anchor="end", size=SMALL + 2, color=VALUE.text)
        bounds = [round(S * k / n_splits) for k in range(n_splits + 1)]
        c.text(left, 28, _("the cache: {S} keys and values, in {n} chunks").format(S=S, n=n_splits),
               anchor="start", color=MUTED)
        gap = 12.0
        width = (right - left - gap * (n_splits - 1)) / n_splits
        boxes = []
        for k in range(n_splits):
            lo, hi = bounds[k], bounds[k + 1]
            x0 = left + k * (width + gap)
            w_cell = width / (hi - lo)
            for j in range(hi - lo):
                c.rect(x0 + j * w_cell, 52, w_cell, 24, fill=KEY.cell, stroke="#ffffff", sw=1.5)
                c.rect(x0 + j * w_cell, 76, w_cell, 24, fill=VALUE.cell, stroke="#ffffff", sw=1.5)
            c.rect(x0, 52, width, 48, stroke=MUTED, sw=1.5)
            part = c.rect(x0, 150, width, 104, fill=SCORE.fill, stroke=SCORE.stroke, sw=1.5, rx=8)
            c.text(part.cx, 172, _("chunk {c}").format(c=k), bold=True, within=part)
            c.text(part.cx, 200, f"$m_{k}$, $ℓ_{k}$, $o_{k}$", size=MATH, within=part)
            c.text(part.cx, 230, rf"$\op{{lse}}_{k} = m_{k} + \op{{log}}\,ℓ_{k}$", size=SMALL + 2, within=part)
            c.arrow([(x0 + width / 2, 104), (x0 + width / 2, 146)], color=SCORE.stroke)
            boxes.append(part)
        c.arrow([(q.right + 4, q.cy), (left - 24, q.cy)], color=QUERY.stroke)
        c.text(left, 128, _("in parallel"), anchor="start", size=SMALL, color=MUTED)
        merge = c.rect(180, 300, 360, 96, fill=OUTPUT.fill, stroke=OUTPUT.stroke, sw=1.8, rx=8)
        c.text(merge.cx, 318, _("merge by log-sum-exp"), bold=True, within=merge)
        c.text(merge.cx, 346, r"$\op{lse} = \op{log}\,Σ_c\,e^{\op{lse}_c}$", size=MATH, within=merge)
        c.text(merge.cx, 376, r"$o = Σ_c\,e^{\op{lse}_c − \op{lse}}\,o_c$", size=MATH, within=merge)
        for b in boxes:
            c.arrow([(b.cx, b.bottom + 2), (merge.cx + (b.cx - merge.cx) * 0.5, merge.y - 4)], color=OUTPUT.stroke)
        c.text(merge.right + 14, merge.cy - 10, _("equal to attention"), anchor="start", size=SMALL, color=MUTED)
        c.text(merge.right + 14, merge.cy + 10, _("over all {S} keys").format(S=S), anchor="start", size=SMALL,
               color=MUTED)
        return c

    return Diagram("diag-split-kv", SPLIT_ALT, draw, {"S": S, "n": n_splits})
