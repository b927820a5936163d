"""The torch path: the NumPy reference's semantics with autograd, on any device.

- :func:`attention` -- scaled dot-product attention, impl "naive" | "sdpa" | "chunked" | "auto"
- :func:`chunked_attention` -- exact online-softmax (FlashAttention-style) attention
- :class:`MultiHeadAttention` -- MHA / GQA / MQA as an nn.Module, ``from_torch`` for nn.MultiheadAttention
- :func:`default_device` -- cuda, then mps, then cpu
- :class:`KVCache` -- a decoding cache: contiguous, ring (sliding window + sinks) or paged
- :class:`MultiHeadLatentAttention` -- MLA (DeepSeek-V2), explicit and absorbed, with :class:`LatentCache`
- :func:`split_kv_attention` -- attention over chunks of the keys merged by log-sum-exp (Flash-Decoding),
  from :func:`partial_attention` and :func:`merge_partials`
- :func:`rope` -- rotary position embedding (attnlab.position.rope for tensors)
- :class:`RotaryKVCache` -- a KVCache that stores keys after rotation (and re-numbers a ring with sinks)
- ``quantized_cache`` (KIVI-style int8/int4 caches), ``linear_attention`` (a fixed-size running state) and
  ``topk_attention`` (top-k sparse attention through a mask): one idea per module, imported by name
"""
from .attention import attention, default_device
from .chunked import chunked_attention
from .kv_cache import KVCache
from .mha import MultiHeadAttention
from .mla import LatentCache, MultiHeadLatentAttention
from .rope import rope
from .rotary_cache import RotaryKVCache
from .split_kv import merge_partials, partial_attention, split_kv_attention

__all__ = ["KVCache", "LatentCache", "MultiHeadAttention", "MultiHeadLatentAttention", "RotaryKVCache", "attention",
           "chunked_attention", "default_device", "merge_partials", "partial_attention", "rope", "split_kv_attention"]
