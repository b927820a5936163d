"""One prepared run on a GPU machine: the torch and kernel tests on the GPU, then the benchmarks, into one record.

    python benchmarks/gpu_check.py               # on a CUDA machine; writes attnlab/recorded/bench_gpu.json
    python benchmarks/gpu_check.py --dry-run     # anywhere: tiny sizes on the CPU (Triton's interpreter);
                                                 # writes only --json (default $OUT/bench_gpu_dry_run.json)

Sections, each written to the record as soon as it is done (a run cut short keeps what it measured):

1. tests: tests/attnlab/torch_ops and tests/attnlab/kernels on the GPU (pass/fail
   lines and time; never skipped silently);
2. attention: SDPA, chunked_attention and the Triton FlashAttention-2 kernel, forward and forward plus
   backward, at T = 4096, head widths 64 and 128, float16 and bfloat16, causal and not (B = 4, H = 2048 / d);
   times, TFLOP/s and the ratios Triton / SDPA;
3. split-KV decoding: one query per head (B = 1, H = 32, H_kv = 8, d = 128) over a 64k cache in float16,
   split_kv_decode for 1 to 64 chunks, flash_attention_lse and SDPA; speed-ups against one chunk, and the
   occupancy model's prediction from the GPU's SM count;
4. decode bandwidth: one decoding step of MHA, GQA (SDPA and split_kv_decode) and absorbed MLA (two matrix
   products on the latent cache) over the same cache length: model bytes per second against a device copy.

Times are medians of interleaved repeats (attnlab.bench.interleaved_times) after a warm-up call that also
compiles the Triton kernels. At most about 10 minutes on an H100: tests are cut at --test-timeout seconds.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from attnlab import bench, occupancy, traffic
from attnlab.torch_ops import chunked_attention

ROOT = Path(__file__).resolve().parents[1]

TEST_PATHS = ["tests/attnlab/torch_ops", "tests/attnlab/kernels"]      # the torch tests, cpu and cuda


def sizes(dry_run: bool) -> dict:
    """The shapes of every section: the real ones, or tiny ones for a dry run on the CPU."""
    if dry_run:
        return dict(T=256, B=1, heads=lambda d: 2, widths=(64,), dtypes=(torch.float32,), decode_S=512,
                    splits=(1, 4), repeats=2, chunked_blocks=(64, 64))
    return dict(T=4096, B=4, heads=lambda d: 2048 // d, widths=(64, 128), dtypes=(torch.float16, torch.bfloat16),
                decode_S=65536, splits=(1, 2, 4, 8, 16, 32, 64), repeats=10, chunked_blocks=(128, 256))


def provenance(device: str) -> dict:
    import triton
    info = bench.machine_info(device)
    info.update(triton=triton.__version__, python=platform.python_version(),
                command=" ".join([Path(sys.argv[0]).name, *sys.argv[1:]]))
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        info.update(gpu=props.name, n_sm=props.multi_processor_count,
                    gpu_memory_gib=round(props.total_memory / 2**30, 1), cuda=torch.version.cuda,
                    capability=".".join(map(str, torch.cuda.get_device_capability(0))))
    else:
        info.update(gpu=None, n_sm=None, note="dry run on the CPU: Triton's interpreter, tiny sizes; not a GPU record")
    return info


def run_tests(python: str, dry_run: bool, timeout: int) -> dict:
    """pytest on the torch and kernel tests (on the GPU where there is one); the summary line and the time."""
    command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TEST_PATHS]
    if dry_run:
        command += ["-k", "refused or refuses or errors"]               # the plumbing only: a few quick tests
    start = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        lines = done.stdout.strip().splitlines()
        return {"command": " ".join(command[1:]), "returncode": done.returncode, "summary": lines[-1] if lines else "",
                "failures": [line for line in lines if line.startswith(("FAILED", "ERROR"))][:40],
                "seconds": round(time.perf_counter() - start, 1)}
    except subprocess.TimeoutExpired:
        return {"command": " ".join(command[1:]), "returncode": None, "summary": f"cut after {timeout} s",
                "seconds": timeout}


def median_ms(fns: dict, repeats: int, device: str) -> dict:
    times = bench.interleaved_times(fns, repeats, device)
    return {name: 1e3 * statistics.median(t) for name, t in times.items()}


def attention_section(device: str, s: dict) -> list[dict]:
    """SDPA, chunked and Triton, forward and forward+backward, for each width, dtype and mask."""
    from attnlab import kernels
    rows = []
    for dtype in s["dtypes"]:
        for d in s["widths"]:
            for causal in (True, False):
                B, H, T = s["B"], s["heads"](d), s["T"]
                g = torch.Generator(device=device).manual_seed(0)
                q, k, v = (torch.randn(B, H, T, d, device=device, dtype=dtype, generator=g).requires_grad_()
                           for _ in range(3))
                grad = torch.randn(B, H, T, d, device=device, dtype=dtype, generator=g)
                bq, bk = s["chunked_blocks"]
                forward = {
                    "sdpa": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
                    "chunked": lambda: chunked_attention(q, k, v, causal=causal, block_q=bq, block_k=bk),
                    "triton": lambda: kernels.flash_attention(q, k, v, causal=causal),
                }
                both = {f"{name}+bwd": (lambda f=f: torch.autograd.grad(f(), (q, k, v), grad)) for name, f in
                        forward.items()}
                row = {"dtype": str(dtype).removeprefix("torch."), "d": d, "B": B, "H": H, "T": T, "causal": causal}
                try:
                    with torch.no_grad():
                        row["max |triton - sdpa|"] = float((forward["triton"]() - forward["sdpa"]()).abs().max())
                        row.update({f"{n} (ms)": t for n, t in median_ms(forward, s["repeats"], device).items()})
                    row.update({f"{n} (ms)": t for n, t in median_ms(both, s["repeats"], device).items()})
                except Exception as error:                               # keep the other cases and the record
                    row["error"] = f"{type(error).__name__}: {error}"[:500]
                    rows.append(row)
                    continue
                flops = traffic.attention_flops(B, H, T, T, d, causal=causal)
                row["forward TFLOP/s (triton)"] = flops / row["triton (ms)"] / 1e9
                row["forward TFLOP/s (sdpa)"] = flops / row["sdpa (ms)"] / 1e9
                row["fwd+bwd TFLOP/s (triton)"] = 3.5 * flops / row["triton+bwd (ms)"] / 1e9   # 2 + 5 products
                row["triton / sdpa, forward"] = row["triton (ms)"] / row["sdpa (ms)"]
                row["triton / sdpa, forward+backward"] = row["triton+bwd (ms)"] / row["sdpa+bwd (ms)"]
                rows.append(row)
    return rows


def split_kv_section(device: str, s: dict) -> dict:
    """One query per head over a long cache: split_kv_decode for several chunk counts, flash_attention, SDPA."""
    from attnlab import kernels
    B, H, H_kv, d, S = 1, 32, 8, 128, s["decode_S"]
    dtype = s["dtypes"][0]
    g = torch.Generator(device=device).manual_seed(1)
    q = torch.randn(B, H, 1, d, device=device, dtype=dtype, generator=g)
    k, v = (torch.randn(B, H_kv, S, d, device=device, dtype=dtype, generator=g) for _ in range(2))
    fns = {f"split_kv_decode, {n} chunks": (lambda n=n: kernels.split_kv_decode(q, k, v, n)) for n in s["splits"]}
    fns["flash_attention_lse (T = 1)"] = lambda: kernels.flash_attention_lse(q, k, v)
    fns["sdpa (enable_gqa)"] = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    with torch.no_grad():
        reference = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        error = max(float((kernels.split_kv_decode(q, k, v, n)[0] - reference).abs().max()) for n in s["splits"])
        times = median_ms(fns, s["repeats"], device)
    one = times[f"split_kv_decode, {s['splits'][0]} chunks"]
    n_sm = torch.cuda.get_device_properties(0).multi_processor_count if device == "cuda" else None
    result = {"B": B, "H": H, "H_kv": H_kv, "d": d, "S": S, "dtype": str(dtype).removeprefix("torch."),
              "times (ms)": times, "max |split - sdpa|": error,
              "speed-up over one chunk": {n: one / t for n, t in times.items() if n.startswith("split")},
              "cache bytes": traffic.decode_step_bytes(B, H, H_kv, S, d, itemsize=q.element_size())}
    if n_sm:
        result["n_sm"] = n_sm
        result["splits_to_fill"] = occupancy.splits_to_fill(B, H_kv, n_sm, S)
        result["model speed-up"] = {n: occupancy.split_kv_speedup(B, H_kv, n_sm, n) for n in s["splits"]}
    return result


def copy_bandwidth(device: str, repeats: int) -> float:
    """Bytes per second of a large device-to-device copy (read plus write)."""
    n = (2**30 if device == "cuda" else 2**26) // 4
    src = torch.ones(n, device=device)
    dst = torch.empty_like(src)
    return 2 * src.nbytes / (median_ms({"copy": lambda: dst.copy_(src)}, repeats, device)["copy"] / 1e3)


def decode_section(device: str, s: dict) -> list[dict]:
    """One decoding step of MHA, GQA and absorbed MLA: model bytes per second."""
    from attnlab import kernels
    S, dtype = s["decode_S"], s["dtypes"][0]
    size = torch.empty((), dtype=dtype).element_size()
    g = torch.Generator(device=device).manual_seed(2)
    randn = lambda *shape: torch.randn(*shape, device=device, dtype=dtype, generator=g)  # noqa: E731
    rows = []
    for name, H, H_kv in (("MHA", 32, 32), ("GQA", 32, 8)):
        q, k, v = randn(1, H, 1, 128), randn(1, H_kv, S, 128), randn(1, H_kv, S, 128)
        n = occupancy.splits_to_fill(1, H_kv, torch.cuda.get_device_properties(0).multi_processor_count, S) \
            if device == "cuda" else 2
        fns = {"sdpa": lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=H_kv < H),
               f"split_kv_decode ({n} chunks)": lambda: kernels.split_kv_decode(q, k, v, n)}
        with torch.no_grad():
            times = median_ms(fns, s["repeats"], device)
        nbytes = traffic.decode_step_bytes(1, H, H_kv, S, 128, itemsize=size)
        for impl, t in times.items():
            rows.append({"model": name, "impl": impl, "bytes": nbytes, "time (ms)": t, "GB/s": nbytes / t / 1e6})
    H, dc, dr = 128, 512, 64                                             # DeepSeek-V2's attention, absorbed
    q, cache = randn(H, dc + dr), randn(S, dc + dr)                     # absorbed queries, latent + RoPE key cache

    def mla():
        weights = torch.softmax((q @ cache.T).float() * (dc + dr) ** -0.5, dim=-1).to(dtype)   # (H, S)
        return weights @ cache[:, :dc]                                   # (H, d_latent)

    with torch.no_grad():
        t = median_ms({"mla": mla}, s["repeats"], device)["mla"]
    nbytes = traffic.mla_decode_step_bytes(1, H, S, dc, dr, itemsize=size)
    rows.append({"model": "MLA (absorbed)", "impl": "two matrix products on the latent cache", "bytes": nbytes,
                 "time (ms)": t, "GB/s": nbytes / t / 1e6})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dry-run", "--cpu", action="store_true", help="tiny sizes on the CPU (Triton interpreter)")
    parser.add_argument("--json", help="where to write the record (default: attnlab/recorded/bench_gpu.json on a "
                                       "GPU, $OUT/bench_gpu_dry_run.json or /tmp in a dry run); also copied to $OUT")
    parser.add_argument("--test-timeout", type=int, default=300)
    parser.add_argument("--skip-tests", action="store_true")
    args = parser.parse_args(argv)
    device = "cpu" if args.dry_run else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device visible: run with --dry-run to try the script on the CPU", file=sys.stderr)
        return 2
    out_dir = os.environ.get("OUT")
    if args.json:
        target = Path(args.json)
    elif args.dry_run:
        target = Path(out_dir or "/tmp") / "bench_gpu_dry_run.json"
    else:
        target = bench.RECORDED / "bench_gpu.json"
    s = sizes(args.dry_run)
    record = {"meta": provenance(device), "results": {}}

    def save():
        record["meta"]["written"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        text = json.dumps(record, indent=1, default=str)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        if out_dir and Path(out_dir).resolve() != target.parent.resolve():
            (Path(out_dir) / target.name).write_text(text)

    sections = [("attention", attention_section), ("split_kv", split_kv_section), ("decode", decode_section)]
    if not args.skip_tests:
        record["tests"] = run_tests(sys.executable, args.dry_run, args.test_timeout)
        print("tests:", record["tests"]["summary"], flush=True)
        save()
    record["results"]["copy bandwidth (GB/s)"] = copy_bandwidth(device, s["repeats"]) / 1e9
    for name, section in sections:
        start = time.perf_counter()
        try:
            record["results"][name] = section(device, s)
        except Exception as error:                                       # record it, go on with the others
            record["results"][name] = {"error": f"{type(error).__name__}: {error}"[:1000]}
        print(f"{name}: {time.perf_counter() - start:.1f} s", flush=True)
        save()
    print(json.dumps(record["results"], indent=1, default=str)[:6000])
    print(f"written: {target}")
    tests_ok = args.skip_tests or record["tests"]["returncode"] == 0
    return 0 if tests_ok and not any("error" in r for r in record["results"].values() if isinstance(r, dict)) else 1


if __name__ == "__main__":
    sys.exit(main())
