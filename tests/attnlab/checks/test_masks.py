"""Mask-builder checkers (causal, padding, documents): each mistake is named.

Every "student" function is written independently, the way a student would write the mistake,
not taken from the package's mistake models; each test asserts the diagnosis it gets.
"""

import numpy as np
import torch

from attnlab import checks as C

from .support import assert_diagnosis, assert_not_attempted, stub

# ------------------------------------------------------------------------------------ mask builders


def test_causal_mask_reference_passes():
    def mine(T, S, offset):
        return np.arange(S)[None, :] <= offset + np.arange(T)[:, None]
    assert C.check_causal_mask(mine).passed
    assert C.check_causal_mask(lambda T, S, o: torch.ones(T, S, dtype=torch.bool).tril(o).numpy()).passed


def test_causal_mask_stub_not_attempted():
    assert_not_attempted(C.check_causal_mask(stub))


def test_causal_mask_top_left():
    assert_diagnosis(C.check_causal_mask(lambda T, S, o: np.tril(np.ones((T, S), dtype=bool))), "top_left",
                     "top-left causal alignment")


def test_causal_mask_always_bottom_right():
    assert_diagnosis(C.check_causal_mask(lambda T, S, o: np.tril(np.ones((T, S), dtype=bool), k=S - T)),
                     "always_bottom_right", "bottom-right")


def test_causal_mask_excluding_diagonal():
    assert_diagnosis(C.check_causal_mask(lambda T, S, o: np.tril(np.ones((T, S), dtype=bool), k=o - 1)),
                     "excludes_diagonal", "excluding the diagonal")


def test_causal_mask_inverted_polarity():
    assert_diagnosis(C.check_causal_mask(lambda T, S, o: ~np.tril(np.ones((T, S), dtype=bool), k=o)), "inverted",
                     "polarity inverted")


def test_causal_mask_upper_triangle_reads_future():
    assert_diagnosis(C.check_causal_mask(lambda T, S, o: np.triu(np.ones((T, S), dtype=bool), k=o)),
                     "reads_future", "future leakage")


def test_causal_mask_offset_wrong_sign():
    assert_diagnosis(C.check_causal_mask(lambda T, S, o: np.tril(np.ones((T, S), dtype=bool), k=-o)),
                     "offset_wrong_sign", "wrong sign")


def test_causal_mask_additive_form_is_explained():
    def additive(T, S, o):
        return np.where(np.tril(np.ones((T, S), dtype=bool), k=o), 0.0, -np.inf)
    assert_diagnosis(C.check_causal_mask(additive), "additive", "additive mask")


def test_causal_mask_integer_dtype_is_explained():
    assert_diagnosis(C.check_causal_mask(lambda T, S, o: np.tril(np.ones((T, S), dtype=int), k=o)),
                     "not_boolean", "boolean")


def test_padding_mask_reference_passes():
    assert C.check_padding_mask(lambda L, S: (np.arange(S) < np.asarray(L)[:, None])[:, None, :]).passed


def test_padding_mask_stub_not_attempted():
    assert_not_attempted(C.check_padding_mask(stub))


def test_padding_mask_off_by_one():
    assert_diagnosis(C.check_padding_mask(lambda L, S: (np.arange(S) <= np.asarray(L)[:, None])[:, None, :]),
                     "off_by_one", "off by one")


def test_padding_mask_inverted():
    assert_diagnosis(C.check_padding_mask(lambda L, S: (np.arange(S) >= np.asarray(L)[:, None])[:, None, :]),
                     "inverted", "polarity inverted")


def test_padding_mask_left_aligned():
    assert_diagnosis(C.check_padding_mask(lambda L, S: (np.arange(S) >= S - np.asarray(L)[:, None])[:, None, :]),
                     "left_aligned", "on the left")


def test_padding_mask_without_query_axis_gets_a_shape_hint():
    result = C.check_padding_mask(lambda L, S: np.arange(S) < np.asarray(L)[:, None])
    assert not result.passed and "(B, 1, S)" in result.message and "broadcasts over the T queries" in result.message


def test_padding_mask_additive_form_is_explained():
    def additive(L, S):
        real = (np.arange(S) < np.asarray(L)[:, None])[:, None, :]
        return np.where(real, 0.0, -np.inf)
    assert_diagnosis(C.check_padding_mask(additive), "additive", "additive mask")


def test_padding_mask_integer_dtype_is_explained():
    result = C.check_padding_mask(lambda L, S: (np.arange(S) < np.asarray(L)[:, None])[:, None, :].astype(np.int8))
    assert_diagnosis(result, "not_boolean", "boolean")


def test_document_mask_reference_passes():
    assert C.check_document_mask(lambda ids: np.asarray(ids)[..., :, None] == np.asarray(ids)[..., None, :]).passed


def test_document_mask_stub_not_attempted():
    assert_not_attempted(C.check_document_mask(stub))


def test_document_mask_additive_form_is_explained():
    def additive(ids):
        return np.where(ids[..., :, None] == ids[..., None, :], 0.0, -np.inf)
    assert_diagnosis(C.check_document_mask(additive), "additive", "additive mask")


def test_document_mask_integer_dtype_is_explained():
    assert_diagnosis(C.check_document_mask(lambda ids: (ids[..., :, None] == ids[..., None, :]).astype(int)),
                     "not_boolean", "boolean")


def test_document_mask_with_causal_triangle():
    def with_causal(ids):
        same = ids[..., :, None] == ids[..., None, :]
        return same & np.tril(np.ones(same.shape[-2:], dtype=bool))
    assert_diagnosis(C.check_document_mask(with_causal), "with_causal", "causal triangle")


def test_document_mask_inverted():
    assert_diagnosis(C.check_document_mask(lambda ids: ids[..., :, None] != ids[..., None, :]), "inverted",
                     "polarity inverted")


def test_document_mask_reads_earlier_documents():
    assert_diagnosis(C.check_document_mask(lambda ids: ids[..., :, None] >= ids[..., None, :]),
                     "reads_earlier_documents", "earlier document")


# ------------------------------------------------------------------------------------ new wrong implementations


def test_padding_mask_with_a_negative_zero_slice():
    """`mask[b, -(S - L):] = False` blocks every key when L = S (-0 is 0); not "polarity inverted"."""
    def slicing(lengths, S):
        mask = np.ones((len(lengths), S), dtype=bool)
        for b, L in enumerate(lengths):
            mask[b, -(S - L):] = False
        return mask[:, None, :]
    assert_diagnosis(C.check_padding_mask(slicing), "negative_zero_slice", "-0")


def test_padding_mask_as_a_list_of_lists_is_refused():
    def as_lists(lengths, S):
        return [[[j < L for j in range(S)]] for L in lengths]
    assert_diagnosis(C.check_padding_mask(as_lists), "wrong_type", "NumPy array")


def test_padding_mask_as_a_torch_tensor_is_refused():
    def as_tensor(lengths, S):
        return torch.arange(S)[None, None, :] < torch.as_tensor(lengths)[:, None, None]
    assert_diagnosis(C.check_padding_mask(as_tensor), "wrong_type", "`.detach().numpy()`")


def test_causal_mask_built_with_triu_and_k():
    """np.triu(..., k=offset + 1) marks the forbidden part: True = may read is the complement."""
    def forbidden(T, S, offset):
        return np.triu(np.ones((T, S), dtype=bool), k=offset + 1)
    assert_diagnosis(C.check_causal_mask(forbidden), "inverted", "polarity inverted")


def test_causal_mask_with_tril_of_the_wrong_diagonal():
    def shifted(T, S, offset):
        return np.tril(np.ones((T, S), dtype=bool), k=offset - 1)
    assert_diagnosis(C.check_causal_mask(shifted), "excludes_diagonal", "excluding the diagonal")


def test_causal_mask_as_float_ones_and_zeros():
    def floats(T, S, offset):
        return np.tril(np.ones((T, S)), k=offset)
    assert_diagnosis(C.check_causal_mask(floats), "not_boolean", "dtype float64")


def test_document_mask_comparing_neighbours_only():
    def neighbours(doc_ids):
        ids = np.asarray(doc_ids)
        same = ids[..., :, None] == ids[..., None, :]
        T = ids.shape[-1]
        near = np.abs(np.arange(T)[:, None] - np.arange(T)[None, :]) <= 1
        return same & near
    result = C.check_document_mask(neighbours)
    assert not result.passed and "should be True" in result.message, result


def test_document_mask_without_the_batch_axis():
    def flat(doc_ids):
        ids = np.asarray(doc_ids).reshape(-1)
        return ids[:, None] == ids[None, :]
    result = C.check_document_mask(flat)
    assert_diagnosis(result, "wrong_shape", "has shape (8, 8); expected (2, 4, 4)")


def test_document_mask_with_greater_or_equal():
    def later(doc_ids):
        ids = np.asarray(doc_ids)
        return ids[..., :, None] >= ids[..., None, :]
    assert_diagnosis(C.check_document_mask(later), "reads_earlier_documents", "earlier document")
