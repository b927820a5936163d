"""Every bad-input path of the NumPy side raises a ValueError that names the argument and shapes."""
import numpy as np
import pytest

import attnlab as al

q = np.ones((3, 4))
k = np.ones((5, 4))
v = np.ones((5, 2))


@pytest.mark.parametrize(
    "args,kwargs,message",
    [
        (
            (np.ones((3, 4)), np.ones((5, 3)), v),
            {},
            r"q and k must share the last axis d_k: q has shape \(3, 4\), k has shape \(5, 3\)",
        ),
        ((q, k, np.ones((6, 2))), {}, r"k and v must have the same number of positions S.*\(5, 4\).*\(6, 2\)"),
        ((np.ones(4), k, v), {}, r"q must have at least 2 axes.*\(4\)"),
        ((np.ones((0, 4)), k, v), {}, r"q has an empty axis"),
        (
            (np.ones((2, 3, 4)), np.ones((3, 5, 4)), np.ones((3, 5, 2))),
            {},
            r"leading \(batch/head\) axes.*do not broadcast",
        ),
        ((q, k, v), {"allowed": np.ones((3, 5))}, r"allowed must be a boolean array"),
        (
            (q, k, v),
            {"allowed": np.ones((3, 4), dtype=bool)},
            r"allowed of shape \(3, 4\) does not broadcast to \(3, 5\)",
        ),
        ((q, k, v), {"query_valid": np.ones(4, dtype=bool)}, r"query_valid of shape \(4\) does not broadcast to \(3\)"),
        ((q, k, v), {"scale": -1.0}, r"scale must be a finite positive number"),
        ((q, k, v), {"scale": float("nan")}, r"scale must be a finite positive number"),
        ((np.full((3, 4), np.nan), k, v), {}, r"q contains a non-finite value .* at index \(0, 0\)"),
        ((q, np.full((5, 4), np.inf), v), {}, r"k contains a non-finite value"),
        ((np.array([["a"] * 4] * 3), k, v), {}, r"q must hold real numbers"),
    ],
)
def test_attention_bad_input(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        al.attention(*args, **kwargs)


def test_overflowing_scores_raise_instead_of_nan():
    big = np.full((2, 3), 1e20, dtype=np.float32)
    with pytest.raises(ValueError, match=r"scores q k\^T \* scale overflowed float32"):
        al.attention(big, big, big)
    assert np.isfinite(al.attention(big.astype(np.float64), big, big)).all()


def test_empty_visibility_is_a_value_error_naming_the_row():
    allowed = np.ones((3, 5), dtype=bool)
    allowed[2] = False
    with pytest.raises(al.EmptyVisibilityError, match=r"index \(2,\)"):
        al.attention(q, k, v, allowed=allowed)


def test_softmax_bad_input():
    with pytest.raises(ValueError, match="axis 2 is out of range for x of shape \\(3, 4\\)"):
        al.softmax(np.ones((3, 4)), axis=2)
    with pytest.raises(ValueError, match="non-finite"):
        al.softmax(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="scalar"):
        al.softmax(1.0)


x = np.ones((2, 4, 6))
W = dict(w_q=np.ones((6, 8)), w_k=np.ones((6, 8)), w_v=np.ones((6, 8)), w_o=np.ones((8, 6)))


@pytest.mark.parametrize("change,kwargs,message", [
    ({}, {"n_heads": 3}, r"w_q has 8 output columns, which do not split into 3 query heads"),
    ({}, {"n_heads": 4, "n_kv_heads": 3}, r"n_kv_heads must divide n_heads: n_heads=4, n_kv_heads=3"),
    ({}, {"n_heads": 0}, r"n_heads must be a positive integer"),
    ({"w_q": np.ones((5, 8))}, {"n_heads": 2}, r"x_q has 6 features .* but w_q expects 5"),
    ({"w_o": np.ones((6, 6))}, {"n_heads": 2}, r"w_o has 6 rows but the 2 concatenated heads give 2 \* 4 = 8"),
    ({"w_k": np.ones((6, 6))}, {"n_heads": 2}, r"queries and keys must share d_k"),
    ({"w_q": np.ones((6, 8, 1))}, {"n_heads": 2}, r"w_q must be a 2-D matrix"),
])
def test_multi_head_bad_input(change, kwargs, message):
    w = {**W, **change}
    with pytest.raises(ValueError, match=message):
        al.multi_head_attention(x, x, w["w_q"], w["w_k"], w["w_v"], w["w_o"], **kwargs)


def test_kv_head_for_bad_input():
    with pytest.raises(ValueError, match=r"h must be a query head index in \[0, 4\)"):
        al.kv_head_for(4, 4, 2)
    with pytest.raises(ValueError, match="must divide"):
        al.kv_head_for(0, 4, 3)


@pytest.mark.parametrize("call,message", [
    (lambda: al.masks.causal(0), r"T must be an integer >= 1"),
    (lambda: al.masks.causal(3, 4, offset=1.5), r"offset must be an integer"),
    (lambda: al.masks.padding([3, 5], 4), r"every length must lie in \[0, S=4\]"),
    (lambda: al.masks.padding([[1]], 4), r"lengths must be a 1-D array of integers"),
    (lambda: al.masks.sliding_window(4, 0), r"window must be an integer >= 1"),
    (lambda: al.masks.documents([]), r"doc_ids must have shape"),
    (lambda: al.masks.to_additive(np.zeros((2, 2))), r"allowed must be a boolean array"),
])
def test_mask_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_grad_bad_input():
    with pytest.raises(ValueError, match=r"grad_out must have the output's shape \(3, 2\); got \(3, 3\)"):
        al.grad.attention_backward(q, k, v, np.ones((3, 3)))
