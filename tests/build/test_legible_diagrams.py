"""_ext/legible_figures.py reads the diagrams' SVG stamp as it reads the figures' PNG stamp."""
import importlib.util
from pathlib import Path

import pytest

from attnlab import diagrams, plots

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("legible_figures", ROOT / "_ext" / "legible_figures.py")
legible_figures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(legible_figures)


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_svg_stamp_gives_a_legible_width_inside_the_column(tmp_path, lang):
    d = diagrams.qkv_pipeline(example=True)
    path = d.save(tmp_path / "pipeline.svg", lang)
    width, min_px = legible_figures.svg_stamp(path)
    canvas = d.canvas(lang)
    assert width == canvas.width and min_px == pytest.approx(canvas.smallest_text * plots.CAP_HEIGHT_EM, abs=0.01)
    legible = width * legible_figures.MIN_TEXT_PX / min_px
    assert min_px * legible / width == pytest.approx(9.0)
    assert legible <= plots.COLUMN_PX                                  # fits the column at 1280 px unscaled


def test_an_svg_without_a_stamp_is_left_alone(tmp_path):
    plain = tmp_path / "plain.svg"
    plain.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="100" height="50"></svg>', encoding="utf-8")
    assert legible_figures.svg_stamp(plain) is None
    assert legible_figures.svg_stamp(tmp_path / "missing.svg") is None
