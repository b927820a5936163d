"""How many bytes a KV cache holds: one formula, used by chapters 6 and 10 and the GQA explorer.

Every layer keeps, for every cached position of every sequence, one key (d_k numbers) and one
value (d_v numbers) per key/value head::

    bytes = batch * n_layers * n_kv_heads * seq_len * (d_k + d_v) * itemsize

which is ``2 * batch * n_layers * n_kv_heads * seq_len * d_k * itemsize`` when d_v = d_k. The
number of query heads does not appear: that is the point of MQA (n_kv_heads = 1) and GQA. The
count is the payload; real caches add block padding (see ``KVCache(layout="paged")``),
alignment and, for quantised caches, scales. Pure integer arithmetic: no torch needed.
"""
from __future__ import annotations

import numbers

from .errors import AttentionInputError

# bytes per number for dtype names; torch and NumPy dtypes are read through their .itemsize
ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1,
            "int8": 1}


def itemsize(dtype) -> int:
    """Bytes per number of ``dtype``: a name in ITEMSIZE, a torch.dtype or a NumPy dtype."""
    if isinstance(dtype, str):
        if dtype not in ITEMSIZE:
            raise AttentionInputError(f"dtype must be one of {tuple(ITEMSIZE)} or a torch/NumPy dtype; got {dtype!r}")
        return ITEMSIZE[dtype]
    size = getattr(dtype, "itemsize", None)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise AttentionInputError(f"dtype must be a dtype name, a torch.dtype or a NumPy dtype; got {dtype!r}")
    return size


def _count(name: str, n) -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise AttentionInputError(f"{name} must be a positive integer; got {n!r}")
    return int(n)


def kv_cache_bytes(n_kv_heads: int, seq_len: int, d_k: int, *, d_v: int | None = None,
                   n_layers: int = 1, batch: int = 1, dtype="float16") -> int:
    """Bytes of the cached keys and values:
    batch * n_layers * n_kv_heads * seq_len * (d_k + d_v) * itemsize.

    n_kv_heads: key/value heads per layer (H for MHA, 1 for MQA, H_kv for GQA)
    seq_len: cached positions per sequence
    d_k, d_v: key and value width per head (d_v = d_k by default)
    n_layers, batch: layers that each keep a cache, sequences in the batch
                     (1 each by default)
    dtype: "float16" by default; any name in ITEMSIZE, a torch.dtype or a NumPy dtype
    """
    d_v = d_k if d_v is None else d_v
    named = (("n_kv_heads", n_kv_heads), ("seq_len", seq_len), ("d_k", d_k),
             ("d_v", d_v), ("n_layers", n_layers), ("batch", batch))
    counts = [_count(name, n) for name, n in named]
    h_kv, s_len, dk, dv, layers, b = counts
    return b * layers * h_kv * s_len * (dk + dv) * itemsize(dtype)
