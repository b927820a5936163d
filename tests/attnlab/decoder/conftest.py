"""Fixtures for the real decoder: our model once per session, and transformers' answers on the same file.

For the float64 control two places where transformers computes in float32 whatever the model's dtype (the
RoPE angles and RMSNorm) are made to compute in float64; float32 runs use transformers' code unchanged.

transformers takes about 30 s to load the GGUF (it parses the file twice), so its outputs are kept on disk
beside attnlab's weight cache, keyed by transformers' and gguf's versions and by the exact token ids asked
about: transformers is loaded at most once per session, and only when an answer is not stored yet.
"""
import hashlib
import os
from importlib.metadata import version

import pytest
import torch

import attnlab.decoder as decoder


@pytest.fixture(scope="session")
def dec():
    return decoder.load()


@pytest.fixture(autouse=True, scope="package")
def one_thread():
    """Decoding one token is a chain of small matrix-vector products: on a busy 2-core machine a second thread
    mostly waits for the first (and burns CPU spinning), so these tests run torch on one thread."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _rms_norm_in_float64(module):
    """LlamaRMSNorm with float64 kept float64 (transformers turns every input into float32 first)."""
    float32_forward = module.forward

    def forward(hidden_states):
        if hidden_states.dtype != torch.float64:
            return float32_forward(hidden_states)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        return module.weight * (hidden_states * torch.rsqrt(variance + module.variance_epsilon))
    return forward


class TransformersReference:
    """transformers' AutoModelForCausalLM on the same GGUF file: logits for token ids, float32 or float64."""

    def __init__(self):
        self.model = self.tokenizer = None
        self.folder = decoder.cache_dir()
        self.tag = f"transformers-{version('transformers')}-gguf-{version('gguf')}-float64-control"

    def _model(self, dtype):
        if self.model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from transformers import AutoModelForCausalLM
            from transformers.utils import logging

            logging.disable_progress_bar()
            path = decoder.model_file()
            self.model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name).eval()
            rotary = self.model.model.rotary_emb
            float32_forward = rotary.forward
            base, d = self.model.config.rope_parameters["rope_theta"], self.model.config.head_dim
            inv_freq = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)

            def forward(x, position_ids):
                """transformers computes the angles in float32 even for a float64 model (LlamaRotaryEmbedding:
                position_ids.float() * inv_freq.float()); for the float64 control, compute them in float64."""
                if x.dtype != torch.float64:
                    return float32_forward(x, position_ids)
                freqs = position_ids[..., None].double() * inv_freq
                emb = torch.cat((freqs, freqs), dim=-1)
                return emb.cos(), emb.sin()

            rotary.forward = forward
            for module in self.model.modules():
                if type(module).__name__ == "LlamaRMSNorm":
                    module.forward = _rms_norm_in_float64(module)
        return self.model.to(dtype)

    def _tokenizer(self):
        if self.tokenizer is None:
            from transformers import AutoTokenizer

            path = decoder.model_file()
            self.tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        return self.tokenizer

    def _stored(self, what, compute):
        """compute(), or its value stored by an earlier session under the key ``what``."""
        key = hashlib.sha256(f"{self.tag}/{what}".encode()).hexdigest()[:24]
        stored = self.folder / "reference" / f"{key}.pt"
        if stored.is_file():
            return torch.load(stored)
        value = compute()
        stored.parent.mkdir(parents=True, exist_ok=True)
        torch.save(value, stored.with_suffix(f".{os.getpid()}"))
        os.replace(stored.with_suffix(f".{os.getpid()}"), stored)
        return value

    def logits(self, ids, dtype=torch.float32) -> torch.Tensor:
        """(T, vocab) logits of transformers' forward pass (no cache) over ``ids``."""
        def compute():
            with torch.no_grad():
                return self._model(dtype)(torch.tensor([list(ids)])).logits[0]
        return self._stored(f"logits/{dtype}/{list(ids)}", compute)

    def generate(self, ids, max_new_tokens) -> list:
        """transformers' greedy generate (with its own cache): the new tokens."""
        def compute():
            out = self._model(torch.float32).generate(torch.tensor([list(ids)]), max_new_tokens=max_new_tokens,
                                                       do_sample=False)
            return out[0, len(ids):].tolist()
        return self._stored(f"generate/{max_new_tokens}/{list(ids)}", compute)

    def encode(self, text) -> list:
        return self._stored(f"encode/{text}", lambda: self._tokenizer()(text)["input_ids"])

    def chat(self, message) -> list:
        return self._stored(f"chat/{message}", lambda: list(self._tokenizer().apply_chat_template(
            [{"role": "user", "content": message}], add_generation_prompt=True, tokenize=True, return_dict=False)))


@pytest.fixture(scope="session")
def hf():
    return TransformersReference()
