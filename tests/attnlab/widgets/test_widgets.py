"""The explorers: their pure state functions against independent references, then the widgets
driven programmatically (set a control, check the numbers shown follow)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import attnlab as al
from attnlab.widgets import state as st

# ---------------------------------------------------------------------------------------------
# Independent references: masks from their definitions, weights from torch
# ---------------------------------------------------------------------------------------------


def loop_mask(pattern, T=6, S=None, offset=None, lengths=(6, 4, 1, 0), seq=0, side="right",
              pad_queries_valid=False, doc_ids=(0, 0, 0, 1, 1, 2), window=3):
    """(allowed, query_valid) written entry by entry from each pattern's definition."""
    if pattern == "documents":
        T = len(doc_ids)
    S_ = T if pattern != "cached decoding" or S is None else S
    off = (S_ - T if offset is None else offset) if pattern == "cached decoding" else 0
    allowed = np.zeros((T, S_), dtype=bool)
    valid = np.ones(T, dtype=bool)
    L = lengths[seq] if "padding" in pattern else None

    def real(j):
        return j < L if side == "right" else j >= T - L

    for i in range(T):
        for j in range(S_):
            p = i + off
            if pattern == "none":
                ok = True
            elif pattern == "causal":
                ok = j <= i
            elif pattern == "padding":
                ok = real(j)
            elif pattern == "causal+padding":
                ok = real(j) and j <= i
            elif pattern == "documents":
                ok = doc_ids[j] >= 0 and doc_ids[i] == doc_ids[j] and j <= i
            elif pattern == "sliding window":
                ok = i - window < j <= i
            else:
                ok = j <= p
            allowed[i, j] = ok
        if "padding" in pattern and not pad_queries_valid:
            valid[i] = real(i)
        if pattern == "documents":
            valid[i] = doc_ids[i] >= 0
    return allowed, valid


def torch_weights(logits, allowed, valid):
    """Softmax of the scores with forbidden entries at -inf, by torch; padding rows zeroed."""
    t = torch.tensor(logits)
    out = torch.zeros_like(t)
    for i in range(t.shape[0]):
        if valid[i] and allowed[i].any():
            out[i] = torch.softmax(t[i].masked_fill(~torch.tensor(allowed[i]), float("-inf")), dim=0)
    return out.numpy()


CASES = [
    dict(pattern="none", T=1), dict(pattern="none", T=5), dict(pattern="causal", T=1), dict(pattern="causal", T=16),
    dict(pattern="padding", T=6, seq=1), dict(pattern="padding", T=6, seq=3),
    dict(pattern="padding", T=7, lengths=(7, 3), seq=1, side="left"),
    dict(pattern="causal+padding", T=6, seq=1), dict(pattern="causal+padding", T=6, seq=2, side="left"),
    dict(pattern="causal+padding", T=6, seq=2, side="left", pad_queries_valid=True),
    dict(pattern="documents", doc_ids=(0, 0, 1, 1, 1, 2, -1)), dict(pattern="documents", doc_ids=(3,)),
    dict(pattern="sliding window", T=8, window=1), dict(pattern="sliding window", T=8, window=3),
    dict(pattern="cached decoding", T=1, S=9), dict(pattern="cached decoding", T=3, S=8),
    dict(pattern="cached decoding", T=3, S=8, offset=0), dict(pattern="cached decoding", T=2, S=6, offset=-1),
    dict(pattern="cached decoding", T=16, S=16, offset=-3),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{v}" for v in c.values()))
def test_mask_pattern_matches_its_definition(case):
    allowed, valid, _ = st.mask_pattern(**case)
    ref_allowed, ref_valid = loop_mask(**case)
    np.testing.assert_array_equal(allowed, ref_allowed)
    np.testing.assert_array_equal(valid, ref_valid)


def test_mask_patterns_match_the_masks_module():
    np.testing.assert_array_equal(st.mask_pattern("causal", T=7)[0], al.masks.causal(7))
    np.testing.assert_array_equal(st.mask_pattern("cached decoding", T=3, S=9, offset=2)[0], al.masks.causal(3, 9, 2))
    np.testing.assert_array_equal(st.mask_pattern("sliding window", T=9, window=4)[0], al.masks.sliding_window(9, 4))
    ids = (0, 0, 1, 1, 1)
    np.testing.assert_array_equal(st.mask_pattern("documents", doc_ids=ids)[0],
                                  al.masks.documents(np.array(ids)) & al.masks.causal(5))
    pad = al.masks.padding(np.array([5, 2]), 5)              # (B, 1, S)
    np.testing.assert_array_equal(st.mask_pattern("padding", T=5, lengths=(5, 2), seq=1)[0],
                                  np.broadcast_to(pad[1], (5, 5)))


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{v}" for v in c.values()))
def test_mask_state_weights_match_torch_and_the_reference(case):
    s = st.mask_state(**case)
    allowed, valid = loop_mask(**case)
    q_tab, k_tab = st.fixed_qk()
    q, k = q_tab[s.q_positions % len(q_tab)], k_tab[: s.S]
    np.testing.assert_allclose(s.logits, q @ k.T / 2.0)     # d_k = 4
    empty = valid & ~allowed.any(axis=1)
    np.testing.assert_allclose(s.weights, torch_weights(s.logits, allowed, valid), atol=1e-12)
    assert s.row_status == tuple("padding" if not v else "empty" if e else "ok" for v, e in zip(valid, empty))
    ok = np.array([x == "ok" for x in s.row_status])
    np.testing.assert_allclose(s.row_sums[ok], 1.0)
    np.testing.assert_array_equal(s.row_sums[~valid], 0.0)
    assert np.isnan(s.row_sums[empty]).all()
    if empty.any():        # the reference refuses a valid query with nothing to read
        with pytest.raises(al.EmptyVisibilityError):
            al.attention(q, k, np.eye(s.S), allowed=allowed, query_valid=valid)
        assert s.error and "may read no key" in s.error
    else:
        assert s.error is None
        _, w = al.attention(q, k, np.eye(s.S), allowed=allowed, query_valid=valid, return_weights=True)
        np.testing.assert_allclose(s.weights, w)


def test_fully_masked_rows_padding_zero_versus_valid_error():
    pad = st.mask_state("padding", T=6, lengths=(6, 0), seq=1)             # every position is padding
    assert set(pad.row_status) == {"padding"} and pad.error is None
    np.testing.assert_array_equal(pad.weights, 0.0)
    bad = st.mask_state("padding", T=6, lengths=(6, 0), seq=1, pad_queries_valid=True)
    assert set(bad.row_status) == {"empty"} and "may read no key" in bad.error
    assert np.isnan(bad.row_sums).all()
    left = st.mask_state("causal+padding", T=6, lengths=(6, 2), seq=1, side="left", pad_queries_valid=True)
    assert left.row_status == ("empty",) * 4 + ("ok",) * 2                  # left pads see only pads before them


def test_mask_after_softmax_is_the_wrong_weights():
    for case in CASES:
        right, wrong = st.mask_state(**case), st.mask_state(**case, after_softmax=True)
        allowed, valid = loop_mask(**case)
        full = torch.softmax(torch.tensor(right.logits), dim=-1).numpy()     # over all S keys
        np.testing.assert_allclose(wrong.weights, full * allowed * valid[:, None], atol=1e-12)
        assert wrong.error is None                                           # the bug raises nothing
        ok = np.array([x == "ok" for x in right.row_status])
        partial = ok & ~allowed.all(axis=1)
        assert (wrong.row_sums[partial] < 1 - 1e-12).all()                  # rows lose mass
        # renormalising the wrong weights recovers the right ones on non-empty rows
        np.testing.assert_allclose(wrong.weights[ok] / wrong.row_sums[ok, None], right.weights[ok])
        empty = np.array([x == "empty" for x in right.row_status])
        np.testing.assert_array_equal(wrong.row_sums[empty], 0.0)           # silently zero, not an error


def test_mask_state_refuses_bad_inputs():
    for kwargs in (dict(pattern="diagonal"), dict(pattern="padding", lengths="a, b"),
                   dict(pattern="padding", T=3, lengths=(5,)), dict(pattern="padding", seq=9),
                   dict(pattern="documents", doc_ids=""), dict(pattern="causal", T=0)):
        with pytest.raises(ValueError):
            st.mask_state(**kwargs)


# ---------------------------------------------------------------------------------------------
# Convex combinations
# ---------------------------------------------------------------------------------------------


def brute_hull(points):
    """Points that are the unique maximiser of <p, u> for some direction u (the hull's vertices)."""
    t = np.linspace(0, 2 * np.pi, 3600, endpoint=False)
    us = np.stack([np.cos(t), np.sin(t)], axis=1)                 # (directions, 2)
    best = points @ us.T                                      # (n, directions)
    winners = set()
    for col in best.T:
        top = np.flatnonzero(col >= col.max() - 1e-12)
        if len(top) == 1:
            winners.add(int(top[0]))
    return winners


def inside(point, hull):
    """Point in a counter-clockwise convex polygon (or on its boundary)."""
    n = len(hull)
    def cross(a, b):
        return a[0] * b[1] - a[1] * b[0]
    return all(cross(hull[(i + 1) % n] - hull[i], point - hull[i]) >= -1e-9 for i in range(n))


@pytest.mark.parametrize(
    "angle,tau,masked", list(itertools.product((0, 73, 200), (0.05, 1.0, 30.0), ((), (0,), (1, 3))))
)
def test_convex_state_against_torch(angle, tau, masked):
    s = st.convex_state(angle, 1.5, tau, masked)
    v = st.CONVEX_VALUES
    q = 1.5 * np.array([np.cos(np.radians(angle)), np.sin(np.radians(angle))])
    ok = np.array([j not in masked for j in range(len(v))])
    logits = torch.tensor(v @ q / tau).masked_fill(~torch.tensor(ok), float("-inf"))
    w = torch.softmax(logits, dim=0).numpy()
    np.testing.assert_allclose(s.weights, w, atol=1e-12)
    np.testing.assert_allclose(s.output, w @ v, atol=1e-12)
    assert abs(s.weights.sum() - 1) < 1e-12 and (s.weights[~ok] == 0).all()
    allowed_idx = np.flatnonzero(ok)
    assert {tuple(p) for p in s.hull} == {tuple(v[allowed_idx[i]]) for i in brute_hull(v[ok])}
    assert inside(s.output, s.hull)
    np.testing.assert_allclose(s.centroid, v[ok].mean(axis=0))
    assert s.equivalent_d_k == pytest.approx(tau ** 2)


def test_convex_limits_vertex_and_centroid():
    for angle in (0, 100, 250):
        cold = st.convex_state(angle, 1.5, 1e-3)
        q = cold.query
        j = int(np.argmax(st.CONVEX_VALUES @ q))                       # the value the query points at
        np.testing.assert_allclose(cold.output, st.CONVEX_VALUES[j], atol=1e-6)
        hot = st.convex_state(angle, 1.5, 1e5)
        np.testing.assert_allclose(hot.output, st.CONVEX_VALUES.mean(axis=0), atol=1e-4)
    masked = st.convex_state(0, 1.5, 1e-3, masked=(0,))                 # v1 is the target at angle 0
    assert not any(np.allclose(p, st.CONVEX_VALUES[0]) for p in masked.hull)
    assert not np.allclose(masked.output, st.CONVEX_VALUES[0], atol=1e-3)


def test_convex_all_masked_and_zero_query():
    s = st.convex_state(0, 1.5, 1.0, masked=range(5))
    assert s.error and s.output is None
    flat = st.convex_state(0, 0.0, 1.0)                                  # q = 0: uniform weights
    np.testing.assert_allclose(flat.weights, 0.2)
    with pytest.raises(ValueError):
        st.convex_state(0, 1.0, 0.0)


# ---------------------------------------------------------------------------------------------
# Scaling
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d_k,scaled", [(1, True), (1, False), (64, True), (64, False), (512, False)])
def test_scaling_state_against_torch(d_k, scaled):
    s = st.scaling_state(d_k, scaled, S=16, n=200)
    q, k = st.scaling_samples(d_k, 16, 200)
    logits = torch.tensor(q) @ torch.tensor(k).T / (d_k ** 0.5 if scaled else 1.0)
    np.testing.assert_allclose(s.logits, logits.numpy())
    a = torch.softmax(logits, dim=-1)
    assert s.max_weight == pytest.approx(a.max(dim=-1).values.mean().item())
    assert s.entropy == pytest.approx(torch.special.entr(a).sum(dim=-1).mean().item())
    jac = [torch.autograd.functional.jacobian(lambda x: torch.softmax(x, 0), logits[i]) for i in range(0, 200, 20)]
    ours = [np.linalg.norm(al.grad.softmax_jacobian(a[i].numpy())) for i in range(0, 200, 20)]
    np.testing.assert_allclose(ours, [torch.linalg.matrix_norm(j).item() for j in jac], rtol=1e-10, atol=1e-12)
    sd = np.sqrt(d_k) if not scaled else 1.0
    assert s.logit_std_theory == pytest.approx(sd)
    assert abs(s.logit_std / sd - 1) < 0.25                     # q.k has variance d_k (16 keys: a noisy estimate)
    assert s.max_entropy == pytest.approx(np.log(16))


def test_scaling_unscaled_saturates_scaled_does_not():
    un = [st.scaling_state(d, False) for d in (1, 512)]
    sc = [st.scaling_state(d, True) for d in (1, 512)]
    assert un[1].max_weight > 0.85 and un[1].jacobian_norm < 0.5 * un[0].jacobian_norm
    assert abs(sc[1].max_weight - sc[0].max_weight) < 0.1
    uniform = np.full(16, 1 / 16)
    assert sc[0].jacobian_norm_uniform == pytest.approx(np.linalg.norm(np.diag(uniform) - np.outer(uniform, uniform)))


# ---------------------------------------------------------------------------------------------
# GQA
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("H,H_kv", [(1, 1), (8, 1), (8, 2), (8, 8), (12, 4), (32, 8)])
def test_gqa_state_against_torch(H, H_kv):
    s = st.gqa_state(H, H_kv, n_layers=3, T=5, d_k=4, dtype="bfloat16", batch=2)
    # torch's repeat_interleave is how GQA code expands K, V: position h holds KV head kv_for[h]
    expected = torch.arange(H_kv).repeat_interleave(H // H_kv).tolist()
    assert list(s.kv_for) == expected == [al.kv_head_for(h, H, H_kv) for h in range(H)]
    assert sorted(h for g in s.groups for h in g) == list(range(H))
    assert all(len(g) == H // H_kv for g in s.groups)
    cache = [torch.empty(2, H_kv, 5, 4, dtype=torch.bfloat16) for _ in range(2 * 3)]   # K and V per layer
    assert s.cache_bytes == sum(t.nelement() * t.element_size() for t in cache)
    assert s.mha_bytes == s.cache_bytes * H // H_kv and s.mqa_bytes == s.cache_bytes // H_kv
    assert s.kind == ("MHA" if H_kv == H else "MQA" if H_kv == 1 else "GQA")


def test_gqa_dtype_sizes_and_errors():
    for name, size in st.DTYPE_BYTES.items():
        assert torch.empty(0, dtype=getattr(torch, name)).element_size() == size
    bad = st.gqa_state(8, 3)
    assert bad.error and "divide" in bad.error and bad.kind == "invalid"
    with pytest.raises(ValueError):
        st.kv_cache_bytes(1, 1, 1, 1, "float64")
    assert st.human_bytes(3 * 2 ** 30) == "3.00 GiB"


# ---------------------------------------------------------------------------------------------
# The widgets, driven programmatically
# ---------------------------------------------------------------------------------------------

def test_mask_explorer_follows_its_controls():
    ex = al.widgets.mask_explorer()
    c = ex.controls
    assert ex.picture.value.startswith("<svg") and ex.state.pattern == "causal"
    c["T"].value = 1                                                   # T = 1 edge
    assert ex.state.weights.shape == (1, 1) and ex.state.weights[0, 0] == 1.0
    c["pattern"].value = "cached decoding"
    c["T"].value, c["S"].value = 2, 6
    c["offset"].value = -1                                             # query 0 sits before every key
    assert ex.state.row_status == ("empty", "ok") and "EmptyVisibilityError" in ex.readout.value
    assert c["offset"].description == "offset (S−T = 4)"
    c["offset"].value = 4
    assert ex.state.error is None and ex.state.allowed[-1].all()       # the newest query sees all S keys
    np.testing.assert_array_equal(ex.state.allowed, al.masks.causal(2, 6))
    c["after_softmax"].value = True
    expected = st.mask_state("cached decoding", T=2, S=6, offset=4, after_softmax=True)
    np.testing.assert_allclose(ex.state.weights, expected.weights)
    assert f"{expected.row_sums[0]:.2f}" in ex.readout.value and "after the softmax" in ex.readout.value
    c["pattern"].value = "documents"
    assert c["T"].layout.display == "none" and c["doc_ids"].layout.display is None
    c["doc_ids"].value = "0 0 1 x"                                      # a typo: message, state kept
    assert ex.error and ex.state.pattern == "documents" and "doc_ids" in ex.message.value
    c["doc_ids"].value = "0 0 1 1"
    assert ex.error is None and ex.state.T == 4 and ex.message.value == ""


def test_mask_explorer_padding_rows():
    ex = al.widgets.mask_explorer(pattern="padding")
    c = ex.controls
    c["lengths"].value, c["seq"].value = "6, 0", 1
    assert set(ex.state.row_status) == {"padding"} and "zero row" in ex.readout.value
    c["pad_queries_valid"].value = True
    assert set(ex.state.row_status) == {"empty"} and ex.state.error
    c["seq"].value = 5                                                  # no such sequence
    assert ex.error and "seq" in ex.error


def test_convex_explorer_follows_its_controls():
    ex = al.widgets.convex_combination_explorer()
    c = ex.controls
    c["angle"].value, c["log10_temperature"].value = 0, -1.5
    expected = st.convex_state(0, 1.5, 10 ** -1.5)
    np.testing.assert_allclose(ex.state.weights, expected.weights)
    assert f"{expected.weights[0]:.3f}" in ex.readout.value
    c["masked"].value = (0,)
    assert not ex.state.allowed[0] and ex.state.weights[0] == 0
    c["masked"].value = tuple(range(5))
    assert ex.state.error and "masked" in ex.readout.value


def test_scaling_explorer_follows_its_controls():
    ex = al.widgets.scaling_explorer()
    c = ex.controls
    c["d_k"].value = 256
    assert ex.state.logit_std_theory == pytest.approx(16.0) and not ex.state.scaled
    c["scaled"].value = "scaled by 1/√d_k"
    assert ex.state.scaled and ex.state.logit_std_theory == 1.0
    assert f"{st.scaling_state(256, True).max_weight:.3f}" in ex.readout.value


def test_gqa_explorer_follows_its_controls():
    ex = al.widgets.gqa_explorer()
    c = ex.controls
    for H_kv in (1, 8):                                                  # MQA and MHA ends
        c["n_kv_heads"].value = H_kv
        assert ex.state.n_kv_heads == H_kv and ex.state.cache_bytes == st.kv_cache_bytes(H_kv, 32, 4096, 128)
        assert f"{ex.state.cache_bytes:,} bytes" in ex.readout.value
    c["n_kv_heads"].value = 3
    assert ex.state.error and "divide" in ex.readout.value
    c["dtype"].value, c["n_kv_heads"].value = "float32", 4
    assert ex.state.cache_bytes == 2 * 32 * 4 * 4096 * 128 * 4


# ---------------------------------------------------------------------------------------------
# Offline explorers: nested stacks of frames switched by jslink
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def no_drawing(monkeypatch):
    """Skip drawing in frame building (structure tests only)."""
    for mod in ("mask", "convex", "scaling", "gqa"):
        monkeypatch.setattr(f"attnlab.widgets.{mod}.draw", lambda s: "<svg></svg>")


def _links(root, source):
    """The jslinks inside ``root`` (kept on each Stack by linked_stack) whose source is ``source``."""
    return [l for w in _walk(root) for l in getattr(w, "_links", ()) if l.source[0] is source]


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def test_offline_mask_frames_cover_the_grid(no_drawing):
    from attnlab.widgets.mask import OFFLINE_GRID
    ex = al.widgets.mask_explorer(offline=True)
    assert len(ex.states) == 2 * sum(len(opts) for _, _, opts in OFFLINE_GRID)
    for (p, i, after), s in ex.states.items():
        name, _, opts = OFFLINE_GRID[p]
        ref = st.mask_state(name, after_softmax=bool(after), **opts[i][1])
        np.testing.assert_allclose(s.weights, ref.weights)
    body = ex.children[1]                                    # Stack over patterns
    assert [l.target for l in _links(ex, ex.controls["pattern"])] == [(body, "selected_index")]
    page = body.children[6]                                  # cached decoding: VBox([slider, stack])
    slider, params = page.children
    assert slider is ex.controls["params"][6] and [l.target for l in _links(ex, slider)] == [(params, "selected_index")]
    frame = params.children[0].children[0]                   # offset -1, mask before softmax
    assert ex.states[(6, 0, 0)].row_status[0] == "empty" and "EmptyVisibilityError" in frame.value
    assert "after the softmax" in params.children[0].children[1].value
    stacks = [l.target[0] for l in _links(ex, ex.controls["after_softmax"])]
    assert len(stacks) == sum(len(opts) for _, _, opts in OFFLINE_GRID)   # every leaf stack follows the switch
    assert all(len(s_.children) == 2 for s_ in stacks)


def test_offline_convex_scaling_gqa_frames(no_drawing):
    ex = al.widgets.convex_combination_explorer(offline=True)
    assert len(ex.states) == 8 * 4 * 3
    s = ex.states[(0, 0, 0)]                                 # angle 0, tau = 0.1, no mask
    np.testing.assert_allclose(s.weights, st.convex_state(0, 1.5, 0.1).weights)
    sc = al.widgets.scaling_explorer(offline=True)
    assert sc.states[(st.D_K_VALUES.index(512), 1)].max_weight == pytest.approx(st.scaling_state(512, False).max_weight)
    g = al.widgets.gqa_explorer(offline=True)
    assert {(st_.n_heads, st_.n_kv_heads) for st_ in g.states.values() if st_.error is None} == {
        (h, k) for h in (1, 2, 4, 8, 16) for k in range(1, h + 1) if h % k == 0}
    assert all((s_.error is None) == (s_.n_heads % s_.n_kv_heads == 0) for s_ in g.states.values())


def test_offline_gqa_changing_h_q_keeps_h_kv(no_drawing):
    """One H_kv control for every H_q: switching H_q only switches the outer stack."""
    from attnlab.widgets.gqa import OFFLINE_HEADS
    g = al.widgets.gqa_explorer(offline=True)
    heads, kv = g.controls["n_heads"], g.controls["n_kv_heads"]
    body = g.children[2]
    assert [l.target for l in _links(g, heads)] == [(body, "selected_index")]     # nothing else follows H_q
    inner = [l.target[0] for l in _links(g, kv)]
    assert inner == list(body.children) and all(s_.selected_index == kv.index for s_ in inner)
    assert (OFFLINE_HEADS[heads.index], OFFLINE_HEADS[kv.index]) == (8, 2)        # opens at GQA, r = 4
    for i, H in enumerate(OFFLINE_HEADS):
        for j, H_kv in enumerate(OFFLINE_HEADS):
            s_ = g.states[(i, j)]
            assert (s_.n_heads, s_.n_kv_heads) == (H, H_kv)
            assert s_.error is None if H % H_kv == 0 else "divide" in s_.error


def test_offline_mask_patterns_open_on_an_instructive_option(no_drawing):
    """Each pattern's control opens at a frame that shows the pattern, never an all-padding grid."""
    from attnlab.widgets.mask import OFFLINE_GRID
    ex = al.widgets.mask_explorer(offline=True)
    body = ex.children[1]
    for p, (name, _, _opts) in enumerate(OFFLINE_GRID):
        param = ex.controls["params"][p]
        shown = body.children[p].children[1]                        # the stack this pattern's control drives
        assert shown.selected_index == param.index
        s_ = ex.states[(p, param.index, 0)]
        assert "ok" in s_.row_status, f"{name} opens on a grid without a working row"
        if "padding" in name:
            assert {"ok", "padding"} <= set(s_.row_status), f"{name} opens without both real and padding tokens"
        if name == "cached decoding":
            assert s_.error is None and s_.allowed[-1].all()         # the right offset, S - T


def test_offline_frames_are_pictures():
    import ipywidgets as W
    g = al.widgets.gqa_explorer(offline=True)
    frames = [w for w in _walk(g) if isinstance(w, W.HTML) and "<svg" in w.value]
    assert len(frames) == len(g.states)
    for s in g.states.values():            # each frame shows its own numbers, or why there are none
        if s.error:
            assert any(f"H_kv = {s.n_kv_heads} does not divide H_q = {s.n_heads}" in f.value for f in frames)
        else:
            assert any(f"{s.cache_bytes:,} bytes" in f.value and f"H_kv = {s.n_kv_heads}," in f.value for f in frames)


# ------------------------------------------------------------------------------- legible pictures

from attnlab.plots import COLUMN_PX  # noqa: E402  (the 1280 px column; tests/build/test_browser.py measures it)

LEGIBLE_PX = 9.0       # the smallest text a reader may be shown there


def _smallest_text_in_the_column(svg: str) -> float:
    """The smallest font size of an explorer's picture as shown in the column: drawn size times
    the picture's shrink factor (a picture wider than the column is scaled down to fit)."""
    import re
    width = float(re.search(r'<svg [^>]*\bwidth="([\d.]+)"', svg).group(1))
    sizes = [float(v) for v in re.findall(r'font-size="([\d.]+)"', svg)]
    return min(sizes) * min(1.0, COLUMN_PX / width)


def _pictures(widget) -> list[str]:
    import ipywidgets as W
    return [w.value for w in _walk(widget) if isinstance(w, W.HTML) and "<svg" in w.value]


def _synthetic_heads(T: int, length: int):
    rng = np.random.default_rng(0)
    maps = rng.random((1, 2, 2, T, T))
    maps /= maps.sum(-1, keepdims=True)                                  # (1, L, H, T, T) rows sum to 1
    tokens = [["[CLS]"] + [f"tok{i}" for i in range(1, length - 1)] + ["[SEP]"] + ["[PAD]"] * (T - length)]
    return maps, tokens, [length]


@pytest.mark.parametrize("make", ["mask", "convex", "scaling", "gqa", "online softmax", "heads short",
                                  "heads long"])
def test_every_explorer_text_reads_at_9px_in_the_column(make):
    explorers = {
        "mask": lambda: al.widgets.mask_explorer(offline=True),
        "convex": lambda: al.widgets.convex_combination_explorer(offline=True),
        "scaling": lambda: al.widgets.scaling_explorer(offline=True),
        "gqa": lambda: al.widgets.gqa_explorer(offline=True),
        "online softmax": lambda: al.widgets.online_softmax_explorer(offline=True),
        "heads short": lambda: al.widgets.head_explorer(*_synthetic_heads(12, 9), offline=True),
        "heads long": lambda: al.widgets.head_explorer(*_synthetic_heads(40, 36), offline=True),
    }
    pictures = _pictures(explorers[make]())
    assert pictures, f"the {make} explorer drew no picture"
    worst = min(_smallest_text_in_the_column(p) for p in pictures)
    assert worst >= LEGIBLE_PX, f"the {make} explorer shows text at {worst:.1f} px in the 1280 px column"


def test_the_legibility_check_measures_the_shrink_of_a_wide_picture():
    narrow = '<svg width="400" font-size="10"><text font-size="9">a</text></svg>'
    wide = '<svg width="1440" font-size="12"><text font-size="14">a</text></svg>'
    assert _smallest_text_in_the_column(narrow) == 9.0 and _smallest_text_in_the_column(wide) == 6.0
