"""Checkers for multi-head bookkeeping: splitting and merging heads, the GQA head map, GQA attention, and
multi-head attention rebuilt from ``nn.MultiheadAttention``'s parameters.

The tensor tasks take and must return torch tensors (the shape habits of nanoGPT-style code), compared to
float32 rounding; the head map is a list (or array) of integers. What each sheet asks to write by hand is
enforced: the head map without ``al.kv_head_for``, GQA without SDPA's ``enable_gqa=True``, and
``nn.MultiheadAttention`` rebuilt from matrix products, reshapes and a softmax, without calling the module,
its functional form or SDPA.
"""
from __future__ import annotations

import numpy as np

from ..i18n import N_, _
from . import seeds
from .diagnosis import Trial
from .engine import FLOAT32, Mistake, error_hint, models
from .kernels import attend
from .registry import checker

HEAD_MAP_LIBRARIES = ("attnlab.reference.kv_head_for",)
GQA_SHORTCUTS = ("torch.nn.functional.scaled_dot_product_attention(enable_gqa=True)",
                 "attnlab.torch_ops.attention.attention", "attnlab.torch_ops.mha.MultiHeadAttention.forward")
MHA_SHORTCUTS = ("torch.nn.MultiheadAttention.forward", "torch.nn.functional.multi_head_attention_forward",
                 "torch.nn.functional.scaled_dot_product_attention", "attnlab.torch_ops.mha.MultiHeadAttention.forward",
                 "attnlab.torch_ops.mha.MultiHeadAttention.from_torch", "attnlab.torch_ops.attention.attention")

SPLIT_MISTAKES: list[Mistake] = []
model = models(SPLIT_MISTAKES)


@model("reshape_without_transpose", N_("you reshaped (B, T, H*d) straight to (B, H, T, d). The memory order is T "
       "before H, so this mixes positions and heads. Reshape to (B, T, H, d) first, then swap the T and H axes: "
       "`x.reshape(B, T, H, d).transpose(1, 2)`."))
def split_heads_without_transpose(x, n_heads):
    B, T, D = x.shape
    return x.reshape(B, n_heads, T, D // n_heads)


@model("interleaved", N_("your heads are interleaved: head h took features h, h + H, h + 2H, ... Head h owns the "
       "contiguous block of features h*d .. (h+1)*d - 1: reshape to (B, T, H, d), not (B, T, d, H)."))
def split_heads_interleaved(x, n_heads):
    B, T, D = x.shape
    return x.reshape(B, T, D // n_heads, n_heads).transpose(0, 3, 1, 2)


MERGE_MISTAKES: list[Mistake] = []
model = models(MERGE_MISTAKES)


@model("reshape_without_transpose", N_("you reshaped (B, H, T, d) straight to (B, T, H*d), which mixes positions and "
       "heads. Move the head axis back next to the features first: `x.transpose(1, 2).reshape(B, T, H * d)`."))
def merge_heads_without_transpose(x):
    B, H, T, d = x.shape
    return x.reshape(B, T, H * d)


@model("interleaved", N_("your merged features are interleaved (feature order d, H). Head h's output must occupy "
       "features h*d .. (h+1)*d - 1: transpose to (B, T, H, d) and then reshape."))
def merge_heads_interleaved(x):
    B, H, T, d = x.shape
    return x.transpose(0, 2, 3, 1).reshape(B, T, d * H)


HEAD_MAP_MISTAKES: list[Mistake] = []
model = models(HEAD_MAP_MISTAKES)


@model("modulo", N_("repeat instead of repeat_interleave: query head h must read KV head h // r with r = n_heads / "
       "n_kv_heads (consecutive query heads share a KV head), not h % n_kv_heads."))
def head_map_modulo(n_heads, n_kv_heads):
    return [h % n_kv_heads for h in range(n_heads)]


@model("divide_by_kv_heads", N_("you divided by n_kv_heads; divide by the group size r = n_heads / n_kv_heads: "
       "g(h) = h // r."))
def head_map_divide_by_kv_heads(n_heads, n_kv_heads):
    return [h // n_kv_heads for h in range(n_heads)]


@model("rounds", N_("you rounded h / r to the nearest integer; query heads h = g r, ..., g r + r - 1 all read KV head "
       "g, so round down: `h // r`."))
def head_map_rounded(n_heads, n_kv_heads):
    r = n_heads // n_kv_heads
    return [int(round(h / r)) for h in range(n_heads)]


GQA_MISTAKES: list[Mistake] = []
model = models(GQA_MISTAKES)


@model("repeat_not_interleave", N_("repeat instead of repeat_interleave for GQA: `k.repeat(1, r, 1, 1)` tiles the KV "
       "heads (0, 1, 0, 1, ...), so query head h reads KV head h % H_kv. Query head h must read KV head h // r: use "
       "`k.repeat_interleave(r, dim=-3)` (or SDPA's `enable_gqa=True`)."))
def gqa_tiled(q, k, v):
    r = q.shape[-3] // k.shape[-3]
    reps = (1,) * (k.ndim - 3) + (r, 1, 1)
    return attend(q, np.tile(k, reps), np.tile(v, reps))       # head h reads KV head h % H_kv


@model("no_scale", N_("missing scaling: divide the scores by sqrt(d_k)."))
def gqa_without_scale(q, k, v):
    r = q.shape[-3] // k.shape[-3]
    return attend(q, np.repeat(k, r, axis=-3), np.repeat(v, r, axis=-3), scale=1.0)


@model("wrong_axis", N_("softmax over the wrong axis: normalise over the keys (`dim=-1`), not over the queries."))
def gqa_softmax_over_queries(q, k, v):
    r = q.shape[-3] // k.shape[-3]
    return attend(q, np.repeat(k, r, axis=-3), np.repeat(v, r, axis=-3), axis=-2)


@model("scale_by_d_k", N_("wrong scaling: you divided by d_k; divide by sqrt(d_k)."))
def gqa_scale_by_d_k(q, k, v):
    r = q.shape[-3] // k.shape[-3]
    return attend(q, np.repeat(k, r, axis=-3), np.repeat(v, r, axis=-3), scale=1 / q.shape[-1])


def _torch():
    import torch
    return torch


def _view_hint(err):
    if "view size is not compatible" in str(err):
        return _("after `transpose` the tensor is no longer contiguous, so `.view` cannot reshape it: use "
                 "`.reshape(...)` or `.contiguous().view(...)`.")
    return error_hint(err)


def _split_hint(B, T, H, d):
    def hint(shape):
        shape = tuple(shape)
        if shape == (B, T, H, d):
            return _("you have (B, T, H, d); swap the T and H axes with `.transpose(1, 2)`.")
        if shape in ((B, d, T, H), (B, T, d, H), (B, H, d, T)):
            return _("the feature axis was split as (d, H); head h owns a contiguous block of d features, so "
                     "split it as (H, d): `x.reshape(B, T, H, d)`.")
        return None
    return hint


@checker(N_("split heads"), SPLIT_MISTAKES)
def check_split_heads(run, fn):
    """Check ``fn(x, n_heads)``: torch (B, T, H*d) -> (B, H, T, d), head h owning features h*d..(h+1)*d-1."""
    torch = _torch()
    cases = [(N_("x of shape (B, T, H*d) = (2, 3, 4*5) with n_heads = 4"), (2, 3, 4, 5)),
             (N_("x of shape (1, 6, 3*2) with n_heads = 3"), (1, 6, 3, 2))]

    def trial(item):
        case, (B, T, H, d) = item
        x = torch.arange(B * T * H * d, dtype=torch.float32).reshape(B, T, H * d)
        out = run.call(fn, case, x, H, hint=_view_hint)
        got = run.array(out, case, shape=(B, H, T, d), shape_hint=_split_hint(B, T, H, d), kind="torch",
                        dtype="float")
        expected = x.numpy().reshape(B, T, H, d).transpose(0, 2, 1, 3)
        return Trial(case, got, expected, (x.numpy().astype(float), H))

    run.each_case(cases, trial, SPLIT_MISTAKES)
    return run.passed(_("Both cases match: (B, T, H*d) -> (B, T, H, d) -> (B, H, T, d)."))


@checker(N_("merge heads"), MERGE_MISTAKES)
def check_merge_heads(run, fn):
    """Check ``fn(x)``: torch (B, H, T, d) -> (B, T, H*d), the inverse of splitting the heads."""
    torch = _torch()
    cases = [(N_("x of shape (B, H, T, d) = (2, 4, 3, 5)"), (2, 4, 3, 5)),
             (N_("x of shape (1, 3, 6, 2)"), (1, 3, 6, 2))]

    def trial(item):
        case, (B, H, T, d) = item
        x = torch.arange(B * H * T * d, dtype=torch.float32).reshape(B, H, T, d)
        hint = (lambda shape, B=B, T=T, H=H, d=d: _("the heads were concatenated along the positions; concatenate "
                                                      "along the features: (B, T, H*d).")
                if tuple(shape) in ((B, H * T, d), (B, T * H, d)) else None)
        got = run.array(run.call(fn, case, x, hint=_view_hint), case, shape=(B, T, H * d), shape_hint=hint,
                        kind="torch", dtype="float")
        expected = x.numpy().transpose(0, 2, 1, 3).reshape(B, T, H * d)
        return Trial(case, got, expected, (x.numpy().astype(float),))

    run.each_case(cases, trial, MERGE_MISTAKES)
    return run.passed(_("Both cases match: (B, H, T, d) -> (B, T, H, d) -> (B, T, H*d), the "
                        "inverse of the split."))


@checker(N_("KV head map"), HEAD_MAP_MISTAKES, forbid=HEAD_MAP_LIBRARIES)
def check_kv_head_map(run, fn):
    """Check ``fn(n_heads, n_kv_heads)``: the list (or integer array) whose entry h is the KV head that query
    head h reads."""
    cases = [(8, 2), (6, 3), (8, 8), (8, 1), (32, 8), (12, 4)]

    def trial(item):
        H, H_kv = item
        case = "n_heads = {H}, n_kv_heads = {H_kv}".format(H=H, H_kv=H_kv)
        got = run.array(run.call(fn, case, H, H_kv), case, "the map", shape=(H,), kind="any", dtype="int")
        return Trial(case, got, np.array([h // (H // H_kv) for h in range(H)]), (H, H_kv))

    run.each_case(cases, trial, HEAD_MAP_MISTAKES, tol=None, name=N_("the map"))
    return run.passed(_("All {n_cases} cases match g(h) = h // (n_heads / n_kv_heads), from MHA to "
                        "MQA.").format(n_cases=len(cases)))


@checker(N_("GQA attention"), GQA_MISTAKES, forbid=GQA_SHORTCUTS)
def check_gqa_attention(run, fn):
    """Check ``fn(q, k, v)`` on torch tensors: q (B, H, T, d_k), k (B, H_kv, S, d_k), v (B, H_kv, S, d_v); query
    head h reads KV head h // (H / H_kv); returns a tensor (B, H, T, d_v). SDPA's ``enable_gqa=True`` does the
    exercise's work and is refused."""
    torch = _torch()
    g = seeds.torch_generator(6)
    cases = [(N_("GQA with H = 4 query heads and H_kv = 2 KV heads (B = 2, T = 3, S = 5)"), 2, 4, 2, 3, 5),
             (N_("GQA with H = 6, H_kv = 3 (B = 1, T = 2, S = 4)"), 1, 6, 3, 2, 4),
             (N_("MQA: H = 4, H_kv = 1"), 2, 4, 1, 3, 3),
             (N_("MHA: H = H_kv = 3"), 1, 3, 3, 4, 4)]
    data = [(case, torch.randn(B, H, T, 4, generator=g), torch.randn(B, H_kv, S, 4, generator=g),
             torch.randn(B, H_kv, S, 3, generator=g)) for case, B, H, H_kv, T, S in cases]

    def trial(item):
        case, q, k, v = item
        got = run.array(run.call(fn, case, q, k, v, hint=_gqa_hint), case, shape=tuple(q.shape[:-1]) + (3,),
                        kind="torch", dtype="float")
        expected = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                                    enable_gqa=True).numpy()
        return Trial(case, got, expected, tuple(t.double().numpy() for t in (q, k, v)))

    run.each_case(data, trial, GQA_MISTAKES, tol=FLOAT32)
    return run.passed(_("All {n_cases} cases match torch's scaled_dot_product_attention with "
                        "enable_gqa=True: GQA, MQA and plain MHA.").format(n_cases=len(cases)))


def _gqa_hint(err):
    text = str(err)
    if "size of tensor" in text or "must match" in text or "broadcast" in text:
        return _("K and V have H_kv heads and Q has H: give each query head its KV head first, "
                 "`k.repeat_interleave(H // H_kv, dim=-3)` (and the same for v).")
    return error_hint(err)


# ---------------------------------------------------------------------------------------------- MHA by hand
# NumPy models take x (B, T, d), in_proj_weight (3d, d), in_proj_bias (3d,), out_proj.weight (d, d),
# out_proj.bias (d,), and the number of heads.


def _mha(x, w_in, b_in, w_out, b_out, n_heads, *, transpose_in=True, transpose_out=True, in_bias=True,
         out_bias=True, split="heads", scale=True, out_proj=True):
    B, T, d = x.shape
    h_dim = d // n_heads
    blocks = np.split(w_in, 3, axis=0)                          # torch stores (out, in) blocks
    biases = np.split(b_in, 3) if in_bias else (0.0, 0.0, 0.0)
    q, k, v = (x @ (w.T if transpose_in else w) + b for w, b in zip(blocks, biases))   # (B, T, d)

    def heads(t):
        if split == "no_transpose":
            return t.reshape(B, n_heads, T, h_dim)
        return t.reshape(B, T, n_heads, h_dim).transpose(0, 2, 1, 3)   # (B, H, T, h_dim)
    o = attend(heads(q), heads(k), heads(v), scale=None if scale else 1.0)
    o = o.transpose(0, 2, 1, 3).reshape(B, T, d)                 # (B, T, d)
    if not out_proj:
        return o
    wo = w_out.T if transpose_out else w_out
    return o @ wo + (b_out if out_bias else 0.0)


MHA_MISTAKES: list[Mistake] = []
model = models(MHA_MISTAKES)
@model("untransposed_weights", N_("the weights are used untransposed, in the input and the output projection."
                                  " `nn.Linear` and `nn.MultiheadAttention` store each weight as (out_features, "
                                  "in_features) and compute `x @ W.T + b`; in the book's row-vector convention the "
                                  "matrix is `W.T`. With square d x d blocks the shapes agree and only the values "
                                  "are wrong."))
def mha_untransposed_weights(x, w_in, b_in, w_out, b_out, n_heads):
    return _mha(x, w_in, b_in, w_out, b_out, n_heads, transpose_in=False, transpose_out=False)


@model("untransposed_in_proj", N_("the input projection's weights (`in_proj_weight`, the blocks W_Q, W_K, W_V) "
                                  "are used untransposed; the output projection is right. `nn.Linear` and "
                                  "`nn.MultiheadAttention` store each weight as (out_features, in_features) and "
                                  "compute `x @ W.T + b`; in the book's row-vector convention the matrix is `W.T`. "
                                  "With square d x d blocks the shapes agree and only the values are wrong."))
def mha_untransposed_in_proj(x, w_in, b_in, w_out, b_out, n_heads):
    return _mha(x, w_in, b_in, w_out, b_out, n_heads, transpose_in=False)


@model("untransposed_out_proj", N_("the output projection's weight (`out_proj.weight`) is used untransposed; the "
                                   "input projection is right. `nn.Linear` and `nn.MultiheadAttention` store each "
                                   "weight as (out_features, in_features) and compute `x @ W.T + b`; in the book's "
                                   "row-vector convention the matrix is `W.T`. With square d x d blocks the shapes "
                                   "agree and only the values are wrong."))
def mha_untransposed_out_proj(x, w_in, b_in, w_out, b_out, n_heads):
    return _mha(x, w_in, b_in, w_out, b_out, n_heads, transpose_out=False)


@model("missing_in_bias", N_("the input projection's bias (`in_proj_bias`) is missing."))
def mha_without_in_bias(x, w_in, b_in, w_out, b_out, n_heads):
    return _mha(x, w_in, b_in, w_out, b_out, n_heads, in_bias=False)


@model("missing_out_bias", N_("the output projection's bias (`out_proj.bias`) is missing."))
def mha_without_out_bias(x, w_in, b_in, w_out, b_out, n_heads):
    return _mha(x, w_in, b_in, w_out, b_out, n_heads, out_bias=False)


@model("reshape_without_transpose", N_("the heads were split by reshaping (B, T, d) straight to (B, H, T, d/H), which "
       "mixes positions and heads: reshape to (B, T, H, d/H) and transpose."))
def mha_split_without_transpose(x, w_in, b_in, w_out, b_out, n_heads):
    return _mha(x, w_in, b_in, w_out, b_out, n_heads, split="no_transpose")


@model("no_scale", N_("missing scaling: each head divides its scores by sqrt(d / H), the head width."))
def mha_without_scale(x, w_in, b_in, w_out, b_out, n_heads):
    return _mha(x, w_in, b_in, w_out, b_out, n_heads, scale=False)


@model("interleaved", N_("your heads are interleaved: head h took features h, h + H, h + 2H, ... of q, k and v. "
       "Head h owns the contiguous block h*d_head .. (h+1)*d_head - 1: reshape to (B, T, H, d_head)."))
def mha_interleaved_heads(x, w_in, b_in, w_out, b_out, n_heads):
    B, T, d = x.shape
    h_dim = d // n_heads
    blocks, biases = np.split(w_in, 3, axis=0), np.split(b_in, 3)
    q, k, v = (x @ w.T + b for w, b in zip(blocks, biases))                            # (B, T, d)

    def heads(t):
        return t.reshape(B, T, h_dim, n_heads).transpose(0, 3, 1, 2)                  # (B, H, T, h_dim)
    o = attend(heads(q), heads(k), heads(v)).transpose(0, 2, 3, 1).reshape(B, T, d)   # (B, T, d_head, H)
    return o @ w_out.T + b_out


@model("scale_by_d_model", N_("wrong scaling: you divided by sqrt(d), the model width; each head divides its scores "
       "by sqrt(d / H), the width of its own queries and keys."))
def mha_scaled_by_model_width(x, w_in, b_in, w_out, b_out, n_heads):
    return _mha_scale(x, w_in, b_in, w_out, b_out, n_heads, 1 / np.sqrt(x.shape[-1]))


def _mha_scale(x, w_in, b_in, w_out, b_out, n_heads, scale):
    B, T, d = x.shape
    h_dim = d // n_heads
    q, k, v = (x @ w.T + b for w, b in zip(np.split(w_in, 3, axis=0), np.split(b_in, 3)))   # (B, T, d)
    heads = [t.reshape(B, T, n_heads, h_dim).transpose(0, 2, 1, 3) for t in (q, k, v)]     # (B, H, T, h_dim)
    o = attend(*heads, scale=scale).transpose(0, 2, 1, 3).reshape(B, T, d)                 # (B, T, d)
    return o @ w_out.T + b_out


@model("no_output_projection", N_("the output projection is missing: the concatenated heads still go through "
       "`out_proj` (W_O and its bias)."))
def mha_without_output_projection(x, w_in, b_in, w_out, b_out, n_heads):
    return _mha(x, w_in, b_in, w_out, b_out, n_heads, out_proj=False)


@checker(N_("multi-head attention from nn.MultiheadAttention"), MHA_MISTAKES, forbid=MHA_SHORTCUTS)
def check_mha_from_torch(run, fn):
    """Check ``fn(x, mha)``: self-attention output of the module ``mha`` (an ``nn.MultiheadAttention`` with
    ``batch_first=True``) computed by hand from its parameters, for x of shape (B, T, d); returns a tensor.
    Calling the module, its functional form or SDPA is refused: the sheet asks for matrix products, reshapes
    and a softmax."""
    torch = _torch()
    cases = [(N_("d = 8, 2 heads, B = 2, T = 5"), 8, 2, 2, 5), (N_("d = 12, 3 heads, B = 1, T = 4"), 12, 3, 1, 4)]

    def trial(item):
        case, d, H, B, T = item
        gen = seeds.torch_generator(d)
        mha = torch.nn.MultiheadAttention(d, H, batch_first=True)
        with torch.no_grad():                 # seeded parameters; default biases are zero: make them visible
            for p in mha.parameters():
                p.copy_(torch.randn(p.shape, generator=gen) / np.sqrt(d))
            mha.in_proj_bias.copy_(torch.randn(mha.in_proj_bias.shape, generator=gen))
            mha.out_proj.bias.copy_(torch.randn(mha.out_proj.bias.shape, generator=gen))
        mha.eval()
        x = torch.randn(B, T, d, generator=gen)
        with torch.no_grad():
            expected = mha(x, x, x, need_weights=False)[0].numpy()
        params = [p.detach().double().numpy() for p in (mha.in_proj_weight, mha.in_proj_bias,
                                                        mha.out_proj.weight, mha.out_proj.bias)]
        got = run.array(run.call(fn, case, x, mha, hint=_view_hint), case, shape=(B, T, d), kind="torch",
                        dtype="float")
        return Trial(case, got, expected, (x.double().numpy(), *params, H))

    run.each_case(cases, trial, MHA_MISTAKES, tol=FLOAT32)
    return run.passed(_("Both cases match `nn.MultiheadAttention` to float32 rounding: projections "
                        "with their biases, head split and merge, scaling and the output "
                        "projection."))
