"""Chapter 2's new claims on the running example and on the scale of real models.

Independent references: SymPy for the exact weights, PyTorch's softmax, SDPA and dropout.
"""
import numpy as np
import pytest
import sympy as sp
import torch
import torch.nn.functional as F

import attnlab as al

ex = al.example


def test_she_reads_mia_unscaled_scaled_and_at_dk_64():
    raw = torch.tensor(np.asarray(ex.scores(ex.PRONOUN, scaled=False)))
    assert raw[2].tolist() == [4.0, 0.0, 0.0, 0.0]                   # "she scores Mia with 4"
    e = sp.exp
    cases = {1: e(4) / (e(4) + 3), np.sqrt(2): e(2 * sp.sqrt(2)) / (e(2 * sp.sqrt(2)) + 3),
             8: e(sp.Rational(1, 2)) / (e(sp.Rational(1, 2)) + 3)}  # divisors 1, sqrt(d_k = 2), sqrt(64)
    for divisor, exact in cases.items():
        assert torch.softmax(raw[2] / divisor, 0)[0].item() == pytest.approx(float(exact), rel=1e-14)
    assert float(cases[1]) > float(cases[np.sqrt(2)]) > float(cases[8])     # more scale, flatter row
    assert float(cases[1]) == pytest.approx(0.948, abs=5e-4)
    assert float(cases[np.sqrt(2)]) == pytest.approx(0.849, abs=5e-4)


def test_similarity_head_rows_sum_to_one_columns_do_not_and_weights_are_not_symmetric():
    Q, K, _ = ex.qkv(ex.SIMILARITY)
    U = torch.tensor(Q @ K.T / np.sqrt(2))
    A = torch.softmax(U, dim=-1).numpy()
    np.testing.assert_allclose(A, ex.attention(ex.SIMILARITY)[1], rtol=1e-14)
    np.testing.assert_allclose(A.sum(1), 1.0, rtol=1e-14)
    assert A[:, 0].sum() > 1.3                                           # every token reads Mia
    assert torch.equal(U, U.T) and not np.allclose(A, A.T)
    assert A[0, 1] < A[1, 0]                                             # Mia->said < said->Mia


def test_the_coordinate_bound_holds_for_weights_and_breaks_for_scores():
    Q, K, V = ex.qkv(ex.SIMILARITY)
    U = Q @ K.T / np.sqrt(2)
    O = F.scaled_dot_product_attention(*(torch.tensor(M) for M in (Q, K, V))).numpy()
    lo, hi = V.min(0), V.max(0)
    assert np.all((lo <= O) & (O <= hi))
    assert not np.all((lo <= U @ V) & (U @ V <= hi))


def test_one_dropout_draw_breaks_the_row_sums_and_rescales_the_kept_weights():
    torch.manual_seed(2)
    A = torch.tensor(ex.attention(ex.SIMILARITY)[1])
    dropped = F.dropout(A, p=0.3, training=True)
    kept = dropped != 0
    torch.testing.assert_close(dropped[kept], A[kept] / 0.7, rtol=1e-12, atol=0)
    assert not torch.allclose(dropped.sum(1), torch.ones(4, dtype=A.dtype))


def test_gemma2_27b_scale_differs_from_one_over_sqrt_head_width():
    hidden, heads, head_dim = 4608, 32, 128          # Gemma 2 27B's released configuration
    query_pre_attn_scalar = hidden // heads
    assert query_pre_attn_scalar == 144 != head_dim
    assert 1 / np.sqrt(query_pre_attn_scalar) == pytest.approx(1 / 12)
    assert (1 / np.sqrt(head_dim)) / (1 / 12) == pytest.approx(12 / np.sqrt(128))
