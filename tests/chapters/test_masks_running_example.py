"""Claims chapter 3 (chapters/03_masks.md) makes about the running example's masks.

Each expected value is derived here from the example's definition (the pronoun head: the only
non-zero query is she's, (2, 0), the only non-zero key Mia's, (2, 0); so every score is 0 except
she against Mia, 4 / sqrt 2 = 2 sqrt 2) and compared with torch's SDPA, al.attention or an
explicit loop over the mask's definition.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

import attnlab as al

ex = al.example
E = np.exp(2 * np.sqrt(2))              # e^(score of she against Mia)
MIA, SAID, SHE, WON = range(4)


def _pronoun_head():
    return tuple(torch.tensor(np.array(m)) for m in ex.qkv(ex.PRONOUN))


def _sdpa_weights(q, k, allowed):
    """The weights SDPA uses: softmax of the scaled scores with -inf at forbidden entries."""
    scores = q @ k.transpose(-2, -1) / np.sqrt(q.shape[-1])
    return torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)


def test_the_causal_mask_raises_she_s_weight_on_mia_and_leaves_mia_only_herself():
    q, k, v = _pronoun_head()
    allowed = torch.tensor(ex.causal_allowed())
    w = _sdpa_weights(q, k, allowed)
    np.testing.assert_allclose(w[SHE].numpy(), [E / (E + 2), 1 / (E + 2), 1 / (E + 2), 0], rtol=1e-14)
    np.testing.assert_array_equal(w[MIA].numpy(), [1, 0, 0, 0])
    np.testing.assert_allclose(w[SAID].numpy(), [0.5, 0.5, 0, 0], rtol=0, atol=0)
    # without a mask she spreads over four keys: E / (E + 3)
    open_w = _sdpa_weights(q, k, torch.ones(4, 4, dtype=torch.bool))
    np.testing.assert_allclose(float(open_w[SHE, MIA]), E / (E + 3), rtol=1e-14)
    O, A = al.attention(*ex.qkv(ex.PRONOUN), allowed=ex.causal_allowed(), return_weights=True)
    np.testing.assert_allclose(A, w.numpy(), rtol=0, atol=1e-15)
    np.testing.assert_allclose(O, F.scaled_dot_product_attention(q, k, v, attn_mask=allowed).numpy(), atol=1e-15)


def test_zero_padding_embeddings_without_a_mask_halve_the_outputs_of_she_won():
    batch = ex.padded_batch()
    w_q, w_k, w_v = ex.projections(ex.PRONOUN)
    X = np.array(batch.X)
    q, k, v = (torch.tensor(X @ w) for w in (w_q, w_k, w_v))
    masked = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.tensor(batch.allowed))
    unmasked = F.scaled_dot_product_attention(q, k, v)
    # "she won" has no name: every score is 0, so the weights are uniform over what may be read:
    # (v_she + v_won) / 2 with the mask, the same sum over four with the zero pads
    v_she, v_won = X[1, 0] @ w_v, X[1, 1] @ w_v
    np.testing.assert_allclose(masked[1, :2].numpy(), np.tile((v_she + v_won) / 2, (2, 1)), atol=1e-15)
    np.testing.assert_allclose(unmasked[1, :2].numpy(), np.tile((v_she + v_won) / 4, (2, 1)), atol=1e-15)
    alone = al.attention(X[1, :2] @ w_q, X[1, :2] @ w_k, X[1, :2] @ w_v)
    np.testing.assert_allclose(masked[1, :2].numpy(), alone, atol=1e-15)


def test_a_float_01_mask_leaves_the_pads_one_over_one_plus_e_of_each_row():
    batch = ex.padded_batch()
    X = np.array(batch.X)
    q, k, v = (torch.tensor(X @ w) for w in ex.projections(ex.PRONOUN))
    float_mask = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]], dtype=torch.float64)[:, None, :]
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask)
    w = torch.full((4, 4), 1.0, dtype=torch.float64)
    w[:, 2:] = 1 / np.e                      # e^0 against e^1, row by row
    w = w / w.sum(-1, keepdim=True)
    np.testing.assert_allclose(float(w[0, 2:].sum()), 1 / (1 + np.e), rtol=1e-15)
    np.testing.assert_allclose(out[1].numpy(), (w @ v[1]).numpy(), atol=1e-15)   # SDPA added the floats


@pytest.mark.parametrize("w", [1, 2, 3, 5])
def test_the_book_s_window_is_flash_attention_s_w_minus_1_and_mistral_s_w_minus_1(w):
    T = 9
    i, j = np.indices((T, T))
    book = al.masks.sliding_window(T, w)
    flash = (j >= i - (w - 1)) & (j <= i + 0)        # window_size=(w - 1, 0): keys i - left .. i + right
    mistral = (j >= i - w) & (j <= i)                # "between i - W and i" with W = w
    np.testing.assert_array_equal(book, flash)
    assert book.sum(-1).max() == w                   # w keys, the query included
    np.testing.assert_array_equal(mistral, al.masks.sliding_window(T, w + 1))
    assert mistral.sum(-1).max() == w + 1


def test_a_prefix_lm_mask_is_the_union_of_causal_and_the_prefix_columns():
    T, P = ex.T, 2
    prefix_lm = ex.causal_allowed() | (np.arange(T) < P)[None, :]
    for i in range(T):
        for j in range(T):
            assert prefix_lm[i, j] == (j < P or j <= i), (i, j)
    # the prefix reads itself both ways; nothing reads the generated part ahead of itself
    assert prefix_lm[MIA, SAID] and not prefix_lm[SAID, SHE] and not prefix_lm[SHE, WON]


def test_left_padding_the_running_example_empties_the_first_rows():
    batch = ex.padded_batch()
    T = ex.T
    real = np.arange(T)[None, :] >= (T - batch.lengths)[:, None]
    allowed = ex.causal_allowed() & real[:, None, :]
    assert not allowed[1, :2].any() and allowed[1, 2:].any(axis=-1).all() and allowed[0].any(axis=-1).all()
    X_left = np.stack([ex.X, np.vstack([np.zeros((2, ex.d_model)), ex.X[2:]])])
    q, k, v = (X_left @ w for w in ex.projections(ex.PRONOUN))
    with pytest.raises(al.EmptyVisibilityError):
        al.attention(q, k, v, allowed=allowed)
    out = al.attention(q, k, v, allowed=allowed, query_valid=real)
    Q, K, V = ex.qkv(ex.PRONOUN)
    # she and won alone, causal: she reads herself, won reads she and won (all scores 0)
    np.testing.assert_allclose(out[1, 2:], [V[SHE], (V[SHE] + V[WON]) / 2], atol=1e-15)
    assert np.all(out[1, :2] == 0)
    w = _sdpa_weights(*(torch.tensor(a) for a in (q, k)), torch.tensor(allowed))
    assert torch.isnan(w[1, :2]).all()                          # the naive -inf fill


def test_decoding_won_from_the_cache_needs_the_bottom_right_triangle():
    q, k, v = _pronoun_head()
    full = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.tensor(ex.causal_allowed()))
    step = F.scaled_dot_product_attention(q[WON:], k, v, attn_mask=torch.tensor(al.masks.causal(1, 4)))
    np.testing.assert_allclose(step.numpy(), full[WON:].numpy(), atol=1e-15)
    top_left = F.scaled_dot_product_attention(q[WON:], k, v, is_causal=True)   # reads Mia only
    np.testing.assert_allclose(top_left[0].numpy(), v[MIA].numpy(), atol=1e-15)
    chunk = F.scaled_dot_product_attention(q[SHE:], k, v, attn_mask=causal_lower_right(2, 4))
    np.testing.assert_allclose(chunk.numpy(), full[SHE:].numpy(), atol=1e-15)


def test_masking_after_the_softmax_loses_weight_and_leaks_won_s_key_into_she():
    Q, K, V = (np.array(m) for m in ex.qkv(ex.PRONOUN))
    causal = ex.causal_allowed()

    def after(K_):
        s = Q @ K_.T / np.sqrt(2)
        e = np.exp(s - s.max(-1, keepdims=True))
        a = np.where(causal, e / e.sum(-1, keepdims=True), 0.0)
        return a @ V, a

    out, a = after(K)
    # Mia's and said's queries are zero: uniform over four keys, then a quarter and a half kept
    np.testing.assert_allclose(a.sum(-1), [1 / 4, 1 / 2, (E + 2) / (E + 3), 1], rtol=1e-14)
    K2 = K.copy()
    K2[WON] = [1.0, 0.0]
    out2, _ = after(K2)
    assert np.abs(out2[SHE] - out[SHE]).max() > 0.05
    right = al.attention(Q, K, V, allowed=causal), al.attention(Q, K2, V, allowed=causal)
    np.testing.assert_array_equal(right[0][:WON], right[1][:WON])
