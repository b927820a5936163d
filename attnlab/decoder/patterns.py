"""What the heads of the real decoder look at: three scores per layer and head, from its causal weights.

    sink_share        the weight queries put on the first token, averaged over queries p >= 1 (attention sinks)
    previous_token    the weight on the token just before, p - 1, averaged over p >= 1
    induction         on a random sequence repeated twice (period n), the weight a query in the second copy puts
                      on the token that followed its previous occurrence, p - n + 1 (Olsson et al.'s induction heads)

Each takes the weights (n_layers, n_heads, T, T) of ``Decoder.attention_weights`` and returns (n_layers, n_heads).
"""
from __future__ import annotations

import numpy as np
import torch

from ..errors import AttentionInputError
from ..i18n import _


def _weights(weights, minimum_T=2) -> torch.Tensor:
    if not isinstance(weights, torch.Tensor) or weights.dim() != 4 or weights.shape[-1] != weights.shape[-2] \
            or weights.shape[-1] < minimum_T:
        shape = tuple(getattr(weights, "shape", ()))
        raise AttentionInputError(_("weights must be a tensor (n_layers, n_heads, T, T) with T >= {T}; got shape "
                                    "{shape}").format(T=minimum_T, shape=shape))
    return weights


def sink_share(weights) -> torch.Tensor:
    """(n_layers, n_heads): mean over queries p >= 1 of the weight on position 0."""
    return _weights(weights)[..., 1:, 0].mean(-1)


def previous_token(weights) -> torch.Tensor:
    """(n_layers, n_heads): mean over queries p >= 1 of the weight on position p - 1."""
    return _weights(weights).diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1)


def induction(weights, period: int, start: int = 0) -> torch.Tensor:
    """(n_layers, n_heads): mean over the second copy's queries p (p >= start + period) of the weight on
    p - period + 1, for a sequence whose tokens from ``start`` on repeat with ``period``."""
    w = _weights(weights, start + period + 1)
    T = w.shape[-1]
    if isinstance(period, bool) or not isinstance(period, int) or period < 2 or start + period >= T:
        raise AttentionInputError(_("period must be an integer >= 2 with start + period < T = {T}; got period "
                                    "{period!r}, start {start!r}").format(T=T, period=period, start=start))
    p = torch.arange(start + period, T)
    return w[..., p, p - period + 1].mean(-1)


def repeated_random_tokens(n: int, vocab_size: int, seed: int = 0, prefix=(1,)) -> list[int]:
    """``prefix`` (default the BOS token 1), then n random token ids, then the same n again: 2 n + len(prefix) ids.
    Ids below 1000 are avoided (special and byte tokens)."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(1000, vocab_size, size=n).tolist()
    return list(prefix) + tokens + tokens
