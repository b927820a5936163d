"""Checkers for chapter 11: one head of a pretrained layer, the weight on [CLS]/[SEP], and head ablation.

The cases are small synthetic layers in the format of :class:`attnlab.pretrained.AttentionParams`
(row-vector weights, biases, d = H * d_k, right padding), so a check runs in milliseconds and needs
neither the model nor ``transformers``; the exercise then applies the same function to the real
model. Only the rows of real (valid) queries are compared: on padded rows the model computes
something nobody uses, and ``attnlab`` returns zeros, so either is accepted. Results must be float64
(a NumPy array, or a float64 tensor): the inputs are float64 and the exercises say so.
"""
from __future__ import annotations

import copy
import dataclasses

import numpy as np

from .. import masks
from .. import reference as ref
from ..i18n import N_, _
from . import seeds
from .diagnosis import Trial, join
from .engine import Mistake, Stop, describe_difference, error_hint, models
from .registry import checker

HEAD_WEIGHT_SHORTCUTS = ("attnlab.pretrained.self_attention", "attnlab.pretrained.run_and_capture")

# ------------------------------------------------------------------------------- synthetic layers


def _params(seed: int, d: int, n_heads: int):
    """A random layer with visible biases: q and k entries of size about 1, b_Q as large as q."""
    from ..pretrained import AttentionParams

    rng = seeds.rng(seed)
    w = [rng.normal(size=(d, d)) / np.sqrt(d) for _unused in range(4)]        # (d, H*d_k) each
    b = [rng.normal(size=d) for _unused in range(4)]                           # (H*d_k,) each
    return AttentionParams(w[0], w[1], w[2], w[3], b[0], b[1], b[2], b[3], n_heads)


def _layer_cases():
    """(case, x (B, T, d), params, head h, valid (B, T)) for the head-weights and ablation checks."""
    cases = []
    for seed, lengths, T, d, H, h in ((3, [5, 3], 5, 12, 3, 1), (4, [6, 2, 4], 6, 16, 4, 3),
                                      (5, [4], 4, 12, 2, 0)):
        rng = seeds.rng(100 + seed)
        valid = np.arange(T)[None, :] < np.array(lengths)[:, None]      # (B, T): right padding
        x = rng.normal(size=(len(lengths), T, d))                       # (B, T, d)
        pad = _("no padding") if min(lengths) == T else _("right padding")
        case = _("B = {B} sentences of lengths {lengths} ({pad}, T = {T}), d = {d}, H = {H} heads of width "
                 "{width}, head h = {h}").format(B=len(lengths), lengths=lengths, pad=pad, T=T, d=d, H=H,
                                                  width=d // H, h=h)
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
    sl, _unused = _head(p, h)
    return x @ p.w_q[:, sl] + p.b_q[sl], x @ p.w_k[:, sl] + p.b_k[sl]   # (B, T, d_k) each


def head_weights_reference(x, p, h, valid):
    """Head h's weights (B, T, T) by attnlab's reference, on the head's slices of Q and K."""
    q, k = _qk(x, p, h)
    allowed = masks.padding(np.asarray(valid).sum(axis=1), valid.shape[1])   # (B, 1, T)
    _unused, weights = ref.attention(q, k, k, allowed=allowed, return_weights=True)
    return weights                                                       # (B, T, T)


# ------------------------------------------------------------------------------- shared plumbing


def _run_layer(run, fn, case, x, p, h, valid, shape):
    """fn(x, p, h, valid) on copies, as float64 (the engine copies the arrays; the parameters are copied here)."""
    p_given = copy.deepcopy(p)
    out = run.call(fn, case, x, p_given, h, valid, hint=_layer_hint)
    changed = [f"p.{f.name}" for f in dataclasses.fields(p) if isinstance(getattr(p, f.name), np.ndarray)
               and not np.array_equal(getattr(p, f.name), getattr(p_given, f.name))]
    if changed:
        fields = ", ".join(changed)
        run.fail(_("On {case}, your function changed {value} in place (for example `p.b_q[...] = "
                   "0`). Work on new arrays, e.g. `dataclasses.replace(p, "
                   "b_q=np.zeros_like(p.b_q))`.").format(case=_(case), value=fields), "changes_input")
    return run.array(out, case, shape=shape, kind="any", dtype="float64")


def _layer_hint(err):
    if "not subscriptable" in str(err) or "has no attribute" in str(err):
        return _("`p` is an `attnlab.pretrained.AttentionParams`: read its matrices as attributes, `p.w_q`, "
                 "`p.b_q`, `p.w_k`, ..., `p.n_heads`.")
    if "matmul" in str(err) or "mismatch" in str(err):
        return _("the weights are in the row-vector convention, `p.w_q` of shape (d, H*d_head): head h owns the "
                 "columns `p.w_q[:, h*d_head:(h+1)*d_head]` (and the same slice of `p.b_q`), so that "
                 "`x @ p.w_q[:, sl]` is (B, T, d_head).")
    return error_hint(err)


def _each(run, cases, student, reference, mistakes, name, properties_of=None):
    """The engine's comparison case by case on the rows of real queries (a model's padded rows do not count), with
    the other cases confirming a diagnosis; when no model holds, a property of the whole output may name the
    mistake, and the largest difference is reported with its full index."""
    current = {}

    def trial(item):
        case, x, p, h, valid = item
        got, expected = student(item), reference(x, p, h, valid)
        current.update(case=case, got=got, expected=expected, valid=valid)
        return Trial(case, got[valid], expected[valid], (x, p, h, valid),
                     pick=lambda out, valid=valid: np.asarray(out, dtype=float)[valid])

    try:
        run.each_case(cases, trial, mistakes, name=name)
    except Stop as stop:
        if not stop.unexplained:
            raise
        case, got, expected, valid = current["case"], current["got"], current["expected"], current["valid"]
        for key, test, text in (properties_of(valid) if properties_of else ()):
            if test(got):
                run.fail(_("On {case}, {text}").format(case=_(case), text=text), key)
        keep = np.broadcast_to(valid.reshape(valid.shape + (1,) * (got.ndim - valid.ndim)), got.shape)
        mine = np.where(keep, got, expected)
        text = _("On {case}, {name} differs from the reference on the rows of real queries: {value}.").format(
            case=_(case), name=_(name), value=describe_difference(mine, expected))
        run.fail(join(text, _padded_sentences_only(mine, expected, valid)))


def _padded_sentences_only(got, expected, valid) -> str:
    """A sentence when the sentences without padding match and only padded ones differ."""
    wrong = [b for b in range(len(valid)) if not np.allclose(got[b], expected[b], rtol=1e-9, atol=1e-12)]
    padded = [b for b in range(len(valid)) if not valid[b].all()]
    if wrong and set(wrong) <= set(padded):
        return _("Only the sentences with padding differ ({rows}); the others match: is the padding mask "
                       "applied to the keys?").format(rows=", ".join(str(b) for b in wrong))
    return ""


# ------------------------------------------------------------------------------- check: head weights

HEAD_WEIGHT_MISTAKES: list[Mistake] = []
model = models(HEAD_WEIGHT_MISTAKES)


@model("no_scale", N_("missing scaling: divide each head's scores by sqrt(d_head), the head width (d / H, "
       "384 / 12 = 32 in the model)."))
def head_weights_without_scale(x, p, h, valid):
    return _weights(*_qk(x, p, h), valid, 1.0)


@model("scale_by_d_model", N_("wrong scaling: you divided by sqrt(d), the model width; each head divides by "
       "sqrt(d_head), the width of its own queries and keys (d / H)."))
def head_weights_scaled_by_d_model(x, p, h, valid):
    return _weights(*_qk(x, p, h), valid, 1 / np.sqrt(x.shape[-1]))


@model("scale_by_d_head", N_("wrong scaling: you divided by d_head; divide by its square root."))
def head_weights_scaled_by_d_head(x, p, h, valid):
    return _weights(*_qk(x, p, h), valid, 1 / _head(p, h)[1])


@model("strided_head_slice", N_("wrong head slice: you took every H-th column of W_Q and W_K (`w[:, h::H]`, what a "
       "reshape to (d, d_head, H) gives). Head h owns the contiguous block of columns `h*d_head : (h+1)*d_head`, "
       "and the same block of the biases."))
def head_weights_strided_slice(x, p, h, valid):
    cols = slice(h, None, p.n_heads)                                     # every H-th feature
    q, k = x @ p.w_q[:, cols] + p.b_q[cols], x @ p.w_k[:, cols] + p.b_k[cols]
    return _weights(q, k, valid, 1 / np.sqrt(_head(p, h)[1]))


@model("transposed_weights", N_("the weight matrices are transposed: `p.w_q` is already in the row-vector convention, "
       "shape (d, H*d_head), so `q = x @ p.w_q + p.b_q`. (Only `nn.Linear.weight` needs the `.T`; here the square "
       "shapes hide the mistake.)"))
def head_weights_transposed_weights(x, p, h, valid):
    sl, d_k = _head(p, h)
    q, k = x @ p.w_q.T[:, sl] + p.b_q[sl], x @ p.w_k.T[:, sl] + p.b_k[sl]
    return _weights(q, k, valid, 1 / np.sqrt(d_k))


@model("no_query_bias", N_("the query bias b_Q is missing: q = x W_Q + b_Q (its slice for head h). It adds b_Q k_j^T "
       "to the scores, which depends on the key j, so it changes the weights. (The key bias does not: Exercise 11.2.)"))
def head_weights_without_query_bias(x, p, h, valid):
    sl, d_k = _head(p, h)
    return _weights(x @ p.w_q[:, sl], x @ p.w_k[:, sl], valid, 1 / np.sqrt(d_k))


@model("scores_transposed", N_("the scores are K Q^T instead of Q K^T, so row i does not belong to query i: use "
       "`q @ k.swapaxes(-1, -2)`."))
def head_weights_scores_transposed(x, p, h, valid):
    q, k = _qk(x, p, h)
    return _weights(k, q, valid, 1 / np.sqrt(_head(p, h)[1]))


@model("wrong_axis", N_("softmax over the wrong axis: your weights sum to 1 down each column (over the queries). "
       "Each query distributes its weight over the keys: normalise along the last axis."))
def head_weights_softmax_over_queries(x, p, h, valid):
    q, k = _qk(x, p, h)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(_head(p, h)[1])        # (B, T, T)
    return np.where(valid[:, None, :], _masked_softmax(scores, valid[:, :, None], axis=-2), 0.0)


@model("pad_not_masked", N_("[PAD] is not masked: real queries give weight to padded keys. Put the scores of padded "
       "keys to -inf before the softmax (`np.where(valid[:, None, :], scores, -np.inf)`)."))
def head_weights_pad_not_masked(x, p, h, valid):
    return _weights(*_qk(x, p, h), np.ones_like(valid), 1 / np.sqrt(_head(p, h)[1]))


@model("mask_after_softmax", N_("the padding mask was applied after the softmax: zeroing the padded keys' weights "
       "afterwards leaves rows that sum to less than 1. Mask the scores (-inf) before the softmax."))
def head_weights_mask_after_softmax(x, p, h, valid):
    return np.where(valid[:, None, :], head_weights_pad_not_masked(x, p, h, valid), 0.0)


HEAD_WEIGHT_PROPERTIES = [   # found from a property of the weights when no model matches
    Mistake("uniform_rows", N_("every real query spreads its weight evenly: the head's scores are constant (a wrong "
                               "or empty head slice).")),
    Mistake("not_finite", N_("the weights of a real query contain nan or inf.")),
    Mistake("rows_not_normalised", N_("the weights of a real query do not sum to 1 over the keys.")),
]


def _columns_sum_to_one(a, valid):
    """True if the columns of real keys sum to 1, over all queries or over the real ones."""
    over_all = a.sum(axis=-2)[valid]                                     # (keys,)
    over_real = (a * valid[:, :, None]).sum(axis=-2)[valid]
    return bool(np.allclose(over_all, 1.0, atol=1e-8) or np.allclose(over_real, 1.0, atol=1e-8))


def _uniform_rows(a, valid) -> bool:
    """True if every real query spreads its weight evenly over the real keys (constant scores)."""
    n = valid.sum(axis=1)[:, None, None]                                 # (B, 1, 1)
    even = np.where(valid[:, None, :], 1.0 / n, 0.0)                     # (B, 1, T)
    return bool(np.allclose(np.broadcast_to(even, a.shape)[valid], a[valid], atol=1e-9))


def _weight_properties(valid):
    real = valid[:, :, None] & ~valid[:, None, :]                        # real query, padded key
    return [
        ("uniform_rows", lambda a: _uniform_rows(a, valid),
         _("every real query spreads its weight evenly over the real keys, so its scores are all equal: the "
           "head's q or k is zero or empty. Is the head's slice right (a hard-coded head width, or a slice beyond "
           "the matrix, gives an empty block)? Head h owns columns `h*d_head:(h+1)*d_head` with d_head = d / H.")),
        ("pad_not_masked", lambda a: bool(np.any(np.abs(a[real]) > 1e-12)),
         _("a real query gives weight to a padded key: mask the scores of [PAD] keys (-inf) before the softmax, "
           "so that their weights are exactly 0.")),
        ("wrong_axis", lambda a: _columns_sum_to_one(a, valid),
         _("your weights sum to 1 down each column, over the queries: each query distributes its weight over "
           "the keys, so the softmax runs along the last axis.")),
        ("not_finite", lambda a: not np.all(np.isfinite(a[valid])),
         _("the weights of a real query contain nan or inf: subtract each row's maximum before `np.exp`, and "
           "mask with -inf only along the keys (every row keeps its [CLS], so no row is entirely -inf).")),
        ("rows_not_normalised", lambda a: not np.allclose(a.sum(axis=-1)[valid], 1.0, atol=1e-8),
         _("the weights of a real query do not sum to 1 over the keys: the softmax runs over the last axis, the "
           "keys, after masking.")),
    ]


@checker(N_("weights of one head of a pretrained layer"), HEAD_WEIGHT_MISTAKES + HEAD_WEIGHT_PROPERTIES,
         forbid=HEAD_WEIGHT_SHORTCUTS)
def check_head_weights(run, fn):
    """Check ``fn(x, p, h, valid)``: head h's attention weights (B, T, T) from the hidden states x (B, T, d)
    entering the layer, its parameters p (an ``AttentionParams``) and valid (B, T), True = real token.
    ``al.attention`` may do the softmax; ``pt.self_attention(..., return_weights=True)`` would do the whole
    exercise and is refused."""
    cases = _layer_cases()

    def student(item):
        case, x, p, h, valid = item
        return _run_layer(run, fn, case, x, p, h, valid, x.shape[:2] + (x.shape[1],))

    _each(run, cases, student, head_weights_reference, HEAD_WEIGHT_MISTAKES, N_("the weights"),
          properties_of=_weight_properties)
    return run.passed(_("All {n_cases} cases match attnlab's attention on head h's slice of Q and "
                        "K, with the biases, the 1/sqrt(d_head) scaling and the padded keys "
                        "masked, on every real query. (Whether you added b_K makes no difference: "
                        "Exercise 11.2 says why.)").format(n_cases=len(cases)))


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


SHARE_MISTAKES: list[Mistake] = []
model = models(SHARE_MISTAKES)


@model("sep_at_last_position", N_("[SEP] was taken at the last position, `[..., -1]`; in a padded sentence that is a "
       "[PAD]. [SEP] sits at position `lengths[b] - 1`."))
def share_with_sep_at_last_position(w, lengths):
    return _key_share(w, lengths, lambda n, T: (0, T - 1))


@model("padded_queries_counted", N_("the padded query rows were counted: the model gives them weights that sum to 1 "
       "too, but they are not tokens of the sentence. Average over the real queries `i < lengths[b]` only."))
def share_with_padded_queries(w, lengths):
    return _key_share(w, lengths, lambda n, T: (0, n - 1), queries_of=lambda n: w.shape[-1])


@model("cls_only", N_("only the weight on [CLS] was counted; add the weight on [SEP] (key `lengths[b] - 1`)."))
def share_of_cls_only(w, lengths):
    return _key_share(w, lengths, lambda n, T: (0,))


@model("sep_only", N_("only the weight on [SEP] was counted; add the weight on [CLS] (key 0)."))
def share_of_sep_only(w, lengths):
    return _key_share(w, lengths, lambda n, T: (n - 1,))


@model("mean_of_sentence_means", N_("you averaged each sentence first and then the sentences, which weighs a short "
       "sentence's queries more. Every real query of the batch counts once: sum over all of them and divide by "
       "`lengths.sum()`."))
def share_as_mean_of_sentence_means(w, lengths):
    return _key_share(w, lengths, lambda n, T: (0, n - 1), per_sentence=True)


@model("mean_of_the_two", N_("you averaged the weights on [CLS] and [SEP] instead of adding them: the share on the "
       "two is the sum of the two weights."))
def share_as_mean_of_the_two(w, lengths):
    return _key_share(w, lengths, lambda n, T: (0, n - 1), factor=0.5)


@model("rows_not_columns", N_("you took the rows of [CLS] and [SEP] (the weight they give as queries); the share is "
       "the weight every query gives to them as keys, the columns `weights[b, :, i, 0]` and "
       "`weights[b, :, i, lengths[b] - 1]`."))
def share_of_the_markers_rows(w, lengths):
    return _key_share(np.swapaxes(w, -1, -2), lengths, lambda n, T: (0, n - 1))


def _share_cases():
    cases = []
    for seed, lengths, T, H in ((11, [6, 4, 3], 6, 3), (12, [2, 7, 5, 7], 7, 2), (13, [5], 5, 4)):
        rng = seeds.rng(seed)
        B = len(lengths)
        keys = np.arange(T)[None, :] < np.array(lengths)[:, None]       # (B, T)
        scores = rng.normal(scale=1.5, size=(B, H, T, T))
        weights = _masked_softmax(scores, keys[:, None, None, :])        # (B, H, T, T), padded rows too
        pad = _("no padding") if min(lengths) == T else _("right padding")
        cases.append((_("B = {B} sentences of lengths {lengths} ({pad}, T = {T}), H = {H} heads").format(
                          B=B, lengths=lengths, pad=pad, T=T, H=H),
                      weights, np.array(lengths)))
    return cases


def _share_shape_hint(shape):
    if len(shape) > 1:
        return _("one number per head: average over sentences and queries, sum over the two keys.")
    return None


@checker(N_("share of the weight on [CLS] and [SEP]"), SHARE_MISTAKES)
def check_special_share(run, fn):
    """Check ``fn(weights, lengths) -> (H,)``: per head, the weight a real query puts on [CLS] and [SEP]
    together, averaged over every real query of the batch. weights (B, H, T, T) float64, lengths (B,)."""
    cases = _share_cases()

    def trial(item):
        case, weights, lengths = item
        out = run.call(fn, case, weights, lengths, hint=error_hint)
        got = run.array(out, case, "your result", shape=(weights.shape[1],), shape_hint=_share_shape_hint,
                        kind="any", dtype="float64")
        return Trial(case, got, special_share_reference(weights, lengths), (weights, lengths))

    run.each_case(cases, trial, SHARE_MISTAKES, name=N_("your result"))
    return run.passed(_("All {n_cases} cases match: [CLS] at key 0 and [SEP] at key `lengths[b] - "
                        "1`, every real query counted once, padded queries left out.").format(n_cases=len(cases)))


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
    """The layer's attention output with head h's slice of the concatenated heads zero before W_O: the same as
    zeroing head h's rows of W_O (the head's output meets W_O only there)."""
    return _layer_output(x, _zero_rows_of_w_o(p, _head(p, h)[0]), valid)


ABLATION_MISTAKES: list[Mistake] = []
model = models(ABLATION_MISTAKES)


@model("not_ablated", N_("this is the layer's output with every head on: head h is not switched off."))
def ablation_forgotten(x, p, h, valid):
    return _layer_output(x, p, valid)


@model("w_o_columns", N_("you zeroed head h's block of W_O's columns (output features). A head's output meets W_O in "
       "the rows `h*d_head : (h+1)*d_head`; zero those rows (or the head's slice of the concatenated heads), and "
       "every output feature keeps the other heads' part."))
def ablation_of_w_o_columns(x, p, h, valid):
    w_o = p.w_o.copy()
    w_o[:, _head(p, h)[0]] = 0.0
    return _layer_output(x, dataclasses.replace(p, w_o=w_o), valid)


@model("strided_head_slice", N_("wrong head slice: you zeroed every H-th row of W_O (`h::H`). Head h owns the "
       "contiguous block `h*d_head : (h+1)*d_head`."))
def ablation_of_strided_rows(x, p, h, valid):
    return _layer_output(x, _zero_rows_of_w_o(p, slice(h, None, p.n_heads)), valid)


@model("b_o_removed", N_("the output bias b_O was removed too. b_O belongs to the layer, not to a head: switching a "
       "head off leaves it."))
def ablation_without_b_o(x, p, h, valid):
    return np.where(valid[..., None], ablated_output_reference(x, p, h, valid) - p.b_o, 0.0)


@model("value_bias_left", N_("you zeroed head h's columns of W_V but not its slice of b_V: every value of the head is "
       "then b_V's slice, and since the weights sum to 1 the head still adds its slice of b_V times its rows of "
       "W_O. Zero the head's output, not only its value weights."))
def ablation_of_value_weights_only(x, p, h, valid):
    w_v = p.w_v.copy()
    w_v[:, _head(p, h)[0]] = 0.0                                         # b_V's slice still flows
    return _layer_output(x, dataclasses.replace(p, w_v=w_v), valid)


@model("queries_zeroed", N_("zeroing head h's queries (W_Q and b_Q) does not switch it off: its scores become 0, its "
       "weights uniform over the real keys, and it still adds the mean of its values. Zero the head's output "
       "instead."))
def ablation_of_queries(x, p, h, valid):
    sl = _head(p, h)[0]
    w_q, b_q = p.w_q.copy(), p.b_q.copy()
    w_q[:, sl], b_q[sl] = 0.0, 0.0                                       # uniform weights, head still on
    return _layer_output(x, dataclasses.replace(p, w_q=w_q, b_q=b_q), valid)


@checker(N_("a layer's output with one head switched off"), ABLATION_MISTAKES)
def check_ablated_output(run, fn):
    """Check ``fn(x, p, h, valid) -> (B, T, d)``: the layer's attention output (before the residual) with head h's
    slice of the concatenated heads set to zero before W_O, as ``attnlab.pretrained.head_gates`` does.
    ``pt.self_attention`` on changed parameters is allowed: the exercise is which parameters to change."""
    cases = _layer_cases()

    def student(item):
        case, x, p, h, valid = item
        return _run_layer(run, fn, case, x, p, h, valid, x.shape)

    _each(run, cases, student, ablated_output_reference, ABLATION_MISTAKES, N_("the output"))
    return run.passed(_("All {n_cases} cases match the layer with head h's rows of W_O zeroed: the "
                        "other heads, b_O and every bias of the other heads untouched, on every "
                        "real query.").format(n_cases=len(cases)))
