"""The scaling explorer draws its logit histogram on one fixed x-axis, so widening d_k is visible.

Before, the axis followed the logits' spread: the unscaled histogram at d_k = 512 (axis -80..80)
looked the same as the scaled one (axis -4..4), and only the tick labels changed.
"""
import re

import numpy as np
import pytest

from attnlab.widgets import scaling
from attnlab.widgets import state as st

TICK = re.compile(r'<text x="([\d.]+)" y="257" font-size="9">([^<]+)</text>')     # x-axis ticks
BAR = re.compile(r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)" height="([\d.]+)" fill="#[0-9a-f]+" '
                 r'fill-opacity="0.6"/>')
LEFT_PANEL = 400                                                                # px: the histogram's side


def _x_ticks(svg: str) -> list[str]:
    return [label for x, label in TICK.findall(svg) if float(x) < LEFT_PANEL]


def _bar_span(svg: str, mass: float = 0.99) -> float:
    """Pixel width of the central bars that hold ``mass`` of the histogram's area."""
    bars = [(float(x), float(w), float(h)) for x, w, h in BAR.findall(svg) if float(x) < LEFT_PANEL]
    areas = np.array([w * h for _, w, h in bars])
    keep = np.cumsum(areas) / areas.sum()
    lo = bars[int(np.searchsorted(keep, (1 - mass) / 2))]
    hi = bars[int(np.searchsorted(keep, 1 - (1 - mass) / 2))]
    return hi[0] + hi[1] - lo[0]


def test_the_histogram_axis_is_the_same_for_every_d_k_and_both_settings():
    ticks = {(d, scaled): _x_ticks(scaling.draw(st.scaling_state(d, scaled)))
             for d in (1, 64, 512) for scaled in (True, False)}
    first = next(iter(ticks.values()))
    assert first and all(t == first for t in ticks.values()), ticks
    # the axis holds 4 standard deviations of the widest logits, sqrt(512) = 22.6
    assert max(abs(float(t)) for t in first) <= scaling.LOGIT_AXIS
    assert scaling.LOGIT_AXIS >= 4 * np.sqrt(max(st.D_K_VALUES))


@pytest.mark.parametrize("scaled", [False, True])
def test_unscaled_logits_widen_with_d_k_and_scaled_ones_do_not(scaled):
    spans = [_bar_span(scaling.draw(st.scaling_state(d, scaled))) for d in (4, 64, 512)]
    if scaled:                      # standard deviation 1 at every d_k: the same width on the page
        assert max(spans) / min(spans) < 1.5, spans
    else:                           # standard deviation sqrt(d_k): 2, 8, 22.6
        assert spans[0] < spans[1] < spans[2] and spans[2] / spans[0] > 5, spans


def test_the_reading_still_gives_the_spread_it_shows():
    s = st.scaling_state(512, False)
    assert f"{s.logit_std:.2f}" in scaling.reading(s)
    assert s.logit_std == pytest.approx(np.sqrt(512), rel=0.1)
