"""The torch path: the NumPy reference's semantics with autograd, on any device.

- :func:`attention` -- scaled dot-product attention, impl "naive" | "sdpa" | "chunked" | "auto"
- :func:`chunked_attention` -- exact online-softmax (FlashAttention-style) attention
- :class:`MultiHeadAttention` -- MHA / GQA / MQA as an nn.Module, ``from_torch`` for nn.MultiheadAttention
- :func:`default_device` -- cuda, then mps, then cpu
"""
from .attention import attention, default_device
from .chunked import chunked_attention
from .mha import MultiHeadAttention

__all__ = ["MultiHeadAttention", "attention", "chunked_attention", "default_device"]
