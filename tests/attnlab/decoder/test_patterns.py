"""The pattern scores on weights built by hand (exact values), and on the real model the facts the chapter shows."""
import pytest
import torch

import attnlab as al
from attnlab.decoder import patterns


def test_scores_on_weights_built_by_hand():
    T = 6
    sink = torch.zeros(T, T, dtype=torch.float64)
    sink[:, 0] = 1.0                                       # every query on token 0
    previous = torch.eye(T, dtype=torch.float64).roll(-1, 1).tril()   # query p on p - 1
    previous[0, 0] = 1.0
    weights = torch.stack([sink, previous])[None]          # (1 layer, 2 heads, T, T)
    assert patterns.sink_share(weights).tolist() == [[1.0, 0.2]]       # the previous-token head's query 1 reads 0
    assert patterns.previous_token(weights).tolist() == [[0.2, 1.0]]
    assert patterns.induction(weights, period=2).tolist() == [[0.0, 1.0]]   # p - 2 + 1 = p - 1
    assert patterns.induction(weights, period=3).tolist() == [[0.0, 0.0]]   # p - 2: neither head
    with pytest.raises(al.AttentionInputError, match="period"):
        patterns.induction(weights, period=1)


def test_real_heads_sink_and_copy(dec):
    ids = patterns.repeated_random_tokens(20, dec.config["vocab_size"], seed=0)
    weights = dec.attention_weights(ids)                    # (30, 9, 41, 41)
    assert weights.shape == (30, 9, 41, 41)
    torch.testing.assert_close(weights.sum(-1), torch.ones(30, 9, 41))
    uniform = (1 / torch.arange(2, 42)).mean()              # the first token's share if every query spread evenly
    assert patterns.sink_share(weights)[2:].mean() > 4 * uniform      # sinks, past the first layers
    assert patterns.induction(weights, 20, start=1).max() > 0.5       # some head copies from the first copy
    assert patterns.previous_token(weights).max() > 0.5               # some head reads the token before
