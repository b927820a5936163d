"""The real decoder through every cache layout: the same greedy tokens as the forward pass without a cache,
with the window-and-sinks mask for the ring, and StreamingLLM's re-numbering against a cache written here
that keeps keys unrotated and numbers them by their place in the cache (independent of RotaryKVCache)."""
import pytest
import torch

import attnlab as al

N_NEW = 20
WINDOW, SINKS = 8, 4


@pytest.fixture(scope="module")
def prompt(dec):
    return dec.encode("The first printing press in Europe was built by")


@pytest.fixture(scope="module")
def greedy(dec, prompt):
    return dec.generate(prompt, N_NEW, cache=dec.new_cache(), stop=())


def teacher_forced(dec, prompt, new, allowed=None):
    """The tokens a no-cache pass over prompt + new predicts at the positions where new tokens were chosen."""
    ids = prompt + new[:-1]
    return dec.logits(ids, allowed=allowed)[len(prompt) - 1:].argmax(-1).tolist()


def test_no_cache_forward_gives_the_contiguous_caches_tokens(dec, prompt, greedy):
    assert teacher_forced(dec, prompt, greedy) == greedy
    assert dec.generate(prompt, 4, stop=()) == greedy[:4]          # the no-cache generate loop itself


def test_paged_cache_gives_the_same_tokens(dec, prompt, greedy):
    assert dec.generate(prompt, N_NEW, cache=dec.new_cache("paged", block_size=16), stop=()) == greedy


def test_chunked_prefill_and_token_steps_give_the_full_pass_logits(dec, prompt, greedy):
    ids = prompt + greedy[:6]
    full = dec.logits(ids)
    cache, parts, start = dec.new_cache(), [], 0
    for t in (4, 1, 6) + (1,) * (len(ids) - 11):
        parts.append(dec.step(ids[start:start + t], cache))
        start += t
    torch.testing.assert_close(torch.cat(parts), full, rtol=0, atol=2e-4)


def test_ring_without_renumbering_is_the_window_and_sinks_mask(dec, prompt):
    new = dec.generate(prompt, N_NEW, cache=dec.new_cache("ring", window=WINDOW, n_sinks=SINKS, renumber=False),
                       stop=())
    T = len(prompt) + N_NEW - 1
    allowed = al.masks.sliding_window(T, WINDOW) | (al.masks.causal(T) & (torch.arange(T) < SINKS).numpy())
    assert teacher_forced(dec, prompt, new, torch.from_numpy(allowed)) == new


class StreamingLLMCache:
    """StreamingLLM's cache as its code keeps it: unrotated keys of the sinks and of the last ``window`` positions;
    at every step they are rotated by their place in the cache, 0 .. n - 1, and the query by n - 1. One token
    at a time."""

    def __init__(self, window, n_sinks, base, pairing):
        self.window, self.n_sinks, self.base, self.pairing = window, n_sinks, base, pairing
        self.k = self.v = None

    def __len__(self):
        return 0 if self.k is None else self.k.shape[2]

    def append(self, k, v):
        assert k.shape[2] == 1
        self.k = k if self.k is None else torch.cat([self.k, k], 2)
        self.v = v if self.v is None else torch.cat([self.v, v], 2)
        if self.k.shape[2] > self.n_sinks + self.window:                       # evict the oldest non-sink
            keep = list(range(self.n_sinks)) + list(range(self.n_sinks + 1, self.k.shape[2]))
            self.k, self.v = self.k[:, :, keep], self.v[:, :, keep]

    def attend(self, q):
        n, r = self.k.shape[2], q.shape[1] // self.k.shape[1]
        k = al.torch_ops.rope(self.k, range(n), self.base, self.pairing).repeat_interleave(r, 1)
        q = al.torch_ops.rope(q, [n - 1], self.base, self.pairing)
        weights = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, -1)
        return weights @ self.v.repeat_interleave(r, 1)


def test_ring_with_renumbering_is_streaming_llm(dec, prompt):
    c = dec.config
    ring = dec.new_cache("ring", window=WINDOW, n_sinks=SINKS)
    hand = [StreamingLLMCache(WINDOW, SINKS, c["rope_base"], c["pairing"]) for _ in range(c["n_layers"])]
    ids = prompt + dec.encode(" Johannes Gutenberg in Mainz around 1440")
    assert len(ids) > SINKS + WINDOW + 4
    with torch.no_grad():
        ours = torch.cat([dec.network.forward([i], caches=ring) for i in ids])
        theirs = torch.cat([dec.network.forward([i], caches=hand) for i in ids])
    torch.testing.assert_close(ours, theirs, rtol=0, atol=2e-4)
    assert torch.equal(ours.argmax(-1), theirs.argmax(-1))


def test_bad_input(dec):
    with pytest.raises(al.AttentionInputError, match="ids"):
        dec.logits([])
    with pytest.raises(al.AttentionInputError, match="ids"):
        dec.logits([dec.config["vocab_size"]])
    with pytest.raises(al.AttentionInputError, match="max_new_tokens"):
        dec.generate([1], -1)
    with pytest.raises(al.AttentionInputError, match="cache"):
        dec.generate([1], 2, cache=[])
    with pytest.raises(al.AttentionInputError, match="allowed"):
        dec.logits([1, 2], allowed=torch.ones(3, 3, dtype=torch.bool))
