"""Block shapes of chunked_attention against SDPA: forward time ratios in one run.

    python benchmarks/chunked_blocks.py [--T 4096] [--repeats 5] [--threads 1]

Causal self-attention, B=1, H=8, d=64, fp32, no autograd. Every block shape and SDPA take turns
(attnlab.bench.interleaved_times), so the ratios survive a busy machine better than the times.
The package's default (attnlab.torch_ops.chunked.BLOCK_Q x BLOCK_K) was chosen with this script.
"""
from __future__ import annotations

import argparse
import statistics
import sys

SHAPES = [(64, 128), (64, 256), (128, 256), (128, 512), (256, 256), (256, 512)]


def main(argv=None) -> int:
    import torch
    import torch.nn.functional as F

    from attnlab.bench import interleaved_times, machine_info
    from attnlab.torch_ops import chunked_attention
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--T", type=int, default=4096)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int)
    a = p.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    q, k, v = (torch.randn(1, 8, a.T, 64) for _ in range(3))                      # (B, H, T, d)
    fns = {f"{bq} x {bk}": (lambda bq=bq, bk=bk: chunked_attention(q, k, v, causal=True, block_q=bq, block_k=bk))
           for bq, bk in SHAPES}
    fns["sdpa"] = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    with torch.no_grad():
        times = {name: statistics.median(t) for name, t in interleaved_times(fns, a.repeats).items()}
    info = machine_info()
    print(f"T={a.T}, {info['torch_threads']} threads, torch {info['torch']}, {info['date']}, "
          f"load {info.get('load_average')}")
    print("| blocks | scores of one block, 8 heads (KiB) | median time (ms) | time / sdpa |\n|:---|---:|---:|---:|")
    for (bq, bk) in SHAPES:
        t = times[f"{bq} x {bk}"]
        print(f"| {bq} x {bk} | {8 * bq * bk * 4 // 1024} | {1e3 * t:.1f} | {t / times['sdpa']:.2f} |")
    print(f"| sdpa | | {1e3 * times['sdpa']:.1f} | 1.00 |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
