"""Mistake models: deliberately wrong implementations, one small function each.

Each function reproduces one classic mistake exactly, in NumPy float64. The checkers run
them on the same inputs as the student's function; when the student's output matches a model
(and not the reference), the checker names the mistake in plain words. The explanations live
next to the checkers that use them; this module is the catalogue of what can go wrong.
"""
from __future__ import annotations

import numpy as np

# ----------------------------------------------------------------------------------------------
# Shared building blocks (correct unless a knob says otherwise)


def _swap(x):
    return np.swapaxes(x, -1, -2)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _attend(q, k, v, allowed=None, *, scale=None, scores=None, axis=-1, fill=-np.inf,
            mask="before", stable=True, normalise=True):
    """Attention with one knob per classic mistake; the defaults give the right answer.

    ``mask``: "before" (correct), "after" (zero weights after the softmax, no renormalising),
    "ignore", "invert", "add" (add the boolean mask to the scores).
    """
    d_k = q.shape[-1]
    scale = 1 / np.sqrt(d_k) if scale is None else scale
    s = (q @ _swap(k) if scores is None else scores) * scale
    if allowed is not None and mask in ("before", "invert"):
        keep = np.broadcast_to(allowed if mask == "before" else ~allowed, s.shape)
        s = np.where(keep, s, fill)
    if allowed is not None and mask == "add":
        s = s + allowed
    if not normalise:
        a = s
    elif stable:
        a = _softmax(s, axis)
    else:
        e = np.exp(s)
        a = e / e.sum(axis=axis, keepdims=True)
    if allowed is not None and mask == "after":
        a = a * allowed
    return a @ v


# ----------------------------------------------------------------------------------------------
# Softmax, fn(x) normalising along the last axis


def softmax_over_first_axis(x):
    return _softmax(x, axis=0)


def softmax_over_second_last_axis(x):
    return _softmax(x, axis=-2)


def softmax_over_whole_array(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def softmax_without_max_subtraction(x):
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def softmax_global_max(x):
    e = np.exp(x - x.max())                      # one max for the whole array, not per row
    return e / e.sum(axis=-1, keepdims=True)


def softmax_max_without_keepdims(x):
    e = np.exp(x - x.max(axis=-1))               # (n,) broadcasts along the last axis
    return e / e.sum(axis=-1, keepdims=True)


def softmax_sum_without_keepdims(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1)


def softmax_not_normalised(x):
    return np.exp(x - x.max(axis=-1, keepdims=True))


def softmax_returns_log(x):
    s = x - x.max(axis=-1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=-1, keepdims=True))


# ----------------------------------------------------------------------------------------------
# Raw scores, fn(q, k) = q k^T


def scores_without_transpose(q, k):
    return q @ k


def scores_transposed(q, k):
    return k @ _swap(q)


def scores_elementwise(q, k):
    return q * k


def scores_already_scaled(q, k):
    return q @ _swap(k) / np.sqrt(q.shape[-1])


# ----------------------------------------------------------------------------------------------
# Single-head attention, fn(q, k, v, allowed=None)


def attention_without_transpose(q, k, v, allowed=None):
    return _attend(q, k, v, allowed, scores=q @ k)


def attention_scores_transposed(q, k, v, allowed=None):
    a = _softmax(k @ _swap(q) / np.sqrt(q.shape[-1]))      # (S, T), normalised over queries
    return a @ v


def attention_softmax_over_queries(q, k, v, allowed=None):
    return _attend(q, k, v, allowed, axis=-2)


def attention_without_scale(q, k, v, allowed=None):
    return _attend(q, k, v, allowed, scale=1.0)


def attention_scale_by_d_k(q, k, v, allowed=None):
    return _attend(q, k, v, allowed, scale=1 / q.shape[-1])


def attention_scale_multiplied(q, k, v, allowed=None):
    return _attend(q, k, v, allowed, scale=np.sqrt(q.shape[-1]))


def attention_scale_by_d_v(q, k, v, allowed=None):
    return _attend(q, k, v, allowed, scale=1 / np.sqrt(v.shape[-1]))


def attention_without_softmax(q, k, v, allowed=None):
    return _attend(q, k, v, allowed, fill=0.0, normalise=False)


def attention_without_max_subtraction(q, k, v, allowed=None):
    return _attend(q, k, v, allowed, stable=False)


def attention_mask_after_softmax(q, k, v, allowed=None):
    return _attend(q, k, v, allowed, mask="after")


def attention_mask_ignored(q, k, v, allowed=None):
    return _attend(q, k, v, allowed, mask="ignore")


def attention_mask_inverted(q, k, v, allowed=None):
    return _attend(q, k, v, allowed, mask="invert")


def attention_mask_added(q, k, v, allowed=None):
    return _attend(q, k, v, allowed, mask="add")


def attention_fill_minus_1e9(q, k, v, allowed=None):
    return _attend(q, k, v, allowed, fill=-1e9)


def attention_fill_minus_inf_unguarded(q, k, v, allowed=None):
    return _attend(q, k, v, allowed, fill=-np.inf)


def attention_zero_rows(q, k, v, allowed=None):
    out = _attend(q, k, v, allowed, fill=-np.inf)
    return np.nan_to_num(out, nan=0.0)


# ----------------------------------------------------------------------------------------------
# Causal attention with an offset, fn(query, key, value, query_offset)


def _positions(T, S, offset):
    return offset + np.arange(T)[:, None], np.arange(S)[None, :]


def causal_top_left(q, k, v, offset=0):
    T, S = q.shape[-2], k.shape[-2]
    return _attend(q, k, v, np.tril(np.ones((T, S), dtype=bool)))


def causal_always_bottom_right(q, k, v, offset=0):
    i, j = _positions(q.shape[-2], k.shape[-2], k.shape[-2] - q.shape[-2])
    return _attend(q, k, v, j <= i)


def causal_excluding_diagonal(q, k, v, offset=0):
    i, j = _positions(q.shape[-2], k.shape[-2], offset)
    return _attend(q, k, v, j < i)


def causal_excluding_diagonal_1e9(q, k, v, offset=0):
    i, j = _positions(q.shape[-2], k.shape[-2], offset)
    return _attend(q, k, v, j < i, fill=-1e9)


def causal_reads_future(q, k, v, offset=0):
    i, j = _positions(q.shape[-2], k.shape[-2], offset)
    return _attend(q, k, v, j >= i)


def causal_no_mask(q, k, v, offset=0):
    return _attend(q, k, v)


def causal_offset_wrong_sign(q, k, v, offset=0):
    i, j = _positions(q.shape[-2], k.shape[-2], -offset)
    return _attend(q, k, v, j <= i)


def causal_mask_after_softmax(q, k, v, offset=0):
    i, j = _positions(q.shape[-2], k.shape[-2], offset)
    return _attend(q, k, v, j <= i, mask="after")


def causal_without_scale(q, k, v, offset=0):
    i, j = _positions(q.shape[-2], k.shape[-2], offset)
    return _attend(q, k, v, j <= i, scale=1.0)


def causal_softmax_over_queries(q, k, v, offset=0):
    i, j = _positions(q.shape[-2], k.shape[-2], offset)
    return _attend(q, k, v, j <= i, axis=-2)


# ----------------------------------------------------------------------------------------------
# Mask builders


def causal_mask_top_left(T, S, offset):
    return np.tril(np.ones((T, S), dtype=bool))


def causal_mask_always_bottom_right(T, S, offset):
    i, j = _positions(T, S, S - T)
    return j <= i


def causal_mask_excluding_diagonal(T, S, offset):
    i, j = _positions(T, S, offset)
    return j < i


def causal_mask_inverted(T, S, offset):
    i, j = _positions(T, S, offset)
    return j > i


def causal_mask_reads_future(T, S, offset):
    i, j = _positions(T, S, offset)
    return j >= i


def causal_mask_offset_wrong_sign(T, S, offset):
    i, j = _positions(T, S, -offset)
    return j <= i


def padding_mask_off_by_one(lengths, S):
    return (np.arange(S)[None, :] <= np.asarray(lengths)[:, None])[:, None, :]


def padding_mask_inverted(lengths, S):
    return (np.arange(S)[None, :] >= np.asarray(lengths)[:, None])[:, None, :]


def padding_mask_left_aligned(lengths, S):
    return (np.arange(S)[None, :] >= S - np.asarray(lengths)[:, None])[:, None, :]


def document_mask_with_causal(doc_ids):
    ids = np.asarray(doc_ids)
    T = ids.shape[-1]
    return (ids[..., :, None] == ids[..., None, :]) & np.tril(np.ones((T, T), dtype=bool))


def document_mask_inverted(doc_ids):
    ids = np.asarray(doc_ids)
    return ids[..., :, None] != ids[..., None, :]


def document_mask_reads_earlier_documents(doc_ids):
    ids = np.asarray(doc_ids)
    return ids[..., None, :] <= ids[..., :, None]


# ----------------------------------------------------------------------------------------------
# Softmax backward, fn(a, grad_a) -> grad_x


def softmax_backward_without_row_mean(a, g):
    return a * g


def softmax_backward_unweighted_mean(a, g):
    return a * (g - g.mean(axis=-1, keepdims=True))


def softmax_backward_mean_over_wrong_axis(a, g):
    return a * (g - (a * g).sum(axis=0, keepdims=True))


def softmax_backward_without_leading_a(a, g):
    return g - (a * g).sum(axis=-1, keepdims=True)


def softmax_backward_sum_without_keepdims(a, g):
    return a * (g - (a * g).sum(axis=-1))


def softmax_backward_sign_flipped(a, g):
    return a * ((a * g).sum(axis=-1, keepdims=True) - g)


# ----------------------------------------------------------------------------------------------
# Attention backward, fn(q, k, v, grad_out) -> (dq, dk, dv)


def _backward(q, k, v, g, *, row_mean=True, weighted_mean=True, jacobian=True,
              dv_transposed=True, dk_transposed=True, dq_ds_transposed=False, dk_from_k=False,
              scale_dq=True, scale_dk=True):
    c = 1 / np.sqrt(q.shape[-1])
    a = _softmax(q @ _swap(k) * c)
    dv = _swap(a) @ g if dv_transposed else a @ g
    da = g @ _swap(v)
    if not jacobian:
        ds = da
    elif not row_mean:
        ds = a * da
    elif not weighted_mean:
        ds = a * (da - da.mean(axis=-1, keepdims=True))
    else:
        ds = a * (da - (a * da).sum(axis=-1, keepdims=True))
    dq = (_swap(ds) if dq_ds_transposed else ds) @ k
    dk = (_swap(ds) if dk_transposed else ds) @ (k if dk_from_k else q)
    return dq * (c if scale_dq else 1), dk * (c if scale_dk else 1), dv


def backward_without_row_mean(q, k, v, g):
    return _backward(q, k, v, g, row_mean=False)


def backward_unweighted_row_mean(q, k, v, g):
    return _backward(q, k, v, g, weighted_mean=False)


def backward_softmax_as_identity(q, k, v, g):
    return _backward(q, k, v, g, jacobian=False)


def backward_dv_untransposed(q, k, v, g):
    return _backward(q, k, v, g, dv_transposed=False)


def backward_dk_untransposed(q, k, v, g):
    return _backward(q, k, v, g, dk_transposed=False)


def backward_dq_with_transposed_ds(q, k, v, g):
    return _backward(q, k, v, g, dq_ds_transposed=True)


def backward_dk_from_k(q, k, v, g):
    return _backward(q, k, v, g, dk_from_k=True)


def backward_without_scale(q, k, v, g):
    return _backward(q, k, v, g, scale_dq=False, scale_dk=False)


def backward_without_scale_in_dq(q, k, v, g):
    return _backward(q, k, v, g, scale_dq=False)


def backward_without_scale_in_dk(q, k, v, g):
    return _backward(q, k, v, g, scale_dk=False)


# ----------------------------------------------------------------------------------------------
# Heads: split (B, T, H*d) -> (B, H, T, d), merge back; the query-head -> KV-head map; GQA


def split_heads_without_transpose(x, n_heads):
    B, T, D = x.shape
    return x.reshape(B, n_heads, T, D // n_heads)


def split_heads_interleaved(x, n_heads):
    B, T, D = x.shape
    return x.reshape(B, T, D // n_heads, n_heads).transpose(0, 3, 1, 2)


def merge_heads_without_transpose(x):
    B, H, T, d = x.shape
    return x.reshape(B, T, H * d)


def merge_heads_interleaved(x):
    B, H, T, d = x.shape
    return x.transpose(0, 2, 3, 1).reshape(B, T, d * H)


def head_map_modulo(n_heads, n_kv_heads):
    return [h % n_kv_heads for h in range(n_heads)]


def head_map_divide_by_kv_heads(n_heads, n_kv_heads):
    return [h // n_kv_heads for h in range(n_heads)]


def gqa_tiled(q, k, v):
    r = q.shape[-3] // k.shape[-3]
    reps = (1,) * (k.ndim - 3) + (r, 1, 1)
    return _attend(q, np.tile(k, reps), np.tile(v, reps))       # head h reads KV head h % H_kv


def gqa_without_scale(q, k, v):
    r = q.shape[-3] // k.shape[-3]
    return _attend(q, np.repeat(k, r, axis=-3), np.repeat(v, r, axis=-3), scale=1.0)


# ----------------------------------------------------------------------------------------------
# Online-softmax (chunked) attention, fn(q, k, v, block_size), q (T, d_k), k (S, d_k), v (S, d_v)


def _online(q, k, v, block, *, rescale_acc=True, rescale_sum=True, use_max=True, divide=True):
    c = 1 / np.sqrt(q.shape[-1])
    T = q.shape[0]
    m = np.full((T, 1), -np.inf)
    l = np.zeros((T, 1))
    acc = np.zeros((T, v.shape[-1]))
    for start in range(0, k.shape[0], block):
        s = q @ k[start:start + block].T * c
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True)) if use_max else np.zeros_like(m)
        alpha = np.exp(m - m_new) if use_max else np.ones_like(m)
        p = np.exp(s - m_new)
        l = (l * alpha if rescale_sum else l) + p.sum(axis=-1, keepdims=True)
        acc = (acc * alpha if rescale_acc else acc) + p @ v[start:start + block]
        m = m_new
    return acc / l if divide else acc


def chunked_without_rescaling(q, k, v, block_size):
    return _online(q, k, v, block_size, rescale_acc=False, rescale_sum=False)


def chunked_rescales_sum_only(q, k, v, block_size):
    return _online(q, k, v, block_size, rescale_acc=False)


def chunked_rescales_output_only(q, k, v, block_size):
    return _online(q, k, v, block_size, rescale_sum=False)


def chunked_without_max(q, k, v, block_size):
    return _online(q, k, v, block_size, use_max=False)


def chunked_without_final_division(q, k, v, block_size):
    return _online(q, k, v, block_size, divide=False)


def chunked_average_of_blocks(q, k, v, block_size):
    c = 1 / np.sqrt(q.shape[-1])
    outs = [_softmax(q @ k[s:s + block_size].T * c) @ v[s:s + block_size]
            for s in range(0, k.shape[0], block_size)]
    return np.mean(outs, axis=0)


# ----------------------------------------------------------------------------------------------
# KV-cache size, fn(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, bytes_per_element)


def kv_bytes_without_factor_two(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, nbytes):
    return batch * seq_len * n_layers * n_kv_heads * head_dim * nbytes


def kv_bytes_with_query_heads(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, nbytes):
    return 2 * batch * seq_len * n_layers * n_heads * head_dim * nbytes


def kv_bytes_in_bits(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, nbytes):
    return 2 * batch * seq_len * n_layers * n_kv_heads * head_dim * nbytes * 8


def kv_bytes_one_layer(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, nbytes):
    return 2 * batch * seq_len * n_kv_heads * head_dim * nbytes


def kv_bytes_one_sequence(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, nbytes):
    return 2 * seq_len * n_layers * n_kv_heads * head_dim * nbytes


# ----------------------------------------------------------------------------------------------
# Permuting a mask with the tokens, fn(allowed, perm) -> allowed'


def permute_mask_rows_only(allowed, perm):
    return allowed[perm]


def permute_mask_columns_only(allowed, perm):
    return allowed[:, perm]


def permute_mask_inverse(allowed, perm):
    inv = np.argsort(perm)
    return allowed[np.ix_(inv, inv)]


def permute_mask_unchanged(allowed, perm):
    return allowed


# ----------------------------------------------------------------------------------------------
# Tests the student writes, run on probe functions: fn(f, x, rng) -> bool and fn(attn, x) -> bool


def equivariance_test_checks_invariance(f, x, rng):
    perm = rng.permutation(x.shape[0])
    return bool(np.allclose(f(x[perm]), f(x)))


def equivariance_test_inverse_permutation(f, x, rng):
    perm = rng.permutation(x.shape[0])
    while np.array_equal(perm[perm], np.arange(len(perm))):   # an involution would hide the mistake
        perm = rng.permutation(x.shape[0])
    return bool(np.allclose(f(x[perm]), f(x)[np.argsort(perm)]))


def leak_test_last_position_only(attn, x):
    changed = x.copy()
    changed[-1] += 1.0
    return not np.array_equal(attn(x)[:-1], attn(changed)[:-1])


def leak_test_with_tolerance(attn, x):
    for t in range(x.shape[0] - 1):
        changed = x.copy()
        changed[t + 1:] += 1.0
        if not np.allclose(attn(x)[:t + 1], attn(changed)[:t + 1]):
            return True
    return False


def leak_test_changes_the_past(attn, x):
    for t in range(1, x.shape[0]):
        changed = x.copy()
        changed[:t] += 1.0
        if not np.array_equal(attn(x)[t:], attn(changed)[t:]):
            return True
    return False


def leak_test_compares_every_row(attn, x):
    changed = x.copy()
    changed[1:] += 1.0
    return not np.array_equal(attn(x), attn(changed))


# ----------------------------------------------------------------------------------------------
# Dropout on attention weights, given the keep-mask the student's function actually drew


def dropout_without_rescale(a, keep, p):
    return a * keep


def dropout_scaled_by_p(a, keep, p):
    return a * keep / p


def dropout_renormalised(a, keep, p):
    w = a * keep
    total = w.sum(axis=-1, keepdims=True)
    return np.divide(w, total, out=np.zeros_like(w), where=total > 0)


# ----------------------------------------------------------------------------------------------
# Multi-head self-attention from nn.MultiheadAttention's parameters, fn(x, module)
# (NumPy versions take x (B, T, d), in_proj_weight (3d, d), in_proj_bias (3d,),
#  out_proj.weight (d, d), out_proj.bias (d,), and the number of heads)


def _mha(x, w_in, b_in, w_out, b_out, n_heads, *, transpose_weights=True, in_bias=True, out_bias=True,
         split="heads", scale=True, out_proj=True):
    B, T, d = x.shape
    h_dim = d // n_heads
    blocks = np.split(w_in, 3, axis=0)                          # torch stores (out, in) blocks
    biases = np.split(b_in, 3) if in_bias else (0.0, 0.0, 0.0)
    q, k, v = (x @ (w.T if transpose_weights else w) + b for w, b in zip(blocks, biases))   # (B, T, d)

    def heads(t):
        if split == "no_transpose":
            return t.reshape(B, n_heads, T, h_dim)
        return t.reshape(B, T, n_heads, h_dim).transpose(0, 2, 1, 3)   # (B, H, T, h_dim)
    o = _attend(heads(q), heads(k), heads(v), scale=None if scale else 1.0)
    o = o.transpose(0, 2, 1, 3).reshape(B, T, d)                 # (B, T, d)
    if not out_proj:
        return o
    wo = w_out.T if transpose_weights else w_out
    return o @ wo + (b_out if out_bias else 0.0)


def mha_untransposed_weights(x, w_in, b_in, w_out, b_out, n_heads):
    return _mha(x, w_in, b_in, w_out, b_out, n_heads, transpose_weights=False)


def mha_without_in_bias(x, w_in, b_in, w_out, b_out, n_heads):
    return _mha(x, w_in, b_in, w_out, b_out, n_heads, in_bias=False)


def mha_without_out_bias(x, w_in, b_in, w_out, b_out, n_heads):
    return _mha(x, w_in, b_in, w_out, b_out, n_heads, out_bias=False)


def mha_split_without_transpose(x, w_in, b_in, w_out, b_out, n_heads):
    return _mha(x, w_in, b_in, w_out, b_out, n_heads, split="no_transpose")


def mha_without_scale(x, w_in, b_in, w_out, b_out, n_heads):
    return _mha(x, w_in, b_in, w_out, b_out, n_heads, scale=False)


def mha_without_output_projection(x, w_in, b_in, w_out, b_out, n_heads):
    return _mha(x, w_in, b_in, w_out, b_out, n_heads, out_proj=False)
