"""The explorers and the figure helpers in Chinese: every text a reader sees comes from the catalog,
the controls keep their values, the Chinese labels fit where the English ones did, and matplotlib
finds a CJK font (or warns once that it cannot)."""
from __future__ import annotations

import html
import re
import unicodedata
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import ipywidgets as W
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib import font_manager  # noqa: E402

import attnlab as al  # noqa: E402
import attnlab.widgets as widgets  # noqa: E402
from attnlab import i18n, plots  # noqa: E402
from attnlab.widgets import scaling  # noqa: E402
from attnlab.widgets import state as st  # noqa: E402
from attnlab.widgets._base import visible_svgs  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CJK = re.compile("[\u4e00-\u9fff]")
SVG_NS = "{http://www.w3.org/2000/svg}"


@pytest.fixture(autouse=True)
def english_afterwards():
    yield
    i18n.set_language("en")
    plt.close("all")


def tiny_maps():
    """Two sentences (the second padded), two layers, two heads of row-stochastic maps."""
    rng = np.random.default_rng(0)
    maps = rng.random((2, 2, 2, 5, 5))
    maps /= maps.sum(-1, keepdims=True)
    return maps, [["the", "cat", "sat", "on", "mats"], ["why", "?"]], [5, 2]


FACTORIES = {
    "scaling": lambda offline: widgets.scaling_explorer(offline=offline),
    "convex": lambda offline: widgets.convex_combination_explorer(offline=offline),
    "mask": lambda offline: widgets.mask_explorer(offline=offline),
    "gqa": lambda offline: widgets.gqa_explorer(offline=offline),
    "head": lambda offline: widgets.head_explorer(*tiny_maps(), sentence=1, offline=offline),
}
# English words of each explorer's labels, readouts and notes (whole words; code such as
# <code>al.widgets.head_explorer</code> and names such as softmax stay as they are)
ENGLISH_WORDS = {
    "scaling": ["unscaled", "density", "max weight", "means over", "Jacobian", "uniform", "keys"],
    "convex": ["weights", "hull of allowed values", "output", "query angle", "temperature", "Live explorer",
               "Precomputed frames"],
    "mask": ["key position", "query position", "row sum", "allowed", "weights", "pattern", "queries",
             "handled as", "mask before softmax"],
    "gqa": ["query heads", "KV heads", "KV cache", "layers", "bytes", "group size"],
    "head": ["sentence", "layer", "head", "query", "key", "padding", "strongest", "real tokens"],
}
OFFLINE_ONLY = {"Precomputed frames", "mask before softmax", "temperature"}
LIVE_ONLY = {"Live explorer", "pattern", "layers", "queries"}


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def reader_text(ex) -> str:
    """Everything a reader of ``ex`` can read: HTML text (tags dropped) of every page, control
    descriptions, option labels, and the Markdown the PDF shows."""
    parts = []
    for w in _walk(ex):
        if isinstance(w, W.HTML):
            parts.append(re.sub(r"<code>.*?</code>", " ", w.value))
        parts.append(getattr(w, "description", "") or "")
        parts.extend(str(label) for label in getattr(w, "_options_labels", ()))
    bundle = ex._repr_mimebundle_()
    parts += [re.sub(r"```\{image\}.*?```", " ", bundle["text/markdown"], flags=re.DOTALL), bundle["text/plain"]]
    text = html.unescape(re.sub(r"<[^>]+>", " ", "\n".join(parts)))
    return re.sub(r"`[^`]*`", " ", text)               # code spans in the caption (the explorer's name)


def has_word(text: str, phrase: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(phrase)}(?![\w(])", text) is not None


@pytest.mark.parametrize("offline", [False, True], ids=["live", "offline"])
@pytest.mark.parametrize("name", FACTORIES)
def test_an_explorer_in_chinese_shows_chinese_and_none_of_its_english_words(name, offline):
    words = [w for w in ENGLISH_WORDS[name] if w not in (LIVE_ONLY if offline else OFFLINE_ONLY)]
    english = reader_text(FACTORIES[name](offline))
    assert [w for w in words if not has_word(english, w)] == []      # the words are there in English
    i18n.set_language("zh_CN")
    ex = FACTORIES[name](offline)
    chinese = reader_text(ex)
    assert len(CJK.findall(chinese)) > 20
    assert [w for w in words if has_word(chinese, w)] == []
    svgs = visible_svgs(ex)
    assert svgs and all(CJK.search("".join(ET.fromstring(s).itertext())) for s in svgs)
    caption = ex._repr_mimebundle_()["text/markdown"].rsplit("\n\n", 1)[1]
    assert CJK.search(caption) and "static picture" not in caption and f"`{ex.name}`" in caption


@pytest.mark.parametrize("name", FACTORIES)
def test_back_in_english_an_explorer_is_what_it_was(name):
    before = reader_text(FACTORIES[name](False))
    i18n.set_language("zh_CN")
    FACTORIES[name](False)
    i18n.set_language("en")
    after = reader_text(FACTORIES[name](False))
    assert after == before and not CJK.search(after)


def test_the_language_is_read_when_an_explorer_is_built_not_at_import():
    english = widgets.gqa_explorer()
    i18n.set_language("zh_CN")
    chinese = widgets.gqa_explorer()
    assert not CJK.search(english.picture.value) and CJK.search(chinese.picture.value)
    assert english.controls["n_layers"].description != chinese.controls["n_layers"].description


def test_translated_toggles_keep_their_values():
    i18n.set_language("zh_CN")
    ex = widgets.scaling_explorer()
    toggle = ex.controls["scaled"]
    assert all(CJK.search(label) for label in toggle._options_labels)
    assert not ex.state.scaled
    toggle.value = scaling.SCALED                       # the value the code compares, not the label
    assert ex.state.scaled and ex.state.logit_std_theory == 1.0
    toggle.index = 1
    assert not ex.state.scaled
    mask = widgets.mask_explorer(pattern="padding")
    side = mask.controls["side"]
    assert "right" not in side._options_labels and side.value == "right"
    mask.controls["lengths"].value = "6, 2"
    mask.controls["seq"].value = 1
    side.value = "left"
    np.testing.assert_array_equal(mask.state.allowed, st.mask_state("padding", T=6, lengths=(6, 2), seq=1,
                                                                    side="left").allowed)
    assert mask.controls["pattern"].value == "padding" and CJK.search(mask.controls["pattern"].label)


def test_offline_frames_in_chinese_switch_as_in_english():
    """Labels differ by language; the jslinked indices and the frames' states do not."""
    i18n.set_language("zh_CN")
    zh = widgets.mask_explorer(offline=True)
    i18n.set_language("en")
    en = widgets.mask_explorer(offline=True)
    assert zh.states.keys() == en.states.keys()
    for key in en.states:
        np.testing.assert_array_equal(zh.states[key].weights, en.states[key].weights)
    for control in ("pattern", "after_softmax"):
        a, b = zh.controls[control], en.controls[control]
        assert a.index == b.index and a._options_labels != b._options_labels
    assert [p.index for p in zh.controls["params"]] == [p.index for p in en.controls["params"]]


# --- the Chinese labels fit ---------------------------------------------------------------------

def text_width(s: str, size: float) -> float:
    """A generous estimate of a label's width: a full-width character is 1 em, any other 0.62 em
    (DejaVu Sans averages about 0.55 em)."""
    return sum(size * (1.0 if unicodedata.east_asian_width(c) in "WF" else 0.62) for c in s)


def svg_texts(svg: str) -> tuple[list[dict], float]:
    """The unrotated texts of a picture, outside transformed groups: position, size, anchor, width."""
    root = ET.fromstring(svg)
    found = []

    def visit(node, size, anchor, transformed):
        size = float(node.get("font-size", size))
        anchor = node.get("text-anchor", anchor)
        if node.tag == SVG_NS + "text":
            if not transformed and node.get("transform") is None:
                found.append({"x": float(node.get("x")), "y": float(node.get("y")), "text": node.text or "",
                              "size": size, "anchor": anchor, "width": text_width(node.text or "", size)})
            return
        for child in node:
            visit(child, size, anchor, transformed or node.get("transform") is not None)

    visit(root, 10.0, "middle", False)
    return found, float(root.get("viewBox").split()[2])


def span(t: dict) -> tuple[float, float]:
    left = t["x"] - {"start": 0.0, "middle": t["width"] / 2, "end": t["width"]}[t["anchor"]]
    return left, left + t["width"]


def pictures_of_many_states(lang: str) -> list[str]:
    i18n.set_language(lang)
    svgs = []
    for name in FACTORIES:
        svgs += visible_svgs(FACTORIES[name](False))
    mask = widgets.mask_explorer()
    for pattern in st.PATTERNS:
        mask.controls["pattern"].value = pattern
        for after in (False, True):
            mask.controls["after_softmax"].value = after
            svgs.append(mask.picture.value)
    mask.controls["pattern"].value = "padding"
    mask.controls["lengths"].value, mask.controls["seq"].value = "6, 2", 1          # padding rows: "0 (pad)"
    svgs.append(mask.picture.value)
    gqa = widgets.gqa_explorer()
    gqa.controls["n_kv_heads"].value = 3                                            # the error picture
    svgs.append(gqa.picture.value)
    convex = widgets.convex_combination_explorer()
    convex.controls["masked"].value = (0, 1)
    svgs.append(convex.picture.value)
    scaled = widgets.scaling_explorer()
    scaled.controls["scaled"].value = scaling.SCALED
    svgs.append(scaled.picture.value)
    return svgs


def test_chinese_labels_stay_inside_their_pictures_and_need_no_more_room_than_english():
    english, chinese = pictures_of_many_states("en"), pictures_of_many_states("zh_CN")
    assert len(english) == len(chinese)
    too_wide, outside, overlapping = [], [], []
    for en_svg, zh_svg in zip(english, chinese):
        en_texts, _ = svg_texts(en_svg)
        zh_texts, width = svg_texts(zh_svg)
        assert len(en_texts) == len(zh_texts)
        for e, z in zip(en_texts, zh_texts):
            if z["width"] > 1.1 * e["width"] + 4:                   # where the English fitted, the Chinese fits
                too_wide.append((z["text"], round(z["width"]), e["text"], round(e["width"])))
            left, right = span(z)
            if left < 0 or right > width:
                outside.append((z["text"], round(left), round(right), width))
        words = [t for t in zh_texts if CJK.search(t["text"])]
        for a in words:                                              # a label runs into no other label
            for b in zh_texts:
                if b is not a and abs(a["y"] - b["y"]) < 0.9 * max(a["size"], b["size"]):
                    (la, ra), (lb, rb) = span(a), span(b)
                    if la < rb and lb < ra:
                        overlapping.append((a["text"], b["text"]))
    assert too_wide == [] and outside == [] and overlapping == []


def test_the_text_width_estimate_is_not_too_small_for_the_font():
    """The estimate above bounds what matplotlib measures with the same fonts (DejaVu Sans, Noto Sans CJK)."""
    if plots.find_cjk_font() is None:
        pytest.skip("no CJK font installed (fonts-noto-cjk)")
    from matplotlib.textpath import TextToPath
    props = font_manager.FontProperties(family=["DejaVu Sans", plots.find_cjk_font()], size=10)
    for label in ("键值缓存，GiB", "query heads h", "权重：softmax 之后才加掩码（错）", "MQA (H_kv=1)"):
        measured = TextToPath().get_text_width_height_descent(label, props, ismath=False)[0]
        assert measured <= text_width(label, 10) + 0.5, label


def test_chinese_pictures_name_a_cjk_font_and_english_ones_do_not():
    english = widgets.mask_explorer().picture.value
    i18n.set_language("zh_CN")
    chinese = widgets.mask_explorer().picture.value
    zh_font, en_font = ET.fromstring(chinese).get("font-family"), ET.fromstring(english).get("font-family")
    assert "Noto Sans CJK SC" in zh_font and "CJK" not in en_font
    assert zh_font.split(",")[0] == en_font.split(",")[0]            # Latin text keeps its face


# --- the explorers' errors in Chinese -----------------------------------------------------------

maps, tokens, lengths = tiny_maps()
BAD_CALLS = {   # a call, its error class, and what its message names in any language
    "pattern": (lambda: st.mask_state("diagonal"), al.AttentionInputError, ["pattern", "'diagonal'"]),
    "lengths": (lambda: st.mask_state("padding", lengths="a, b"), al.AttentionInputError, ["lengths", "'a, b'"]),
    "seq": (lambda: st.mask_state("padding", seq=9), al.AttentionInputError, ["seq", "4", "9"]),
    "side": (lambda: st.key_padding([2], 3, side="top"), al.AttentionInputError, ["side", "'top'"]),
    "temperature": (lambda: st.convex_state(0, 1.0, 0.0), al.AttentionInputError, ["temperature", "0.0"]),
    "dtype": (lambda: st.kv_cache_bytes(1, 1, 1, 1, "float64"), al.AttentionInputError, ["dtype", "'float64'"]),
    "maps": (lambda: widgets.head_explorer(np.ones((2, 3)), tokens, lengths), al.AttentionInputError,
             ["maps", "(2, 3)"]),
    "layer": (lambda: widgets.head_explorer(maps, tokens, lengths, layer=7), al.AttentionInputError,
              ["layer", "[0, 2)", "7"]),
    "query token": (lambda: widgets.head_explorer(maps, tokens, lengths, query="dog"), al.AttentionInputError,
                    ["'dog'", "0"]),
}


@pytest.mark.parametrize("case", BAD_CALLS, ids=list(BAD_CALLS))
def test_an_explorer_refuses_bad_input_in_chinese_with_the_same_error(case):
    call, error, named = BAD_CALLS[case]
    with pytest.raises(error) as english:
        call()
    i18n.set_language("zh_CN")
    with pytest.raises(error) as chinese:
        call()
    assert type(chinese.value) is type(english.value)
    message = str(chinese.value)
    assert CJK.search(message) and message != str(english.value)
    for part in named:
        assert part in str(english.value) and part in message, (part, message)


def test_a_refused_control_value_is_reported_in_chinese():
    i18n.set_language("zh_CN")
    ex = widgets.mask_explorer(pattern="documents")
    ex.controls["doc_ids"].value = "0 0 x"
    assert ex.error and "doc_ids" in ex.error and CJK.search(ex.message.value)


# --- matplotlib: a CJK font in Chinese, one warning without one ---------------------------------

@pytest.fixture
def rc():
    with plt.rc_context():
        yield
    plt.close("all")


def needs_cjk_font():
    if plots.find_cjk_font() is None:
        pytest.skip("no CJK font installed (fonts-noto-cjk)")


def test_book_style_in_chinese_puts_a_cjk_font_first(rc):
    needs_cjk_font()
    i18n.set_language("zh_CN")
    plots.book_style()
    families = plt.rcParams["font.family"]
    # first: mathtext draws the Chinese of a label like "序列长度 $T$" in the first family alone
    assert families[0] in plots.CJK_FAMILIES and families[1] == "sans-serif"
    path = font_manager.findfont(font_manager.FontProperties(family=families[0]), fallback_to_default=False)
    assert "cjk" in Path(path).name.lower() or "han" in Path(path).name.lower() or "wqy" in Path(path).name.lower()
    i18n.set_language("en")
    plots.book_style()
    assert not set(plt.rcParams["font.family"]) & set(plots.CJK_FAMILIES)


def test_a_chinese_figure_saves_as_png_without_missing_glyphs(rc, tmp_path):
    needs_cjk_font()
    i18n.set_language("zh_CN")
    plots.book_style()
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(10, 3))
    plots.heatmap(a, np.eye(3) / 2, title="注意力权重（softmax 之后）")
    plots.mask_grid(b, al.masks.causal(4), title="因果掩码")
    plots.convex_picture(c, st.CONVEX_VALUES, np.full(5, 0.2), allowed=[True] * 4 + [False])
    legend = fig.legends[0]                                  # the convex picture's legend sits below the panels
    labels = [a.get_xlabel(), a.get_ylabel(), b.get_xlabel()] + [t.get_text() for t in legend.get_texts()]
    assert all(CJK.search(label) for label in labels), labels
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.savefig(tmp_path / "zh.png")
    assert [str(w.message) for w in caught if "missing from font" in str(w.message)] == []
    assert (tmp_path / "zh.png").stat().st_size > 1000


def test_a_font_installed_after_matplotlibs_font_cache_is_found(rc, monkeypatch):
    needs_cjk_font()
    manager = font_manager.fontManager
    monkeypatch.setattr(manager, "ttflist", [f for f in manager.ttflist if f.name not in plots.CJK_FAMILIES])
    assert not set(plots.CJK_FAMILIES) & {f.name for f in manager.ttflist}
    assert plots.find_cjk_font() in plots.CJK_FAMILIES
    assert set(plots.CJK_FAMILIES) & {f.name for f in manager.ttflist}


def test_without_a_cjk_font_book_style_warns_once_and_goes_on(rc, monkeypatch, tmp_path):
    monkeypatch.setattr(plots, "find_cjk_font", lambda: None)
    monkeypatch.setattr(plots, "_warned_no_cjk", False)
    i18n.set_language("zh_CN")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plots.book_style()
        plots.book_style()
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "fonts-noto-cjk" in messages[0] and CJK.search(messages[0])
    assert not set(plt.rcParams["font.family"]) & set(plots.CJK_FAMILIES)
    fig, ax = plt.subplots()
    ax.set_title("注意力")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                  # boxes for the characters, but a figure
        fig.savefig(tmp_path / "boxes.png")
    assert (tmp_path / "boxes.png").stat().st_size > 1000


def test_in_english_book_style_looks_for_no_cjk_font(rc, monkeypatch):
    def fail():
        raise AssertionError("looked for a CJK font in English")
    monkeypatch.setattr(plots, "find_cjk_font", fail)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plots.book_style()
    assert not set(plt.rcParams["font.family"]) & set(plots.CJK_FAMILIES)
