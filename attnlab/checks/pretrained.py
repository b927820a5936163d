"""Checkers for chapter 9: one head of a pretrained layer, the weight on [CLS]/[SEP], and head ablation.

The cases are small synthetic layers in the format of :class:`attnlab.pretrained.AttentionParams`
(row-vector weights, biases, d = H * d_k, right padding), so a check runs in milliseconds and needs
neither the model nor ``transformers``; the exercise then applies the same function to the real
model. Only the rows of real (valid) queries are compared: on padded rows the model computes
something nobody uses, and ``attnlab`` returns zeros, so either is accepted.
"""
from __future__ import annotations

import copy
import dataclasses

import numpy as np

from .. import masks
from .. import reference as ref
from . import result as R
from .diagnose import FLOAT32, FLOAT64, Mistake, close, describe_difference, which_mistake
from .runner import Stop, call, checker, matmul_hint, to_array

# ------------------------------------------------------------------------------- synthetic layers


def _params(seed: int, d: int, n_heads: int):
    """A random layer with visible biases: q and k entries of size about 1, b_Q as large as q."""
    from ..pretrained import AttentionParams

    rng = np.random.default_rng(seed)
    w = [rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(4)]        # (d, H*d_k) each
    b = [rng.normal(size=d) for _ in range(4)]                           # (H*d_k,) each
    return AttentionParams(w[0], w[1], w[2], w[3], b[0], b[1], b[2], b[3], n_heads)


def _layer_cases():
    """(case, x (B, T, d), params, head h, valid (B, T)) for the head-weights and ablation checks."""
    cases = []
    for seed, lengths, T, d, H, h in ((3, [5, 3], 5, 12, 3, 1), (4, [6, 2, 4], 6, 16, 4, 3),
                                      (5, [4], 4, 12, 2, 0)):
        rng = np.random.default_rng(100 + seed)
        valid = np.arange(T)[None, :] < np.array(lengths)[:, None]      # (B, T): right padding
        x = rng.normal(size=(len(lengths), T, d))                       # (B, T, d)
        pad = "no padding" if min(lengths) == T else "right padding"
        case = (f"B = {len(lengths)} sentences of lengths {lengths} ({pad}, T = {T}), d = {d}, "
                f"H = {H} heads of width {d // H}, head h = {h}")
        cases.append((case, x, _params(seed, d, H), h, valid))
    return cases


def _head(p, h):
    d_k = p.w_q.shape[1] // p.n_heads
    return slice(h * d_k, (h + 1) * d_k), d_k


def _masked_softmax(scores, keep, axis=-1):
    """Softmax along ``axis`` over the entries where ``keep``; the others get exactly 0."""
    keep = np.broadcast_to(keep, scores.shape)
    top = np.max(np.where(keep, scores, -np.inf), axis=axis, keepdims=True)
    e = np.where(keep, np.exp(np.where(keep, scores - top, 0.0)), 0.0)
    return e / e.sum(axis=axis, keepdims=True)


def _weights(q, k, valid, scale):
    """Softmax over the real keys of (q k^T) * scale: (B, T, d_k) x2 -> (B, T, T)."""
    scores = q @ np.swapaxes(k, -1, -2) * scale                          # (B, T, T)
    return _masked_softmax(scores, valid[:, None, :])


def _qk(x, p, h):
    sl, _ = _head(p, h)
    return x @ p.w_q[:, sl] + p.b_q[sl], x @ p.w_k[:, sl] + p.b_k[sl]   # (B, T, d_k) each


def head_weights_reference(x, p, h, valid):
    """Head h's weights (B, T, T) by attnlab's reference, on the head's slices of Q and K."""
    q, k = _qk(x, p, h)
    allowed = masks.padding(np.asarray(valid).sum(axis=1), valid.shape[1])   # (B, 1, T)
    _, weights = ref.attention(q, k, k, allowed=allowed, return_weights=True)
    return weights                                                       # (B, T, T)


# ------------------------------------------------------------------------------- head-weight mistakes


def _no_scale(x, p, h, valid):
    return _weights(*_qk(x, p, h), valid, 1.0)


def _scale_by_d_model(x, p, h, valid):
    return _weights(*_qk(x, p, h), valid, 1 / np.sqrt(x.shape[-1]))


def _scale_by_d_k(x, p, h, valid):
    return _weights(*_qk(x, p, h), valid, 1 / _head(p, h)[1])


def _strided_slice(x, p, h, valid):
    cols = slice(h, None, p.n_heads)                                     # every H-th feature
    q, k = x @ p.w_q[:, cols] + p.b_q[cols], x @ p.w_k[:, cols] + p.b_k[cols]
    return _weights(q, k, valid, 1 / np.sqrt(_head(p, h)[1]))


def _transposed_weights(x, p, h, valid):
    sl, d_k = _head(p, h)
    q, k = x @ p.w_q.T[:, sl] + p.b_q[sl], x @ p.w_k.T[:, sl] + p.b_k[sl]
    return _weights(q, k, valid, 1 / np.sqrt(d_k))


def _no_query_bias(x, p, h, valid):
    sl, d_k = _head(p, h)
    return _weights(x @ p.w_q[:, sl], x @ p.w_k[:, sl], valid, 1 / np.sqrt(d_k))


def _scores_transposed(x, p, h, valid):
    q, k = _qk(x, p, h)
    return _weights(k, q, valid, 1 / np.sqrt(_head(p, h)[1]))


def _softmax_over_queries(x, p, h, valid):
    q, k = _qk(x, p, h)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(_head(p, h)[1])        # (B, T, T)
    return np.where(valid[:, None, :], _masked_softmax(scores, valid[:, :, None], axis=-2), 0.0)


def _pad_not_masked(x, p, h, valid):
    return _weights(*_qk(x, p, h), np.ones_like(valid), 1 / np.sqrt(_head(p, h)[1]))


def _mask_after_softmax(x, p, h, valid):
    return np.where(valid[:, None, :], _pad_not_masked(x, p, h, valid), 0.0)


HEAD_WEIGHT_MISTAKES = [
    Mistake("no_scale", "missing scaling: divide each head's scores by sqrt(d_head), the head width "
            "(d / H, 384 / 12 = 32 in the model).", _no_scale),
    Mistake("scale_by_d_model", "wrong scaling: you divided by sqrt(d), the model width; each head divides by "
            "sqrt(d_head), the width of its own queries and keys (d / H).", _scale_by_d_model),
    Mistake("scale_by_d_head", "wrong scaling: you divided by d_head; divide by its square root.", _scale_by_d_k),
    Mistake("strided_head_slice", "wrong head slice: you took every H-th column of W_Q and W_K "
            "(`w[:, h::H]`, what a reshape to (d, d_head, H) gives). Head h owns the contiguous block of "
            "columns `h*d_head : (h+1)*d_head`, and the same block of the biases.", _strided_slice),
    Mistake("transposed_weights", "the weight matrices are transposed: `p.w_q` is already in the row-vector "
            "convention, shape (d, H*d_head), so `q = x @ p.w_q + p.b_q`. (Only `nn.Linear.weight` needs "
            "the `.T`; here the square shapes hide the mistake.)", _transposed_weights),
    Mistake("no_query_bias", "the query bias b_Q is missing: q = x W_Q + b_Q (its slice for head h). It "
            "adds b_Q k_j^T to the scores, which depends on the key j, so it changes the weights. (The "
            "key bias does not: exercise 2.)", _no_query_bias),
    Mistake("scores_transposed", "the scores are K Q^T instead of Q K^T, so row i does not belong to query i: "
            "use `q @ k.swapaxes(-1, -2)`.", _scores_transposed),
    Mistake("wrong_axis", "softmax over the wrong axis: your weights sum to 1 down each column (over the "
            "queries). Each query distributes its weight over the keys: normalise along the last axis.",
            _softmax_over_queries),
    Mistake("pad_not_masked", "[PAD] is not masked: real queries give weight to padded keys. Put the scores of "
            "padded keys to -inf before the softmax (`np.where(valid[:, None, :], scores, -np.inf)`).",
            _pad_not_masked),
    Mistake("mask_after_softmax", "the padding mask was applied after the softmax: zeroing the padded keys' "
            "weights afterwards leaves rows that sum to less than 1. Mask the scores (-inf) before the "
            "softmax.", _mask_after_softmax),
]


# ------------------------------------------------------------------------------- shared plumbing


def _inputs_unchanged(task, case, p, p_given, x, x_given):
    fields = [f.name for f in dataclasses.fields(p) if isinstance(getattr(p, f.name), np.ndarray)]
    changed = [f"p.{name}" for name in fields if not np.array_equal(getattr(p, name), getattr(p_given, name))]
    if not np.array_equal(x, x_given):
        changed.insert(0, "x")
    if changed:
        raise Stop(R.failed(task, f"On {case}, your function changed {', '.join(changed)} in place (for example "
                                  f"`p.b_q[...] = 0` or `x += ...`). Work on new arrays, e.g. "
                                  f"`dataclasses.replace(p, b_q=np.zeros_like(p.b_q))`."))


def _run_layer(task, fn, case, x, p, h, valid, shape):
    """Call fn(x, p, h, valid) on copies; return (result as float64, the dtype it came in)."""
    x_given, p_given = x.copy(), copy.deepcopy(p)
    out = call(task, fn, case, x_given, p_given, h, valid, error_hint=_layer_hint)
    _inputs_unchanged(task, case, p, p_given, x, x_given)
    dtype = str(getattr(out, "dtype", ""))
    return to_array(task, out, case, shape=shape), dtype


def _layer_hint(err):
    if "not subscriptable" in str(err) or "has no attribute" in str(err):
        return ("`p` is an `attnlab.pretrained.AttentionParams`: read its matrices as attributes, `p.w_q`, "
                "`p.b_q`, `p.w_k`, ..., `p.n_heads`.")
    return matmul_hint(err)


def _compare(task, case, got, expected, dtype, mistakes, args, name, rows=None, properties=()):
    """Compare (the rows ``rows`` of real queries); name a mistake, a property, or the largest difference."""
    pick = (lambda out: np.asarray(out, dtype=float)[rows]) if rows is not None else None
    mine, theirs = (got[rows], expected[rows]) if rows is not None else (got, expected)
    low = "float32" in dtype or "float16" in dtype                    # numpy or torch, bfloat16 too
    tol = FLOAT32 if low else FLOAT64
    if close(mine, theirs, tol):
        if not low:
            return
        raise Stop(R.failed(task, f"On {case}, your result is {dtype}: the inputs are float64 and the task asks "
                                  f"for float64, so do not convert to float32 (or go through a float32 tensor) on "
                                  f"the way. Apart from that, {name} agrees with the reference.", "float32"))
    mistake = which_mistake(mine, theirs, mistakes, args, tol=tol, pick=pick)
    if mistake is not None:
        raise Stop(R.failed(task, f"On {case}, {name} matches a classic mistake: {mistake.explanation}",
                            mistake.name))
    for key, test, text in properties:
        if test(got):
            raise Stop(R.failed(task, f"On {case}, {text}", key))
    if rows is not None:                              # report full indices, padded rows set equal
        keep = np.broadcast_to(rows.reshape(rows.shape + (1,) * (got.ndim - rows.ndim)), got.shape)
        got = np.where(keep, got, expected)
    where = "on the rows of real queries" if rows is not None else "from the reference"
    raise Stop(R.failed(task, f"On {case}, {name} differs {where}: {describe_difference(got, expected)}."))


# ------------------------------------------------------------------------------- check: head weights

FLOAT32_MISTAKE = Mistake("float32", "the result is float32 (or lower) where the task asks for float64.", None)
PROPERTY_MISTAKES = [   # diagnosed from a property of the weights when no mistake model matches
    Mistake("pad_not_masked", "a real query gives weight to a padded key.", None),
    Mistake("wrong_axis", "the weights sum to 1 over the queries instead of the keys.", None),
    Mistake("not_finite", "the weights of a real query contain nan or inf.", None),
    Mistake("rows_not_normalised", "the weights of a real query do not sum to 1 over the keys.", None),
    FLOAT32_MISTAKE,
]


def _columns_sum_to_one(a, valid):
    """True if the columns of real keys sum to 1, over all queries or over the real ones."""
    over_all = a.sum(axis=-2)[valid]                                     # (keys,)
    over_real = (a * valid[:, :, None]).sum(axis=-2)[valid]
    return bool(np.allclose(over_all, 1.0, atol=1e-8) or np.allclose(over_real, 1.0, atol=1e-8))


def _weight_properties(valid):
    real = valid[:, :, None] & ~valid[:, None, :]                        # real query, padded key
    return [
        ("pad_not_masked", lambda a: bool(np.any(np.abs(a[real]) > 1e-12)),
         "a real query gives weight to a padded key: mask the scores of [PAD] keys (-inf) before the "
         "softmax, so that their weights are exactly 0."),
        ("wrong_axis", lambda a: _columns_sum_to_one(a, valid),
         "your weights sum to 1 down each column, over the queries: each query distributes its weight over "
         "the keys, so the softmax runs along the last axis."),
        ("not_finite", lambda a: not np.all(np.isfinite(a[valid])),
         "the weights of a real query contain nan or inf: subtract each row's maximum before `np.exp`, and "
         "mask with -inf only along the keys (every row keeps its [CLS], so no row is entirely -inf)."),
        ("rows_not_normalised", lambda a: not np.allclose(a.sum(axis=-1)[valid], 1.0, atol=1e-8),
         "the weights of a real query do not sum to 1 over the keys: the softmax runs over the last axis, "
         "the keys, after masking."),
    ]


@checker("weights of one head of a pretrained layer")
def check_head_weights(fn):
    """Check ``fn(x, p, h, valid)``: head h's attention weights (B, T, T) from the hidden states x (B, T, d)
    entering the layer, its parameters p (an ``AttentionParams``) and valid (B, T), True = real token."""
    task = "weights of one head of a pretrained layer"
    cases = _layer_cases()
    for case, x, p, h, valid in cases:
        B, T, _ = x.shape
        got, dtype = _run_layer(task, fn, case, x, p, h, valid, (B, T, T))
        expected = head_weights_reference(x, p, h, valid)
        _compare(task, case, got, expected, dtype, HEAD_WEIGHT_MISTAKES, (x, p, h, valid), "the weights",
                 rows=valid, properties=_weight_properties(valid))
    return R.passed(task, f"All {len(cases)} cases match attnlab's attention on head h's slice of Q and K, with "
                          f"the biases, the 1/sqrt(d_head) scaling and the padded keys masked, on every real "
                          f"query. (Whether you added b_K makes no difference: exercise 2 says why.)")


# ------------------------------------------------------------------------------- check: [CLS]/[SEP] share


def special_share_reference(weights, lengths):
    """(H,): mean over all real queries of the weight on [CLS] (key 0) and [SEP] (key length - 1)."""
    weights, lengths = np.asarray(weights, dtype=float), np.asarray(lengths)
    total, count = 0.0, 0
    for b, n in enumerate(lengths):
        rows = weights[b, :, :n, :]                                      # (H, n, T): real queries
        total = total + (rows[..., 0] + rows[..., n - 1]).sum(axis=-1)   # (H,)
        count += n
    return total / count


def _key_share(weights, lengths, keys_of, queries_of=None, per_sentence=False, factor=1.0):
    """Variants of the share: which keys count, which query rows, and how the mean is taken."""
    parts, counts = [], []
    for b, n in enumerate(lengths):
        rows = weights[b, :, :(queries_of(n) if queries_of else n), :]   # (H, rows, T)
        s = sum(rows[..., j] for j in keys_of(n, weights.shape[-1])).sum(axis=-1) * factor   # (H,)
        parts.append(s / rows.shape[1] if per_sentence else s)
        counts.append(rows.shape[1])
    total = np.sum(parts, axis=0)
    return total / len(lengths) if per_sentence else total / np.sum(counts)


def _sep_at_last_position(w, lengths):
    return _key_share(w, lengths, lambda n, T: (0, T - 1))


def _padded_queries_counted(w, lengths):
    T = w.shape[-1]
    return _key_share(w, lengths, lambda n, T: (0, n - 1), queries_of=lambda n: T)


def _cls_only(w, lengths):
    return _key_share(w, lengths, lambda n, T: (0,))


def _sep_only(w, lengths):
    return _key_share(w, lengths, lambda n, T: (n - 1,))


def _mean_of_sentence_means(w, lengths):
    return _key_share(w, lengths, lambda n, T: (0, n - 1), per_sentence=True)


def _mean_of_the_two(w, lengths):
    return _key_share(w, lengths, lambda n, T: (0, n - 1), factor=0.5)


def _rows_not_columns(w, lengths):
    """The weight the [CLS] and [SEP] *queries* give, instead of the weight given *to* them as keys."""
    return _key_share(np.swapaxes(w, -1, -2), lengths, lambda n, T: (0, n - 1))


SHARE_MISTAKES = [
    Mistake("sep_at_last_position", "[SEP] was taken at the last position, `[..., -1]`; in a padded sentence that "
            "is a [PAD]. [SEP] sits at position `lengths[b] - 1`.", _sep_at_last_position),
    Mistake("padded_queries_counted", "the padded query rows were counted: the model gives them weights that sum "
            "to 1 too, but they are not tokens of the sentence. Average over the real queries `i < lengths[b]` "
            "only.", _padded_queries_counted),
    Mistake("cls_only", "only the weight on [CLS] was counted; add the weight on [SEP] (key `lengths[b] - 1`).",
            _cls_only),
    Mistake("sep_only", "only the weight on [SEP] was counted; add the weight on [CLS] (key 0).", _sep_only),
    Mistake("mean_of_sentence_means", "you averaged each sentence first and then the sentences, which weighs a "
            "short sentence's queries more. Every real query of the batch counts once: sum over all of them "
            "and divide by `lengths.sum()`.", _mean_of_sentence_means),
    Mistake("mean_of_the_two", "you averaged the weights on [CLS] and [SEP] instead of adding them: the share "
            "on the two is the sum of the two weights.", _mean_of_the_two),
    Mistake("rows_not_columns", "you took the rows of [CLS] and [SEP] (the weight they give as queries); the "
            "share is the weight every query gives to them as keys, the columns `weights[b, :, i, 0]` and "
            "`weights[b, :, i, lengths[b] - 1]`.", _rows_not_columns),
]


def _share_cases():
    cases = []
    for seed, lengths, T, H in ((11, [6, 4, 3], 6, 3), (12, [2, 7, 5, 7], 7, 2), (13, [5], 5, 4)):
        rng = np.random.default_rng(seed)
        B = len(lengths)
        keys = np.arange(T)[None, :] < np.array(lengths)[:, None]       # (B, T)
        scores = rng.normal(scale=1.5, size=(B, H, T, T))
        weights = _masked_softmax(scores, keys[:, None, None, :])        # (B, H, T, T), padded rows too
        pad = "no padding" if min(lengths) == T else "right padding"
        cases.append((f"B = {B} sentences of lengths {lengths} ({pad}, T = {T}), H = {H} heads",
                      weights, np.array(lengths)))
    return cases


@checker("share of the weight on [CLS] and [SEP]")
def check_special_share(fn):
    """Check ``fn(weights, lengths) -> (H,)``: per head, the weight a real query puts on [CLS] and [SEP]
    together, averaged over every real query of the batch. weights (B, H, T, T), lengths (B,)."""
    task = "share of the weight on [CLS] and [SEP]"
    cases = _share_cases()
    for case, weights, lengths in cases:
        out = call(task, fn, case, weights, lengths, error_hint=matmul_hint)
        dtype = str(getattr(out, "dtype", ""))
        got = to_array(task, out, case, shape=(weights.shape[1],),
                       shape_hint=lambda s: "one number per head: average over sentences and queries, sum over "
                                            "the two keys." if len(s) > 1 else None)
        expected = special_share_reference(weights, lengths)
        _compare(task, case, got, expected, dtype, SHARE_MISTAKES, (weights, lengths), "the shares")
    return R.passed(task, f"All {len(cases)} cases match: [CLS] at key 0 and [SEP] at key `lengths[b] - 1`, "
                          f"every real query counted once, padded queries left out.")


# ------------------------------------------------------------------------------- check: head ablation


def _zero_rows_of_w_o(p, rows):
    w_o = p.w_o.copy()
    w_o[rows] = 0.0                                                      # head h's rows of W_O
    return dataclasses.replace(p, w_o=w_o)


def _layer_output(x, p, valid):
    from ..pretrained import self_attention

    allowed = masks.padding(valid.sum(axis=1), valid.shape[1])           # (B, 1, T)
    return self_attention(p, x, allowed=allowed, query_valid=valid)      # (B, T, d)


def ablated_output_reference(x, p, h, valid):
    """The layer's attention output with head h's slice of the concatenated heads zero before W_O: the
    same as zeroing head h's rows of W_O (the head's output meets W_O only there)."""
    return _layer_output(x, _zero_rows_of_w_o(p, _head(p, h)[0]), valid)


def _ablate_w_o_columns(x, p, h, valid):
    w_o = p.w_o.copy()
    w_o[:, _head(p, h)[0]] = 0.0
    return _layer_output(x, dataclasses.replace(p, w_o=w_o), valid)


def _ablate_strided_rows(x, p, h, valid):
    return _layer_output(x, _zero_rows_of_w_o(p, slice(h, None, p.n_heads)), valid)


def _ablate_with_b_o(x, p, h, valid):
    return np.where(valid[..., None], ablated_output_reference(x, p, h, valid) - p.b_o, 0.0)


def _ablate_value_weights_only(x, p, h, valid):
    w_v = p.w_v.copy()
    w_v[:, _head(p, h)[0]] = 0.0                                         # b_V's slice still flows
    return _layer_output(x, dataclasses.replace(p, w_v=w_v), valid)


def _ablate_queries(x, p, h, valid):
    sl = _head(p, h)[0]
    w_q, b_q = p.w_q.copy(), p.b_q.copy()
    w_q[:, sl], b_q[sl] = 0.0, 0.0                                       # uniform weights, head still on
    return _layer_output(x, dataclasses.replace(p, w_q=w_q, b_q=b_q), valid)


def _not_ablated(x, p, h, valid):
    return _layer_output(x, p, valid)


ABLATION_MISTAKES = [
    Mistake("not_ablated", "this is the layer's output with every head on: head h is not switched off.",
            _not_ablated),
    Mistake("w_o_columns", "you zeroed head h's block of W_O's columns (output features). A head's output "
            "meets W_O in the rows `h*d_head : (h+1)*d_head`; zero those rows (or the head's slice of the "
            "concatenated heads), and every output feature keeps the other heads' part.", _ablate_w_o_columns),
    Mistake("strided_head_slice", "wrong head slice: you zeroed every H-th row of W_O (`h::H`). Head h owns the "
            "contiguous block `h*d_head : (h+1)*d_head`.", _ablate_strided_rows),
    Mistake("b_o_removed", "the output bias b_O was removed too. b_O belongs to the layer, not to a head: "
            "switching a head off leaves it.", _ablate_with_b_o),
    Mistake("value_bias_left", "you zeroed head h's columns of W_V but not its slice of b_V: every value of "
            "the head is then b_V's slice, and since the weights sum to 1 the head still adds its slice of "
            "b_V times its rows of W_O. Zero the head's output, not only its value weights.",
            _ablate_value_weights_only),
    Mistake("queries_zeroed", "zeroing head h's queries (W_Q and b_Q) does not switch it off: its scores become "
            "0, its weights uniform over the real keys, and it still adds the mean of its values. Zero the "
            "head's output instead.", _ablate_queries),
]


@checker("a layer's output with one head switched off")
def check_ablated_output(fn):
    """Check ``fn(x, p, h, valid) -> (B, T, d)``: the layer's attention output (before the residual) with head
    h's slice of the concatenated heads set to zero before W_O, as ``attnlab.pretrained.head_gates`` does."""
    task = "a layer's output with one head switched off"
    cases = _layer_cases()
    for case, x, p, h, valid in cases:
        got, dtype = _run_layer(task, fn, case, x, p, h, valid, x.shape)
        expected = ablated_output_reference(x, p, h, valid)
        _compare(task, case, got, expected, dtype, ABLATION_MISTAKES, (x, p, h, valid), "the output",
                 rows=valid)
    return R.passed(task, f"All {len(cases)} cases match the layer with head h's rows of W_O zeroed: the other "
                          f"heads, b_O and every bias of the other heads untouched, on every real query.")
