"""StreamingLLM's experiment, small: a window without sinks is much worse than full attention and four sinks repair
most of it; the re-numbered ring cache matches the masked pass until it wraps; without re-numbering, sinks farther
away than the training context hurt. Quantising the cache to int8 and int4 costs more with fewer bits."""
import numpy as np
import torch

from attnlab.decoder import streaming


def test_window_sinks_and_renumbering(dec):
    ids = [1] + dec.encode(streaming.long_text())[:150]
    w = 24
    full, window = streaming.masked_nll(dec, ids), streaming.masked_nll(dec, ids, w)
    sinks = streaming.masked_nll(dec, ids, w, 4)
    assert full.shape == (150,)
    late = slice(2 * w, None)
    assert streaming.perplexity(window[late]) > 2 * streaming.perplexity(sinks[late])
    assert streaming.perplexity(sinks[late]) > streaming.perplexity(full[late])
    np.testing.assert_allclose(full[: w - 1], window[: w - 1], atol=1e-4)   # until the window is full, identical
    renumbered = streaming.cached_nll(dec, ids, dec.new_cache("ring", window=w, n_sinks=4), chunk=50)
    np.testing.assert_allclose(renumbered[: w + 3], sinks[: w + 3], atol=1e-4)   # until the ring wraps
    far = streaming.sink_distance_nll(dec, ids, w, 4, gap=100_000)
    assert streaming.perplexity(far[late]) > 2 * streaming.perplexity(sinks[3:][late])


def test_nll_from_logits_is_cross_entropy():
    logits, ids = torch.randn(5, 7, dtype=torch.float64), [3, 1, 4, 1, 5]
    want = torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(ids[1:]), reduction="none").numpy()
    np.testing.assert_allclose(streaming.nll_from_logits(logits, ids), want, atol=1e-12)


def test_kv_quantisation_costs_more_with_fewer_bits(dec):
    from attnlab.decoder import kv_quantization

    ids = [1] + dec.encode(streaming.long_text())[:80]
    int8, int4 = (kv_quantization.compare(dec, ids, bits, group=16, chunk=40) for bits in (8, 4))
    assert 0 < int8["max_logit_error"] < int4["max_logit_error"]
    assert int8["mean_nll_change"] < int4["mean_nll_change"]
    assert int4["bytes_per_token"] < int8["bytes_per_token"] < int8["float32_bytes_per_token"] / 3
    assert int8["float32_bytes_per_token"] == dec.cache_bytes_per_token("float32")
