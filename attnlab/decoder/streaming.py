"""StreamingLLM's experiment on the real decoder: how well it predicts a long text when it may read only a window.

Every function returns the negative log-likelihood (in nats) of each next token, (T - 1,), given what the setting
lets the model read; the perplexity of a stretch is exp(mean NLL).

    full attention          the causal mask
    a sliding window        each query reads its last ``window`` positions (attnlab.masks.sliding_window)
    window + sinks          the same plus the first ``n_sinks`` positions forever

One pass with a mask gives the window settings without re-numbering (what a ring cache computes with
``renumber=False``, checked in the tests); :func:`cached_nll` feeds the text through any cache of
``Decoder.new_cache`` in chunks, e.g. a ring with StreamingLLM's re-numbering. :func:`sink_distance_nll`
shows what the re-numbering guards against: without it, after a stream of ``gap`` tokens the sinks are
``gap`` positions away from every query, farther than the 8192 positions the model was trained on.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from .. import masks

TEXT_FILE = Path(__file__).with_name("long_text.txt")


def long_text() -> str:
    """About 400 tokens of plain English prose written for this book (no data hub is reachable offline)."""
    return TEXT_FILE.read_text()


def nll_from_logits(logits, ids) -> np.ndarray:
    """(T - 1,) -log p(ids[t + 1] | ...) from logits (T, vocab) that predict the next token at each position."""
    targets = torch.as_tensor(ids[1:])
    log_p = torch.log_softmax(logits[:-1].double(), -1)                  # (T - 1, vocab)
    return -log_p[torch.arange(len(targets)), targets].numpy()


def window_mask(T: int, window: int | None, n_sinks: int = 0) -> torch.Tensor:
    """(T, T) allowed: causal (window None), a sliding window, or a window plus the first n_sinks positions."""
    if window is None:
        return torch.from_numpy(masks.causal(T))
    sinks = masks.causal(T) & (np.arange(T) < n_sinks)                   # (T, T): the sink columns, causally
    return torch.from_numpy(masks.sliding_window(T, window) | sinks)


def masked_nll(dec, ids, window=None, n_sinks=0, positions=None) -> np.ndarray:
    """NLL per position from one pass with the window-and-sinks mask (absolute positions unless given)."""
    return nll_from_logits(dec.logits(ids, allowed=window_mask(len(ids), window, n_sinks), positions=positions), ids)


def cached_nll(dec, ids, cache, chunk: int = 32) -> np.ndarray:
    """NLL per position with the text fed through ``cache`` (a fresh dec.new_cache(...)) in chunks."""
    logits = torch.cat([dec.step(ids[start:start + chunk], cache) for start in range(0, len(ids), chunk)])
    return nll_from_logits(logits, ids)


def sink_distance_nll(dec, ids, window, n_sinks, gap: int) -> np.ndarray:
    """NLL per position of ids[n_sinks:] when the sinks ids[:n_sinks] keep positions 0 .. n_sinks - 1 and the rest
    is numbered from n_sinks + gap: what a ring cache without re-numbering computes after ``gap`` tokens of an
    earlier stream were evicted (with gap = 0, masked_nll)."""
    T = len(ids)
    positions = torch.cat([torch.arange(n_sinks), torch.arange(n_sinks, T) + gap])
    return masked_nll(dec, ids, window, n_sinks, positions)[n_sinks - 1:] if n_sinks else masked_nll(
        dec, ids, window, 0, positions)


def perplexity(nll) -> float:
    return float(np.exp(np.mean(nll)))
