"""Measuring attention: timers, peak-memory probes, the profiler's memory timeline, recorded results.

Used by chapter 8 and by ``benchmarks/``. Times are medians of repeated calls after a warm-up;
several functions compared with each other take turns (:func:`interleaved_times`), so that a
neighbour's load on a shared machine slows them alike and their *ratios* stay meaningful.
"""
from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F

from .errors import AttentionInputError
from .i18n import _
from .memory import peak_bytes

__all__ = [
    "RECORDED", "causal_cases", "device_comparison", "gpu_record", "interleaved_times", "load_recorded",
    "machine_info",
    "median_time", "op_time_breakdown", "peak_memory", "profiler_peak", "quiet_c_output", "synchronizer",
]


def synchronizer(device) -> callable:
    """A function that waits until ``device`` has finished its queued work (a no-op on the CPU)."""
    kind = torch.device(device).type
    if kind == "cuda":
        return torch.cuda.synchronize
    if kind == "mps":
        return torch.mps.synchronize
    return lambda: None


def _repeats(repeats):
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise AttentionInputError(f"repeats must be a positive integer; got {repeats!r}")
    return repeats


def median_time(fn, repeats: int = 5, device="cpu") -> float:
    """Median wall time of ``fn()`` in seconds over ``repeats`` calls, after one untimed call."""
    return statistics.median(interleaved_times({"fn": fn}, repeats, device)["fn"])


def interleaved_times(fns: dict, repeats: int = 5, device="cpu") -> dict:
    """Times (seconds) of several functions, each called ``repeats`` times in rotating order after one
    untimed call each. Returns {name: [seconds, ...]}."""
    repeats, sync = _repeats(repeats), synchronizer(device)
    names = list(fns)
    for fn in fns.values():
        fn()
    times = {name: [] for name in names}
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            sync()
            t0 = time.perf_counter()
            fns[name]()
            sync()
            times[name].append(time.perf_counter() - t0)
    return times


def causal_cases(q, k, v) -> dict:
    """The three ways chapter 8 computes causal self-attention, as functions of no arguments."""
    from . import masks
    from .torch_ops import attention, chunked_attention
    allowed = torch.as_tensor(masks.causal(q.shape[-2]), device=q.device)      # (T, T)
    return {
        "naive": lambda: attention(q, k, v, allowed=allowed, impl="naive"),
        "sdpa": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        "chunked": lambda: chunked_attention(q, k, v, causal=True),
    }


def peak_memory(fn, device="cpu") -> int:
    """Peak memory growth of one call of ``fn`` in bytes: the CUDA allocator's peak on a GPU,
    :func:`attnlab.memory.peak_bytes` (tensor by tensor) elsewhere."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fn()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - base
    return peak_bytes(fn)[1]


@contextlib.contextmanager
def quiet_c_output():
    """Silence writes to file descriptors 1 and 2 (the profiler's C++ logs bypass sys.stdout)."""
    saved, null = [os.dup(1), os.dup(2)], os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)


def profiler_peak(fn) -> int | None:
    """Peak bytes of torch.profiler's CPU memory timeline for one call (None: this torch has no export).

    The timeline watches the allocator, so it also sees scratch space a fused kernel allocates inside
    one operation, and the tensors the call reads.
    """
    from torch.profiler import ProfilerActivity, profile
    with quiet_c_output(), tempfile.TemporaryDirectory() as tmp:
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                     with_stack=True) as prof:
            fn()
        if not hasattr(prof, "export_memory_timeline"):
            return None
        path = os.path.join(tmp, "timeline.json")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")                    # the export is marked deprecated
            prof.export_memory_timeline(path, device="cpu")
        _, sizes = json.loads(Path(path).read_text())
    return max(sum(s) for s in sizes) if sizes else 0


def machine_info(device="cpu") -> dict:
    """Date, platform, CPU count, torch version and threads, load average: the provenance of a result."""
    info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
            "device": str(device)}
    if hasattr(os, "getloadavg"):
        info["load_average"] = [round(x, 2) for x in os.getloadavg()]
    if torch.device(device).type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def load_recorded(path) -> dict | None:
    """A recorded benchmark file (JSON with "meta" and "results"), or None where there is none."""
    path = Path(path)
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    if not {"meta", "results"} <= set(data):
        raise AttentionInputError(f"{path} is not a recorded benchmark: it needs 'meta' and 'results'")
    return data


def op_time_breakdown(fn) -> dict:
    """Where one call of ``fn`` spends its time, by torch.profiler: seconds of self CPU time per ATen
    operation, and "wall" for the whole call. The difference is time outside the operations
    (Python, dispatch)."""
    from torch.profiler import ProfilerActivity, profile
    with quiet_c_output(), profile(activities=[ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        fn()
        wall = time.perf_counter() - t0
    ops = {e.key: e.self_cpu_time_total / 1e6 for e in prof.key_averages() if e.key.startswith("aten::")}
    return {"wall": wall, "ops": ops}


RECORDED = Path(__file__).parent / "recorded"
"""The folder of recorded benchmark files shipped with the package."""


def gpu_record() -> dict | None:
    """The GPU record that benchmarks/gpu_check.py writes (``attnlab/recorded/bench_gpu.json``), or None
    where the book ships none.

    Its "meta" says when, on which GPU (name, SM count, memory) and with which torch, Triton and CUDA;
    "tests" gives the summary of the torch and kernel tests run on the GPU; "results" holds
    "attention" (one row per dtype, width and mask: SDPA, chunked and Triton times forward and
    forward+backward, TFLOP/s, Triton / SDPA ratios), "split_kv" (times per number of chunks, speed-ups
    over one chunk, the occupancy model's prediction), "decode" (MHA, GQA, MLA bytes per second) and
    "copy bandwidth (GB/s)".
    """
    return load_recorded(RECORDED / "bench_gpu.json")


def _chunks(label: str) -> int:
    """The chunk count in a split_kv label such as "split_kv_decode, 16 chunks"."""
    return int(label.split(",")[1].split()[0])


def gpu_summary(record: dict) -> dict:
    """The headline figures of a GPU record (:func:`gpu_record`), as rows for tables, labelled in the
    current language: "provenance" (one line: GPU, SMs, torch, Triton, CUDA, date), "attention" (per
    dtype, width and mask: Triton's time over SDPA's forward and forward+backward, both forward
    TFLOP/s, the largest difference to SDPA), "split_kv" (per number of chunks: the measured speed-up
    over one chunk and the occupancy model's) and "decode" (per model and implementation: bytes per
    second, and their share of the copy bandwidth). A section the run could not measure gives one row
    with its error."""
    meta, results = record["meta"], record["results"]
    provenance = _("{gpu} ({n_sm} SMs), torch {torch}, Triton {triton}, CUDA {cuda}, recorded {date}").format(
        gpu=meta.get("gpu") or meta.get("device"), n_sm=meta.get("n_sm"), torch=meta.get("torch"),
        triton=meta.get("triton"), cuda=meta.get("cuda"), date=str(meta.get("date", ""))[:10])

    def failed(section):
        return [{_("error"): section["error"]}] if isinstance(section, dict) and "error" in section else None

    def attention_row(r):
        row = {_("dtype"): r["dtype"], "d": r["d"], _("causal"): r["causal"]}
        if "error" in r:
            return {**row, _("error"): r["error"]}
        return {**row, _("Triton / SDPA, forward"): r["triton / sdpa, forward"],
                _("Triton / SDPA, forward+backward"): r["triton / sdpa, forward+backward"],
                _("Triton forward (TFLOP/s)"): r["forward TFLOP/s (triton)"],
                _("SDPA forward (TFLOP/s)"): r["forward TFLOP/s (sdpa)"],
                _("max |Triton - SDPA|"): r["max |triton - sdpa|"]}

    attention = failed(results.get("attention", {})) or [attention_row(r) for r in results.get("attention", [])]
    split = results.get("split_kv", {})
    model = {str(n): x for n, x in split.get("model speed-up", {}).items()}      # JSON keys are strings
    split_rows = failed(split) or [
        {_("chunks"): _chunks(label), _("speed-up over one chunk"): speedup,
         _("occupancy model"): model.get(str(_chunks(label)))}
        for label, speedup in split.get("speed-up over one chunk", {}).items()]
    copy = results.get("copy bandwidth (GB/s)")
    decode = failed(results.get("decode", {})) or [
        {_("model"): r["model"], _("implementation"): r["impl"], "GB/s": r["GB/s"],
         _("share of the copy bandwidth"): r["GB/s"] / copy if copy else None}
        for r in results.get("decode", [])]
    return {"provenance": provenance, "attention": attention, "split_kv": split_rows, "decode": decode}


def device_comparison(device, T_list, repeats: int = 3, H: int = 8, d: int = 64) -> list[dict]:
    """Median time and peak memory growth of naive / sdpa / chunked causal attention on ``device``,
    one row per (T, impl), the three timed in turns at each T."""
    rows = []
    for T in T_list:
        q, k, v = (torch.randn(1, H, T, d, device=device) for _ in range(3))   # (B, H, T, d)
        cases = causal_cases(q, k, v)
        with torch.no_grad():
            times = interleaved_times(cases, repeats, device)
            for impl, fn in cases.items():
                rows.append({"T": T, "impl": impl, "time (ms)": 1e3 * statistics.median(times[impl]),
                             "peak memory growth (MiB)": peak_memory(fn, device) / 2**20})
    return rows
