"""attnlab.bench on the CPU: the profiler's split of a call by operation, and the live device comparison's rows
(names, shapes and deterministic memory only: a measured time is shown by the book, never asserted)."""
import torch

from attnlab import bench
from attnlab.memory import peak_bytes


def test_op_time_breakdown_names_the_aten_operations_of_the_call():
    a = torch.randn(64, 64)
    split = bench.op_time_breakdown(lambda: (a @ a).exp())
    assert set(split) == {"wall", "ops"} and isinstance(split["wall"], float)
    assert {"aten::mm", "aten::exp"} <= set(split["ops"])
    assert all(name.startswith("aten::") for name in split["ops"])


def test_device_comparison_gives_one_row_per_length_and_implementation_with_exact_memory():
    rows = bench.device_comparison("cpu", [32, 64], repeats=1, H=2, d=8)
    assert [(r["T"], r["impl"]) for r in rows] == [(T, impl) for T in (32, 64) for impl in ("naive", "sdpa", "chunked")]
    assert all(set(r) == {"T", "impl", "time (ms)", "peak memory growth (MiB)"} for r in rows)
    q = torch.randn(1, 2, 64, 8)
    naive = bench.causal_cases(q, q, q)["naive"]
    with torch.no_grad():
        expected = peak_bytes(naive)[1] / 2**20
    assert [r["peak memory growth (MiB)"] for r in rows if r["T"] == 64 and r["impl"] == "naive"] == [expected]

