"""Peak memory of a torch computation on any device, counted tensor by tensor.

CPU PyTorch has no ``max_memory_allocated``, and ``tracemalloc`` sees only
Python's own allocations, not the buffers torch gets from its allocator.
:func:`peak_bytes` counts what can be seen exactly: every tensor storage that
an ATen operation creates while ``fn`` runs, from its creation until it is
freed. The peak of that running total is the *peak memory growth* of the
call, inputs excluded.

What it does not see: scratch space that a fused kernel allocates and frees
inside one operation (the CPU flash-attention kernel behind SDPA does this).
A composite operation such as ``matmul`` is split into the ATen operations it
runs, so the copies it makes are counted.
"""

from __future__ import annotations

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

__all__ = ["LiveTensorBytes", "peak_bytes"]


class LiveTensorBytes(TorchDispatchMode):
    """Context manager: running and peak bytes of tensors created in it."""

    def __init__(self):
        super().__init__()
        self.live: dict[int, int] = {}  # storage address -> bytes
        self.current = 0
        self.peak = 0

    def _freed(self, key: int) -> None:
        self.current -= self.live.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        read = {  # storages the operation was given: not new
            t.untyped_storage().data_ptr()
            for t in tree_flatten((args, kwargs))[0]
            if isinstance(t, torch.Tensor)
        }
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor):
                continue
            storage = t.untyped_storage()
            key = storage.data_ptr()
            # empty, a view or in-place result of an input, or already counted
            if key == 0 or key in read or key in self.live:
                continue
            self.live[key] = storage.nbytes()
            self.current += storage.nbytes()
            self.peak = max(self.peak, self.current)
            weakref.finalize(storage, self._freed, key)  # runs when freed
        return out


def peak_bytes(fn, *args, **kwargs):
    """Run ``fn(*args, **kwargs)``; return (result, peak bytes it created).

    The inputs are not counted; the result is (it is alive at the end). See
    the module docstring for what is and is not seen.
    """
    with LiveTensorBytes() as counter:
        result = fn(*args, **kwargs)
    return result, counter.peak
