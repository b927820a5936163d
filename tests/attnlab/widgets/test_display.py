"""How an explorer displays where no widget runs (the PDF book): its initial pictures and a caption.

Jupyter and the HTML book pick the widget view; myst-nb's LaTeX builder has no widget, HTML or SVG
in its mime order and takes text/markdown before text/plain, so the Markdown is what the PDF shows.
"""
from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ET

import pytest

import attnlab.widgets as widgets

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
IMAGE = re.compile(r"```\{image\} data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)\n")
FACTORIES = ["scaling_explorer", "convex_combination_explorer", "mask_explorer", "gqa_explorer",
             "online_softmax_explorer"]
# offline starts where live does
SAME_INITIAL_STATE = ["scaling_explorer", "mask_explorer", "gqa_explorer", "online_softmax_explorer"]


def pictures(bundle: dict) -> list[str]:
    return [base64.b64decode(b).decode() for b in IMAGE.findall(bundle["text/markdown"])]


@pytest.fixture(scope="module", params=[(f, off) for f in FACTORIES for off in (False, True)],
                ids=lambda p: f"{p[0]}-{'offline' if p[1] else 'live'}")
def explorer(request):
    name, offline = request.param
    return name, getattr(widgets, name)(offline=offline)


def test_bundle_keeps_the_widget_view_and_adds_pictures_and_caption(explorer):
    name, ex = explorer
    bundle = ex._repr_mimebundle_()
    assert bundle[WIDGET_VIEW]["model_id"] == ex.model_id
    assert "children" not in bundle["text/plain"] and name in bundle["text/plain"]
    svgs = pictures(bundle)
    assert svgs, "no picture in the Markdown"
    for svg in svgs:
        root = ET.fromstring(svg)                      # well-formed SVG that rsvg-convert can read
        assert root.tag == "{http://www.w3.org/2000/svg}svg" and float(root.get("width")) > 100
    caption = bundle["text/markdown"].rsplit("\n\n", 1)[1]
    assert f"`{name}`" in caption and "interactive version is in the HTML book" in caption


@pytest.mark.parametrize("name", FACTORIES)
def test_live_explorer_shows_its_current_picture(name):
    ex = getattr(widgets, name)()
    assert pictures(ex._repr_mimebundle_()) == [ex.picture.value]


@pytest.mark.parametrize("name", SAME_INITIAL_STATE)
def test_offline_pictures_are_the_live_initial_state(name):
    live, offline = getattr(widgets, name)(), getattr(widgets, name)(offline=True)
    assert pictures(offline._repr_mimebundle_()) == pictures(live._repr_mimebundle_())


def test_hidden_frames_are_not_shown():
    """Only each stack's selected page counts: an offline explorer holds many frames but shows one."""
    ex = widgets.mask_explorer(offline=True)
    frames = [w for w in _walk(ex) if isinstance(w, widgets._base.W.HTML) and "<svg" in w.value]
    assert len(frames) > 1
    shown = pictures(ex._repr_mimebundle_())
    assert len(shown) == 1 and sum(shown[0] in f.value for f in frames) >= 1


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)
