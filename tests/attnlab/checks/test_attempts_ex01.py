"""Wrong attempts at sheet 1 (queries, keys and values), each with the diagnosis it must get."""
import numpy as np
import torch

import attnlab.checks as C

from .attempts import expect


def softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_exercise_1_3_scores():
    check = C.check_scores
    expect(check, lambda q, k: np.einsum("...td,...sd->...st", q, k), "1.3 scores",
           "einsum with the output indices swapped", "scores_transposed", "K Q^T")
    expect(check, lambda q, k: q @ k.T, "1.3 scores", "k.T on batched arrays", "", "`k.T` reverses every axis")
    expect(check, lambda q, k: np.dot(q, np.swapaxes(k, -1, -2)), "1.3 scores", "np.dot on a batch", "wrong_shape",
           "np.matmul")
    expect(check, lambda q, k: (q.astype(np.float32) @ np.swapaxes(k, -1, -2).astype(np.float32)).astype(float),
           "1.3 scores", "float32 product cast back", "computed_in_float32", "float32")
    expect(check, lambda q, k: q @ np.swapaxes(k, -1, -2) / q.shape[-1], "1.3 scores", "divided by d_k", "",
           "constant factor")


def test_exercise_1_4_attention():
    check, options = C.check_attention, {"masks_too": False}

    def via_float32(q, k, v, allowed=None):
        s = q.astype(np.float32) @ np.swapaxes(k, -1, -2).astype(np.float32) / np.float32(np.sqrt(q.shape[-1]))
        return (softmax(s) @ v.astype(np.float32)).astype(np.float64)
    expect(check, via_float32, "1.4 attention", "computed in float32, cast at the end", "computed_in_float32",
           "ran in float32", **options)

    def naive_exp(q, k, v, allowed=None):
        e = np.exp(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
        return e / e.sum(-1, keepdims=True) @ v
    expect(check, naive_exp, "1.4 attention", "np.exp without the maximum", "no_max_subtraction", "overflow",
           **options)

    def by_keys(q, k, v, allowed=None):
        return softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(k.shape[-2])) @ v
    expect(check, by_keys, "1.4 attention", "scaled by sqrt(S)", "scale_by_length", "number of keys", **options)

    def global_max(q, k, v, allowed=None):
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        e = np.exp(s - s.max())
        return e / e.sum(-1, keepdims=True) @ v
    expect(check, global_max, "1.4 attention", "the maximum of the whole array", "global_max", "whole array",
           **options)

    def weights_only(q, k, v, allowed=None):
        return softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
    expect(check, weights_only, "1.4 attention", "returned the weights", "wrong_shape", "shape of the weights",
           **options)

    def through_torch(q, k, v, allowed=None):
        t = [torch.from_numpy(a) for a in (q, k, v)]
        return torch.nn.functional.scaled_dot_product_attention(*t, scale=1.0).numpy()
    expect(check, through_torch, "1.4 attention", "SDPA with scale=1", "no_scale", "missing scaling", **options)
