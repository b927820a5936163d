"""attnlab.decoder against transformers 5 loading the same GGUF file (its own dequantisation, its own
un-permutation of W_Q and W_K, its own Llama code): tokenizer, chat template, logits, greedy tokens."""
import pytest
import torch

CHATS = ["What is the capital of France?", "Write a haiku about the sea."]
TEXTS = ["The first printing press in Europe was built by"]


def prompt(dec, kind, text):
    return dec.chat(text) if kind == "chat" else dec.encode(text)


PROMPTS = [("chat", t) for t in CHATS] + [("text", t) for t in TEXTS]


ODD = ["def fibonacci(n):\n", "Größe, 東京, naïve café 🙂", "  two  spaces\tand a tab\n"]


@pytest.mark.parametrize("text", TEXTS + CHATS + ODD)
def test_tokenizer_is_the_files_own(dec, hf, text):
    assert dec.encode(text) == hf.encode(text)
    assert dec.decode(dec.encode(text)) == text


@pytest.mark.parametrize("message", CHATS)
def test_chat_template_is_the_files_own(dec, hf, message):
    assert dec.chat(message) == hf.chat(message)


def test_logits_agree_to_float32_rounding(dec, hf):
    """In float64 the two agree to ~1e-13 (the conftest makes transformers' RoPE angles and RMSNorm float64 too):
    they compute the same function. In float32 each lies about 20 float32 epsilons (of the largest logit) from
    that float64 result, by the rounding of 30 layers of arithmetic done in different orders, and they differ
    from each other by as much: we assert 100 epsilons, about 4.5e-4 here (measured 6.6e-5)."""
    ids = dec.chat(CHATS[0]) + dec.encode("The capital of France is Paris.")
    ours32, theirs32 = dec.logits(ids), hf.logits(ids, torch.float32)
    ours64, theirs64 = dec.to(torch.float64).logits(ids), hf.logits(ids, torch.float64)
    scale, eps32 = theirs64.abs().max().item(), torch.finfo(torch.float32).eps
    assert (ours64 - theirs64).abs().max().item() < 1e-11 * scale
    err32 = (ours32.double() - theirs32.double()).abs().max().item()
    assert err32 < 100 * eps32 * scale
    for side in (ours32, theirs32):                      # each is float32 rounding of the float64 function
        assert (side.double() - ours64).abs().max().item() < 100 * eps32 * scale
    assert torch.equal(ours32.argmax(-1), theirs32.argmax(-1))


def test_capital_of_france(dec, hf):
    ids = dec.chat(CHATS[0])
    answer = dec.generate(ids, 20, cache=dec.new_cache())
    assert dec.decode(answer) == "The capital of France is Paris.<|im_end|>"
    assert answer == hf.generate(ids, 20)


@pytest.mark.parametrize("kind, text", PROMPTS)
def test_greedy_tokens_match_transformers(dec, hf, kind, text):
    """50 greedy tokens with our contiguous cache; transformers' logits over the same sequence (teacher forcing)
    pick the same token at every step, so its greedy decoding produces these tokens too."""
    ids = prompt(dec, kind, text)
    new = dec.generate(ids, 50, cache=dec.new_cache(), stop=())
    theirs = hf.logits(ids + new[:-1])[len(ids) - 1:]     # (50, vocab): the prediction of each new token
    assert theirs.argmax(-1).tolist() == new
