"""Importing the package exposes the public contract."""
import attnlab as al


def test_public_names_exist():
    for name in ("softmax", "attention", "multi_head_attention", "kv_head_for", "EmptyVisibilityError",
                 "masks", "grad", "exact"):
        assert hasattr(al, name), name
    assert issubclass(al.EmptyVisibilityError, ValueError)
