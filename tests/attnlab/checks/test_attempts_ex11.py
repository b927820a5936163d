"""Wrong attempts at sheet 11 (a pretrained model), each with the diagnosis it must get."""
import dataclasses

import numpy as np

import attnlab as al
import attnlab.checks as C
from attnlab import pretrained as pt

from .attempts import expect


def _head_qk(x, p, h, width=None):
    d_k = p.w_q.shape[1] // p.n_heads if width is None else width
    sl = slice(h * d_k, (h + 1) * d_k)
    return x @ p.w_q[:, sl] + p.b_q[sl], x @ p.w_k[:, sl] + p.b_k[sl], d_k


def _weights(q, k, d_k, keep):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)
    s = np.where(keep, s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_exercise_11_1_head_weights():
    check = C.check_head_weights

    def width_64(x, p, h, valid):
        q, k, _d = _head_qk(x, p, h, width=64)           # MiniLM's width is 32, and the checker's layers differ
        return _weights(q, k, 64, valid[:, None, :]) if q.shape[-1] else np.broadcast_to(
            np.where(valid[:, None, :], 1.0 / valid.sum(1)[:, None, None], 0.0), valid.shape + valid.shape[1:]).copy()
    expect(check, width_64, "11.1 head_weights", "a hard-coded head width of 64", "uniform_rows", "head width")

    def whole_layer(x, p, h, valid):
        allowed = al.masks.padding(valid.sum(axis=1), valid.shape[1])
        return pt.self_attention(p, x, allowed=allowed, query_valid=valid, return_weights=True)[1][:, h]
    expect(check, whole_layer, "11.1 head_weights", "pt.self_attention's weights", "forbidden_call",
           "attnlab.pretrained.self_attention")

    def by_d(x, p, h, valid):
        q, k, _d = _head_qk(x, p, h)
        return _weights(q, k, x.shape[-1], valid[:, None, :])
    expect(check, by_d, "11.1 head_weights", "scaled by sqrt(d)", "scale_by_d_model", "model width")

    def rows_masked(x, p, h, valid):
        q, k, d_k = _head_qk(x, p, h)
        return _weights(q, k, d_k, valid[:, :, None])
    expect(check, rows_masked, "11.1 head_weights", "the padding mask on the queries", "pad_not_masked",
           "padded keys")

    def rows_of_w(x, p, h, valid):
        d_k = p.w_q.shape[1] // p.n_heads
        sl = slice(h * d_k, (h + 1) * d_k)
        return _weights(x @ p.w_q[sl] + p.b_q[sl], x @ p.w_k[sl] + p.b_k[sl], d_k, valid[:, None, :])
    expect(check, rows_of_w, "11.1 head_weights", "rows of W_Q instead of columns", "", "p.w_q")


def test_exercise_11_3_special_share():
    check = C.check_special_share

    def last_column(weights, lengths):
        shares = [weights[b, :, :n, 0] + weights[b, :, :n, -1] for b, n in enumerate(lengths)]
        return np.concatenate(shares, axis=1).mean(axis=1)
    expect(check, last_column, "11.3 special_share", "[SEP] as the last column", "sep_at_last_position",
           "[PAD]")

    def every_row(weights, lengths):
        per = [(weights[b, :, :, 0] + weights[b, :, :, n - 1]) for b, n in enumerate(lengths)]
        return np.concatenate(per, axis=1).mean(axis=1)
    expect(check, every_row, "11.3 special_share", "padded query rows counted", "padded_queries_counted",
           "padded query rows")

    def sentence_means(weights, lengths):
        return np.mean([(weights[b, :, :n, 0] + weights[b, :, :n, n - 1]).mean(axis=1)
                        for b, n in enumerate(lengths)], axis=0)
    expect(check, sentence_means, "11.3 special_share", "mean of the sentence means", "mean_of_sentence_means",
           "short sentence")

    def per_sentence(weights, lengths):
        return np.stack([(weights[b, :, :n, 0] + weights[b, :, :n, n - 1]).mean(axis=1)
                         for b, n in enumerate(lengths)])
    expect(check, per_sentence, "11.3 special_share", "one row per sentence", "wrong_shape", "one number per head")

    def total(weights, lengths):
        return sum((weights[b, :, :n, 0] + weights[b, :, :n, n - 1]).sum(axis=1) for b, n in enumerate(lengths))
    expect(check, total, "11.3 special_share", "a sum, not a mean", "", "constant factor")


def _ablated(x, p, h, valid, **changes):
    allowed = al.masks.padding(valid.sum(axis=1), valid.shape[1])
    return pt.self_attention(dataclasses.replace(p, **changes), x, allowed=allowed, query_valid=valid)


def test_exercise_11_4_ablated_output():
    check = C.check_ablated_output

    def columns(x, p, h, valid):
        d_k = p.w_q.shape[1] // p.n_heads
        w_o = p.w_o.copy()
        w_o[:, h * d_k:(h + 1) * d_k] = 0
        return _ablated(x, p, h, valid, w_o=w_o)
    expect(check, columns, "11.4 ablated_output", "W_O's columns zeroed", "w_o_columns", "columns")

    def value_weights(x, p, h, valid):
        d_k = p.w_q.shape[1] // p.n_heads
        w_v = p.w_v.copy()
        w_v[:, h * d_k:(h + 1) * d_k] = 0
        return _ablated(x, p, h, valid, w_v=w_v)
    expect(check, value_weights, "11.4 ablated_output", "W_V zeroed, b_V kept", "value_bias_left", "b_V")

    def no_bias(x, p, h, valid):
        d_k = p.w_q.shape[1] // p.n_heads
        w_o = p.w_o.copy()
        w_o[h * d_k:(h + 1) * d_k] = 0
        return _ablated(x, p, h, valid, w_o=w_o, b_o=np.zeros_like(p.b_o))
    expect(check, no_bias, "11.4 ablated_output", "b_O removed too", "b_o_removed", "b_O")

    def strided(x, p, h, valid):
        w_o = p.w_o.copy()
        w_o[h::p.n_heads] = 0
        return _ablated(x, p, h, valid, w_o=w_o)
    expect(check, strided, "11.4 ablated_output", "every H-th row", "strided_head_slice", "contiguous")

    def unmasked(x, p, h, valid):
        d_k = p.w_q.shape[1] // p.n_heads
        w_o = p.w_o.copy()
        w_o[h * d_k:(h + 1) * d_k] = 0
        return pt.self_attention(dataclasses.replace(p, w_o=w_o), x)
    expect(check, unmasked, "11.4 ablated_output", "no padding mask", "", "only")
