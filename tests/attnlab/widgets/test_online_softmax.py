"""The online-softmax stepper: its states against the definitions, its readings, its controls and frames.

The expected numbers are computed here from the definitions over the keys seen so far (a maximum,
a sum of exponentials, a weighted sum), never by running the update the explorer runs.
"""
from __future__ import annotations

import html
import re

import ipywidgets as W
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

import attnlab as al
from attnlab.errors import AttentionInputError
from attnlab.widgets import online_softmax as osm

READING = re.compile(r"<div class='attnlab-reading' role='status'[^>]*>(.*?)</div>", re.S)
U, V = np.array(osm.SCORES), np.array(osm.VALUES)


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def expected(u, v, block_size, step):
    """(m, l, a, factor) after each of the first ``step`` blocks, from the keys seen: no running update."""
    out = []
    for b in range(1, step + 1):
        seen = slice(0, min(b * block_size, len(u)))
        m = u[seen].max()
        e = np.exp(u[seen] - m)
        previous = u[: (b - 1) * block_size].max() if b > 1 else -np.inf
        out.append((m, e.sum(), e @ v[seen], np.exp(previous - m)))
    return [np.array(x) for x in zip(*out)]


@pytest.mark.parametrize("block_size", osm.BLOCK_SIZES)
def test_every_state_holds_the_sums_over_the_keys_seen(block_size):
    n = -(-len(U) // block_size)
    for step in range(1, n + 1):
        s = osm.online_softmax_state(block_size, step)
        m, l, a, factor = expected(U, V, block_size, step)
        np.testing.assert_allclose(s.m, m, rtol=0, atol=0)
        np.testing.assert_allclose(s.l, l, rtol=1e-14)
        np.testing.assert_allclose(s.a, a, rtol=1e-14)
        np.testing.assert_allclose(s.factor, factor, rtol=1e-14)
        assert s.seen == min(step * block_size, len(U)) and s.n_blocks == n
    full = np.exp(U - U.max()) / np.exp(U - U.max()).sum() @ V
    assert s.partial[-1] == pytest.approx(full, rel=1e-14) and s.exact == pytest.approx(full, rel=1e-14)


def test_the_chapters_trace_rescales_twice_by_e_to_the_minus_one_and_a_half():
    s = osm.online_softmax_state(3, 3)
    assert list(s.m) == [2.0, 3.5, 5.0]
    np.testing.assert_allclose(s.factor, [0.0, np.exp(-1.5), np.exp(-1.5)], rtol=1e-15)
    assert round(s.exact, 4) == 1.9614


@settings(max_examples=40, deadline=None)
@given(hs.lists(hs.floats(-30, 30), min_size=1, max_size=12), hs.integers(1, 5), hs.data())
def test_any_row_and_blocking_ends_at_the_softmax(scores, block_size, data):
    u = np.array(scores)
    v = np.array(data.draw(hs.lists(hs.floats(-5, 5), min_size=len(u), max_size=len(u))))
    n = -(-len(u) // block_size)
    s = osm.online_softmax_state(block_size, n, u, v)
    w = np.exp(u - u.max())
    assert s.partial[-1] == pytest.approx(w @ v / w.sum(), rel=1e-12, abs=1e-12)
    assert (s.l >= 1).all() and (s.factor <= 1).all()                     # exponents never positive


@pytest.mark.parametrize("kwargs", [dict(block_size=0), dict(block_size=2.5), dict(step=0), dict(step=4),
                                    dict(step=True), dict(scores=[1.0, np.inf], values=[0.0, 1.0]),
                                    dict(scores=[1.0, 2.0], values=[1.0]), dict(scores=[], values=[])])
def test_bad_inputs_are_refused_with_a_clear_error(kwargs):
    with pytest.raises(AttentionInputError):
        osm.online_softmax_state(**{"block_size": 3, "step": 2, **kwargs})


def test_the_reading_names_the_rescaling_and_the_outputs():
    text = osm.reading(osm.online_softmax_state(3, 2))
    assert "Block 2 of 3 (keys 3 to 5)" in text and "from 2 to 3.5" in text
    assert f"{np.exp(-1.5):.4f}" in text and "exact output is 1.9614" in text
    assert "nothing to rescale" in osm.reading(osm.online_softmax_state(3, 1))
    assert "factor is 1" in osm.reading(osm.online_softmax_state(1, 5))       # key 4 (score 0) lowers nothing


def test_the_live_explorer_follows_its_controls_and_clamps_the_step():
    ex = al.widgets.online_softmax_explorer()
    assert (ex.state.block_size, ex.state.step) == (3, 2)
    ex.controls["block_size"].value = 1
    ex.controls["step"].value = 7
    assert (ex.state.block_size, ex.state.step, ex.state.m[-1]) == (1, 7, 5.0)
    ex.controls["block_size"].value = 4                                    # two blocks: the step follows
    assert ex.controls["step"].max == 2 and ex.state.step == 2
    assert READING.findall(ex.readout.value) == [html.escape(ex.reading)]


def test_offline_frames_cover_every_block_size_and_step_with_their_own_reading():
    ex = al.widgets.online_softmax_explorer(offline=True)
    assert sorted(ex.states) == [(i, b) for i, k in enumerate(osm.BLOCK_SIZES) for b in range(-(-8 // k))]
    frames = [w.value for w in _walk(ex) if isinstance(w, W.HTML) and "<svg" in w.value]
    assert len(frames) == len(ex.states)
    found = [READING.findall(f) for f in frames]
    assert all(len(r) == 1 for r in found)
    assert {r[0] for r in found} == {html.escape(osm.reading(s)) for s in ex.states.values()}
    assert [len(s.options) for s in ex.controls["step"]] == [8, 4, 3, 2, 1]


def test_the_offline_explorer_opens_where_the_live_one_does():
    live, offline = al.widgets.online_softmax_explorer(), al.widgets.online_softmax_explorer(offline=True)
    shown = al.widgets._base.visible_svgs(offline)
    assert shown == [live.picture.value]
