"""Wrong attempts at sheet 6 (multi-head, MQA, GQA), each with the diagnosis it must get."""
import math

import numpy as np
import torch
import torch.nn.functional as F

import attnlab.checks as C

from .attempts import expect


def test_exercise_6_1_split_heads():
    check = C.check_split_heads

    def swap_wrong_axes(x, n_heads):
        B, T, D = x.shape
        return x.reshape(B, T, n_heads, D // n_heads).transpose(1, 3)
    expect(check, swap_wrong_axes, "6.1 split_heads", "transpose(1, 3)", "wrong_shape", "expected")
    expect(check, lambda x, H: x.reshape(x.shape[0], x.shape[1], -1, H).permute(0, 3, 1, 2), "6.1 split_heads",
           "reshape to (B, T, d, H)", "interleaved", "interleaved")
    expect(check, lambda x, H: x.unflatten(-1, (x.shape[-1] // H, H)).transpose(1, 2), "6.1 split_heads",
           "unflatten to (d, H)", "wrong_shape", "split it as (H, d)")
    expect(check, lambda x, H: x.view(x.shape[0], H, x.shape[1], -1), "6.1 split_heads", "view to (B, H, T, d)",
           "reshape_without_transpose", "mixes positions and heads")


def test_exercise_6_2_merge_heads():
    check = C.check_merge_heads
    expect(check, lambda x: x.reshape(x.shape[0], x.shape[2], -1), "6.2 merge_heads", "reshape without transpose",
           "reshape_without_transpose", "mixes positions")
    expect(check, lambda x: x.transpose(1, 2).view(x.shape[0], x.shape[2], -1), "6.2 merge_heads",
           ".view after transpose", "", "contiguous")
    expect(check, lambda x: x.permute(0, 2, 3, 1).reshape(x.shape[0], x.shape[2], -1), "6.2 merge_heads",
           "permute to (B, T, d, H)", "interleaved", "interleaved")
    expect(check, lambda x: torch.cat(list(x.unbind(1)), dim=1), "6.2 merge_heads", "concatenated along T",
           "wrong_shape", "along the features")


def test_exercise_6_3_kv_head_map():
    check = C.check_kv_head_map
    expect(check, lambda H, H_kv: list(np.arange(H) % H_kv), "6.3 kv_head_map", "np.arange(H) % H_kv", "modulo",
           "h // r")
    expect(check, lambda H, H_kv: [h // H_kv for h in range(H)], "6.3 kv_head_map", "h // H_kv",
           "divide_by_kv_heads", "group size")
    expect(check, lambda H, H_kv: [round(h / (H // H_kv)) for h in range(H)], "6.3 kv_head_map", "round(h / r)",
           "rounds", "round down")
    expect(check, lambda H, H_kv: list(range(H_kv)) * (H // H_kv), "6.3 kv_head_map", "the KV heads tiled",
           "modulo", "repeat_interleave")
    expect(check, lambda H, H_kv: [h // (H / H_kv) for h in range(H)], "6.3 kv_head_map", "h // (H / H_kv)",
           "wrong_type", "integers")


def _attend(q, k, v, scale=None, dim=-1):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    return torch.softmax(q @ k.transpose(-2, -1) * scale, dim=dim) @ v


def test_exercise_6_4_gqa_attention():
    check = C.check_gqa_attention
    expect(check, lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), "6.4 gqa_attention",
           "enable_gqa=True", "forbidden_call", "enable_gqa=True")

    def expand_wrong(q, k, v):
        B, H_kv, S, d = k.shape
        r = q.shape[1] // H_kv
        k2 = k[:, None].expand(B, r, H_kv, S, d).reshape(B, r * H_kv, S, d)
        v2 = v[:, None].expand(B, r, H_kv, S, v.shape[-1]).reshape(B, r * H_kv, S, v.shape[-1])
        return _attend(q, k2, v2)
    expect(check, expand_wrong, "6.4 gqa_attention", "expand on a new leading axis", "repeat_not_interleave",
           "repeat_interleave")

    def by_d(q, k, v):
        r = q.shape[1] // k.shape[1]
        return _attend(q, k.repeat_interleave(r, 1), v.repeat_interleave(r, 1), scale=1 / q.shape[-1])
    expect(check, by_d, "6.4 gqa_attention", "divided by d_k", "scale_by_d_k", "sqrt(d_k)")

    def repeat_by_kv(q, k, v):
        H_kv = k.shape[1]
        return _attend(q, k.repeat_interleave(H_kv, 1), v.repeat_interleave(H_kv, 1))
    expect(check, repeat_by_kv, "6.4 gqa_attention", "repeat_interleave(H_kv)", "", "H // H_kv")

    def over_queries(q, k, v):
        r = q.shape[1] // k.shape[1]
        return _attend(q, k.repeat_interleave(r, 1), v.repeat_interleave(r, 1), dim=-2)
    expect(check, over_queries, "6.4 gqa_attention", "softmax over dim -2", "wrong_axis", "over the queries")


def _projections(x, mha, transpose=True):
    blocks, biases = mha.in_proj_weight.chunk(3), mha.in_proj_bias.chunk(3)
    return [x @ (w.T if transpose else w) + b for w, b in zip(blocks, biases)]


def _heads(t, H, interleaved=False):
    B, T, d = t.shape
    if interleaved:
        return t.reshape(B, T, d // H, H).permute(0, 3, 1, 2)
    return t.reshape(B, T, H, d // H).transpose(1, 2)


def test_exercise_6_5_mha_by_hand():
    check = C.check_mha_from_torch
    expect(check, lambda x, mha: mha(x, x, x, need_weights=False)[0], "6.5 mha_by_hand", "calls the module",
           "forbidden_call", "torch.nn.MultiheadAttention.forward")

    def functional(x, mha):
        xt = x.transpose(0, 1)
        out, _w = F.multi_head_attention_forward(xt, xt, xt, x.shape[-1], mha.num_heads, mha.in_proj_weight,
                                                 mha.in_proj_bias, None, None, False, 0.0, mha.out_proj.weight,
                                                 mha.out_proj.bias, training=False, need_weights=False)
        return out.transpose(0, 1)
    expect(check, functional, "6.5 mha_by_hand", "F.multi_head_attention_forward", "forbidden_call",
           "multi_head_attention_forward")

    def untransposed_in(x, mha):
        H = mha.num_heads
        q, k, v = (_heads(t, H) for t in _projections(x, mha, transpose=False))
        o = _attend(q, k, v).transpose(1, 2).reshape(x.shape)
        return o @ mha.out_proj.weight.T + mha.out_proj.bias
    expect(check, untransposed_in, "6.5 mha_by_hand", "in_proj_weight untransposed", "untransposed_in_proj",
           "input projection")

    def interleaved(x, mha):
        H = mha.num_heads
        q, k, v = (_heads(t, H, interleaved=True) for t in _projections(x, mha))
        B, T, d = x.shape
        o = _attend(q, k, v).permute(0, 2, 3, 1).reshape(B, T, d)
        return o @ mha.out_proj.weight.T + mha.out_proj.bias
    expect(check, interleaved, "6.5 mha_by_hand", "heads interleaved", "interleaved", "interleaved")

    def sdpa_core(x, mha):
        H = mha.num_heads
        q, k, v = (_heads(t, H) for t in _projections(x, mha))
        o = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(x.shape)
        return o @ mha.out_proj.weight.T + mha.out_proj.bias
    expect(check, sdpa_core, "6.5 mha_by_hand", "SDPA for the attention core", "forbidden_call",
           "scaled_dot_product_attention")

    def model_width(x, mha):
        H = mha.num_heads
        q, k, v = (_heads(t, H) for t in _projections(x, mha))
        o = _attend(q, k, v, scale=1 / math.sqrt(x.shape[-1])).transpose(1, 2).reshape(x.shape)
        return o @ mha.out_proj.weight.T + mha.out_proj.bias
    expect(check, model_width, "6.5 mha_by_hand", "scaled by sqrt(d)", "scale_by_d_model", "model width")
