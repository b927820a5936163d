"""Wrong attempts at sheet 9 (exact attention without the T x S matrix), each with the diagnosis it must get."""
import numpy as np
import torch

import attnlab as al
import attnlab.checks as C

from .attempts import expect


def _merge(outs, lses, *, shift=True, empty_safe=True, divide=True, lse="logsumexp"):
    """A student's merge; each keyword is one way to get it wrong."""
    m = lses.max(axis=0) if shift else np.zeros(lses.shape[1])           # (T,)
    if empty_safe:
        m = np.where(np.isfinite(m), m, 0.0)
    w = np.exp(lses - m)                                                 # (n, T)
    total = w.sum(axis=0)                                                # (T,)
    out = (w[..., None] * outs).sum(axis=0)                              # (T, d_v)
    if divide:
        out = out / np.where(total > 0, total, 1.0)[:, None] if empty_safe else out / total[:, None]
    merged = {"logsumexp": m + np.log(total), "max": lses.max(axis=0), "sum": lses.sum(axis=0)}[lse]
    return out, merged


def test_exercise_9_2_merge_partials():
    check = C.check_merge_partials
    expect(check, lambda outs, lses: (outs.mean(axis=0), np.log(np.exp(lses).sum(axis=0))), "9.2 merge_partials",
           "the plain average", "no_rescale", "averaged")
    expect(check, lambda outs, lses: _merge(outs, lses, shift=False, empty_safe=False), "9.2 merge_partials",
           "exp(lse_s) without a shift", "no_shift", "709")
    expect(check, lambda outs, lses: _merge(outs, lses, lse="max"), "9.2 merge_partials", "lse = max of lse_s",
           "lse_is_max", "largest lse_s")
    expect(check, lambda outs, lses: _merge(outs, lses, lse="sum"), "9.2 merge_partials", "lse = sum of lse_s",
           "lse_is_sum", "added the log-sum-exps")
    expect(check, lambda outs, lses: _merge(outs, lses, divide=False), "9.2 merge_partials", "weights not divided",
           "no_normalisation", "not divided")
    expect(check, lambda outs, lses: _merge(outs, lses, empty_safe=False), "9.2 merge_partials",
           "no care for rows with no key", "empty_partials", "-inf - (-inf)")

    def largest_only(outs, lses):
        best = lses.argmax(axis=0)                                       # (T,)
        return outs[best, np.arange(outs.shape[1])], lses.max(axis=0)
    expect(check, largest_only, "9.2 merge_partials", "the chunk of the largest lse", "max_instead_of_logsumexp",
           "soft maximum")

    def weights_unbroadcast(outs, lses):
        m = np.where(np.isfinite(lses.max(axis=0)), lses.max(axis=0), 0.0)
        w = np.exp(lses - m)                                             # (n, T): lacks the d_v axis
        return (w * outs).sum(axis=0) / w.sum(axis=0), m + np.log(w.sum(axis=0))
    expect(check, weights_unbroadcast, "9.2 merge_partials", "weights (n, T) times outs (n, T, d_v)", "",
           "raised ValueError")

    def lse_kept_dims(outs, lses):
        m = lses.max(axis=0, keepdims=True)                              # (1, T)
        m = np.where(np.isfinite(m), m, 0.0)
        w = np.exp(lses - m)
        total = w.sum(axis=0, keepdims=True)                             # (1, T)
        out = (w[..., None] * outs).sum(axis=0) / np.where(total > 0, total, 1.0)[0, :, None]
        return out, m + np.log(total)
    expect(check, lse_kept_dims, "9.2 merge_partials", "lse of shape (1, T)", "wrong_shape", "shape")

    def torch_merge(outs, lses):
        out, lse = al.torch_ops.merge_partials(list(torch.from_numpy(outs)), list(torch.from_numpy(lses)))
        return out.numpy(), lse.numpy()
    expect(check, torch_merge, "9.2 merge_partials", "attnlab's torch merge", "forbidden_call",
           "merge_partials")


def _chunk(q, k, v, lo, hi, *, scale=True, lse_is_max=False):
    """One chunk's (o, lse); an empty chunk: o = 0, lse = -inf."""
    if hi == lo:
        return np.zeros((q.shape[0], v.shape[1])), np.full(q.shape[0], -np.inf)
    u = q @ k[lo:hi].T / (np.sqrt(q.shape[1]) if scale else 1.0)      # (T, hi - lo)
    m = u.max(axis=1, keepdims=True)
    e = np.exp(u - m)
    lse = m[:, 0] if lse_is_max else m[:, 0] + np.log(e.sum(axis=1))
    return e @ v[lo:hi] / e.sum(axis=1, keepdims=True), lse


def _split(q, k, v, n_splits, bounds=None, merge=None, **chunk):
    S = k.shape[0]
    bounds = [s * S // n_splits for s in range(n_splits + 1)] if bounds is None else bounds
    parts = [_chunk(q, k, v, lo, hi, **chunk) for lo, hi in zip(bounds[:-1], bounds[1:])]
    return (merge or _merge)(np.stack([o for o, _l in parts]), np.stack([lse for _o, lse in parts]))


def test_exercise_9_3_split_kv_attention():
    check = C.check_split_kv_attention

    def floor_chunks(q, k, v, n_splits):
        size = k.shape[0] // n_splits
        return _split(q, k, v, n_splits, bounds=[s * size for s in range(n_splits + 1)])
    expect(check, floor_chunks, "9.3 split_kv_attention", "chunks of S // n_splits keys", "drops_keys",
           "fall off the end")
    expect(check, lambda q, k, v, n: _split(q, k, v, n, scale=False), "9.3 split_kv_attention", "no 1/sqrt(d_k)",
           "no_scale", "sqrt(d_k)")
    expect(check, lambda q, k, v, n: _split(q, k, v, n, merge=lambda o, lse: (o.mean(0), lse.max(0))),
           "9.3 split_kv_attention", "the chunks' outputs averaged", "no_rescale", "averaged")

    def array_split(q, k, v, n_splits):
        outs, lses = [], []
        for kc, vc in zip(np.array_split(k, n_splits), np.array_split(v, n_splits)):
            u = q @ kc.T / np.sqrt(q.shape[1])
            m = u.max(axis=1, keepdims=True)                             # raises on an empty chunk
            e = np.exp(u - m)
            outs.append(e @ vc / e.sum(axis=1, keepdims=True))
            lses.append(m[:, 0] + np.log(e.sum(axis=1)))
        return _merge(np.stack(outs), np.stack(lses))
    expect(check, array_split, "9.3 split_kv_attention", "np.array_split, empty chunks not handled", "empty_chunk",
           "empty array")

    def zero_over_zero(q, k, v, n_splits):
        outs, lses = [], []
        for kc, vc in zip(np.array_split(k, n_splits), np.array_split(v, n_splits)):
            u = q @ kc.T / np.sqrt(q.shape[1])
            m = u.max(axis=1, keepdims=True, initial=-np.inf)            # -inf for an empty chunk
            e = np.exp(u - m)
            outs.append(e @ vc / e.sum(axis=1, keepdims=True))           # 0 / 0 for an empty chunk
            lses.append(m[:, 0] + np.log(e.sum(axis=1)))
        return _merge(np.stack(outs), np.stack(lses))
    expect(check, zero_over_zero, "9.3 split_kv_attention", "an empty chunk gives 0 / 0", "empty_chunk", "NaN")
    expect(check, lambda q, k, v, n: _split(q, k, v, n, lse_is_max=True), "9.3 split_kv_attention",
           "a chunk's lse is its largest score", "chunk_lse_is_max", "largest score")
    expect(check, lambda q, k, v, n: _split(q, k, v, n)[0], "9.3 split_kv_attention", "returns out only",
           "wrong_type", "two arrays")
    expect(check, lambda q, k, v, n: (_split(q, k, v, n)[0], _split(q, k, v, n)[1][:, None]),
           "9.3 split_kv_attention", "lse as a (T, 1) column", "wrong_shape", "expected (3)")
    expect(check, lambda q, k, v, n: (al.attention(q, k, v), _split(q, k, v, n)[1]), "9.3 split_kv_attention",
           "al.attention for the output", "forbidden_call", "attnlab.reference.attention")
