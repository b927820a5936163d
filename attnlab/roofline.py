"""The roofline of a machine: how fast a computation can run, from its FLOPs per byte.

A machine that does at most ``flops`` floating-point operations per second and moves at most
``bandwidth`` bytes per second between slow memory and the processor runs a computation of
arithmetic intensity I (FLOPs per byte moved) at most at min(flops, I * bandwidth) (Williams,
Waterman and Patterson 2009). Below the ridge point I* = flops / bandwidth a computation is
bandwidth-bound, above it compute-bound.

This module measures the two numbers on the machine it runs on (:func:`measure_bandwidth`,
:func:`measure_matmul_flops`), reads its cache sizes (:func:`cache_sizes`), carries the
published figures of two data-centre GPUs (:data:`GPU_SPECS`), labelled with their spec sheets,
and places one decoding step of MHA, GQA and MLA models on a machine's roofline
(:func:`decode_points`, :func:`mla_heads_at_ridge`).
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from . import traffic
from .errors import AttentionInputError
from .i18n import N_

__all__ = [
    "DECODE_MODELS", "GPU_SPECS", "H100_EXP_PER_SECOND", "Machine", "cache_sizes", "decode_points",
    "measure_bandwidth", "measure_exp_rate", "measure_matmul_flops", "mla_heads_at_ridge",
]


@dataclass(frozen=True)
class Machine:
    """Peak matmul throughput (FLOP/s) and slow-memory bandwidth (bytes/s) of one machine."""

    name: str
    flops: float
    bandwidth: float
    fast_memory: str = ""          # what plays the part of the fast memory, in words (in attnlab.po)
    source: str = "measured"       # where the numbers come from
    n_sm: int = 0                  # streaming multiprocessors (GPUs), 0 where unknown or not a GPU

    @property
    def ridge(self) -> float:
        """Arithmetic intensity (FLOPs per byte) where the two limits meet."""
        return self.flops / self.bandwidth

    def attainable(self, intensity):
        """Roofline: the highest FLOP/s at this arithmetic intensity (array or number)."""
        intensity = np.asarray(intensity, dtype=float)
        if (intensity <= 0).any():
            raise AttentionInputError(f"intensity must be positive FLOPs per byte; got {intensity}")
        return np.minimum(self.flops, intensity * self.bandwidth)


GPU_SPECS = {
    "A100": Machine(
        "NVIDIA A100 SXM4 80GB", flops=312e12, bandwidth=2.039e12,
        fast_memory=N_("up to 164 KB of shared memory per SM, 108 SMs; 40 MB L2"),
        source="NVIDIA A100 Tensor Core GPU datasheet: BF16 Tensor Core 312 TFLOPS (dense), "
               "HBM2e 2,039 GB/s; shared memory from the NVIDIA A100 architecture whitepaper", n_sm=108),
    "H100": Machine(
        "NVIDIA H100 SXM5 80GB", flops=989e12, bandwidth=3.35e12,
        fast_memory=N_("up to 228 KB of shared memory per SM, 132 SMs; 50 MB L2"),
        source="NVIDIA H100 Tensor Core GPU datasheet: BF16 Tensor Core 1,979 TFLOPS with sparsity "
               "(989 dense), HBM3 3.35 TB/s; shared memory from the NVIDIA H100 architecture whitepaper", n_sm=132),
}
"""Published peak figures (dense bf16 tensor-core FLOP/s, HBM bandwidth) from NVIDIA's spec sheets."""


def _size_bytes(text: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    text = text.strip()
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def cache_sizes(cpu: int = 0, root: str = "/sys/devices/system/cpu") -> list[dict]:
    """The caches of one CPU as the kernel reports them (Linux sysfs); [] where there is no sysfs.

    Each entry: level, type (Data, Instruction, Unified), size in bytes, and the CPUs sharing it.
    """
    rows = []
    for index in sorted(Path(root, f"cpu{cpu}", "cache").glob("index*")):
        try:
            fields = {name: (index / name).read_text().strip() for name in ("level", "type", "size", "shared_cpu_list")}
            rows.append({"level": int(fields["level"]), "type": fields["type"], "bytes": _size_bytes(fields["size"]),
                         "shared_by": fields["shared_cpu_list"]})
        except (OSError, ValueError, KeyError, IndexError):
            continue
    return rows


def _median_seconds(fn, repeats: int) -> float:
    fn()                                                       # warm-up: pages touched, threads started
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure_bandwidth(n_bytes: int = 256 * 2**20, repeats: int = 5) -> float:
    """Slow-memory bandwidth in bytes/s: a copy of ``n_bytes`` (far larger than the caches), counted as
    n_bytes read plus n_bytes written, median of ``repeats``."""
    if n_bytes < 2**20:
        raise AttentionInputError(f"n_bytes must be at least 1 MiB to measure memory, not caches; got {n_bytes}")
    src = torch.ones(n_bytes // 4)
    dst = torch.empty_like(src)
    return 2 * src.nbytes / _median_seconds(lambda: dst.copy_(src), repeats)


def measure_matmul_flops(n: int = 1024, repeats: int = 5, dtype=torch.float32) -> float:
    """Matrix-product throughput in FLOP/s: an n x n by n x n product (2 n^3 FLOPs), median of ``repeats``."""
    if n < 64:
        raise AttentionInputError(f"n must be at least 64 for a throughput figure; got {n}")
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    out = torch.empty(n, n, dtype=dtype)
    return 2 * n**3 / _median_seconds(lambda: torch.mm(a, b, out=out), repeats)


H100_EXP_PER_SECOND = 3.9e12
"""Exponentials per second of an H100 SXM5's special-function units (Shah et al. 2024, FlashAttention-3,
section 1: "989 TFLOPS of FP16 matmul but only 3.9 TFLOPS of special functions")."""


def measure_exp_rate(n: int = 2**20, repeats: int = 5) -> float:
    """Exponentials per second of ``torch.exp_`` on n fp32 numbers that stay in the caches (4 MiB by default)."""
    if n < 1024:
        raise AttentionInputError(f"n must be at least 1024; got {n}")
    x, y = torch.linspace(-10.0, 0.0, n), torch.empty(n)
    return n / _median_seconds(lambda: torch.exp(x, out=y), repeats)


DECODE_MODELS = {
    "MHA": dict(H=32, H_kv=32, d=128),                  # Llama 2 7B: every query head has its own cache
    "GQA": dict(H=32, H_kv=8, d=128),                   # Llama 3 8B: four query heads per key head
    "MLA": dict(H=128, d_latent=512, d_rope=64),        # DeepSeek-V2: one latent cache, absorbed decoding
}
"""Attention layers of three published models, for one decoding step (one layer, head widths as published)."""


def decode_points(machine: Machine, S: int = 32768, B: int = 1, itemsize: int = 2, models=None) -> list[dict]:
    """One decoding step of each model's attention (a cache of S positions, B sequences, ``itemsize`` bytes
    per number) on ``machine``'s roofline: FLOPs, bytes, arithmetic intensity, the attainable FLOP/s,
    the least time, and whether the step is bandwidth- or compute-bound (intensity below or above the
    ridge). MHA and GQA by traffic.decode_step_*, MLA (absorbed) by traffic.mla_decode_step_*."""
    rows = []
    for name, m in (DECODE_MODELS if models is None else models).items():
        if "d_latent" in m:
            flops = traffic.mla_decode_step_flops(B, m["H"], S, m["d_latent"], m["d_rope"])
            nbytes = traffic.mla_decode_step_bytes(B, m["H"], S, m["d_latent"], m["d_rope"], itemsize=itemsize)
        else:
            flops = traffic.decode_step_flops(B, m["H"], S, m["d"])
            nbytes = traffic.decode_step_bytes(B, m["H"], m["H_kv"], S, m["d"], itemsize=itemsize)
        intensity = flops / nbytes
        rows.append({"model": name, "FLOPs": flops, "bytes": nbytes, "intensity": intensity,
                     "ridge": machine.ridge, "attainable": float(machine.attainable(intensity)),
                     "time": max(flops / machine.flops, nbytes / machine.bandwidth),
                     "bound": "bandwidth" if intensity < machine.ridge else "compute"})
    return rows


def mla_heads_at_ridge(machine: Machine, d_latent: int = 512, d_rope: int = 64, itemsize: int = 2) -> float:
    """The number of query heads at which absorbed MLA decoding reaches ``machine``'s ridge, for a long
    cache: its intensity tends to 2 H (2 d_latent + d_rope) / (itemsize (d_latent + d_rope)) FLOPs per
    byte, which grows with H because all heads read the one latent cache."""
    return machine.ridge * itemsize * (d_latent + d_rope) / (2 * (2 * d_latent + d_rope))
