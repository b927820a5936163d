"""attnlab.display and attnlab.exact.to_float: the helpers every chapter uses to show exact values."""
import numpy as np
import pytest
import sympy as sp

import attnlab as al
from attnlab import display
from attnlab.display import latex_with_decimals, show
from attnlab.errors import AttentionInputError
from attnlab.exact import to_float


def test_to_float_evaluates_closed_forms():
    c = 1 / sp.sqrt(2)
    M = sp.Matrix([[sp.exp(c) / (sp.exp(c) + 3), sp.Rational(1, 3)], [sp.log(3), 2]])
    want = np.array([[np.exp(2 ** -0.5) / (np.exp(2 ** -0.5) + 3), 1 / 3], [np.log(3), 2.0]])
    np.testing.assert_allclose(to_float(M), want, rtol=1e-15)
    assert to_float(M).dtype == np.float64 and to_float(M).shape == (2, 2)
    assert float(to_float(sp.Rational(15, 2))) == 7.5
    np.testing.assert_array_equal(to_float([[1, 2]]), [[1.0, 2.0]])


def test_exact_values_come_with_decimals():
    text = latex_with_decimals("a", sp.Matrix([[sp.Rational(3, 4), 1 / sp.sqrt(2)]]))
    assert r"\frac{3}{4}" in text and "0.75" in text and "0.707107" in text and r"\approx" in text


def test_integers_and_symbols_are_shown_without_decimals():
    assert r"\approx" not in latex_with_decimals("A", sp.Matrix([[1, 0], [2, 3]]))
    assert r"\approx" not in latex_with_decimals("J", sp.Symbol("alpha") * (1 - sp.Symbol("alpha")))
    assert latex_with_decimals("L", 5) == "L = 5"


def test_show_displays_pairs_and_refuses_an_odd_count(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    show("A", sp.Rational(1, 2), "B", 3)
    (math,) = shown
    assert isinstance(math, IPython.display.Math)
    assert r"A &= \frac{1}{2}" in math.data and "0.5" in math.data and "B &= 3" in math.data
    # one aligned display: the exact values on the first line, their decimals on the second
    assert math.data.count(r"\begin{aligned}") == 1
    top, bottom = math.data.split(r"\\[1ex]")
    assert r"\frac{1}{2}" in top and "B &= 3" in top and r"\approx 0.5" in bottom and "3" not in bottom
    with pytest.raises(al.AttentionInputError, match="pairs"):
        show("A", 1, "B")
    assert al.display.show is show


@pytest.mark.parametrize("shape, values, english, chinese", [
    ("block", np.full((2, 3), np.nan), "a block of NaN", "全为 NaN 的块"),
    ("block", np.zeros((2, 3)), "a block of zeros", "全零的块"),
    ("block", np.eye(2), "finite numbers", "有限的数"),
    ("block", np.array([1.0, np.nan]), "numbers, some of them not finite", "部分不是有限值的数"),
    ("row", [0.0, 0.0], "a row of zeros", "一行全零"),
    ("row", [np.nan, np.nan], "a row of NaN", "一行 NaN"),
    ("row", [0.0, 2.0], "a finite nonzero row", "有限的非零一行"),
    ("row", [np.inf, 1.0], "a row with entries that are not finite", "含非有限值的一行"),
])
def test_in_words_says_what_a_block_is_in_both_languages(shape, values, english, chinese):
    import torch

    from attnlab.i18n import set_language

    assert display.in_words(values, shape) == english
    assert display.in_words(torch.tensor(values), shape) == english     # a tensor reads the same
    try:
        set_language("zh_CN")
        assert display.in_words(values, shape) == chinese
    finally:
        set_language("en")


def test_in_words_refuses_an_unknown_shape_word():
    with pytest.raises(AttentionInputError, match="'block', 'row'"):
        display.in_words([1.0], "column")


@pytest.mark.parametrize(("x", "digits", "want"), [
    (1.19e-07, 1, "1.2\u00a0×\u00a010⁻⁷"),
    (8.9e-16, 1, "8.9\u00a0×\u00a010⁻¹⁶"),
    (-0.0123, 2, "−1.23\u00a0×\u00a010⁻²"),
    (4.2e12, 1, "4.2\u00a0×\u00a010¹²"),
    (3.0, 1, "3.0"),
    (float("nan"), 1, "—"),
    (float("inf"), 1, "∞"),
])
def test_scientific_is_one_unbreakable_piece(x, digits, want):
    text = display.scientific(x, digits)
    assert text == want
    assert " " not in text and "-" not in text and "e" not in text   # nothing a line may break at
    if np.isfinite(x) and text != "3.0":   # it reads back as the number, rounded to its digits
        mantissa, power = text.replace("−", "-").split("\u00a0×\u00a010")
        exponent = int(power.translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")))
        assert float(mantissa) * 10.0 ** exponent == pytest.approx(x, rel=10.0 ** -digits)


def test_column_pads_like_a_format_spec_and_counts_a_chinese_character_as_two_columns():
    from attnlab.display import column

    for text in ("d_k", "mean s^2", "a longer label than the width"):
        assert column(text, 9) == f"{text:>9}" and column(text, 9, "<") == f"{text:<9}"
    assert column("缩放", 7) == "   缩放"                        # 2 characters, 4 columns
    assert len(column("均值", 9, "<").encode("gbk")) == 9         # GBK: 2 bytes per Chinese character
    with pytest.raises(ValueError, match="align"):
        column("x", 3, "^")


def test_the_natural_logarithm_is_written_ln_with_its_decimals():
    text = latex_with_decimals("dK", sp.Matrix([[3 * sp.log(3) / 8]]))
    assert r"\ln" in text and r"\log" not in text
    assert "0.41198" in text            # 3 ln(3) / 8 = 0.4119840...
