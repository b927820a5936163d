"""A wrong numeric answer that a simple slip explains gets a hint that points somewhere, computed from the
fingerprints alone (the package never stores the answer)."""
import pytest

import attnlab.checks as C
from tests.attnlab.checks.support import assert_diagnosis

SLIPS = [   # (question, a wrong value, what the hint must say); right values: 9, 1024, 2**23, 16, 64
    ("masks.keys_visible_5_6", 8, "one less than the right one"),
    ("scaling.var_unscaled", -1024, "sign"),
    ("scaling.var_unscaled", 2048, "twice the right one"),
    ("cost.attn_bytes_2k", 8, "in MiB"),
    ("cost.attn_bytes_2k", 8 * 2**23, "bits where bytes"),
    ("scaling.var_scaled", 4, "standard deviation where a variance"),
    ("multihead.gpt2_head_dim", 65, "one more than the right one"),
    ("backprop.dS", [[3 / 8, -3 / 2], [-3 / 8, 3 / 2]], "transpose of the right one"),
]


@pytest.mark.parametrize("name, wrong, hint", SLIPS)
def test_a_simple_slip_is_named(name, wrong, hint):
    assert_diagnosis(C.check_answer(name, wrong), "simple_slip", hint)


def test_a_known_wrong_value_keeps_its_own_hint_before_the_generic_ones():
    result = C.check_answer("scaling.var_scaled", 64 * 16 // 8)
    assert result.mistake == "known_wrong_answer" and "not by sqrt(d_k)" in result.message


def test_a_wrong_value_no_slip_explains_says_how_exact_it_must_be():
    result = C.check_answer("multihead.gpt2_head_dim", 70)
    assert result.mistake == "" and "must match exactly" in result.message
