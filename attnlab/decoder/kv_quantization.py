"""What quantising the real decoder's KV cache costs: logits, next-token losses and bytes, against the float32 cache.

The text is fed through two caches in the same chunks (attnlab.torch_ops.quantized_cache: keys per channel in
blocks of ``group`` positions, values per token), so the only difference is the quantisation.
"""
from __future__ import annotations

import torch

from .streaming import nll_from_logits


def _logits(dec, ids, cache, chunk):
    return torch.cat([dec.step(ids[start:start + chunk], cache) for start in range(0, len(ids), chunk)])


def compare(dec, ids, bits: int, group: int = 32, chunk: int = 32) -> dict:
    """Max |logit difference|, mean |NLL difference| per token, share of positions whose top token changes, and the
    bytes per token of both caches (all layers, after the whole text)."""
    exact_cache, quantised_cache = dec.new_cache(), dec.new_cache(bits=bits, group=group)
    exact, quantised = _logits(dec, ids, exact_cache, chunk), _logits(dec, ids, quantised_cache, chunk)
    nll_gap = abs(nll_from_logits(quantised, ids) - nll_from_logits(exact, ids))
    return {"bits": bits,
            "max_logit_error": (quantised - exact).abs().max().item(),
            "mean_nll_change": float(nll_gap.mean()),
            "top_token_changed": (quantised.argmax(-1) != exact.argmax(-1)).double().mean().item(),
            "bytes_per_token": sum(c.nbytes for c in quantised_cache) / len(ids),
            "float32_bytes_per_token": sum(c.nbytes for c in exact_cache) / len(ids)}
