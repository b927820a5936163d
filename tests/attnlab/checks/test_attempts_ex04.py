"""Wrong attempts at sheet 4 (worked examples: the SDPA wrapper and the leak test), each with its diagnosis."""
import numpy as np
import torch
import torch.nn.functional as F

import attnlab.checks as C

from .attempts import expect


def _empty_rows(q, k, allowed):
    return allowed is not None and not np.broadcast_to(allowed, q.shape[:-1] + (k.shape[-2],)).any(-1).all()


def _sdpa(q, k, v, mask=None, **options):
    return F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)), attn_mask=mask, **options)


def test_exercise_4_5_sdpa_attention():
    check = C.check_attention

    def float32(q, k, v, allowed=None):
        if _empty_rows(q, k, allowed):
            raise ValueError("a query may read no key")
        mask = None if allowed is None else torch.from_numpy(np.asarray(allowed))
        t = [torch.from_numpy(a).float() for a in (q, k, v)]
        return F.scaled_dot_product_attention(*t, attn_mask=mask).double().numpy()
    expect(check, float32, "4.5 sdpa_attention", "float32 tensors, .double() at the end", "computed_in_float32",
           "float32")

    def no_check(q, k, v, allowed=None):
        mask = None if allowed is None else torch.from_numpy(np.asarray(allowed))
        return _sdpa(q, k, v, mask).numpy()
    expect(check, no_check, "4.5 sdpa_attention", "no empty-row check (SDPA gives zeros)", "zero_row",
           "silently got a zero output")

    def additive_float(q, k, v, allowed=None):
        if _empty_rows(q, k, allowed):
            raise ValueError("a query may read no key")
        mask = None if allowed is None else torch.from_numpy(np.asarray(allowed, dtype=float))
        return _sdpa(q, k, v, mask).numpy()
    expect(check, additive_float, "4.5 sdpa_attention", "the mask as floats (added to the scores)", "mask_added",
           "added to the scores")

    def scale_d_k(q, k, v, allowed=None):
        if _empty_rows(q, k, allowed):
            raise ValueError("a query may read no key")
        mask = None if allowed is None else torch.from_numpy(np.asarray(allowed))
        return _sdpa(q, k, v, mask, scale=1 / q.shape[-1]).numpy()
    expect(check, scale_d_k, "4.5 sdpa_attention", "scale = 1 / d_k", "scale_by_d_k", "divided by d_k")


def _changed_outputs(attn, x, t, how):
    changed = x.copy()
    how(changed, t)
    return attn(x), attn(changed)


def test_exercise_4_6_leak_test():
    check = C.check_leak_test

    def feature_zero(attn, x):
        for t in range(len(x) - 1):
            a, b = _changed_outputs(attn, x, t, lambda c, t: c.__setitem__((slice(t + 1, None), 0), 5.0))
            if not np.array_equal(a[:t + 1], b[:t + 1]):
                return True
        return False
    expect(check, feature_zero, "4.6 leaks_future", "perturbs feature 0 only", "one_feature", "one feature")

    def even_splits(attn, x):
        for t in range(0, len(x) - 1, 2):
            a, b = _changed_outputs(attn, x, t, lambda c, t: c.__setitem__(slice(t + 1, None), 0.0))
            if not np.array_equal(a[:t + 1], b[:t + 1]):
                return True
        return False
    expect(check, even_splits, "4.6 leaks_future", "every second split point", "skips_split_points",
           "every t from 0")

    def before_t(attn, x):
        for t in range(1, len(x)):
            a, b = _changed_outputs(attn, x, t, lambda c, t: c.__setitem__(slice(t + 1, None), -3.0))
            if not np.array_equal(a[:t], b[:t]):
                return True
        return False
    expect(check, before_t, "4.6 leaks_future", "compares the rows before t only", "excludes_row_t", "row t")

    def close_enough(attn, x):
        for t in range(len(x) - 1):
            a, b = _changed_outputs(attn, x, t, lambda c, t: c.__setitem__(slice(t + 1, None), 1.0))
            if np.abs(a[:t + 1] - b[:t + 1]).max() > 1e-9:
                return True
        return False
    expect(check, close_enough, "4.6 leaks_future", "a tolerance of 1e-9", "tolerance", "tolerance")

    def last_split_wins(attn, x):
        leak = False
        for t in range(len(x) - 1):
            a, b = _changed_outputs(attn, x, t, lambda c, t: c.__setitem__(slice(t + 1, None), 7.0))
            leak = not np.array_equal(a[:t + 1], b[:t + 1])
        return leak
    expect(check, last_split_wins, "4.6 leaks_future", "the verdict of the last split only", "last_position_only",
           "only the last position")
