"""Checkers for multi-head bookkeeping: splitting and merging heads, the GQA head map, GQA attention.

The tensor tasks take and return torch tensors (the shape habits of nanoGPT-style code).
"""
from __future__ import annotations

import numpy as np

from .. import reference as ref
from . import mistakes as M
from . import result as R
from .diagnose import FLOAT32, Mistake, compare
from .runner import Stop, call, checker, matmul_hint, to_array

SPLIT_MISTAKES = [
    Mistake("reshape_without_transpose", "you reshaped (B, T, H*d) straight to (B, H, T, d). The memory "
            "order is T before H, so this mixes positions and heads. Reshape to (B, T, H, d) first, then swap "
            "the T and H axes: `x.reshape(B, T, H, d).transpose(1, 2)`.", M.split_heads_without_transpose),
    Mistake("interleaved", "your heads are interleaved: head h took features h, h + H, h + 2H, ... Head h owns "
            "the contiguous block of features h*d .. (h+1)*d - 1: reshape to (B, T, H, d), not (B, T, d, H).",
            M.split_heads_interleaved),
]
MERGE_MISTAKES = [
    Mistake("reshape_without_transpose", "you reshaped (B, H, T, d) straight to (B, T, H*d), which mixes "
            "positions and heads. Move the head axis back next to the features first: "
            "`x.transpose(1, 2).reshape(B, T, H * d)`.", M.merge_heads_without_transpose),
    Mistake("interleaved", "your merged features are interleaved (feature order d, H). Head h's output must "
            "occupy features h*d .. (h+1)*d - 1: transpose to (B, T, H, d) and then reshape.",
            M.merge_heads_interleaved),
]
HEAD_MAP_MISTAKES = [
    Mistake("modulo", "repeat instead of repeat_interleave: query head h must read KV head h // r with "
            "r = n_heads / n_kv_heads (consecutive query heads share a KV head), not h % n_kv_heads.",
            M.head_map_modulo),
    Mistake("divide_by_kv_heads", "you divided by n_kv_heads; divide by the group size r = n_heads / "
            "n_kv_heads: g(h) = h // r.", M.head_map_divide_by_kv_heads),
]
GQA_MISTAKES = [
    Mistake("repeat_not_interleave", "repeat instead of repeat_interleave for GQA: `k.repeat(1, r, 1, 1)` "
            "tiles the KV heads (0, 1, 0, 1, ...), so query head h reads KV head h % H_kv. Query head h must "
            "read KV head h // r: use `k.repeat_interleave(r, dim=-3)` (or SDPA's `enable_gqa=True`).",
            M.gqa_tiled),
    Mistake("no_scale", "missing scaling: divide the scores by sqrt(d_k).", M.gqa_without_scale),
]


def _torch():
    import torch
    return torch


def _view_hint(err):
    if "view size is not compatible" in str(err):
        return ("after `transpose` the tensor is no longer contiguous, so `.view` cannot reshape it: use "
                "`.reshape(...)` or `.contiguous().view(...)`.")
    return matmul_hint(err)


@checker("split heads")
def check_split_heads(fn):
    """Check ``fn(x, n_heads)``: torch (B, T, H*d) -> (B, H, T, d), head h owning features h*d..(h+1)*d-1."""
    task = "split heads"
    torch = _torch()
    cases = [("x of shape (B, T, H*d) = (2, 3, 4*5) with n_heads = 4", (2, 3, 4, 5)),
             ("x of shape (1, 6, 3*2) with n_heads = 3", (1, 6, 3, 2))]
    for case, (B, T, H, d) in cases:
        x = torch.arange(B * T * H * d, dtype=torch.float32).reshape(B, T, H * d)
        out = call(task, fn, case, x, H, error_hint=_view_hint)
        hint = (lambda s, B=B, T=T, H=H, d=d: "you have (B, T, H, d); swap the T and H axes with "
                "`.transpose(1, 2)`." if tuple(s) == (B, T, H, d) else None)
        got = to_array(task, out, case, shape=(B, H, T, d), shape_hint=hint)
        expected = x.numpy().reshape(B, T, H, d).transpose(0, 2, 1, 3)
        compare(task, case, got, expected, SPLIT_MISTAKES, args=(x.numpy().astype(float), H))
    return R.passed(task, "Both cases match: (B, T, H*d) -> (B, T, H, d) -> (B, H, T, d).")


@checker("merge heads")
def check_merge_heads(fn):
    """Check ``fn(x)``: torch (B, H, T, d) -> (B, T, H*d), the inverse of splitting the heads."""
    task = "merge heads"
    torch = _torch()
    cases = [("x of shape (B, H, T, d) = (2, 4, 3, 5)", (2, 4, 3, 5)), ("x of shape (1, 3, 6, 2)", (1, 3, 6, 2))]
    for case, (B, H, T, d) in cases:
        x = torch.arange(B * H * T * d, dtype=torch.float32).reshape(B, H, T, d)
        out = call(task, fn, case, x, error_hint=_view_hint)
        got = to_array(task, out, case, shape=(B, T, H * d))
        expected = x.numpy().transpose(0, 2, 1, 3).reshape(B, T, H * d)
        compare(task, case, got, expected, MERGE_MISTAKES, args=(x.numpy().astype(float),))
    return R.passed(task, "Both cases match: (B, H, T, d) -> (B, T, H, d) -> (B, T, H*d), the inverse of the split.")


@checker("KV head map")
def check_kv_head_map(fn):
    """Check ``fn(n_heads, n_kv_heads)``: the list whose entry h is the KV head that query head h reads."""
    task = "KV head map"
    cases = [(8, 2), (6, 3), (8, 8), (8, 1), (32, 8)]
    for H, H_kv in cases:
        case = f"n_heads = {H}, n_kv_heads = {H_kv}"
        got = to_array(task, call(task, fn, case, H, H_kv), case, "the map", shape=(H,), dtype=None)
        expected = np.array([ref.kv_head_for(h, H, H_kv) for h in range(H)])
        if not np.array_equal(got, expected):
            for mistake in HEAD_MAP_MISTAKES:
                if np.array_equal(got, mistake.model(H, H_kv)):
                    raise Stop(R.failed(task, f"On {case}, the map matches a classic mistake: {mistake.explanation}",
                                        mistake.name))
            h = int(np.argmax(got != expected))
            raise Stop(R.failed(task, f"On {case}, query head {h} should read KV head {expected[h]}; your map "
                                      f"says {got[h]}."))
    return R.passed(task, f"All {len(cases)} cases match g(h) = h // (n_heads / n_kv_heads), from MHA to MQA.")


@checker("GQA attention")
def check_gqa_attention(fn):
    """Check ``fn(q, k, v)`` on torch tensors: q (B, H, T, d_k), k (B, H_kv, S, d_k), v (B, H_kv, S, d_v);
    query head h reads KV head h // (H / H_kv); returns (B, H, T, d_v)."""
    task = "GQA attention"
    torch = _torch()
    g = torch.Generator().manual_seed(6)
    cases = [("GQA with H = 4 query heads and H_kv = 2 KV heads (B = 2, T = 3, S = 5)", 2, 4, 2, 3, 5),
             ("GQA with H = 6, H_kv = 3 (B = 1, T = 2, S = 4)", 1, 6, 3, 2, 4),
             ("MQA: H = 4, H_kv = 1", 2, 4, 1, 3, 3),
             ("MHA: H = H_kv = 3", 1, 3, 3, 4, 4)]
    for case, B, H, H_kv, T, S in cases:
        q = torch.randn(B, H, T, 4, generator=g)
        k, v = torch.randn(B, H_kv, S, 4, generator=g), torch.randn(B, H_kv, S, 3, generator=g)
        out = call(task, fn, case, q, k, v, error_hint=_gqa_hint)
        got = to_array(task, out, case, shape=(B, H, T, 3))
        expected = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                                    enable_gqa=True).numpy()
        args = tuple(t.double().numpy() for t in (q, k, v))
        compare(task, case, got, expected, GQA_MISTAKES, args=args, tol=FLOAT32)
    return R.passed(task, f"All {len(cases)} cases match torch's scaled_dot_product_attention with "
                          f"enable_gqa=True: GQA, MQA and plain MHA.")


def _gqa_hint(err):
    text = str(err)
    if "size of tensor" in text or "must match" in text or "broadcast" in text:
        return ("K and V have H_kv heads and Q has H: give each query head its KV head first, "
                "`k.repeat_interleave(H // H_kv, dim=-3)` (and the same for v).")
    return matmul_hint(err)


MHA_MISTAKES = [
    Mistake("untransposed_weights", "the weights are used untransposed. `nn.Linear` and "
            "`nn.MultiheadAttention` store each weight as (out_features, in_features) and compute "
            "`x @ W.T + b`; in the book's row-vector convention the matrix is W_Q = `W.T`. With square "
            "d x d blocks the shapes agree and only the values are wrong.", M.mha_untransposed_weights),
    Mistake("missing_in_bias", "the input projection's bias (`in_proj_bias`) is missing.", M.mha_without_in_bias),
    Mistake("missing_out_bias", "the output projection's bias (`out_proj.bias`) is missing.",
            M.mha_without_out_bias),
    Mistake("reshape_without_transpose", "the heads were split by reshaping (B, T, d) straight to "
            "(B, H, T, d/H), which mixes positions and heads: reshape to (B, T, H, d/H) and transpose.",
            M.mha_split_without_transpose),
    Mistake("no_scale", "missing scaling: each head divides its scores by sqrt(d / H), the head width.",
            M.mha_without_scale),
    Mistake("no_output_projection", "the output projection is missing: the concatenated heads still go "
            "through `out_proj` (W_O and its bias).", M.mha_without_output_projection),
]


@checker("multi-head attention from nn.MultiheadAttention")
def check_mha_from_torch(fn):
    """Check ``fn(x, mha)``: self-attention output of the module ``mha`` (an ``nn.MultiheadAttention``
    with ``batch_first=True``) computed by hand from its parameters, for x of shape (B, T, d)."""
    task = "multi-head attention from nn.MultiheadAttention"
    torch = _torch()
    cases = [("d = 8, 2 heads, B = 2, T = 5", 8, 2, 2, 5), ("d = 12, 3 heads, B = 1, T = 4", 12, 3, 1, 4)]
    for case, d, H, B, T in cases:
        torch.manual_seed(d)
        mha = torch.nn.MultiheadAttention(d, H, batch_first=True)
        with torch.no_grad():                        # default biases are zero: make them visible
            mha.in_proj_bias.normal_()
            mha.out_proj.bias.normal_()
        mha.eval()
        x = torch.randn(B, T, d)
        out = call(task, fn, case, x, mha, error_hint=_view_hint)
        got = to_array(task, out, case, shape=(B, T, d))
        expected = mha(x, x, x, need_weights=False)[0].detach().numpy()
        params = [p.detach().double().numpy() for p in (mha.in_proj_weight, mha.in_proj_bias,
                                                        mha.out_proj.weight, mha.out_proj.bias)]
        compare(task, case, got, expected, MHA_MISTAKES, args=(x.double().numpy(), *params, H), tol=FLOAT32)
    return R.passed(task, "Both cases match `nn.MultiheadAttention` to float32 rounding: projections with "
                          "their biases, head split and merge, scaling and the output projection.")
