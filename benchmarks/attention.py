"""Speed and memory of causal self-attention: naive vs SDPA vs chunked vs auto.

    python benchmarks/attention.py [--quick] [--device cpu|cuda|mps] [--repeats 5] [--threads N] [--json PATH]

Shape: B=1, H=8, d=64, fp32, T in {512, 1024, 2048, 4096} ({256, 512} with --quick).

    naive    attnlab.torch_ops.attention(impl="naive") with the (T, T) causal bool mask
    sdpa     raw F.scaled_dot_product_attention(is_causal=True): the baseline
    chunked  attnlab.torch_ops.chunked_attention(causal=True), default block sizes
    auto     attnlab.torch_ops.attention(impl="auto") with the (T, T) causal bool mask

Forward and backward: "sdpa+bwd" and "chunked+bwd" time one forward and one backward pass
(gradients of all of q, k, v for a fixed random output gradient).

Memory: every (impl, T) runs in a fresh subprocess, so one case's memory cannot hide in
another's heap. Peak memory growth is measured on the first full-size call, after a tiny
warm-up (T=64) that starts thread pools and kernels: on CUDA torch.cuda.max_memory_allocated
minus the memory allocated before the call; on CPU the resident-set high-water mark (VmHWM,
reset through /proc/self/clear_refs) minus the resident set before the call. Both include the
output. Time: one subprocess per T runs the four impls in turn (rotating the order each round)
after one untimed call each (attnlab.bench.interleaved_times); the median of --repeats rounds.
See benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMPLS = ("sdpa", "auto", "chunked", "naive")
BACKWARD_IMPLS = ("sdpa+bwd", "chunked+bwd")                  # timed only: forward and backward
B, H, D = 1, 8, 64


# ----------------------------------------------------------------------------- one case (child)

def _rss_kib(field: str) -> int | None:
    """A field of /proc/self/status in KiB (Linux), or None."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_rss_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False if not possible."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _make(impl, q, k, v, allowed):
    import torch.nn.functional as F

    from attnlab.torch_ops import attention, chunked_attention
    return {
        "naive": lambda: attention(q, k, v, allowed=allowed, impl="naive"),
        "sdpa": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        "chunked": lambda: chunked_attention(q, k, v, causal=True),
        "auto": lambda: attention(q, k, v, allowed=allowed, impl="auto"),
    }[impl]


def _make_backward(impl, q, k, v):
    """One forward and one backward pass of sdpa or chunked, gradients of q, k and v."""
    import torch
    import torch.nn.functional as F

    from attnlab.torch_ops import chunked_attention
    forward = {"sdpa+bwd": lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True),
               "chunked+bwd": lambda a, b, c: chunked_attention(a, b, c, causal=True)}[impl]
    grad_out = torch.randn_like(q)

    def run():
        with torch.enable_grad():
            leaves = [x.detach().requires_grad_() for x in (q, k, v)]
            forward(*leaves).backward(grad_out)
    return run


def _inputs(T, device):
    import torch
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, H, T, D, generator=g).to(device) for _ in range(3))   # (B, H, T, d)
    allowed = torch.ones(T, T, dtype=torch.bool, device=device).tril()             # (T, T) causal
    return q, k, v, allowed


def _setup(device: str, threads: int | None):
    """Threads, no autograd, and a function that waits for the device."""
    import torch
    if threads:
        torch.set_num_threads(threads)
    torch.set_grad_enabled(False)
    return torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)


def measure_memory(impl: str, T: int, device: str, threads: int | None) -> dict:
    """Peak memory growth of the first full-size call, in a process that ran nothing big before."""
    import torch
    sync = _setup(device, threads)
    _make(impl, *_inputs(64, device))()                        # warm-up: thread pools, kernels
    fn = _make(impl, *_inputs(T, device))
    sync()
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fn()
        sync()
        peak, method = torch.cuda.max_memory_allocated() - base, "torch.cuda.max_memory_allocated"
    elif _reset_rss_peak() and _rss_kib("VmRSS") is not None:
        base = _rss_kib("VmRSS")
        fn()
        peak, method = (_rss_kib("VmHWM") - base) * 1024, "VmHWM after clear_refs"
    else:                                                      # ru_maxrss never goes down: an upper bound
        base = _rss_kib("VmRSS") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        fn()
        peak, method = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024, "ru_maxrss"
    return {"impl": impl, "T": T, "peak_bytes": int(peak), "memory_method": method}


def measure_time(T: int, device: str, repeats: int, threads: int | None) -> list[dict]:
    """Median time of every impl at one size; the impls take turns, so load drift hits all alike."""
    from attnlab.bench import interleaved_times
    _setup(device, threads)
    inputs = _inputs(T, device)
    fns = {impl: _make(impl, *inputs) for impl in IMPLS}
    fns.update({impl: _make_backward(impl, *inputs[:3]) for impl in BACKWARD_IMPLS})
    times = interleaved_times(fns, repeats, device)
    return [{"impl": impl, "T": T, "time_s": statistics.median(ts), "times_s": ts} for impl, ts in times.items()]


# ----------------------------------------------------------------------------- driver (parent)

def _child(args: list[str], device: str, threads: int | None):
    cmd = [sys.executable, __file__, *args, "--device", device] + (["--threads", str(threads)] if threads else [])
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))   # this attnlab
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _meta(device: str, threads: int | None) -> dict:
    import torch

    from attnlab.bench import machine_info
    if threads:
        torch.set_num_threads(threads)
    meta = machine_info(device)
    meta.update({"shape": {"B": B, "H": H, "d": D}, "dtype": "float32", "causal": True,
                 "load_average_start": meta.pop("load_average", None)})
    return meta


def _targets(results: list[dict], T: int = 4096) -> list[dict]:
    """The goals at T = 4096: chunked vs SDPA and naive, auto vs SDPA ([] if T was not run)."""
    if not any(r["T"] == T for r in results):
        return []
    at = {r["impl"]: r for r in results if r["T"] == T}
    t, m = (lambda i: at[i]["time_s"]), (lambda i: max(at[i]["peak_bytes"], 1))
    goals = [("chunked time <= 1.5 x sdpa", t("chunked") / t("sdpa"), 1.5),
             ("chunked forward+backward <= 1.3 x sdpa's", t("chunked+bwd") / t("sdpa+bwd"), 1.3),
             ("naive time >= 4 x chunked", t("naive") / t("chunked"), 4.0),
             ("chunked memory <= 1/16 naive", m("chunked") / m("naive"), 1 / 16),
             ("auto time <= 1.15 x sdpa", t("auto") / t("sdpa"), 1.15)]
    return [{"T": T, "goal": g, "value": round(x, 4), "limit": round(lim, 4),
             "met": bool(x >= lim if ">=" in g else x <= lim)} for g, x, lim in goals]


def table(data: dict) -> str:
    meta, rows = data["meta"], data["results"]
    out = [f"Causal self-attention, B={B}, H={H}, d={D}, fp32 on {meta['device']}",
           f"{meta['date']} | {meta['platform']} | {meta['cpu_count']} CPUs ({meta['torch_threads']} torch threads)"
           f" | torch {meta['torch']}" + (f" | {meta['gpu']}" if "gpu" in meta else ""),
           f"load average (1, 5, 15 min) at start {meta['load_average_start']}, at end {meta['load_average_end']}"
           f" | memory: {rows[0]['memory_method']}",
           "",
           "| T | impl | median time (ms) | min time (ms) | time / sdpa | peak memory growth (MiB) | memory / sdpa |",
           "|---:|:---|---:|---:|---:|---:|---:|"]
    for r in rows:
        ref = "sdpa+bwd" if r["impl"] in BACKWARD_IMPLS else "sdpa"
        base = next(b for b in rows if b["T"] == r["T"] and b["impl"] == ref)
        memory = (f"{r['peak_bytes'] / 2**20:.1f} | {r['peak_bytes'] / max(base['peak_bytes'], 1):.2f}"
                  if "peak_bytes" in r else "| ")
        out.append(f"| {r['T']} | {r['impl']} | {r['time_s'] * 1e3:.1f} | {min(r['times_s']) * 1e3:.1f} | "
                   f"{r['time_s'] / base['time_s']:.2f} | {memory} |")
    if not data["targets"]:
        return "\n".join(out + ["", "(the goals are set at T = 4096; run without --quick to check them)"])
    out += ["", "| goal at T = 4096 | measured | limit | met |", "|:---|---:|---:|:---|"]
    out += [f"| {g['goal']} | {g['value']:.3f} | {g['limit']:.3f} | {'yes' if g['met'] else 'NO'} |"
            for g in data["targets"]]
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="T in {256, 512} only")
    p.add_argument("--device", default="cpu")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, help="torch.set_num_threads in every case (default: torch's choice)")
    p.add_argument("--json", type=Path, help="also write the data as JSON here")
    p.add_argument("--memory-case", nargs=2, metavar=("IMPL", "T"), help=argparse.SUPPRESS)
    p.add_argument("--time-case", type=int, metavar="T", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.memory_case:
        print(json.dumps(measure_memory(a.memory_case[0], int(a.memory_case[1]), a.device, a.threads)))
        return 0
    if a.time_case:
        print(json.dumps(measure_time(a.time_case, a.device, a.repeats, a.threads)))
        return 0
    sizes = (256, 512) if a.quick else (512, 1024, 2048, 4096)
    meta = _meta(a.device, a.threads)
    results = []
    for T in sizes:
        timed = {
            r["impl"]: r for r in _child(["--time-case", str(T), "--repeats", str(a.repeats)], a.device, a.threads)
        }
        for impl in IMPLS:
            results.append({**timed[impl], **_child(["--memory-case", impl, str(T)], a.device, a.threads)})
        results += [timed[impl] for impl in BACKWARD_IMPLS]
    meta["load_average_end"] = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    data = {"meta": meta, "results": results}
    data["targets"] = _targets(results)
    print(table(data))
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
