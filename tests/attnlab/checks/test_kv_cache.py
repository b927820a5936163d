"""Chapter 12 checkers: every mistake is named.

Each "student" function is written independently, the way a student would write the mistake, not taken
from the package's mistake models; each test asserts the diagnosis it gets.
"""
import numpy as np

from attnlab import checks as C

from .support import assert_diagnosis, assert_not_attempted, np_softmax, stub

# ------------------------------------------------------------------------------------ ring slots

def test_ring_slot_reference_passes():
    assert C.check_ring_slot(lambda p, w, s: p if p < s else s + (p - s) % w).passed


def test_ring_slot_other_valid_assignment_passes():
    assert C.check_ring_slot(lambda p, w, s: p if p < s else s + p % w).passed      # another bijection


def test_ring_slot_stub():
    assert_not_attempted(C.check_ring_slot(stub))


def test_ring_slot_without_wrap():
    assert_diagnosis(C.check_ring_slot(lambda p, w, s: p), "no_wrap", "does not wrap")


def test_ring_slot_wrapping_over_the_sinks():
    assert_diagnosis(C.check_ring_slot(lambda p, w, s: p % (s + w)), "sinks_dropped", "sink")


def test_ring_slot_modulo_window_minus_one():
    assert_diagnosis(C.check_ring_slot(lambda p, w, s: p if p < s else s + (p - s) % max(w - 1, 1)),
                     "window_overwritten", "off by one")


def test_ring_slot_modulo_window_plus_one():
    assert_diagnosis(C.check_ring_slot(lambda p, w, s: p if p < s else s + (p - s) % (w + 1)), "out_of_range",
                     "outside")


def test_ring_slot_float():
    assert_diagnosis(C.check_ring_slot(lambda p, w, s: float(p if p < s else s + (p - s) % w)), "not_an_int", "int")


# ------------------------------------------------------------------------------------ ring decoding step

def ring_attend(q, k, v, pos, p, window, n_sinks, low_offset=0, sinks=True, check_empty=True, masked=True):
    scores = k @ q / np.sqrt(q.shape[0])
    ok = (pos <= p) & (pos > p - window + low_offset)
    if sinks:
        ok = ok | (pos < n_sinks)
    if check_empty:
        ok = ok & (pos >= 0)
    if masked:
        scores = np.where(ok, scores, -np.inf)
    return np_softmax(scores) @ v


def test_ring_attend_reference_passes():
    assert C.check_ring_attend(ring_attend).passed


def test_ring_attend_stub():
    assert_not_attempted(C.check_ring_attend(stub))


def test_ring_attend_window_too_long():
    assert_diagnosis(C.check_ring_attend(lambda *a: ring_attend(*a, low_offset=-1)), "window_too_long", "window + 1")


def test_ring_attend_window_too_short():
    assert_diagnosis(C.check_ring_attend(lambda *a: ring_attend(*a, low_offset=1)), "window_too_short", "window - 1")


def test_ring_attend_without_sinks():
    assert_diagnosis(C.check_ring_attend(lambda *a: ring_attend(*a, sinks=False)), "no_sinks", "sinks")


def test_ring_attend_reading_empty_slots():
    assert_diagnosis(C.check_ring_attend(lambda *a: ring_attend(*a, check_empty=False)), "reads_empty", "empty")


def test_ring_attend_without_mask():
    assert_diagnosis(C.check_ring_attend(lambda *a: ring_attend(*a, masked=False)), "no_mask", "every slot")


# ------------------------------------------------------------------------------------ MLA absorption

def absorbed(q, c, w_uk, w_uv, w_o, scale=None, uk_t=True, swap_sides=False):
    if swap_sides:
        w_uk, w_uv = w_uv, w_uk
    H, T, d_h = q.shape
    out = 0
    for h in range(H):
        q_lat = q[h] @ (w_uk[h].T if uk_t else w_uk[h])             # (T, d_c)
        s = q_lat @ c.T * (1 / np.sqrt(d_h) if scale is None else scale)
        out = out + np_softmax(s) @ c @ (w_uv[h] @ w_o[h])
    return out


def test_absorbed_reference_passes():
    assert C.check_absorbed_attention(absorbed).passed


def test_explicit_path_is_named():
    """The sheet asks for the absorbed path: forming K_h and V_h is measured and named."""
    def explicit(q, c, w_uk, w_uv, w_o):
        return sum(np_softmax(q[h] @ (c @ w_uk[h]).T / np.sqrt(q.shape[-1])) @ (c @ w_uv[h]) @ w_o[h]
                   for h in range(q.shape[0]))
    assert_diagnosis(C.check_absorbed_attention(explicit), "explicit_keys", "forms a head's keys or values")


def test_absorbed_stub():
    assert_not_attempted(C.check_absorbed_attention(stub))


def test_absorbed_wrong_side():
    assert_diagnosis(C.check_absorbed_attention(lambda *a: absorbed(*a, swap_sides=True)), "wrong_side", "wrong side")


def test_absorbed_without_transpose():
    assert_diagnosis(C.check_absorbed_attention(lambda *a: absorbed(*a, uk_t=False)), "no_transpose", "transpose")


def test_absorbed_latent_scale():
    assert_diagnosis(C.check_absorbed_attention(lambda q, c, *w: absorbed(q, c, *w, scale=1 / np.sqrt(c.shape[1]))),
                     "latent_scale", "1/sqrt(d_latent)")


def test_absorbed_without_scale():
    assert_diagnosis(C.check_absorbed_attention(lambda *a: absorbed(*a, scale=1.0)), "no_scale", "not scaled")


def test_absorbed_shape_error_gets_a_hint():
    def crashes(q, c, w_uk, w_uv, w_o):
        return np.matmul(q, w_uk)          # (H, T, d_h) @ (H, d_c, d_h): fails unless d_c == d_h
    result = C.check_absorbed_attention(lambda q, c, w_uk, w_uv, w_o: absorbed(q, c, w_uk, w_uv, w_o, uk_t=False)
                                        if q.shape[-1] == c.shape[-1] else crashes(q, c, w_uk, w_uv, w_o))
    assert not result.passed and "transpose" in result.message.lower()


# ------------------------------------------------------------------------------------ paged gather

def gather(pool, table, length):
    bs = pool.shape[1]
    return np.stack([pool[table[p // bs], p % bs] for p in range(length)])


def test_gather_reference_passes():
    assert C.check_gather_blocks(gather).passed


def test_gather_stub():
    assert_not_attempted(C.check_gather_blocks(stub))


def test_gather_ignoring_the_table():
    assert_diagnosis(C.check_gather_blocks(lambda pool, table, n: np.concatenate(list(pool))[:n]), "ignores_table",
                     "block table")


def test_gather_with_division_and_remainder_swapped():
    def swapped(pool, table, length):
        bs = pool.shape[1]
        return np.stack([pool[table[p % bs], p // bs] for p in range(length)])
    assert_diagnosis(C.check_gather_blocks(swapped), "div_mod_swapped", "swapped")


def test_gather_dividing_by_the_number_of_blocks():
    def by_count(pool, table, length):
        n = len(table)
        return np.stack([pool[table[p // n], p % n] for p in range(length)])
    assert_diagnosis(C.check_gather_blocks(by_count), "blocks_by_count", "number of blocks")


def test_gather_whole_blocks():
    assert_diagnosis(C.check_gather_blocks(lambda pool, table, n: np.concatenate([pool[b] for b in table])),
                     "whole_blocks", "partly filled")


# ------------------------------------------------------------------------------------ bytes per token

def per_token(cfg, nbytes):
    if "latent" in cfg:
        return cfg["layers"] * (cfg["latent"] + cfg["rope_dim"]) * nbytes
    return 2 * cfg["layers"] * cfg["kv_heads"] * cfg["head_dim"] * nbytes


def test_bytes_reference_passes():
    assert C.check_bytes_per_token(per_token).passed


def test_bytes_stub():
    assert_not_attempted(C.check_bytes_per_token(stub))


def test_bytes_without_factor_two():
    assert_diagnosis(C.check_bytes_per_token(lambda c, n: per_token(c, n) // (1 if "latent" in c else 2)),
                     "no_factor_two", "AND a value")


def test_bytes_with_query_heads():
    assert_diagnosis(C.check_bytes_per_token(lambda c, n: per_token(c, n) if "latent" in c else
                                             2 * c["layers"] * c["heads"] * c["head_dim"] * n), "query_heads",
                     "query heads")


def test_bytes_one_layer():
    assert_diagnosis(C.check_bytes_per_token(lambda c, n: per_token(c, n) // c["layers"]), "one_layer", "layers")


def test_bytes_latent_doubled():
    assert_diagnosis(C.check_bytes_per_token(lambda c, n: per_token(c, n) if "latent" not in c else
                                             c["layers"] * (2 * c["latent"] + c["rope_dim"]) * n), "latent_doubled",
                     "twice")


def test_bytes_without_rope_key():
    assert_diagnosis(C.check_bytes_per_token(lambda c, n: per_token(c, n) if "latent" not in c else
                                             c["layers"] * c["latent"] * n), "no_rope_key", "RoPE")


def test_bytes_in_bits():
    assert_diagnosis(C.check_bytes_per_token(lambda c, n: 8 * per_token(c, n)), "bits", "bits")


def test_bytes_float():
    assert_diagnosis(C.check_bytes_per_token(lambda c, n: float(per_token(c, n))), "not_an_int", "int")
