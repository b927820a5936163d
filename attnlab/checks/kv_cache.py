"""Checkers for chapter 12: a ring buffer's slots and its decoding step, MLA's weight absorption, gathering a
paged cache through its block table, and the cache bytes of one token for a published configuration.

All tasks are NumPy (float64) or plain integers. The ring-slot checker streams positions through the
student's slot function and names the first position that is overwritten too early (a property, not a
model: any assignment that keeps the sinks and the last ``window`` positions is right).
"""
from __future__ import annotations

import numbers

import numpy as np

from ..i18n import N_, _
from . import seeds
from .engine import Mistake, error_hint, kind_of, models
from .kernels import attend, swap
from .registry import checker

NOT_AN_INT = Mistake("not_an_int", N_("the result is not an integer (a float, an array, a string, ...): "
                                       "return an int."))


def _as_int(run, got, case, what) -> int:
    if isinstance(got, (bool, np.bool_)) or not isinstance(got, (numbers.Integral, np.integer)):
        run.fail(_("For {case}, {what} is {value} ({value2!r}); return a Python int (use `//` and "
                   "`%`, not `/`).").format(
                       case=_(case), what=what, value=kind_of(got), value2=str(got)[:40]), NOT_AN_INT.name)
    return int(got)


# ---------------------------------------------------------------------------------------------- ring slots

NO_WRAP = Mistake("no_wrap", N_("the buffer does not wrap: the slot index keeps growing with the position. After the "
                  "sinks, position p must reuse slot n_sinks + (p - n_sinks) % window."))
OUT_OF_RANGE = Mistake("out_of_range", N_("a slot index outside 0 .. n_sinks + window - 1 (off by one in the modulus "
                       "or the offset?): the buffer has n_sinks + window slots."))
SINKS_DROPPED = Mistake("sinks_dropped", N_("a later position overwrote a sink. The first n_sinks slots are kept "
                        "forever; the ring is the window slots after them (a wrap over all n_sinks + window slots, "
                        "`p % (n_sinks + window)`, drops the sinks)."))
WINDOW_OVERWRITTEN = Mistake("window_overwritten", N_("off by one: a position overwrote one that is still inside the "
                             "window (the last `window` positions must all be held). The ring has `window` slots, so "
                             "reduce modulo window, not window - 1."))


@checker(N_("ring-buffer slot"), [NOT_AN_INT, NO_WRAP, OUT_OF_RANGE, SINKS_DROPPED, WINDOW_OVERWRITTEN])
def check_ring_slot(run, fn):
    """Check ``fn(p, window, n_sinks)``: the slot (an int in 0 .. n_sinks + window - 1) that position p is written
    to, so that the buffer always holds the first n_sinks positions and the last ``window`` ones."""
    settings = [(4, 2), (3, 0), (1, 1), (5, 3), (2, 4)]
    for window, n_sinks in settings:
        cap, held = n_sinks + window, {}
        for p in range(n_sinks + 3 * window + 2):
            case = _("window = {window}, n_sinks = {n_sinks}, position p = {p}").format(
                window=window, n_sinks=n_sinks, p=p)
            slot = _as_int(run, run.call(fn, case, p, window, n_sinks), case, "the slot")
            if not 0 <= slot < cap:
                later = p + window + 1                                # does the slot keep following p?
                mistake = NO_WRAP if slot == p and run.call(fn, case, later, window, n_sinks) == later else OUT_OF_RANGE
                run.fail(_("For {case}, your slot is {slot}, outside the buffer's {cap} slots: "
                           "{explanation}").format(case=_(case), slot=slot, cap=cap, explanation=mistake.text),
                         mistake.name)
            old = held.get(slot)
            if old is not None and old < n_sinks:
                run.fail(_("For {case}, slot {slot} held sink position {old}: {explanation}").format(
                    case=_(case), slot=slot, old=old, explanation=SINKS_DROPPED.text),
                         SINKS_DROPPED.name)
            if old is not None and old > p - window:
                run.fail(_("For {case}, slot {slot} held position {old}, still in the window of p: "
                           "{explanation}").format(
                               case=_(case), slot=slot, old=old, explanation=WINDOW_OVERWRITTEN.text),
                               WINDOW_OVERWRITTEN.name)
            held[slot] = p
    return run.passed(_("In {n_settings} streams every sink stays and the last `window` positions "
                        "are always held.").format(n_settings=len(settings)))


# ---------------------------------------------------------------------------------------------- ring attend

RING_MISTAKES: list[Mistake] = []
model = models(RING_MISTAKES)


def _ring_attend(q, k, v, pos, p, window, n_sinks, *, low=None, sinks=True, empty=False, mask=True):
    low = p - window if low is None else low
    ok = (pos <= p) & (pos > low)
    if sinks:
        ok |= pos < n_sinks
    if not empty:
        ok &= pos >= 0
    return attend(q[None], k, v, ok[None] if mask else None)[0]


@model("window_too_long", N_("off by one: you read window + 1 keys. The query at p reads p - window < j <= p (itself "
       "and the window - 1 before it), not p - window <= j."))
def ring_attend_window_too_long(q, k, v, pos, p, window, n_sinks):
    return _ring_attend(q, k, v, pos, p, window, n_sinks, low=p - window - 1)


@model("window_too_short", N_("off by one: you read only window - 1 keys. The query at p reads p - window < j <= p, "
       "which includes p itself."))
def ring_attend_window_too_short(q, k, v, pos, p, window, n_sinks):
    return _ring_attend(q, k, v, pos, p, window, n_sinks, low=p - window + 1)


@model("no_sinks", N_("you dropped the sinks: the query also reads the first n_sinks positions (j < n_sinks), "
       "wherever they are."))
def ring_attend_without_sinks(q, k, v, pos, p, window, n_sinks):
    return _ring_attend(q, k, v, pos, p, window, n_sinks, sinks=False)


@model("reads_empty", N_("you read empty slots: their position is -1, which passes `j < n_sinks`. Require j >= 0."))
def ring_attend_reads_empty(q, k, v, pos, p, window, n_sinks):
    return _ring_attend(q, k, v, pos, p, window, n_sinks, empty=True)


@model("no_mask", N_("you attended over every slot. The buffer can hold positions the query may not read (older "
       "than the window, or empty): build the mask from slot_pos."))
def ring_attend_without_mask(q, k, v, pos, p, window, n_sinks):
    return _ring_attend(q, k, v, pos, p, window, n_sinks, mask=False)


@checker(N_("ring-buffer decoding step"), RING_MISTAKES)
def check_ring_attend(run, fn):
    """Check ``fn(q, k_slots, v_slots, slot_pos, p, window, n_sinks)``: the output (d_v,) of the query q (d_k,) at
    position p, reading the slots whose position j satisfies p - window < j <= p or 0 <= j < n_sinks (slot_pos
    holds -1 for an empty slot)."""
    rng = seeds.rng(10)
    cases = [(N_("p = 9, window = 4, n_sinks = 2, a stale slot holding p - window and an empty slot"),
              [0, 1, 8, 9, 6, 7, 5, -1], 9, 4, 2),
             (N_("p = 6, window = 3, no sinks, slots not in position order"), [4, 6, 5, 3, -1], 6, 3, 0),
             (N_("p = 2, window = 5, n_sinks = 1, a buffer not yet full"), [0, 1, 2, -1, -1, -1], 2, 5, 1)]
    for case, pos, p, window, n_sinks in cases:
        pos = np.array(pos)
        q, k, v = rng.normal(size=4), rng.normal(size=(len(pos), 4)), rng.normal(size=(len(pos), 3))
        args = (q, k, v, pos, p, window, n_sinks)
        got = run.array(run.call(fn, case, *args, hint=error_hint), case, shape=(3,))
        run.compare(case, got, _ring_attend(*args), RING_MISTAKES, args=args)
    return run.passed(_("All {n_cases} decoding steps match attention over p - window < j <= p and "
                        "the sinks.").format(n_cases=len(cases)))


# ---------------------------------------------------------------------------------------------- MLA absorption

MLA_MISTAKES: list[Mistake] = []
model = models(MLA_MISTAKES)


def _absorbed(q, c, w_uk, w_uv, w_o, *, scale=None, transpose=True):
    q_lat = q @ (swap(w_uk) if transpose else w_uk)                  # (H, T, d_c)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    o_lat = attend(q_lat, c[None], c[None], scale=scale)             # (H, T, d_c)
    return np.einsum("htc,hcm->tm", o_lat, w_uv @ w_o)               # (T, d_model)


@model("wrong_side", N_("you absorbed into the wrong sides: W_UK belongs to the query side (the scores are "
       "(q W_UK^T) c^T) and W_UV to the output side (W_UV W_O)."))
def absorbed_wrong_side(q, c, w_uk, w_uv, w_o):
    return _absorbed(q, c, w_uv, w_uk, w_o)


@model("no_transpose", N_("the transpose is missing: q K^T = q (c W_UK)^T = (q W_UK^T) c^T, so the query is multiplied "
       "by W_UK transposed (the last two axes of w_uk swapped), not by W_UK."))
def absorbed_without_transpose(q, c, w_uk, w_uv, w_o):
    return _absorbed(q, c, w_uk, w_uv, w_o, transpose=False)


@model("latent_scale", N_("you scaled by 1/sqrt(d_latent). The scores are the same numbers as in the explicit path, "
       "q K^T with keys of width d_head: the scale stays 1/sqrt(d_head)."))
def absorbed_latent_scale(q, c, w_uk, w_uv, w_o):
    return _absorbed(q, c, w_uk, w_uv, w_o, scale=1 / np.sqrt(c.shape[-1]))


@model("no_scale", N_("the scores are not scaled: divide them by sqrt(d_head)."))
def absorbed_without_scale(q, c, w_uk, w_uv, w_o):
    return _absorbed(q, c, w_uk, w_uv, w_o, scale=1.0)


def _mla_hint(err):
    text = str(err)
    if "matmul" in text or "mismatch" in text or "not aligned" in text:
        return _("q[h] has shape (T, d_head) and w_uk[h] (d_latent, d_head): the query meets W_UK transposed, "
                 "`q @ np.swapaxes(w_uk, -1, -2)`, which gives (H, T, d_latent).")
    return error_hint(err)


@checker(N_("MLA weight absorption"), MLA_MISTAKES)
def check_absorbed_attention(run, fn):
    """Check ``fn(q, c, w_uk, w_uv, w_o)``: q (H, T, d_head), latents c (S, d_latent), w_uk and w_uv (H, d_latent,
    d_head), w_o (H, d_head, d_model) -> (T, d_model), computed over the latents (the absorbed path)."""
    rng = seeds.rng(11)
    cases = [(N_("H = 2, T = 3, S = 5, d_head = d_latent = 4, d_model = 6"), 2, 3, 5, 4, 4, 6),
             (N_("H = 3, T = 2, S = 6, d_head = 2, d_latent = 5, d_model = 4"), 3, 2, 6, 2, 5, 4)]
    for case, H, T, S, d_h, d_c, d_m in cases:
        q, c = rng.normal(size=(H, T, d_h)), rng.normal(size=(S, d_c))
        w_uk, w_uv, w_o = rng.normal(size=(H, d_c, d_h)), rng.normal(size=(H, d_c, d_h)), rng.normal(size=(H, d_h, d_m))
        heads = attend(q, c @ w_uk, c @ w_uv)                         # the explicit path: (H, T, d_head)
        expected = np.einsum("htd,hdm->tm", heads, w_o)              # (T, d_model)
        args = (q, c, w_uk, w_uv, w_o)
        got = run.array(run.call(fn, case, *args, hint=_mla_hint), case, shape=(T, d_m))
        run.compare(case, got, expected, MLA_MISTAKES, args=args)
    return run.passed(_("Both cases match the explicit path (keys and values up-projected per "
                        "head), scale 1/sqrt(d_head)."))


# ---------------------------------------------------------------------------------------------- paged gather

PAGED_MISTAKES: list[Mistake] = []
model = models(PAGED_MISTAKES)


@model("ignores_table", N_(
    "you read the blocks in pool order. Logical block i of the sequence is pool[block_table[i]]: "
       "go through the block table."))
def gather_ignoring_table(pool, block_table, length):
    return pool.reshape(-1, pool.shape[-1])[:length]


@model("div_mod_swapped", N_("division and remainder are swapped: position p is in logical block p // block_size, at "
       "slot p % block_size."))
def gather_div_mod_swapped(pool, block_table, length):
    bs, p = pool.shape[1], np.arange(length)
    return pool[np.asarray(block_table)[p % bs], p // bs]


@model("blocks_by_count", N_("you divided by the number of blocks; the block of position p is p // block_size, where "
       "block_size = pool.shape[1]."))
def gather_blocks_by_count(pool, block_table, length):
    n, p = len(block_table), np.arange(length)
    return pool[np.asarray(block_table)[p // n], p % n]


WHOLE_BLOCKS = Mistake("whole_blocks", N_("you returned whole blocks: the last block is only partly filled, so keep "
                       "the first `length` positions."))


@checker(N_("paged gather"), PAGED_MISTAKES + [WHOLE_BLOCKS])
def check_gather_blocks(run, fn):
    """Check ``fn(pool, block_table, length)``: pool (n_blocks, block_size, d), block_table (n_logical,) physical
    block ids -> the sequence's keys (length, d) in position order."""
    cases = [(N_("block_size = 4, block_table = [5, 2, 6, 0], length = 14"), 7, 4, [5, 2, 6, 0], 14),
             (N_("block_size = 4, block_table = [5, 2, 0], length = 9"), 7, 4, [5, 2, 0], 9),
             (N_("block_size = 5, block_table = [2, 1], length = 10"), 3, 5, [2, 1], 10)]
    for case, n_blocks, bs, table, length in cases:
        pool = np.arange(n_blocks * bs * 2, dtype=float).reshape(n_blocks, bs, 2) + 0.5   # distinct entries
        table = np.array(table)
        got = run.call(fn, case, pool, table, length, hint=error_hint)
        rows = tuple(getattr(got, "shape", ()))[:1]                   # arrays and tensors only
        if rows == (len(table) * bs,) and len(table) * bs != length:
            run.fail(_("For {case}, your result has {value} rows: {explanation}").format(
                case=_(case), value=len(table) * bs, explanation=WHOLE_BLOCKS.text),
                     WHOLE_BLOCKS.name)
        got = run.array(got, case, shape=(length, 2))
        p = np.arange(length)
        expected = pool[table[p // bs], p % bs]
        run.compare(case, got, expected, PAGED_MISTAKES, args=(pool, table, length), tol=None, name=N_("your keys"))
    return run.passed(_("All {n_cases} cases read position p from pool[block_table[p // "
                        "block_size], p % block_size].").format(n_cases=len(cases)))


# ---------------------------------------------------------------------------------------------- bytes per token

BYTES_MISTAKES: list[Mistake] = []
model = models(BYTES_MISTAKES)


def _bytes_per_token(cfg, nbytes, *, kv=2, heads="kv_heads", layers=True, latent=1, rope=True):
    per_layer = (latent * cfg["latent"] + (cfg["rope_dim"] if rope else 0) if cfg.get("latent")
                 else kv * cfg[heads] * cfg["head_dim"])
    return per_layer * (cfg["layers"] if layers else 1) * nbytes


@model("no_factor_two", N_("the factor 2 is missing: a key/value cache holds a key AND a value per KV head."))
def bytes_without_factor_two(cfg, nbytes):
    return _bytes_per_token(cfg, nbytes, kv=1)


@model("query_heads", N_("you used the query heads; the cache holds one key and one value per KV head (kv_heads)."))
def bytes_with_query_heads(cfg, nbytes):
    return _bytes_per_token(cfg, nbytes, heads="heads")


@model("one_layer", N_("the layers are missing: every layer caches its own keys and values (or latents)."))
def bytes_one_layer(cfg, nbytes):
    return _bytes_per_token(cfg, nbytes, layers=False)


@model("latent_doubled", N_("you counted MLA's latent twice: keys and values are both computed from the one cached "
       "latent, so a layer holds latent + rope_dim numbers per token."))
def bytes_latent_doubled(cfg, nbytes):
    return _bytes_per_token(cfg, nbytes, latent=2)


@model("no_rope_key", N_("the decoupled RoPE key is missing: MLA caches it beside the latent (rope_dim numbers per "
       "token and layer)."))
def bytes_without_rope_key(cfg, nbytes):
    return _bytes_per_token(cfg, nbytes, rope=False)


@model("bits", N_("you counted bits (x 8); the question asks for bytes."))
def bytes_in_bits(cfg, nbytes):
    return 8 * _bytes_per_token(cfg, nbytes)


# layers, query heads, KV heads, head width as published (DeepSeek-V2: latent and RoPE key widths instead)
PUBLISHED = {
    "Llama 2 7B": {"layers": 32, "heads": 32, "kv_heads": 32, "head_dim": 128},
    "Llama 2 70B": {"layers": 80, "heads": 64, "kv_heads": 8, "head_dim": 128},
    "Mistral 7B": {"layers": 32, "heads": 32, "kv_heads": 8, "head_dim": 128},
    "DeepSeek-V2": {"layers": 60, "heads": 128, "head_dim": 128, "latent": 512, "rope_dim": 64},
}


@checker(N_("cache bytes per token"), [NOT_AN_INT] + BYTES_MISTAKES)
def check_bytes_per_token(run, fn):
    """Check ``fn(config, bytes_per_number)``: the bytes one token adds to the cache of the whole model. ``config``
    is a dict with "layers", "heads", "head_dim" and either "kv_heads" (a key/value cache) or "latent" and
    "rope_dim" (MLA)."""
    cases = [(name, cfg, 2) for name, cfg in PUBLISHED.items()] + [
        (N_("Mistral 7B in float32"), PUBLISHED["Mistral 7B"], 4)]
    for name, cfg, nbytes in cases:
        case = _("{name} ({cfg}), {nbytes} bytes per number").format(name=_(name), cfg=cfg, nbytes=nbytes)
        value = _as_int(run, run.call(fn, case, dict(cfg), nbytes), case, "your count")
        run.compare(case, value, _bytes_per_token(cfg, nbytes), BYTES_MISTAKES, args=(cfg, nbytes), tol=None,
                    name=N_("your count"))
    return run.passed(_("All {n_cases} configurations match: bytes per number x 2 x layers x kv_heads x "
                        "head_dim, or bytes per number x layers x (latent + rope_dim) for MLA.")
                      .format(n_cases=len(cases)))
