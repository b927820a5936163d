"""One decoding step over a KV cache of S positions: layouts compared, and MLA against GQA.

    python benchmarks/kv_cache.py [--S 4096] [--rounds 21] [--threads 1] [--device cpu] [--json PATH]

Shape: B=1, H=8, d_head=64, fp32, one new query. Every ratio is against a reference timed in
the same run, round-robin (each round times every case once, in a rotated order), so a busy
machine slows all cases alike; the table gives medians over the rounds.

attend (cache.attend(q) only, the cache holds S positions; reference: contiguous)
    contiguous       KVCache(8, 64), H_kv = 8
    ring             KVCache(layout="ring", window=S): the same S positions in a ring buffer
    ring + 4 sinks   window S - 4 plus 4 sinks (StreamingLLM's choice)
    paged            KVCache(layout="paged", block_size=16) (vLLM's default block size)

decode step (a whole attention layer for one new token, append included; reference: GQA)
    GQA              MultiHeadAttention(512, 8, n_kv_heads=2) + KVCache: 256 numbers per token cached
    MLA absorbed     MultiHeadLatentAttention(512, 8, d_latent=256): the same 256 numbers per token
    MLA explicit     the same module, up-projecting every cached latent to K and V each step
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

import attnlab as al  # noqa: E402
from attnlab.torch_ops import KVCache, MultiHeadAttention, MultiHeadLatentAttention  # noqa: E402

B, H, D = 1, 8, 64


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def attend_cases(S, device):
    k, v = torch.randn(B, H, S, D, device=device), torch.randn(B, H, S, D, device=device)   # (B, H, S, d)
    q = torch.randn(B, H, 1, D, device=device)                                              # (B, H, 1, d)
    layouts = {"contiguous": {}, "ring": {"layout": "ring", "window": S},
               "ring + 4 sinks": {"layout": "ring", "window": S - 4, "n_sinks": 4},
               "paged": {"layout": "paged", "block_size": 16}}
    cases, sizes = {}, {}
    for name, kw in layouts.items():
        cache = KVCache(H, D, **kw)
        cache.append(k[:, :, :-1], v[:, :, :-1])          # prefill S - 1 positions, then one decoding step
        cache.append(k[:, :, -1:], v[:, :, -1:])
        cases[name] = (lambda c=cache: c.attend(q))
        sizes[name] = cache.nbytes
    return cases, sizes


def decode_cases(S, device):
    d_model = H * D
    x_prefix = torch.randn(B, S - 1, d_model, device=device)
    x_new = torch.randn(B, 1, d_model, device=device)
    gqa = MultiHeadAttention(d_model, H, n_kv_heads=2).to(device).eval()
    mla = MultiHeadLatentAttention(d_model, H, d_latent=256).to(device).eval()
    split = lambda t, h: t.view(B, -1, h, D).transpose(1, 2)          # noqa: E731  (B, T, h*D) -> (B, h, T, D)
    kv = KVCache(2, D)
    kv.append(split(gqa.w_k(x_prefix), 2), split(gqa.w_v(x_prefix), 2))
    latents = mla.new_cache()
    latents.append(mla.w_dkv(x_prefix))

    def gqa_step():
        kv.append(split(gqa.w_k(x_new), 2), split(gqa.w_v(x_new), 2))
        out = kv.attend(split(gqa.w_q(x_new), H))                     # (B, H, 1, D)
        return gqa.w_o(out.transpose(1, 2).reshape(B, 1, d_model))   # (B, 1, d_model)

    cases = {"GQA (H_kv = 2)": gqa_step,
             "MLA absorbed": lambda: mla(x_new, cache=latents, absorbed=True),
             "MLA explicit": lambda: mla(x_new, cache=latents, absorbed=False)}
    sizes = {"GQA (H_kv = 2)": al.kv_cache_bytes(2, 1, D, dtype=torch.float32),
             "MLA absorbed": mla.cache_bytes_per_token(), "MLA explicit": mla.cache_bytes_per_token()}
    return cases, sizes


def time_round_robin(cases, rounds, device):
    """Median seconds per case; every round runs each case once, starting from a rotated case."""
    names = list(cases)
    for fn in cases.values():
        fn()                                                          # warm-up, untimed
    times = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            _sync(device)
            t0 = time.perf_counter()
            cases[n]()
            _sync(device)
            times[n].append(time.perf_counter() - t0)
    return {n: statistics.median(ts) for n, ts in times.items()}


def table(title, medians, sizes, reference, size_label):
    lines = [f"\n{title}\n", f"| case | median (ms) | × {reference} | {size_label} |", "|:---|---:|---:|---:|"]
    for n, t in medians.items():
        lines.append(f"| {n} | {1e3 * t:.3f} | {t / medians[reference]:.2f} | {sizes[n]:,} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--S", type=int, default=4096)
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    with torch.no_grad():
        att, att_sizes = attend_cases(a.S, device)
        att_t = time_round_robin(att, a.rounds, device)
        dec, dec_sizes = decode_cases(a.S, device)
        dec_t = time_round_robin(dec, a.rounds, device)
    print(f"# KV-cache decoding step, S = {a.S}, B = {B}, H = {H}, d = {D}, fp32, {a.device}, "
          f"{a.threads} thread(s), median of {a.rounds} rounds (torch {torch.__version__})")
    print(table("attend only", att_t, att_sizes, "contiguous", "cache bytes"))
    print(table("whole decode step of one layer", dec_t, dec_sizes, "GQA (H_kv = 2)", "cache bytes per token"))
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"S": a.S, "attend": att_t, "decode": dec_t, "attend_bytes": att_sizes,
                                      "decode_bytes_per_token": dec_sizes}, indent=1))


if __name__ == "__main__":
    main()
