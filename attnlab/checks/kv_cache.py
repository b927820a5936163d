"""Checkers for chapter 12: a ring buffer's slots and its decoding step, MLA's weight absorption, gathering a
paged cache through its block table, and the cache bytes of one token for a published configuration.

All tasks are NumPy (float64) or plain integers. The ring-slot checker streams positions through the
student's slot function; a wrong stream is matched against the usual wrong formulas over every stream,
and otherwise the first position that is overwritten too early is named (a property: any assignment that
keeps the sinks and the last ``window`` positions is right). The absorbed MLA path may not form any head's
keys or values (measured: the largest allocation of one call stays below one head's S x d_head keys), nor
call attnlab's MLA module.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..i18n import N_, _
from . import seeds
from .diagnosis import Trial, describe_ratio
from .engine import Mistake, error_hint, kind_of, models
from .kernels import attend, swap
from .registry import checker

MLA_LIBRARIES = ("attnlab.torch_ops.mla.MultiHeadLatentAttention.forward",
                 "attnlab.torch_ops.mla.MultiHeadLatentAttention.cache_bytes_per_token")

NOT_AN_INT = Mistake("not_an_int", N_("the result is not an integer (a float, an array, a string, ...): "
                                       "return an int."))


def _as_int(run, got, case, what) -> int:
    if isinstance(got, (bool, np.bool_)) or not isinstance(got, (numbers.Integral, np.integer)):
        run.fail(_("For {case}, {what} is {value} ({value2!r}); return a Python int (use `//` and "
                   "`%`, not `/`).").format(
                       case=_(case), what=_(what), value=kind_of(got), value2=str(got)[:40]), NOT_AN_INT.name)
    return int(got)


# ---------------------------------------------------------------------------------------------- ring slots

RING_SLOT_MISTAKES: list[Mistake] = []
model = models(RING_SLOT_MISTAKES)


@model("sinks_dropped", N_("a later position overwrote a sink. The first n_sinks slots are kept forever; the ring is "
       "the window slots after them (a wrap over all n_sinks + window slots, `p % (n_sinks + window)`, drops the "
       "sinks)."))
def ring_slot_over_all_slots(p, window, n_sinks):
    return p % (n_sinks + window)


@model("sinks_in_ring", N_("the sinks went through the ring too: `n_sinks + (p - n_sinks) % window` sends a position "
       "p < n_sinks to a ring slot, which a later position then overwrites. Positions below n_sinks keep slot p."))
def ring_slot_sinks_in_ring(p, window, n_sinks):
    return n_sinks + (p - n_sinks) % window


@model("window_overwritten", N_("off by one: a position overwrote one that is still inside the window (the last "
       "`window` positions must all be held). The ring has `window` slots, so reduce modulo window, not "
       "window - 1."))
def ring_slot_modulo_window_minus_one(p, window, n_sinks):
    return p if p < n_sinks else n_sinks + (p - n_sinks) % (window - 1)


@model("floor_division", N_("you used `//` where the slot needs `%`: `(p - n_sinks) // window` counts how many times "
       "the ring has been filled, while the slot is the remainder, `(p - n_sinks) % window`."))
def ring_slot_floor_division(p, window, n_sinks):
    return p if p < n_sinks else n_sinks + (p - n_sinks) // window


@model("no_wrap", N_("the buffer does not wrap: the slot index keeps growing with the position. After the sinks, "
       "position p must reuse slot n_sinks + (p - n_sinks) % window."))
def ring_slot_without_wrap(p, window, n_sinks):
    return p


OUT_OF_RANGE = Mistake("out_of_range", N_("a slot index outside 0 .. n_sinks + window - 1 (off by one in the modulus "
                       "or the offset?): the buffer has n_sinks + window slots."))
WINDOW_OVERWRITTEN = next(m for m in RING_SLOT_MISTAKES if m.name == "window_overwritten")
SINKS_DROPPED = RING_SLOT_MISTAKES[0]


@checker(N_("ring-buffer slot"), [NOT_AN_INT] + RING_SLOT_MISTAKES + [OUT_OF_RANGE])
def check_ring_slot(run, fn):
    """Check ``fn(p, window, n_sinks)``: the slot (an int in 0 .. n_sinks + window - 1) that position p is written
    to, so that the buffer always holds the first n_sinks positions and the last ``window`` ones."""
    settings = [(4, 2), (3, 0), (1, 1), (5, 3), (2, 4)]
    streams = []
    for window, n_sinks in settings:
        slots = []
        for p in range(n_sinks + 3 * window + 2):
            case = _("window = {window}, n_sinks = {n_sinks}, position p = {p}").format(
                window=window, n_sinks=n_sinks, p=p)
            slots.append(_as_int(run, run.call(fn, case, p, window, n_sinks), case, N_("the slot")))
        streams.append(slots)
    problem = next((found for found in (_first_problem(slots, *setting) for slots, setting in
                                        zip(streams, settings)) if found), None)
    if problem is None:
        return run.passed(_("In {n_settings} streams every sink stays and the last `window` positions "
                            "are always held.").format(n_settings=len(settings)))
    for mistake in RING_SLOT_MISTAKES:      # a formula that gives every slot of every stream
        if all(_model_slots(mistake, len(slots), *setting) == slots for slots, setting in zip(streams, settings)):
            run.fail(_("For {case}, your slot is {slot}: {explanation}").format(
                case=problem[0], slot=problem[1], explanation=mistake.text), mistake.name)
    case, slot, text, name = problem
    run.fail(_("For {case}, your slot is {slot}: {explanation}").format(case=case, slot=slot, explanation=text), name)


def _model_slots(mistake, n, window, n_sinks):
    try:
        return [int(mistake.model(p, window, n_sinks)) for p in range(n)]
    except ZeroDivisionError:
        return None


def _first_problem(slots, window, n_sinks):
    """(case, slot, explanation, mistake name) of the first position written to a wrong slot, or None."""
    cap, held = n_sinks + window, {}
    for p, slot in enumerate(slots):
        case = _("window = {window}, n_sinks = {n_sinks}, position p = {p}").format(window=window, n_sinks=n_sinks, p=p)
        if not 0 <= slot < cap:
            return case, slot, _("outside the buffer's {cap} slots: {explanation}").format(
                cap=cap, explanation=OUT_OF_RANGE.text), OUT_OF_RANGE.name
        old = held.get(slot)
        if old is not None and old < n_sinks:
            return case, slot, _("slot {slot} held sink position {old}: {explanation}").format(
                slot=slot, old=old, explanation=SINKS_DROPPED.text), SINKS_DROPPED.name
        if old is not None and old > p - window:
            return case, slot, _("slot {slot} held position {old}, still in the window of p: {explanation}").format(
                slot=slot, old=old, explanation=WINDOW_OVERWRITTEN.text), WINDOW_OVERWRITTEN.name
        held[slot] = p
    return None


# ---------------------------------------------------------------------------------------------- ring attend

RING_MISTAKES: list[Mistake] = []
model = models(RING_MISTAKES)


def _ring_attend(q, k, v, pos, p, window, n_sinks, *, low=None, sinks=True, empty=False, mask=True, future=False,
                 sink_end=None, stable=True):
    low = p - window if low is None else low
    ok = (pos > low) if future else (pos <= p) & (pos > low)
    if sinks:
        ok |= pos < (n_sinks if sink_end is None else sink_end)
    if not empty:
        ok &= pos >= 0
    return attend(q[None], k, v, ok[None] if mask else None, stable=stable)[0]


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


@model("reads_future", N_("you read slots that hold positions after p (written ahead, by a speculative step or a "
       "prefill chunk): the window is p - window < j <= p, bounded above by p too."))
def ring_attend_reads_future(q, k, v, pos, p, window, n_sinks):
    return _ring_attend(q, k, v, pos, p, window, n_sinks, future=True)


@model("sinks_off_by_one", N_("off by one in the sinks: they are positions 0 .. n_sinks - 1, so the rule is "
       "j < n_sinks (`j <= n_sinks` also reads position n_sinks after it has left the window)."))
def ring_attend_sinks_off_by_one(q, k, v, pos, p, window, n_sinks):
    return _ring_attend(q, k, v, pos, p, window, n_sinks, sink_end=n_sinks + 1)


@model("sorted_last_window", N_("you sorted the slots by position and kept the first n_sinks and the last `window` of "
       "them. That counts slots, not positions: an empty slot (-1) sorts first and passes as a sink, and a stale or "
       "a future position among the last `window` slots is read. Decide for each slot from its position: "
       "j >= 0 and (p - window < j <= p or j < n_sinks)."))
def ring_attend_sorted_last_window(q, k, v, pos, p, window, n_sinks):
    order = np.argsort(pos, kind="stable")
    keep = np.zeros(len(pos), dtype=bool)
    keep[order[:n_sinks]] = True
    keep[order[-window:]] = True
    return attend(q[None], k, v, keep[None])[0]


@model("no_max_subtraction", N_("no max subtraction (overflow): with large scores `np.exp` returns inf and the output "
       "nan. Subtract the maximum of the readable scores before `np.exp` (or use a stable softmax)."))
def ring_attend_without_max(q, k, v, pos, p, window, n_sinks):
    return _ring_attend(q, k, v, pos, p, window, n_sinks, stable=False)


@model("reads_empty", N_("you read empty slots: their position is -1, which passes `j < n_sinks` (and, while "
       "p < window - 1, `p - window < j` too). Every rule needs j >= 0 first."))
def ring_attend_reads_empty(q, k, v, pos, p, window, n_sinks):
    return _ring_attend(q, k, v, pos, p, window, n_sinks, empty=True)


@model("no_mask", N_("you attended over every slot. The buffer can hold positions the query may not read (older "
       "than the window, or empty): build the mask from slot_pos."))
def ring_attend_without_mask(q, k, v, pos, p, window, n_sinks):
    return _ring_attend(q, k, v, pos, p, window, n_sinks, mask=False)


@checker(N_("ring-buffer decoding step"), RING_MISTAKES)
def check_ring_attend(run, fn):
    """Check ``fn(q, k_slots, v_slots, slot_pos, p, window, n_sinks)``: the output (d_v,) of the query q (d_k,) at
    position p, reading the slots whose position j satisfies j >= 0 and (p - window < j <= p or j < n_sinks)
    (slot_pos holds -1 for an empty slot). ``al.attention`` may do the attention itself."""
    rng = seeds.rng(10)
    cases = [(N_("p = 9, window = 4, n_sinks = 2, a stale slot holding p - window and an empty slot"),
              [0, 1, 8, 9, 6, 7, 5, -1], 9, 4, 2, 1.0),
             (N_("p = 6, window = 3, no sinks, slots not in position order"), [4, 6, 5, 3, -1], 6, 3, 0, 1.0),
             (N_("p = 2, window = 5, n_sinks = 1, a buffer not yet full"), [0, 1, 2, -1, -1, -1], 2, 5, 1, 1.0),
             (N_("p = 9, window = 3, n_sinks = 2: a stale slot holding position 2 = n_sinks, and a slot already "
                 "holding the future position 10"), [0, 1, 2, 8, 9, 10, 7, -1], 9, 3, 2, 1.0),
             (N_("p = 12, window = 4, n_sinks = 1: stale positions 1 and 8, future positions 13 and 14"),
              [0, 1, 13, 12, 11, 10, 9, 8, 14], 12, 4, 1, 1.0),
             (N_("large scores (about 1000): p = 5, window = 3, n_sinks = 1"), [0, 3, 4, 5, -1], 5, 3, 1, 400.0),
             (N_("large scores again: p = 7, window = 2, n_sinks = 1, slots [7, 0, 6, 5]"), [7, 0, 6, 5], 7, 2, 1,
              400.0)]
    data = []
    for case, pos, p, window, n_sinks, scale in cases:
        pos = np.array(pos)
        q, k, v = rng.normal(size=4) * scale, np.abs(rng.normal(size=(len(pos), 4))) + 1, rng.normal(size=(len(pos), 3))
        data.append((case, (q, k, v, pos, p, window, n_sinks)))

    def trial(item):
        case, args = item
        got = run.array(run.call(fn, case, *args, hint=error_hint), case, shape=(3,))
        return Trial(case, got, _ring_attend(*args), args)

    run.each_case(data, trial, RING_MISTAKES)
    return run.passed(_("All {n_cases} decoding steps match attention over p - window < j <= p and "
                        "the sinks, reading no empty, stale or future slot.").format(n_cases=len(cases)))


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


@model("wrong_axis", N_("softmax over the wrong axis: each query's weights run over the latents (the keys), the last "
       "axis of the scores, not over the queries."))
def absorbed_softmax_over_queries(q, c, w_uk, w_uv, w_o):
    q_lat = q @ swap(w_uk)                                           # (H, T, d_c)
    o_lat = attend(q_lat, c[None], c[None], scale=1 / np.sqrt(q.shape[-1]), axis=-2)
    return np.einsum("htc,hcm->tm", o_lat, w_uv @ w_o)


EXPLICIT_KEYS = Mistake("explicit_keys", N_("the function forms a head's keys or values, C W_UK or C W_UV (S x d_head "
                        "each), which the absorbed path exists to avoid: move the query into the latent space, "
                        "`q[h] @ w_uk[h].T`, attend over C itself, and fold W_UV into W_O."))


def _mla_hint(err):
    text = str(err)
    if "matmul" in text or "mismatch" in text or "not aligned" in text:
        return _("q[h] has shape (T, d_head) and w_uk[h] (d_latent, d_head): the query meets W_UK transposed, "
                 "`q @ np.swapaxes(w_uk, -1, -2)`, which gives (H, T, d_latent).")
    return error_hint(err)


def _explicit(q, c, w_uk, w_uv, w_o):
    heads = attend(q, c @ w_uk, c @ w_uv)                            # the explicit path: (H, T, d_head)
    return np.einsum("htd,hdm->tm", heads, w_o)                      # (T, d_model)


@checker(N_("MLA weight absorption"), MLA_MISTAKES + [EXPLICIT_KEYS], forbid=MLA_LIBRARIES)
def check_absorbed_attention(run, fn):
    """Check ``fn(q, c, w_uk, w_uv, w_o)``: q (H, T, d_head), latents c (S, d_latent), w_uk and w_uv (H, d_latent,
    d_head), w_o (H, d_head, d_model) -> (T, d_model), computed over the latents (the absorbed path)."""
    rng = seeds.rng(11)
    cases = [(N_("H = 2, T = 3, S = 5, d_head = d_latent = 4, d_model = 6"), 2, 3, 5, 4, 4, 6),
             (N_("H = 3, T = 2, S = 6, d_head = 2, d_latent = 5, d_model = 4"), 3, 2, 6, 2, 5, 4),
             (N_("H = 2, T = 2, S = 4, d_head = d_latent = 3, d_model = 5"), 2, 2, 4, 3, 3, 5),
             (N_("H = 2, T = 3, S = 5, d_head = 3, d_latent = 6, d_model = 4"), 2, 3, 5, 3, 6, 4)]
    data = []
    for case, H, T, S, d_h, d_c, d_m in cases:
        data.append((case, (rng.normal(size=(H, T, d_h)), rng.normal(size=(S, d_c)), rng.normal(size=(H, d_c, d_h)),
                            rng.normal(size=(H, d_c, d_h)), rng.normal(size=(H, d_h, d_m)))))

    def trial(item):
        case, args = item
        got = run.array(run.call(fn, case, *args, hint=_mla_hint), case, shape=(args[0].shape[1], args[4].shape[-1]))
        return Trial(case, got, _explicit(*args), args)

    run.each_case(data, trial, MLA_MISTAKES)
    _no_explicit_keys(run, fn, rng)
    return run.passed(_("All {n_cases} cases match the explicit path (keys and values up-projected per "
                        "head), scale 1/sqrt(d_head), and no call formed a head's keys or values.").format(
                            n_cases=len(cases) + 1))


def _no_explicit_keys(run, fn, rng):
    """One decoding query over 20000 latents of width 8: a head's keys (S x 64) take 10 MiB, the scores 160 KiB."""
    H, S, d_h, d_c, d_m = 2, 20000, 64, 8, 16
    args = (rng.normal(size=(H, 1, d_h)), rng.normal(size=(S, d_c)), rng.normal(size=(H, d_c, d_h)) / 3,
            rng.normal(size=(H, d_c, d_h)), rng.normal(size=(H, d_h, d_m)))
    case = N_("one query over S = 20000 latents of width 8, heads of width 64 (one head's keys would take 10 MiB)")
    memory = {}
    got = run.array(run.call(fn, case, *args, hint=_mla_hint, memory=memory), case, shape=(1, d_m))
    run.compare(case, got, _explicit(*args), MLA_MISTAKES, args)
    peak = memory["peak"]
    if peak > S * d_h * 8 // 2:
        run.fail(_("On {case}, your function held {value:.1f} MiB at once: {explanation}").format(
            case=_(case), value=peak / 2**20, explanation=EXPLICIT_KEYS.text), EXPLICIT_KEYS.name)


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
             (N_("block_size = 5, block_table = [2, 1], length = 10"), 3, 5, [2, 1], 10),
             (N_("block_size = 4, block_table = [6, 1, 3, 0, 5], length = 15"), 8, 4, [6, 1, 3, 0, 5], 15),
             (N_("block_size = 5, block_table = [3, 0, 4], length = 9"), 5, 5, [3, 0, 4], 9)]

    def trial(item):
        case, n_blocks, bs, table, length = item
        pool = np.arange(n_blocks * bs * 2, dtype=float).reshape(n_blocks, bs, 2) + 0.5   # distinct entries
        table = np.array(table)
        got = run.call(fn, case, pool, table, length, hint=error_hint)
        rows = tuple(getattr(got, "shape", ()))[:1]                   # arrays and tensors only
        if rows == (len(table) * bs,) and len(table) * bs != length:
            run.fail(_("For {case}, your result has {value} rows: {explanation}").format(
                case=_(case), value=len(table) * bs, explanation=WHOLE_BLOCKS.text),
                     WHOLE_BLOCKS.name)
        hint = (lambda shape: _("your result still has the block axis, (blocks, block_size, d): "
                                                      "reshape the gathered blocks to (blocks x block_size, d) and "
                                                      "keep the first `length` rows.")
                if len(shape) == 3 else None)
        got = run.array(got, case, shape=(length, 2), shape_hint=hint)
        p = np.arange(length)
        return Trial(case, got, pool[table[p // bs], p % bs], (pool, table, length))

    run.each_case(cases, trial, PAGED_MISTAKES, tol=None, name=N_("your result"))
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


@model("group_size", N_("you used the group size heads // kv_heads; the cache holds kv_heads keys and as many values "
       "per token and layer, whatever the number of query heads."))
def bytes_with_group_size(cfg, nbytes):
    if cfg.get("latent"):
        return _bytes_per_token(cfg, nbytes)
    return 2 * (cfg["heads"] // cfg["kv_heads"]) * cfg["head_dim"] * cfg["layers"] * nbytes


@model("elements_not_bytes", N_("you counted numbers, not bytes: multiply by bytes_per_number (2 for bfloat16)."))
def bytes_as_elements(cfg, nbytes):
    return _bytes_per_token(cfg, 1)


@model("rope_per_head", N_("you counted the decoupled RoPE key once per head; it is one vector of rope_dim numbers per "
       "token and layer, shared by every head."))
def bytes_with_rope_per_head(cfg, nbytes):
    if not cfg.get("latent"):
        return _bytes_per_token(cfg, nbytes)
    return (cfg["latent"] + cfg["heads"] * cfg["rope_dim"]) * cfg["layers"] * nbytes


@model("float_product", N_("the count was computed in floating point (float32 keeps 24 significant bits), so a large "
       "count is rounded. Multiply Python ints: they are exact at any size."))
def bytes_in_float32(cfg, nbytes):
    per_layer = (np.float32(cfg["latent"]) + np.float32(cfg["rope_dim"]) if cfg.get("latent")
                 else np.float32(2) * np.float32(cfg["kv_heads"]) * np.float32(cfg["head_dim"]))
    return int(per_layer * np.float32(cfg["layers"]) * np.float32(nbytes))


# layers, query heads, KV heads, head width as published (DeepSeek-V2: latent and RoPE key widths instead)
PUBLISHED = {
    "Llama 2 7B": {"layers": 32, "heads": 32, "kv_heads": 32, "head_dim": 128},
    "Llama 2 70B": {"layers": 80, "heads": 64, "kv_heads": 8, "head_dim": 128},
    "Mistral 7B": {"layers": 32, "heads": 32, "kv_heads": 8, "head_dim": 128},
    "DeepSeek-V2": {"layers": 60, "heads": 128, "head_dim": 128, "latent": 512, "rope_dim": 64},
}


MADE_UP = [   # not published models: counts that need many significant bits, and a second MLA layout
    (N_("a made-up MLA configuration"), {"layers": 27, "heads": 16, "head_dim": 128, "latent": 512, "rope_dim": 64},
     2),
    (N_("a made-up configuration whose count needs 26 significant bits"),
     {"layers": 1001, "heads": 63, "kv_heads": 63, "head_dim": 255}, 3),
    (N_("a made-up MLA configuration whose count needs 25 significant bits"),
     {"layers": 4001, "heads": 8, "head_dim": 64, "latent": 4095, "rope_dim": 63}, 3),
]


@checker(N_("cache bytes per token"), [NOT_AN_INT] + BYTES_MISTAKES, forbid=MLA_LIBRARIES)
def check_bytes_per_token(run, fn):
    """Check ``fn(config, bytes_per_number)``: the bytes one token adds to the cache of the whole model. ``config``
    is a dict with "layers", "heads", "head_dim" and either "kv_heads" (a key/value cache) or "latent" and
    "rope_dim" (MLA)."""
    cases = [(name, cfg, 2) for name, cfg in PUBLISHED.items()] + [
        (N_("Mistral 7B in float32"), PUBLISHED["Mistral 7B"], 4)] + MADE_UP
    trials = []

    def trial(item):
        name, cfg, nbytes = item
        case = _("{name} ({cfg}), {nbytes} bytes per number").format(name=_(name), cfg=cfg, nbytes=nbytes)
        value = _as_int(run, run.call(fn, case, dict(cfg), nbytes), case, N_("your count"))
        trials.append(Trial(case, value, _bytes_per_token(cfg, nbytes), (cfg, nbytes)))
        return trials[-1]

    features = ("config", "bytes_per_number")
    run.each_case(cases, trial, BYTES_MISTAKES, tol=None, name=N_("your count"),
                  explain=lambda got, expected: describe_ratio(got, expected, trials, features))
    return run.passed(_("All {n_cases} configurations match: bytes per number x 2 x layers x kv_heads x "
                        "head_dim, or bytes per number x layers x (latent + rope_dim) for MLA.")
                      .format(n_cases=len(cases)))
