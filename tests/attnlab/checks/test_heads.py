"""Head split/merge, head map, GQA and MHA-from-torch checkers: each mistake is named.

Every "student" function is written independently, the way a student would write the mistake,
not taken from the package's mistake models; each test asserts the diagnosis it gets.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F

from attnlab import checks as C

from .support import assert_diagnosis, assert_not_attempted, stub

# ------------------------------------------------------------------------------------ heads


def split(x, n_heads):
    B, T, D = x.shape
    return x.view(B, T, n_heads, D // n_heads).transpose(1, 2)


def merge(x):
    B, H, T, d = x.shape
    return x.transpose(1, 2).reshape(B, T, H * d)


def test_split_and_merge_reference_pass():
    assert C.check_split_heads(split).passed
    assert C.check_merge_heads(merge).passed
    x = torch.randn(2, 3, 12)
    assert torch.equal(merge(split(x, 4)), x)


def test_split_heads_stub_not_attempted():
    assert_not_attempted(C.check_split_heads(stub))
    assert_not_attempted(C.check_merge_heads(stub))


def test_split_heads_reshape_without_transpose():
    assert_diagnosis(C.check_split_heads(lambda x, H: x.reshape(x.shape[0], H, x.shape[1], -1)),
                     "reshape_without_transpose", "mixes positions and heads")


def test_split_heads_interleaved():
    assert_diagnosis(C.check_split_heads(lambda x, H: x.reshape(x.shape[0], x.shape[1], -1, H).permute(0, 3, 1, 2)),
                     "interleaved", "interleaved")


def test_split_heads_missing_transpose_shape_hint():
    result = C.check_split_heads(lambda x, H: x.reshape(x.shape[0], x.shape[1], H, -1))
    assert not result.passed and "transpose(1, 2)" in result.message


def test_merge_heads_reshape_without_transpose():
    assert_diagnosis(C.check_merge_heads(lambda x: x.reshape(x.shape[0], x.shape[2], -1)),
                     "reshape_without_transpose", "mixes positions and heads")


def test_merge_heads_interleaved():
    assert_diagnosis(C.check_merge_heads(lambda x: x.permute(0, 2, 3, 1).reshape(x.shape[0], x.shape[2], -1)),
                     "interleaved", "interleaved")


def test_merge_heads_view_after_transpose_gets_a_hint():
    result = C.check_merge_heads(lambda x: x.transpose(1, 2).view(x.shape[0], x.shape[2], -1))
    assert not result.passed and "contiguous" in result.message


def test_kv_head_map_reference_passes():
    assert C.check_kv_head_map(lambda H, Hkv: [h // (H // Hkv) for h in range(H)]).passed
    assert C.check_kv_head_map(lambda H, Hkv: np.arange(H) * Hkv // H).passed


def test_kv_head_map_modulo():
    assert_diagnosis(C.check_kv_head_map(lambda H, Hkv: [h % Hkv for h in range(H)]), "modulo",
                     "repeat instead of repeat_interleave")


def test_kv_head_map_divided_by_kv_heads():
    assert_diagnosis(C.check_kv_head_map(lambda H, Hkv: [h // Hkv for h in range(H)]), "divide_by_kv_heads",
                     "group size")


def gqa(q, k, v):
    r = q.shape[-3] // k.shape[-3]
    k, v = k.repeat_interleave(r, dim=-3), v.repeat_interleave(r, dim=-3)
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    return w @ v


def test_gqa_reference_passes():
    assert C.check_gqa_attention(gqa).passed
    assert_diagnosis(C.check_gqa_attention(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)),
                     "forbidden_call", "enable_gqa=True")


def test_gqa_stub_not_attempted():
    assert_not_attempted(C.check_gqa_attention(stub))


def test_gqa_repeat_instead_of_repeat_interleave():
    def tiled(q, k, v):
        r = q.shape[-3] // k.shape[-3]
        return F.scaled_dot_product_attention(q, k.repeat(1, r, 1, 1), v.repeat(1, r, 1, 1))
    assert_diagnosis(C.check_gqa_attention(tiled), "repeat_not_interleave", "repeat instead of repeat_interleave")


def test_gqa_missing_scale():
    def unscaled(q, k, v):
        r = q.shape[-3] // k.shape[-3]
        return F.scaled_dot_product_attention(q, k.repeat_interleave(r, -3), v.repeat_interleave(r, -3), scale=1.0)
    assert_diagnosis(C.check_gqa_attention(unscaled), "no_scale", "missing scaling")


def test_gqa_without_expanding_kv_gets_a_hint():
    result = C.check_gqa_attention(lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1), -1) @ v)
    assert not result.passed and "repeat_interleave" in result.message


def mha_by_hand(x, mha, *, transpose=True, in_bias=True, out_bias=True, scale=True, out_proj=True,
                split_right=True):
    """A student's hand-written nn.MultiheadAttention forward with knobs; the defaults are right."""
    B, T, d = x.shape
    H = mha.num_heads
    ws = mha.in_proj_weight.chunk(3)
    bs = mha.in_proj_bias.chunk(3) if in_bias else (0.0, 0.0, 0.0)
    q, k, v = ((x @ (w.T if transpose else w)) + b for w, b in zip(ws, bs))
    heads = (lambda t: split(t, H)) if split_right else (lambda t: t.reshape(B, H, T, d // H))
    q, k, v = heads(q), heads(k), heads(v)
    a = torch.softmax(q @ k.transpose(-2, -1) / (math.sqrt(d // H) if scale else 1.0), dim=-1)
    o = merge(a @ v)
    if not out_proj:
        return o
    wo = mha.out_proj.weight.T if transpose else mha.out_proj.weight
    return o @ wo + (mha.out_proj.bias if out_bias else 0.0)


def test_mha_from_torch_reference_passes():
    assert C.check_mha_from_torch(mha_by_hand).passed
    assert_diagnosis(C.check_mha_from_torch(lambda x, m: m(x, x, x, need_weights=False)[0]), "forbidden_call",
                     "`torch.nn.MultiheadAttention.forward`")


def test_mha_from_torch_stub_not_attempted():
    assert_not_attempted(C.check_mha_from_torch(stub))


def test_mha_from_torch_untransposed_weights():
    assert_diagnosis(C.check_mha_from_torch(lambda x, m: mha_by_hand(x, m, transpose=False)),
                     "untransposed_weights", "(out_features, in_features)")


def test_mha_from_torch_missing_input_bias():
    assert_diagnosis(C.check_mha_from_torch(lambda x, m: mha_by_hand(x, m, in_bias=False)), "missing_in_bias",
                     "in_proj_bias")


def test_mha_from_torch_missing_output_bias():
    assert_diagnosis(C.check_mha_from_torch(lambda x, m: mha_by_hand(x, m, out_bias=False)), "missing_out_bias",
                     "out_proj.bias")


def test_mha_from_torch_split_without_transpose():
    assert_diagnosis(C.check_mha_from_torch(lambda x, m: mha_by_hand(x, m, split_right=False)),
                     "reshape_without_transpose", "mixes positions and heads")


def test_mha_from_torch_missing_scale():
    assert_diagnosis(C.check_mha_from_torch(lambda x, m: mha_by_hand(x, m, scale=False)), "no_scale",
                     "head width")


def test_mha_from_torch_missing_output_projection():
    assert_diagnosis(C.check_mha_from_torch(lambda x, m: mha_by_hand(x, m, out_proj=False)),
                     "no_output_projection", "output projection is missing")


# ------------------------------------------------------------------------------------ new wrong implementations


def test_mha_from_torch_untransposed_input_projection_only():
    def in_only(x, mha):
        d, H = x.shape[-1], mha.num_heads
        q, k, v = (x @ w + b for w, b in zip(mha.in_proj_weight.chunk(3), mha.in_proj_bias.chunk(3)))   # no .T
        a = torch.softmax(split(q, H) @ split(k, H).transpose(-2, -1) / math.sqrt(d // H), dim=-1)
        return merge(a @ split(v, H)) @ mha.out_proj.weight.T + mha.out_proj.bias
    assert_diagnosis(C.check_mha_from_torch(in_only), "untransposed_in_proj", "input projection")


def test_mha_from_torch_untransposed_output_projection_only():
    assert_diagnosis(C.check_mha_from_torch(_out_untransposed), "untransposed_out_proj", "output projection")


def _out_untransposed(x, mha):
    d, H = x.shape[-1], mha.num_heads
    q, k, v = (x @ w.T + b for w, b in zip(mha.in_proj_weight.chunk(3), mha.in_proj_bias.chunk(3)))
    a = torch.softmax(split(q, H) @ split(k, H).transpose(-2, -1) / math.sqrt(d // H), dim=-1)
    return merge(a @ split(v, H)) @ mha.out_proj.weight + mha.out_proj.bias


def test_mha_from_torch_through_the_module_itself_is_named_as_a_forbidden_call():
    """Returning the module's own output (requires grad, not detached): named, and no crash on grad."""
    assert_diagnosis(C.check_mha_from_torch(lambda x, mha: mha(x, x, x)[0]), "forbidden_call", "write the computation")


def test_mha_from_torch_scaled_by_the_model_width():
    def by_d(x, mha):
        d, H = x.shape[-1], mha.num_heads
        q, k, v = (x @ w.T + b for w, b in zip(mha.in_proj_weight.chunk(3), mha.in_proj_bias.chunk(3)))
        a = torch.softmax(split(q, H) @ split(k, H).transpose(-2, -1) / math.sqrt(d), dim=-1)
        return merge(a @ split(v, H)) @ mha.out_proj.weight.T + mha.out_proj.bias
    assert_diagnosis(C.check_mha_from_torch(by_d), "scale_by_d_model", "the model width")


def test_split_heads_returning_numpy_is_refused():
    assert_diagnosis(C.check_split_heads(lambda x, H: split(x, H).numpy()), "wrong_type", "torch.Tensor")


def test_split_heads_through_a_permuted_tensor_passes():
    def permuted(x, n_heads):
        B, T, D = x.shape
        return x.permute(0, 2, 1).reshape(B, n_heads, D // n_heads, T).transpose(-2, -1)
    assert C.check_split_heads(permuted).passed


def test_split_heads_stacking_chunks_without_the_transpose():
    result = C.check_split_heads(lambda x, n_heads: torch.stack(x.chunk(n_heads, dim=-1), dim=2))
    assert_diagnosis(result, "wrong_shape", "swap the T and H axes")


def test_merge_heads_with_the_wrong_final_shape():
    result = C.check_merge_heads(lambda x: x.transpose(1, 2))
    assert_diagnosis(result, "wrong_shape", "expected (2, 3, 20)")


def test_kv_head_map_with_float_division():
    assert_diagnosis(C.check_kv_head_map(lambda H, Hkv: [h / (H // Hkv) for h in range(H)]), "wrong_type",
                     "`h // r`")


def test_kv_head_map_as_strings():
    assert_diagnosis(C.check_kv_head_map(lambda H, Hkv: [str(h // (H // Hkv)) for h in range(H)]), "wrong_type",
                     "expected integers")


def test_kv_head_map_as_a_generator():
    assert_diagnosis(C.check_kv_head_map(lambda H, Hkv: (h // (H // Hkv) for h in range(H))), "wrong_type",
                     "generator")


def test_kv_head_map_as_a_tensor_passes():
    assert C.check_kv_head_map(lambda H, Hkv: torch.arange(H) // (H // Hkv)).passed


def test_gqa_with_expand_in_the_wrong_order():
    """k[:, None] expanded to (B, r, H_kv, ...) and flattened: the tiling order again."""
    def expanded(q, k, v):
        B, Hkv, S, d = k.shape
        r = q.shape[1] // Hkv
        k2 = k[:, None].expand(B, r, Hkv, S, d).reshape(B, r * Hkv, S, d)
        v2 = v[:, None].expand(B, r, Hkv, S, v.shape[-1]).reshape(B, r * Hkv, S, v.shape[-1])
        return torch.softmax(q @ k2.transpose(-2, -1) / math.sqrt(d), dim=-1) @ v2
    assert_diagnosis(C.check_gqa_attention(expanded), "repeat_not_interleave", "repeat_interleave")


def test_gqa_returning_bfloat16_is_compared_and_rejected_only_by_values():
    result = C.check_gqa_attention(lambda q, k, v: gqa(q, k, v).to(torch.bfloat16))
    assert not result.passed and "differs from the reference" in result.message


def test_gqa_with_sdpa_and_enable_gqa_passes():
    assert_diagnosis(C.check_gqa_attention(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)),
                     "forbidden_call", "enable_gqa=True")


def test_split_heads_with_unflatten_in_the_wrong_order():
    def unflattened(x, n_heads):
        return x.unflatten(-1, (x.shape[-1] // n_heads, n_heads)).permute(0, 3, 1, 2)
    assert_diagnosis(C.check_split_heads(unflattened), "interleaved", "interleaved")


def test_merge_heads_flattening_too_much():
    assert_diagnosis(C.check_merge_heads(lambda x: x.permute(0, 2, 1, 3).flatten(1)), "wrong_shape",
                     "expected (2, 3, 20)")


def test_merge_heads_with_reshape_minus_one():
    assert_diagnosis(C.check_merge_heads(lambda x: x.reshape(x.shape[0], x.shape[2], -1)),
                     "reshape_without_transpose", "mixes positions and heads")
