"""Wrong attempts at sheet 12 (making the KV cache small), each with the diagnosis it must get."""
import numpy as np

import attnlab.checks as C

from .attempts import expect


def test_exercise_12_1_ring_slot():
    check = C.check_ring_slot
    expect(check, lambda p, window, n_sinks: p % (n_sinks + window), "12.1 ring_slot", "p % (n_sinks + window)",
           "sinks_dropped", "drops the sinks")
    expect(check, lambda p, window, n_sinks: n_sinks + (p - n_sinks) % window, "12.1 ring_slot",
           "no branch for the sinks", "sinks_in_ring", "keep slot p")
    expect(check, lambda p, window, n_sinks: p if p < n_sinks else n_sinks + (p - n_sinks) // window,
           "12.1 ring_slot", "// instead of %", "floor_division", "remainder")
    expect(check, lambda p, window, n_sinks: p if p < n_sinks else n_sinks + (p - n_sinks) % max(window - 1, 1),
           "12.1 ring_slot", "modulo window - 1", "window_overwritten", "window - 1")
    expect(check, lambda p, window, n_sinks: p if p < n_sinks else n_sinks + 1 + (p - n_sinks) % window,
           "12.1 ring_slot", "one slot too far", "out_of_range", "outside the buffer")


def _attend(q, k, v, keep, stable=True):
    s = k[keep] @ q / np.sqrt(q.shape[-1])
    e = np.exp(s - s.max()) if stable else np.exp(s)
    return e / e.sum() @ v[keep]


def test_exercise_12_2_ring_attend():
    check = C.check_ring_attend
    expect(check, lambda q, k, v, pos, p, w, ns: _attend(q, k, v, ((pos > p - w) | (pos < ns)) & (pos >= 0)),
           "12.2 ring_attend", "no upper bound j <= p", "reads_future", "after p")
    expect(check, lambda q, k, v, pos, p, w, ns: _attend(q, k, v, (((pos > p - w) & (pos <= p)) | (pos <= ns))
                                                          & (pos >= 0)),
           "12.2 ring_attend", "sinks as j <= n_sinks", "sinks_off_by_one", "j < n_sinks")

    def sorted_window(q, k, v, pos, p, w, ns):
        order = np.argsort(pos)
        keep = np.zeros(len(pos), dtype=bool)
        keep[order[:ns]] = True
        keep[order[len(pos) - w:]] = True
        return _attend(q, k, v, keep)
    expect(check, sorted_window, "12.2 ring_attend", "sort and keep sinks plus the last window",
           "sorted_last_window", "counts slots")
    expect(check, lambda q, k, v, pos, p, w, ns: _attend(q, k, v, (((pos > p - w) & (pos <= p)) | (pos < ns))
                                                          & (pos >= 0), stable=False),
           "12.2 ring_attend", "no max subtraction", "no_max_subtraction", "overflow")
    expect(check, lambda q, k, v, pos, p, w, ns: _attend(q, k, v, (((pos >= p - w) & (pos <= p)) | (pos < ns))
                                                          & (pos >= 0)),
           "12.2 ring_attend", "p - window <= j", "window_too_long", "window + 1")


def test_exercise_12_3_absorbed_attention():
    check = C.check_absorbed_attention

    def explicit(q, c, w_uk, w_uv, w_o):
        out = 0
        for h in range(q.shape[0]):
            k, v = c @ w_uk[h], c @ w_uv[h]                   # (S, d_head) each: what absorption avoids
            s = q[h] @ k.T / np.sqrt(q.shape[-1])
            e = np.exp(s - s.max(-1, keepdims=True))
            out = out + e / e.sum(-1, keepdims=True) @ v @ w_o[h]
        return out
    expect(check, explicit, "12.3 absorbed_attention", "K_h and V_h formed", "explicit_keys", "keys or values")

    def swapped(q, c, w_uk, w_uv, w_o):
        out = 0
        for h in range(q.shape[0]):
            s = (q[h] @ w_uv[h].T) @ c.T / np.sqrt(q.shape[-1])
            e = np.exp(s - s.max(-1, keepdims=True))
            out = out + e / e.sum(-1, keepdims=True) @ c @ (w_uk[h] @ w_o[h])
        return out
    expect(check, swapped, "12.3 absorbed_attention", "W_UV on the query side", "wrong_side", "wrong sides")

    def latent_scale(q, c, w_uk, w_uv, w_o):
        out = 0
        for h in range(q.shape[0]):
            s = (q[h] @ w_uk[h].T) @ c.T / np.sqrt(c.shape[-1])
            e = np.exp(s - s.max(-1, keepdims=True))
            out = out + e / e.sum(-1, keepdims=True) @ c @ (w_uv[h] @ w_o[h])
        return out
    expect(check, latent_scale, "12.3 absorbed_attention", "1/sqrt(d_latent)", "latent_scale", "d_latent")

    def per_head(q, c, w_uk, w_uv, w_o):
        s = (q @ np.swapaxes(w_uk, -1, -2)) @ c.T / np.sqrt(q.shape[-1])
        e = np.exp(s - s.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True)) @ c @ (w_uv @ w_o)     # (H, T, d_model): heads not summed
    expect(check, per_head, "12.3 absorbed_attention", "heads not summed", "wrong_shape", "expected")

    def over_queries(q, c, w_uk, w_uv, w_o):
        s = (q @ np.swapaxes(w_uk, -1, -2)) @ c.T / np.sqrt(q.shape[-1])
        e = np.exp(s - s.max(-2, keepdims=True))
        return ((e / e.sum(-2, keepdims=True)) @ c @ (w_uv @ w_o)).sum(axis=0)
    expect(check, over_queries, "12.3 absorbed_attention", "softmax over the queries", "wrong_axis", "over the queries")


def test_exercise_12_4_gather_blocks():
    check = C.check_gather_blocks
    expect(check, lambda pool, table, length: pool[:len(table)].reshape(-1, pool.shape[-1])[:length],
           "12.4 gather_blocks", "the first blocks of the pool", "ignores_table", "pool order")
    expect(check, lambda pool, table, length: pool[table].reshape(-1, pool.shape[-1]), "12.4 gather_blocks",
           "whole blocks", "whole_blocks", "partly filled")
    expect(check, lambda pool, table, length: pool[table][:length], "12.4 gather_blocks", "no reshape",
           "wrong_shape", "block axis")
    expect(check, lambda pool, table, length: np.stack([pool[table[p % pool.shape[1]], p // pool.shape[1]]
                                                        for p in range(length)]),
           "12.4 gather_blocks", "% and // swapped", "div_mod_swapped", "swapped")
    expect(check, lambda pool, table, length: pool[table[::-1]].reshape(-1, pool.shape[-1])[:length],
           "12.4 gather_blocks", "the table read backwards", "", "other places")


def test_exercise_12_5_bytes_per_token():
    check = C.check_bytes_per_token

    def group(cfg, nbytes):
        if "latent" in cfg:
            return (cfg["latent"] + cfg["rope_dim"]) * cfg["layers"] * nbytes
        return 2 * (cfg["heads"] // cfg["kv_heads"]) * cfg["head_dim"] * cfg["layers"] * nbytes
    expect(check, group, "12.5 bytes_per_token", "heads // kv_heads", "group_size", "group size")

    def latent_twice(cfg, nbytes):
        if "latent" in cfg:
            return (2 * cfg["latent"] + cfg["rope_dim"]) * cfg["layers"] * nbytes
        return 2 * cfg["kv_heads"] * cfg["head_dim"] * cfg["layers"] * nbytes
    expect(check, latent_twice, "12.5 bytes_per_token", "the latent counted twice", "latent_doubled", "twice")

    def float32(cfg, nbytes):
        per = (cfg["latent"] + cfg["rope_dim"]) if "latent" in cfg else 2 * cfg["kv_heads"] * cfg["head_dim"]
        return int(np.float32(per) * np.float32(cfg["layers"]) * np.float32(nbytes))
    expect(check, float32, "12.5 bytes_per_token", "a float32 product", "float_product", "floating point")

    def numbers(cfg, nbytes):
        per = (cfg["latent"] + cfg["rope_dim"]) if "latent" in cfg else 2 * cfg["kv_heads"] * cfg["head_dim"]
        return per * cfg["layers"]
    expect(check, numbers, "12.5 bytes_per_token", "numbers, not bytes", "elements_not_bytes", "bytes_per_number")

    def rope_per_head(cfg, nbytes):
        if "latent" in cfg:
            return (cfg["latent"] + cfg["heads"] * cfg["rope_dim"]) * cfg["layers"] * nbytes
        return 2 * cfg["kv_heads"] * cfg["head_dim"] * cfg["layers"] * nbytes
    expect(check, rope_per_head, "12.5 bytes_per_token", "the RoPE key per head", "rope_per_head", "shared")
