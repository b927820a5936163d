"""The recorder of forbidden calls: every route to an entry point is recorded, every original comes back."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attnlab as al
import attnlab.reference
from attnlab.checks.forbidden import parse, recording


def test_parse_reads_the_name_and_the_keyword_condition():
    assert parse("attnlab.masks.causal") == ("attnlab.masks.causal", ())
    assert parse("torch.nn.functional.scaled_dot_product_attention(enable_gqa=True)") == (
        "torch.nn.functional.scaled_dot_product_attention", ("enable_gqa",))
    with pytest.raises(ValueError, match="keyword=True"):
        parse("f(x=3)")


def test_a_module_function_is_recorded_under_each_of_its_names_and_restored():
    original = attnlab.reference.attention
    q = np.ones((2, 3))
    namespace = {"attention": original}
    with recording(("attnlab.reference.attention",), [namespace]) as called:
        al.attention(q, q, q)                      # the re-export in attnlab/__init__
        namespace["attention"](q, q, q)             # a student's `from attnlab import attention`
    assert called == ["attnlab.reference.attention"]
    assert attnlab.reference.attention is original and al.attention is original
    assert namespace["attention"] is original


def test_nothing_is_recorded_when_the_function_is_not_called():
    with recording(("attnlab.reference.softmax",)) as called:
        np.exp(np.ones(3))
    assert called == []


def test_a_method_of_a_class_is_recorded_through_an_instance():
    x = torch.ones(3, requires_grad=True)
    with recording(("torch.Tensor.backward",)) as called:
        (x * 2).sum().backward()
    assert called == ["torch.Tensor.backward"] and x.grad is not None
    assert "backward" in vars(torch.Tensor)


def test_a_keyword_condition_records_only_the_calls_that_pass_it():
    q = torch.ones(1, 2, 3, 4)
    entry = "torch.nn.functional.scaled_dot_product_attention(enable_gqa=True)"
    with recording((entry,)) as called:
        F.scaled_dot_product_attention(q, q, q)
    assert called == []
    with recording((entry,)) as called:
        F.scaled_dot_product_attention(q, q[:, :1], q[:, :1], enable_gqa=True)
    assert called == [entry]


def test_originals_come_back_after_an_exception():
    original = al.masks.causal
    with pytest.raises(RuntimeError), recording(("attnlab.masks.causal",)):
        raise RuntimeError("student code failed")
    assert al.masks.causal is original


def test_an_entry_point_of_a_module_that_is_not_imported_is_skipped():
    with recording(("not_a_module_here.f", "attnlab.no_such_function")) as called:
        pass
    assert called == []


def test_a_checker_names_a_forbidden_call():
    import attnlab.checks as C
    from tests.attnlab.checks.support import assert_diagnosis

    result = C.check_causal_mask(lambda T, S, offset: al.masks.causal(T, S, offset))
    assert_diagnosis(result, "forbidden_call", "your function called `attnlab.masks.causal`")
