"""attnlab.display.show: how an exact value is written."""
import sympy as sp

from attnlab.display import latex_with_decimals


def test_the_natural_logarithm_is_written_ln_with_its_decimals():
    text = latex_with_decimals("dK", sp.Matrix([[3 * sp.log(3) / 8]]))
    assert r"\ln" in text and r"\log" not in text
    assert "0.41198" in text            # 3 ln(3) / 8 = 0.4119840...
