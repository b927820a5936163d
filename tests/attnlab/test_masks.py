"""Mask builders against explicit definitions, torch's causal_lower_right, and the converters."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.attention.bias import causal_lower_right

import attnlab as al


@settings(max_examples=60, deadline=None)
@given(T=st.integers(1, 9), extra=st.integers(0, 9))
def test_default_causal_is_bottom_right_like_torch(T, extra):
    S = T + extra
    ours = al.masks.causal(T, S)
    theirs = causal_lower_right(T, S)._materialize(device=torch.device("cpu")).numpy()
    assert ours.shape == (T, S)
    assert np.array_equal(ours, theirs)


@settings(max_examples=60, deadline=None)
@given(T=st.integers(1, 8), S=st.integers(1, 8), offset=st.integers(-3, 10))
def test_causal_follows_absolute_positions(T, S, offset):
    m = al.masks.causal(T, S, offset=offset)
    for i in range(T):
        for j in range(S):
            assert m[i, j] == (j <= i + offset)


def test_cached_decoding_query_sees_every_key():
    m = al.masks.causal(1, 9, offset=8)        # one new query at absolute position 8, nine cached keys
    assert m.all()
    top_left = np.tril(np.ones((1, 9), dtype=bool))
    assert top_left.sum() == 1                 # the wrong, top-left triangle would see only key 0


@settings(max_examples=40, deadline=None)
@given(T=st.integers(1, 10), window=st.integers(1, 5))
def test_sliding_window_definition(T, window):
    m = al.masks.sliding_window(T, window)
    i, j = np.indices((T, T))
    assert np.array_equal(m, (j <= i) & (i - j < window))
    assert (m.sum(-1) == np.minimum(np.arange(T) + 1, window)).all()


def test_padding_shape_and_values():
    m = al.masks.padding([3, 1, 0], 4)
    assert m.shape == (3, 1, 4)
    assert m[:, 0].tolist() == [[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]]


def test_documents_block_diagonal():
    m = al.masks.documents([0, 0, 1, 1, 1, 2])
    assert m.shape == (6, 6)
    assert m[0, 1] and not m[1, 2] and m[2, 4] and not m[4, 5] and m[5, 5]
    both = m & al.masks.causal(6)
    assert not both[0, 1] and both[1, 0]


def test_additive_round_trip_and_refusals():
    allowed = al.masks.causal(4)
    add = al.masks.to_additive(allowed)
    assert set(np.unique(add)) == {0.0, -np.inf}
    assert np.array_equal(al.masks.from_additive(add), allowed)
    with pytest.raises(ValueError, match="-1e9|bias, not a mask"):
        al.masks.from_additive(np.where(allowed, 0.0, -1e9))
    assert np.array_equal(al.masks.from_forbidden(~allowed), allowed)
    with pytest.raises(ValueError, match="boolean"):
        al.masks.from_forbidden(np.ones((2, 2)))


def test_mask_polarity_matches_torch_apis():
    torch.manual_seed(1)
    x = torch.randn(1, 4, 6, dtype=torch.float64)
    m = torch.nn.MultiheadAttention(6, 1, batch_first=True, bias=False, dtype=torch.float64)
    allowed = al.masks.causal(4)
    y1, _ = m(x, x, x, attn_mask=torch.from_numpy(~allowed))                 # nn.MHA: True = masked
    y2, _ = m(x, x, x, attn_mask=torch.from_numpy(al.masks.to_additive(allowed)))
    np.testing.assert_allclose(y1.detach().numpy(), y2.detach().numpy(), atol=1e-12)
