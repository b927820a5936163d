"""``head_explorer``: one head's attention map of a real model, for a chosen sentence and layer.

The input is what chapter 11 computes: ``maps`` of shape (n_sentences, n_layers, n_heads, T, T),
attention probabilities (rows = queries, columns = keys), the token strings of every sentence
and the number of real tokens in each (right padding: real tokens first). ``head_state`` picks
one (sentence, layer, head) and one query row and returns the numbers shown; ``draw`` makes
the T x T heatmap with token labels, padding hatched, and the chosen row as bars above it.
"""
from __future__ import annotations

import html
from dataclasses import dataclass

import ipywidgets as W
import numpy as np

from ..errors import AttentionInputError
from ..i18n import _
from ._base import Explorer, Frames, block, note, product_frames, reading_html
from ._svg import ALLOWED_COLOR, GRAY, RED, Svg, viridis

TOP_K = 3
PAD_FILL = "#f4f4f4"          # padding cells, as the chapter's matplotlib figures draw them
PAD_LABEL = "[PAD]"
HATCH = "#a0aec0"
ROW_SUM_TOL = 1e-3            # real query rows of probabilities sum to 1 (float32 or better)


@dataclass(frozen=True)
class HeadState:
    """One head's map for one sentence, and the row of one query.

    ``weights`` is ``maps[sentence, layer, head]`` as given (padded rows included: attnlab
    makes them zero, the model gives them a distribution that nobody reads). The ranking
    ``top_keys`` / ``top_weights`` is over real keys only, largest first (ties: smaller
    position first); ``all_top_keys`` has it for every real query row.
    """

    sentence: int
    layer: int
    head: int
    query: int                   # position of the chosen query (a real token)
    tokens: tuple[str, ...]      # (T,) labels; positions without a token string read [PAD]
    length: int                  # number of real tokens (positions 0 .. length-1)
    weights: np.ndarray          # (T, T) float64
    row: np.ndarray              # (T,) weights[query]
    top_keys: np.ndarray         # (k,) positions, k = min(3, length)
    top_weights: np.ndarray      # (k,)
    row_sum: float               # sum of the query's weights over real keys
    pad_key_weight: float        # largest weight any real query puts on a padded key (0 expected)
    all_top_keys: np.ndarray     # (length, k)
    all_top_weights: np.ndarray  # (length, k)

    @property
    def T(self) -> int:
        return self.weights.shape[0]

    @property
    def n_pad(self) -> int:
        return self.T - self.length


def _index(value, name: str, n: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise AttentionInputError(_("{name} must be an integer in [0, {n}); got {value}").format(
            name=name, n=n, value=repr(value)))
    if not 0 <= value < n:
        raise AttentionInputError(_("{name} must be in [0, {n}); got {value}").format(name=name, n=n, value=value))
    return int(value)


def check_inputs(maps, tokens, lengths) -> tuple[np.ndarray, list[list[str]], np.ndarray]:
    """Shapes and types of the explorer's data; a clear ValueError naming the argument."""
    maps = np.asarray(maps)
    if maps.ndim != 5 or maps.shape[-1] != maps.shape[-2] or 0 in maps.shape:
        raise AttentionInputError(_("maps must have shape (n_sentences, n_layers, n_heads, T, T) with T >= 1; "
                                    "got {shape}").format(shape=maps.shape))
    if not np.issubdtype(maps.dtype, np.floating):
        raise AttentionInputError(_("maps must hold floating-point probabilities; got dtype {dtype}").format(
            dtype=maps.dtype))
    N, T = maps.shape[0], maps.shape[-1]
    if isinstance(tokens, str) or len(tokens) != N:
        raise AttentionInputError(_("tokens must be a list of {N} token lists (one per sentence of maps, "
                                    "shape {shape}); got {kind} of length {length}").format(
            N=N, shape=maps.shape, kind=type(tokens).__name__, length=len(tokens)))
    lengths = np.asarray(lengths)
    if lengths.shape != (N,) or not np.issubdtype(lengths.dtype, np.integer):
        raise AttentionInputError(_("lengths must be {N} integers (real tokens per sentence); got {lengths}").format(
            N=N, lengths=repr(lengths)))
    if lengths.min() < 1 or lengths.max() > T:
        raise AttentionInputError(_("lengths must lie in [1, T = {T}]; got {lengths}").format(
            T=T, lengths=lengths.tolist()))
    toks = []
    for b, t in enumerate(tokens):
        t = [str(x) for x in t]
        if not lengths[b] <= len(t) <= T:
            raise AttentionInputError(_("tokens[{b}] has {n} strings; it needs between lengths[{b}] = {length} "
                                        "and T = {T}").format(b=b, n=len(t), length=lengths[b], T=T))
        toks.append(t + [PAD_LABEL] * (T - len(t)))
    return maps, toks, lengths


def _ranking(rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(..., n) -> positions and values of the k largest entries per row, largest first."""
    order = np.argsort(-rows, axis=-1, kind="stable")[..., :k]
    return order, np.take_along_axis(rows, order, axis=-1)


def head_state(maps, tokens, lengths, sentence: int = 0, layer: int = 0, head: int = 0, query=0,
               k: int = TOP_K) -> HeadState:
    """The numbers the head explorer shows for (sentence, layer, head) and one query row.

    ``query`` is a real token position, or a token string (its first real occurrence).
    The chosen map must be probabilities: finite, non-negative, each real query's row summing
    to 1 (to 1e-3); padded query rows may be zero (attnlab) or anything (the model).
    """
    maps, toks, lengths = check_inputs(maps, tokens, lengths)
    N, L, H, T = maps.shape[:4]
    b = _index(sentence, "sentence", N)
    l = _index(layer, "layer", L)
    h = _index(head, "head", H)
    n = int(lengths[b])
    real = toks[b][:n]
    if isinstance(query, str):
        if query not in real:
            raise AttentionInputError(_("query {query} is not a real token of sentence {b}: {real}").format(
                query=repr(query), b=b, real=real))
        i = real.index(query)
    else:
        i = _index(query, _("query (a real token of sentence {b}, which has {n})").format(b=b, n=n), n)
    A = maps[b, l, h].astype(np.float64)                    # (T, T)
    if not np.isfinite(A).all() or (A < 0).any():
        raise AttentionInputError(_("maps[{b}, {l}, {h}] must be finite and non-negative (probabilities)").format(
            b=b, l=l, h=h))
    sums = A[:n, :].sum(axis=1)                             # real queries, all keys
    if np.abs(sums - 1).max() > ROW_SUM_TOL:
        low, high = f"{sums.min():.4g}", f"{sums.max():.4g}"
        raise AttentionInputError(_("maps[{b}, {l}, {h}]: rows of real queries must sum to 1; "
                                    "row sums range over [{low}, {high}]").format(b=b, l=l, h=h, low=low, high=high))
    all_keys, all_w = _ranking(A[:n, :n], min(k, n))         # real keys only
    return HeadState(b, l, h, i, tuple(toks[b]), n, A, A[i].copy(), all_keys[i], all_w[i],
                     float(A[i, :n].sum()), float(A[:n, n:].max()) if n < T else 0.0, all_keys, all_w)


# ---------------------------------------------------------------------------------------------
# Picture and readout
# ---------------------------------------------------------------------------------------------

def _short(tok: str, n: int = 10) -> str:
    return tok if len(tok) <= n else tok[: n - 1] + "…"


def draw(s: HeadState, real_only: bool = False) -> str:
    """Heatmap (queries down, keys across, token labels on both axes, viridis 0..1, padding
    hatched grey), the chosen query's row framed in red and drawn as bars above the columns.

    ``real_only`` leaves the padding positions out (smaller precomputed frames)."""
    T = s.length if real_only else s.T
    n = s.length
    labels = [_short(t) for t in s.tokens[:T]]
    c = float(min(25.0, max(10.0, 330.0 / T)))   # rows never narrower than their 9 px labels
    widest = max(len(t) for t in labels)
    lx = round(24 + 5.8 * widest)                 # left of the grid: query labels
    bar_h = 64.0
    base = 46 + bar_h                             # title and subtitle, then bars up to this line
    top = base + 8                                # then the grid
    g = c * T
    bottom = top + g + 8 + 5.8 * widest + 18      # column labels (rotated), then "key"
    cb_x = lx + g + 14                            # colour bar
    mid = max(lx + g / 2, 125.0)                  # titles centred over the grid, never cut off
    svg = Svg(int(max(cb_x + 44, mid + 125)), int(bottom + 4), alt=alt(s, T))
    fs = 9                                        # token labels (rows are at least 10 px)
    svg.text(mid, 12, _("sentence {sentence}, layer {layer}, head {head}").format(
        sentence=s.sentence, layer=s.layer, head=s.head), size=11)
    # bars: the chosen query's weights, one per key column
    q = s.tokens[s.query]
    svg.text(mid, 26, _('row of query {i} "{token}": its weight on each key').format(i=s.query, token=_short(q, 14)),
             size=9, color=RED)
    svg.line(lx, base, lx + g, base, stroke=GRAY, sw=0.6)
    top_set = {int(j) for j in s.top_keys}
    for j in range(T):
        w = s.row[j]
        hgt = bar_h * min(max(w, 0.0), 1.0)
        if hgt > 0:
            svg.rect(lx + j * c + 0.15 * c, base - hgt, 0.7 * c, hgt, fill=ALLOWED_COLOR if j < n else GRAY)
        if j in top_set and w >= 0.005:
            svg.text(lx + (j + 0.5) * c, base - hgt - 6, f"{w:.2f}", size=9)
    # cells: one path per colour (runs of equal colour merged), in a group scaled to the cell size;
    # this keeps the 72 precomputed frames of the book small
    runs: dict[str, list[str]] = {}
    for i in range(T):
        fills = [viridis(s.weights[i, j]) if (i < n and j < n) else PAD_FILL for j in range(T)]
        j = 0
        while j < T:
            k = j
            while k + 1 < T and fills[k + 1] == fills[j]:
                k += 1
            runs.setdefault(fills[j], []).append(f"M{j} {i}h{k - j + 1}v1h-{k - j + 1}z")
            j = k + 1
    svg.parts.append(f'<g transform="translate({lx} {top}) scale({c:g})" shape-rendering="crispEdges">')
    svg.parts.extend(f'<path fill="{f}" d="{"".join(d)}"/>' for f, d in runs.items())
    svg.parts.append("</g>")
    if T > n:                                     # padding: the key columns, then the query rows
        svg.hatch(lx + n * c, top, (T - n) * c, g, stroke=HATCH)
        svg.hatch(lx, top + n * c, n * c, (T - n) * c, stroke=HATCH)
    svg.rect(lx, top + s.query * c, g, c, stroke=RED, sw=1.6)
    # token labels: queries left of the rows, keys below the columns (turned by a group's rotation,
    # so a label at screen (X, Y) is written at (-Y, X)); chosen query red, padding grey
    svg.group(font_size=fs, text_anchor="end")
    for i, t in enumerate(labels):
        color = GRAY if i >= n else (RED if i == s.query else "black")
        svg.text(lx - 4, top + (i + 0.5) * c, t, size=None, color=color)
    svg.end()
    svg.group(font_size=fs, text_anchor="end", transform="rotate(-90)")
    for j, t in enumerate(labels):
        svg.text(-(top + g + 4), lx + (j + 0.5) * c, t, size=None, color=GRAY if j >= n else "black")
    svg.end()
    svg.text(10, top + g / 2, _("query"), size=10, rotate=-90)
    svg.text(lx + g / 2, bottom - 8, _("key"), size=10)
    steps = 16                                    # colour bar, 0 .. 1
    for k in range(steps):
        svg.rect(cb_x, top + g * (1 - (k + 1) / steps), 10, g / steps + 0.5, fill=viridis((k + 0.5) / steps))
    for v in (0, 0.5, 1):
        svg.text(cb_x + 13, top + g * (1 - v), f"{v:g}", size=9, anchor="start")
    return str(svg)


def alt(s: HeadState, shown: int | None = None) -> str:
    """What the picture shows, in words (``shown``: the positions drawn, all by default)."""
    T = s.T if shown is None else shown
    text = _("A heatmap of the weights of layer {layer}, head {head} for sentence {sentence}, {T} queries down "
             "and {T} keys across, each labelled with its token; above it, bars of the weights that query {i} "
             "\u201c{token}\u201d, framed in red, puts on each key.").format(
                 layer=s.layer, head=s.head, sentence=s.sentence, T=T, i=s.query, token=s.tokens[s.query])
    if T > s.length:
        text += " " + _("The {n} padding positions are hatched.").format(n=T - s.length)
    return text


def reading(s: HeadState) -> str:
    """The state in one sentence: layer, head, and the keys the chosen query reads most."""
    top = ", ".join(f"\u201c{s.tokens[j]}\u201d {w:.2f}" for j, w in zip(s.top_keys, s.top_weights))
    return _("layer {layer}, head {head}: query \u201c{token}\u201d reads most from {top}").format(
        layer=s.layer, head=s.head, token=s.tokens[s.query], top=top)


def describe(s: HeadState) -> str:
    """The chosen query's strongest keys, then every real query's top keys as a table."""
    tok = s.tokens
    q = html.escape(tok[s.query])
    strongest = ", ".join(f"<b>{html.escape(tok[j])}</b> {w:.3f}" for j, w in zip(s.top_keys, s.top_weights))
    pad = (_("{n} padding position(s), hatched; the most any real query puts on a padded key is {w}.").format(
           n=s.n_pad, w=f"{s.pad_key_weight:.2g}") if s.n_pad else _("no padding."))
    head = (_("<b>sentence {sentence}, layer {layer}, head {head}</b>: {n} real tokens, {pad}").format(
                sentence=s.sentence, layer=s.layer, head=s.head, n=s.length, pad=pad) + "<br>"
            + _('Query {i} "{token}" reads most from {strongest} (its row sums to {total} over the real keys).').format(
                i=s.query, token=q, strongest=strongest, total=f"{s.row_sum:.3f}"))
    rank = [_("1st key"), _("2nd key"), _("3rd key")][: s.all_top_keys.shape[1]]
    out = [head, "<div style='margin-top:4px'>" + _("Every real query's strongest keys:") + "</div>",
           ("<table style='border-collapse:separate;border-spacing:12px 1px;margin:0 -12px;font-size:0.8em;"
            "font-family:monospace;line-height:1.3'><tr><th align=left>" + _("query") + "</th>"),
           *(f"<th align=left>{r}</th>" for r in rank), "</tr>"]
    for i in range(s.length):
        style = f" style='color:{RED};font-weight:bold'" if i == s.query else ""
        cells = "".join(f"<td>{html.escape(_short(tok[j], 10))} {w:.2f}</td>"
                        for j, w in zip(s.all_top_keys[i], s.all_top_weights[i]))
        out.append(f"<tr{style}><td>{i} {html.escape(_short(tok[i], 12))}</td>{cells}</tr>")
    out.append("</table>")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# The explorers
# ---------------------------------------------------------------------------------------------

def _sentence_label(toks: list[str], n: int, b: int) -> str:
    text = " ".join(toks[:n])
    return f"{b}: {text if len(text) <= 48 else text[:47] + '…'}"


def _query_options(toks: list[str], n: int) -> list[tuple[str, int]]:
    return [(f"{i}: {t}", i) for i, t in enumerate(toks[:n])]


def head_explorer(maps, tokens, lengths, sentence: int = 0, layer: int = 0, head: int = 0, query=0,
                  offline: bool = False):
    """Pick a sentence, a layer, a head and a query row of a real model's attention maps.

    ``maps`` (n_sentences, n_layers, n_heads, T, T) are attention probabilities (a list of
    per-layer (n_sentences, n_heads, T, T) arrays can be stacked with ``np.stack(.., axis=1)``),
    ``tokens[b]`` the token strings of sentence b, ``lengths[b]`` its number of real tokens
    (right padding). ``query`` is a position or a token string. Invalid choices raise
    ValueError here, before any widget is made.

    ``offline=True`` returns precomputed frames for the chosen sentence and query over every
    layer and head (``n_layers * n_heads`` frames), switched in the browser by the layer and
    head sliders (works in the static HTML book without a kernel).
    """
    maps, toks, lengths = check_inputs(maps, tokens, lengths)
    first = head_state(maps, toks, lengths, sentence, layer, head, query)      # refuses bad choices early
    if offline:
        return _offline(maps, toks, lengths, first)
    N, L, H = maps.shape[:3]
    style = {"description_width": "initial"}
    c = {
        "sentence": W.Dropdown(options=[(_sentence_label(toks[b], lengths[b], b), b) for b in range(N)],
                               value=first.sentence, description=_("sentence"), style=style,
                               layout=W.Layout(width="420px")),
        "layer": W.IntSlider(value=first.layer, min=0, max=L - 1, description=_("layer"), style=style),
        "head": W.IntSlider(value=first.head, min=0, max=H - 1, description=_("head"), style=style),
        "query": W.Dropdown(options=_query_options(toks[first.sentence], first.length), value=first.query,
                            description=_("query row"), style=style, layout=W.Layout(width="220px")),
    }
    shown = {"sentence": first.sentence}          # the sentence whose tokens the query menu lists

    def refresh(ex: Explorer) -> None:
        b = c["sentence"].value
        if b != shown["sentence"]:                # new sentence: new query menu, same position if it exists
            shown["sentence"] = b
            keep = min(c["query"].value, int(lengths[b]) - 1)
            c["query"].options = _query_options(toks[b], int(lengths[b]))
            c["query"].value = keep

    def compute(sentence, layer, head, query):
        return head_state(maps, toks, lengths, sentence, layer, head, query)

    rows = [W.HBox([c["sentence"], c["query"]], layout=W.Layout(flex_flow="row wrap")),
            W.HBox([c["layer"], c["head"]], layout=W.Layout(flex_flow="row wrap"))]
    return Explorer("head_explorer", c, compute, draw, describe, rows, refresh, read=reading)


def _offline(maps, toks, lengths, first: HeadState) -> Frames:
    L, H = maps.shape[1:3]
    style = {"description_width": "initial"}
    layer = W.SelectionSlider(options=[str(l) for l in range(L)], index=first.layer, description=_("layer"),
                              style=style, continuous_update=True)
    head = W.SelectionSlider(options=[str(h) for h in range(H)], index=first.head, description=_("head"),
                             style=style, continuous_update=True)
    states = {}

    def leaf(idx):
        s = head_state(maps, toks, lengths, first.sentence, idx[0], idx[1], first.query)
        states[idx] = s
        return W.HTML("<div style='display:flex;flex-wrap:wrap;gap:8px 18px;align-items:flex-start'>"
                      f"{draw(s, real_only=True)}{block(describe(s))}</div>{reading_html(reading(s))}")

    body = product_frames([layer, head], leaf)
    ex = Frames("head_explorer", [W.HBox([layer, head], layout=W.Layout(flex_flow="row wrap")), body],
                {"layer": layer, "head": head}, states)
    q = html.escape(first.tokens[first.query])
    pad = _(" (its {n} padding positions left out)").format(n=first.n_pad) if first.n_pad else ""
    ex.children = (*ex.children[:-1], note(_(
        'Precomputed frames for sentence {sentence}{pad}, query row {i} "{token}", every layer and head: the '
        "sliders work without a kernel, also in the HTML book. To pick another sentence or query, run "
        "<code>al.widgets.head_explorer(maps, tokens, lengths)</code> in Jupyter (<code>make lab</code>).").format(
        sentence=first.sentence, pad=pad, i=first.query, token=q)))
    return ex


__all__ = ["HeadState", "alt", "check_inputs", "describe", "draw", "head_explorer", "head_state", "reading"]
