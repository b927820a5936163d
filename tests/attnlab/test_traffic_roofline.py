"""attnlab.traffic, attnlab.roofline, attnlab.bench: byte counts against formulas, the roofline's shape,
the probes against independent measurements. No timing is asserted (speed lives in benchmarks/)."""
import json

import numpy as np
import pytest
import sympy as sp
import torch

from attnlab import bench, roofline, traffic
from attnlab.errors import AttentionInputError
from attnlab.torch_ops import attention, chunked_attention


@pytest.fixture(autouse=True, scope="module")
def _one_thread(torch_one_thread):
    """Every test in this module runs torch on one thread (see conftest)."""


def qkv(N=2, T=128, d=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, N, T, d, generator=g, dtype=torch.float64) for _ in range(3)]


def counted(fn, slow_bytes):
    with torch.no_grad(), traffic.TrafficCounter(slow_bytes) as counter:
        fn()
    return counter


def test_naive_formula_is_the_sum_of_its_terms():
    B, H, T, S, d_k, d_v, n = sp.symbols("B H T S d_k d_v n", positive=True, integer=True)
    reads = T * d_k + S * d_k + S * d_v + 2 * T * S          # Q, K, V; the scores; the weights
    writes = 2 * T * S + T * d_v                             # the scores, the weights; O
    expected = sp.expand(n * B * H * (reads + writes))
    values = {B: 2, H: 3, T: 5, S: 7, d_k: 4, d_v: 6, n: 2}
    assert traffic.naive_bytes(2, 3, 5, 7, 4, 6, itemsize=2) == expected.subs(values)


def test_tiled_formula_closed_form_without_mask():
    for T, bq in [(64, 8), (64, 16), (60, 7)]:
        n_blocks = -(-T // bq)
        assert traffic.tiled_bytes(1, 2, T, 50, 4, block_q=bq, itemsize=8) == 8 * 2 * (
            T * 9 + n_blocks * 50 * 8)


def test_tiled_traffic_decreases_as_the_block_grows():
    sizes = [traffic.tiled_bytes(1, 8, 4096, 4096, 64, block_q=b, causal=c) for c in (False, True)
             for b in (16, 64, 256, 1024)]
    assert sizes[:4] == sorted(sizes[:4], reverse=True) and sizes[4:] == sorted(sizes[4:], reverse=True)
    # naive moves about 4 T S numbers, tiled about T S (d_k + d_v) / block_q: a ratio of 4 block_q / (d_k + d_v)
    ratio = traffic.naive_bytes(1, 8, 4096, 4096, 64) / traffic.tiled_bytes(1, 8, 4096, 4096, 64, block_q=128)
    assert ratio == pytest.approx(4 * 128 / 128, rel=0.05)


@pytest.mark.parametrize("causal", [False, True])
def test_counter_agrees_with_the_tiled_formula(causal):
    N, T, d = 2, 64, 4
    q, k, v = qkv(N, T, d)
    slow = N * T * 8                                          # the log-sum-exp (N, T) is the smallest slow tensor
    measured, formula = {}, {}
    for bq in (2, 4, 8):
        # blocks of scores and the running output stay in fast memory; every query block sees at least
        # two key blocks, so no key tile is reused from one query block to the next (the formula
        # assumes none is)
        assert N * bq * d * 8 < slow
        measured[bq] = counted(lambda bq=bq: chunked_attention(q, k, v, causal=causal, block_q=bq, block_k=1),
                               slow).total
        formula[bq] = traffic.tiled_bytes(1, N, T, T, d, block_q=bq, causal=causal, itemsize=8)
    # the block-dependent part is counted exactly; the rest is a prologue of O(T d) bytes
    extra = {bq: measured[bq] - formula[bq] for bq in measured}
    assert len(set(extra.values())) == 1
    assert 0 <= extra[2] <= 12 * N * T * d * 8


def test_counter_sees_the_naive_matrix_written_and_read():
    N, T, d = 2, 128, 4
    q, k, v = qkv(N, T, d)
    c = counted(lambda: attention(q, k, v, impl="naive"), N * T * 8)
    minimum = traffic.naive_bytes(1, N, T, T, d, itemsize=8)
    assert minimum <= c.total <= 3 * minimum
    assert c.written >= 2 * N * T * T * 8                     # scores and weights, at least once each


def test_counter_ignores_views_and_small_tensors():
    x = torch.zeros(1000)
    c = counted(lambda: (x[:10] + 1, x.view(10, 100).t()), slow_bytes=4000)
    assert c.read == 40 and c.written == 0


def test_causal_flops_count_the_allowed_pairs():
    T, S, d = 6, 9, 4
    allowed = np.tril(np.ones((T, S), dtype=bool), S - T)
    assert traffic.attention_flops(1, 1, T, S, d, causal=True) == 2 * allowed.sum() * 2 * d
    assert traffic.decode_step_flops(2, 8, 100, 64) == 2 * 2 * 8 * 100 * 128


def test_decode_intensity_is_H_over_H_kv_in_half_precision():
    for H, H_kv in [(32, 32), (32, 8), (32, 1)]:
        S = 2**20                                             # long cache: q and out are negligible
        intensity = traffic.decode_step_flops(1, H, S, 128) / traffic.decode_step_bytes(1, H, H_kv, S, 128, itemsize=2)
        assert intensity == pytest.approx(H / H_kv, rel=1e-4)


def test_io_bound_and_fast_memory():
    assert traffic.io_bound(1024, 1024, 64, 64 * 128) == pytest.approx(1024 * 1024 * 64 / 128)
    assert traffic.fast_memory_bytes(128, 256, 64) == 4 * (128 * 64 + 256 * 128 + 128 * 256 + 128 * 66)


@pytest.mark.parametrize("call", [
    lambda: traffic.naive_bytes(0, 1, 1, 1, 1), lambda: traffic.tiled_bytes(1, 1, 4, 4, 2, block_q=2.5),
    lambda: traffic.TrafficCounter(0), lambda: roofline.GPU_SPECS["A100"].attainable([1.0, -1.0]),
    lambda: bench.median_time(lambda: None, repeats=0), lambda: roofline.measure_bandwidth(1000),
])
def test_bad_arguments_raise_named_errors(call):
    with pytest.raises(AttentionInputError):
        call()


def test_roofline_shape_and_gpu_ridges():
    m = roofline.Machine("toy", flops=100.0, bandwidth=10.0)
    assert m.ridge == 10.0
    np.testing.assert_allclose(m.attainable([1.0, 10.0, 1000.0]), [10.0, 100.0, 100.0])
    for spec in roofline.GPU_SPECS.values():
        assert 100 < spec.ridge < 1000 and "datasheet" in spec.source


def test_cache_sizes_read_from_a_fake_sysfs(tmp_path):
    for i, (level, kind, size) in enumerate([(1, "Data", "32K"), (2, "Unified", "1M")]):
        d = tmp_path / "cpu0" / "cache" / f"index{i}"
        d.mkdir(parents=True)
        for name, val in [("level", level), ("type", kind), ("size", size), ("shared_cpu_list", "0")]:
            (d / name).write_text(f"{val}\n")
    rows = roofline.cache_sizes(root=str(tmp_path))
    assert [(r["level"], r["bytes"]) for r in rows] == [(1, 32 * 1024), (2, 2**20)]
    assert roofline.cache_sizes(root=str(tmp_path / "absent")) == []


def test_measurements_are_positive_and_finite():
    bw, fl = roofline.measure_bandwidth(2**21, repeats=1), roofline.measure_matmul_flops(64, repeats=1)
    assert np.isfinite(bw) and bw > 0 and np.isfinite(fl) and fl > 0


def test_interleaved_times_calls_each_function_once_per_round_plus_warmup():
    calls = {"a": 0, "b": 0}
    fns = {name: (lambda name=name: calls.__setitem__(name, calls[name] + 1)) for name in calls}
    times = bench.interleaved_times(fns, repeats=3)
    assert calls == {"a": 4, "b": 4} and all(len(t) == 3 and min(t) >= 0 for t in times.values())


def test_peak_memory_and_profiler_agree_on_a_plain_allocation():
    n = 2**20
    fn = lambda: torch.ones(n)  # noqa: E731
    assert bench.peak_memory(fn) == 4 * n
    peak = bench.profiler_peak(fn)
    assert peak is None or peak >= 4 * n


def test_causal_cases_agree():
    q, k, v = (t.float() for t in qkv(2, 40, 8))
    outs = {name: fn() for name, fn in bench.causal_cases(q, k, v).items()}
    for out in outs.values():
        torch.testing.assert_close(out, outs["naive"], atol=1e-5, rtol=1e-4)


def test_load_recorded(tmp_path):
    assert bench.load_recorded(tmp_path / "none.json") is None
    (tmp_path / "bad.json").write_text(json.dumps({"results": []}))
    with pytest.raises(AttentionInputError, match="meta"):
        bench.load_recorded(tmp_path / "bad.json")
    info = bench.machine_info()
    assert info["torch"] == torch.__version__ and info["cpu_count"] >= 1
