"""The forward pass of a Llama-architecture decoder, written with the book's own pieces.

One layer, for the hidden states x (1, T, d_model) of T tokens:

    h = x + Attention(RMSNorm(x))             queries, keys and values; RoPE on q and k; causal GQA attention
    x = h + SwiGLU(RMSNorm(h))                W_down (silu(x W_gate) * (x W_up))

and after the last layer logits = RMSNorm(x) W_E^T with the token embedding W_E (tied head). The attention
is attnlab.torch_ops.attention (or a RotaryKVCache's attend), the rotation attnlab.torch_ops.rope.
Weights keep nn.Linear's layout (out, in): y = x @ W.T.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..errors import AttentionInputError
from ..i18n import _
from ..torch_ops import RotaryKVCache, attention, rope
from ..torch_ops.quantized_cache import QuantizedKVCache


def rms_norm(x, weight, eps: float):
    """x / sqrt(mean(x^2) + eps) * weight over the last axis (Zhang and Sennrich's RMSNorm: no mean, no bias)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def swiglu(x, w_gate, w_up, w_down):
    """The feed-forward block of Llama (Shazeer's SwiGLU): (silu(x W_gate^T) * (x W_up^T)) W_down^T."""
    return F.linear(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down)


@dataclass
class Layer:
    attn_norm: torch.Tensor   # (d_model,)
    w_q: torch.Tensor         # (H * d_head, d_model)
    w_k: torch.Tensor         # (H_kv * d_head, d_model)
    w_v: torch.Tensor         # (H_kv * d_head, d_model)
    w_o: torch.Tensor         # (d_model, H * d_head)
    ffn_norm: torch.Tensor    # (d_model,)
    w_gate: torch.Tensor      # (d_ff, d_model)
    w_up: torch.Tensor        # (d_ff, d_model)
    w_down: torch.Tensor      # (d_model, d_ff)


GGUF_NAMES = {"attn_norm": "attn_norm", "w_q": "attn_q", "w_k": "attn_k", "w_v": "attn_v", "w_o": "attn_output",
              "ffn_norm": "ffn_norm", "w_gate": "ffn_gate", "w_up": "ffn_up", "w_down": "ffn_down"}


class Transformer:
    """The network alone: embeddings, layers, final norm, head. See :class:`attnlab.decoder.Decoder` for the API."""

    def __init__(self, config: dict, weights: dict, pairing: str):
        self.config, self.pairing = config, pairing
        self.embedding = weights["token_embd.weight"]                        # (vocab, d_model)
        self.head = weights.get("output.weight", self.embedding)             # tied: the embedding itself
        self.final_norm = weights["output_norm.weight"]
        self.layers = [Layer(**{field: weights[f"blk.{i}.{name}.weight"] for field, name in GGUF_NAMES.items()})
                       for i in range(config["n_layers"])]

    @property
    def dtype(self):
        return self.embedding.dtype

    def _split(self, x, heads):
        x = x.view(1, -1, heads, self.config["d_head"])          # (1, T, heads, d_head)
        return x.transpose(1, 2)                                  # (1, heads, T, d_head)

    def attention(self, layer: Layer, x, positions, allowed, cache, need_weights):
        """The attention block's output (1, T, d_model) and, if asked, its weights (1, H, T, S)."""
        c = self.config
        q = self._split(F.linear(x, layer.w_q), c["n_heads"])         # (1, H, T, d_head)
        k = self._split(F.linear(x, layer.w_k), c["n_kv_heads"])      # (1, H_kv, T, d_head)
        v = self._split(F.linear(x, layer.w_v), c["n_kv_heads"])      # (1, H_kv, T, d_head)
        weights = None
        if cache is not None:
            cache.append(k, v)                                        # rotated inside, stored after rotation
            out = cache.attend(q)                                     # (1, H, T, d_head)
        else:
            q = rope(q, positions, base=c["rope_base"], pairing=self.pairing)
            k = rope(k, positions, base=c["rope_base"], pairing=self.pairing)
            r = c["n_heads"] // c["n_kv_heads"]                       # query head h reads KV head h // r
            k, v = k.repeat_interleave(r, 1), v.repeat_interleave(r, 1)   # (1, H, T, d_head) each
            res = attention(q, k, v, allowed=allowed, return_weights=need_weights)
            out, weights = res if need_weights else (res, None)
        out = out.transpose(1, 2).reshape(1, x.shape[1], -1)          # (1, T, H * d_head)
        return F.linear(out, layer.w_o), weights

    def forward(self, ids, positions=None, allowed=None, caches=None, last_only=False, need_weights=False):
        """Logits (T, vocab) of the tokens ``ids`` (or (1, vocab) with last_only), and the list of attention
        weights per layer if ``need_weights``. positions default to 0 .. T - 1; allowed to the causal mask."""
        c = self.config
        ids = torch.as_tensor(ids, dtype=torch.int64, device=self.embedding.device)
        T = ids.shape[0]
        if positions is None:
            positions = torch.arange(T, device=ids.device)
        if allowed is None and caches is None and T > 1:
            allowed = torch.ones(T, T, dtype=torch.bool, device=ids.device).tril()   # (T, T) causal
        x = self.embedding[ids][None]                                 # (1, T, d_model)
        maps = []
        for i, layer in enumerate(self.layers):
            cache = None if caches is None else caches[i]
            out, weights = self.attention(layer, rms_norm(x, layer.attn_norm, c["rms_eps"]), positions, allowed,
                                          cache, need_weights)
            maps.append(weights)
            h = x + out
            x = h + swiglu(rms_norm(h, layer.ffn_norm, c["rms_eps"]), layer.w_gate, layer.w_up, layer.w_down)
        x = x[0, -1:] if last_only else x[0]                          # (T or 1, d_model)
        logits = F.linear(rms_norm(x, self.final_norm, c["rms_eps"]), self.head)   # (T or 1, vocab)
        return (logits, maps) if need_weights else logits

    def new_cache(self, layout="contiguous", window=None, n_sinks=0, block_size=16, renumber=True, bits=None,
                  group=32):
        """One RotaryKVCache per layer (stores keys after rotation); with ``bits``, a contiguous QuantizedKVCache."""
        c = self.config
        common = dict(dtype=self.dtype, device=self.embedding.device, base=c["rope_base"], pairing=self.pairing)
        if bits is not None:
            if layout != "contiguous":
                raise AttentionInputError(_("a quantised cache (bits={bits}) is contiguous; got layout={layout!r}")
                                          .format(bits=bits, layout=layout))
            return [QuantizedKVCache(c["n_kv_heads"], c["d_head"], bits=bits, group=group, **common)
                    for _layer in range(c["n_layers"])]
        return [RotaryKVCache(c["n_kv_heads"], c["d_head"], layout=layout, window=window, n_sinks=n_sinks,
                              block_size=block_size, renumber=renumber, **common)
                for _layer in range(c["n_layers"])]


def check_ids(ids, vocab_size: int) -> list[int]:
    """Token ids as a list of ints in [0, vocab_size); at least one."""
    if isinstance(ids, torch.Tensor):
        ids = ids.tolist()
    try:
        ids = [int(i) for i in ids]
        ok = len(ids) > 0 and all(0 <= i < vocab_size for i in ids)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise AttentionInputError(_("ids must be a non-empty list of token ids in [0, {vocab}); got {ids!r}").format(
            vocab=vocab_size, ids=str(ids)[:80]))
    return ids
