"""The explorers for readers who cannot see the pictures: each picture describes itself, and each
state has a reading, one sentence of its numbers, in a ``role="status"`` element that a screen
reader announces when the state changes.

The numbers a reading must contain are computed here from the definitions (softmax with NumPy,
the cache size from its formula, the allowed count of a causal mask), not taken from the states.
tests/build/test_a11y_browser.py walks the explorers of the built book with the keyboard.
"""
from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET

import ipywidgets as W
import numpy as np
import pytest

import attnlab as al
from attnlab import i18n
from attnlab.widgets import convex, gqa, heads, mask, online_softmax, scaling
from attnlab.widgets import state as st

SVG_NS = "{http://www.w3.org/2000/svg}"
READING = re.compile(r"<div class='attnlab-reading' role='status'[^>]*>(.*?)</div>", re.S)


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def _synthetic_heads(T=8, length=6):
    rng = np.random.default_rng(1)
    maps = rng.random((1, 2, 3, T, T))
    maps /= maps.sum(-1, keepdims=True)                                   # (1, L, H, T, T)
    tokens = [["[CLS]"] + [f"w{i}" for i in range(1, length - 1)] + ["[SEP]"]]
    return maps, tokens, [length]


EXPLORERS = {
    "mask": lambda offline: al.widgets.mask_explorer(offline=offline),
    "convex": lambda offline: al.widgets.convex_combination_explorer(offline=offline),
    "scaling": lambda offline: al.widgets.scaling_explorer(offline=offline),
    "gqa": lambda offline: al.widgets.gqa_explorer(offline=offline),
    "heads": lambda offline: al.widgets.head_explorer(*_synthetic_heads(), offline=offline),
    "online_softmax": lambda offline: al.widgets.online_softmax_explorer(offline=offline),
}
CASES = [(name, offline) for name in EXPLORERS for offline in (False, True)]


@pytest.fixture(scope="module", params=CASES, ids=[f"{n}-{'offline' if o else 'live'}" for n, o in CASES])
def explorer(request):
    name, offline = request.param
    return name, EXPLORERS[name](offline)


def test_every_picture_describes_itself(explorer):
    _, ex = explorer
    pictures = [svg for w in _walk(ex) if isinstance(w, W.HTML)
                for svg in re.findall(r"<svg\b.*?</svg>", w.value, re.S)]
    assert pictures
    for svg in pictures:
        root = ET.fromstring(svg)
        first = list(root)[0]
        assert first.tag == f"{SVG_NS}title" and len(first.text.split()) >= 8, first.text
        assert root.get("role") == "img" and root.get("aria-label") == first.text


def test_the_static_picture_for_the_pdf_carries_the_description(explorer):
    _, ex = explorer
    markdown = ex._repr_mimebundle_()["text/markdown"]
    alts = re.findall(r"^:alt: (.*)$", markdown, re.M)
    titles = [html.unescape(t) for t in re.findall(r"<title>(.*?)</title>", "".join(
        w.value for w in _walk(ex) if isinstance(w, W.HTML) and "<svg" in w.value), re.S)]
    assert alts and all(alt in titles for alt in alts), (alts, titles[:2])


def test_the_explorer_is_marked_for_the_books_script(explorer):
    _, ex = explorer
    assert "attnlab-explorer" in ex._dom_classes


@pytest.mark.parametrize("name", EXPLORERS)
def test_every_offline_frame_has_one_reading_of_its_own_state(name):
    ex = EXPLORERS[name](True)
    frames = [w.value for w in _walk(ex) if isinstance(w, W.HTML) and "<svg" in w.value]
    read = {"mask": mask.reading, "convex": convex.reading, "scaling": scaling.reading, "gqa": gqa.reading,
            "heads": heads.reading, "online_softmax": online_softmax.reading}[name]
    expected = {html.escape(read(s)) for s in ex.states.values()}
    found = [READING.findall(f) for f in frames]
    assert all(len(r) == 1 for r in found), "a frame without exactly one reading"
    assert {r[0] for r in found} == expected


def test_a_live_explorer_announces_its_new_state():
    ex = al.widgets.mask_explorer()
    ex.controls["pattern"].value = "causal"
    ex.controls["T"].value = 4
    assert READING.findall(ex.readout.value) == [html.escape(ex.reading)]
    assert "10 of 16 pairs" in ex.reading                  # a causal 4 x 4 mask allows 4 * 5 / 2 pairs
    ex.controls["T"].value = 5
    assert "15 of 25 pairs" in ex.reading and READING.findall(ex.readout.value) == [html.escape(ex.reading)]


def test_a_refused_input_is_announced_too():
    ex = al.widgets.mask_explorer(pattern="documents")
    ex.controls["doc_ids"].value = "0 0 x"
    assert ex.error and READING.findall(ex.message.value) == [html.escape(ex.error)]


def test_the_mask_reading_names_every_rows_sum():
    s = st.mask_state("cached decoding", T=2, S=6, offset=-1)       # query 0 at position -1 reads nothing
    text = mask.reading(s)
    assert text.endswith("row sums error, 1.00"), text
    s = st.mask_state("padding", T=6, seq=1)                         # length 4: two padding queries
    assert mask.reading(s).endswith("1.00, 1.00, 1.00, 1.00, pad, pad"), mask.reading(s)


@pytest.mark.parametrize(("angle", "tau", "masked"), [(45, 2.0, ()), (180, 0.5, (0,)), (270, 10.0, (0, 1))])
def test_the_convex_reading_gives_the_weights_and_the_output(angle, tau, masked):
    v = st.CONVEX_VALUES
    q = 1.5 * np.array([np.cos(np.radians(angle)), np.sin(np.radians(angle))])
    logits = np.where(np.isin(np.arange(len(v)), masked), -np.inf, v @ q / tau)
    w = np.exp(logits - logits.max())
    w /= w.sum()
    out = w @ v
    weights = ", ".join("masked" if j in masked else f"{x:.2f}" for j, x in enumerate(w))
    assert convex.reading(st.convex_state(angle, 1.5, tau, masked)) == (
        f"query at {angle}°, τ = {tau:g}: weights {weights}; output ({out[0]:.2f}, {out[1]:.2f})")


def test_the_convex_reading_says_when_every_key_is_masked():
    assert "every key is masked" in convex.reading(st.convex_state(0, 1.5, 1.0, range(5)))


@pytest.mark.parametrize("scaled", [True, False])
def test_the_scaling_reading_gives_the_spread_of_the_logits(scaled):
    q, k = st.scaling_samples(256)
    logits = q @ k.T / (16.0 if scaled else 1.0)                    # sqrt(256) = 16
    text = scaling.reading(st.scaling_state(256, scaled))
    assert text.startswith(f"d_k = 256, {'scaled' if scaled else 'unscaled'}: logit standard deviation "
                           f"{logits.std():.2f};"), text


def test_the_gqa_reading_gives_the_group_and_the_cache():
    mib = 2 * 32 * 1 * 2 * 4096 * 128 * 2 / 2**20                  # K and V, layers, batch, H_kv, T, d_k, fp16
    assert gqa.reading(st.gqa_state(8, 2)) == (f"H_q = 8, H_kv = 2: group size r = 4; "
                                               f"KV cache {mib:.2f} MiB, MHA {4 * mib:.2f} MiB, "
                                               f"MQA {mib / 2:.2f} MiB")
    assert "does not divide" in gqa.reading(st.gqa_state(2, 4))


def test_the_head_reading_names_the_strongest_keys():
    maps, tokens, lengths = _synthetic_heads()
    row = maps[0, 1, 2, 3, :6]                                      # layer 1, head 2, query 3, real keys
    top = np.argsort(-row, kind="stable")[:3]
    expected = ", ".join(f"\u201c{tokens[0][j]}\u201d {row[j]:.2f}" for j in top)
    s = heads.head_state(maps, tokens, lengths, 0, 1, 2, 3)
    assert heads.reading(s) == f"layer 1, head 2: query \u201c{tokens[0][3]}\u201d reads most from {expected}"


def test_readings_and_descriptions_speak_chinese():
    i18n.set_language("zh_CN")
    try:
        s = st.mask_state("causal", T=4)
        texts = [mask.reading(s), mask.alt(s), convex.alt(st.convex_state()), scaling.alt(st.scaling_state()),
                 gqa.reading(st.gqa_state()), heads.alt(heads.head_state(*_synthetic_heads()))]
        stepped = online_softmax.online_softmax_state(3, 2)
        texts += [online_softmax.reading(stepped), online_softmax.alt(stepped)]
    finally:
        i18n.set_language("en")
    for text in texts:
        assert re.search(r"[\u4e00-\u9fff]", text), f"not translated: {text}"
