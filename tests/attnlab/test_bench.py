"""attnlab.bench.gpu_record: the GPU record that benchmarks/gpu_check.py writes, or None where the book ships none."""
import json

import pytest

from attnlab import bench
from attnlab.errors import AttentionInputError


def test_gpu_record_reads_the_recorded_file_or_gives_none(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "RECORDED", tmp_path)
    assert bench.gpu_record() is None
    record = {"meta": {"gpu": "NVIDIA H100 80GB HBM3", "n_sm": 132}, "tests": {"returncode": 0},
              "results": {"attention": [{"dtype": "bfloat16", "d": 128, "triton / sdpa, forward": 1.4}]}}
    (tmp_path / "bench_gpu.json").write_text(json.dumps(record))
    assert bench.gpu_record() == record
    (tmp_path / "bench_gpu.json").write_text(json.dumps({"results": {}}))
    with pytest.raises(AttentionInputError, match="meta"):
        bench.gpu_record()


def _record():
    """A record shaped as benchmarks/gpu_check.py writes it (JSON round trip: the chunk counts become strings)."""
    row = {"dtype": "bfloat16", "d": 128, "B": 4, "H": 16, "T": 4096, "causal": True, "max |triton - sdpa|": 0.0039,
           "sdpa (ms)": 2.0, "triton (ms)": 2.6, "sdpa+bwd (ms)": 7.0, "triton+bwd (ms)": 9.8,
           "forward TFLOP/s (triton)": 210.0, "forward TFLOP/s (sdpa)": 273.0, "fwd+bwd TFLOP/s (triton)": 150.0,
           "triton / sdpa, forward": 2.6 / 2.0, "triton / sdpa, forward+backward": 9.8 / 7.0}
    results = {"copy bandwidth (GB/s)": 3000.0,
               "attention": [row, {"dtype": "float16", "d": 64, "causal": False, "error": "OutOfResources: shared"}],
               "split_kv": {"speed-up over one chunk": {"split_kv_decode, 1 chunks": 1.0,
                                                        "split_kv_decode, 16 chunks": 9.5},
                            "model speed-up": {1: 1.0, 16: 16.0}, "n_sm": 132},
               "decode": [{"model": "GQA", "impl": "sdpa", "bytes": 10, "time (ms)": 1.0, "GB/s": 1500.0}]}
    meta = {"gpu": "NVIDIA H100 80GB HBM3", "n_sm": 132, "torch": "2.13.0", "triton": "3.9.0", "cuda": "12.8",
            "date": "2026-12-07T10:00:00+00:00"}
    return json.loads(json.dumps({"meta": meta, "results": results}))


def test_gpu_summary_gives_the_headline_figures_of_a_record():
    summary = bench.gpu_summary(_record())
    assert summary["provenance"] == ("NVIDIA H100 80GB HBM3 (132 SMs), torch 2.13.0, Triton 3.9.0, CUDA 12.8, "
                                     "recorded 2026-12-07")
    first, failed = summary["attention"]
    assert first["Triton / SDPA, forward"] == pytest.approx(2.6 / 2.0)
    assert first["Triton / SDPA, forward+backward"] == pytest.approx(9.8 / 7.0)
    assert failed["error"].startswith("OutOfResources") and "Triton / SDPA, forward" not in failed
    assert summary["split_kv"] == [{"chunks": 1, "speed-up over one chunk": 1.0, "occupancy model": 1.0},
                                   {"chunks": 16, "speed-up over one chunk": 9.5, "occupancy model": 16.0}]
    assert summary["decode"][0]["share of the copy bandwidth"] == 0.5


def test_gpu_summary_reports_a_section_that_failed_and_speaks_chinese():
    record = _record()
    record["results"]["split_kv"] = {"error": "RuntimeError: out of memory"}
    assert bench.gpu_summary(record)["split_kv"] == [{"error": "RuntimeError: out of memory"}]
    from attnlab import i18n
    i18n.set_language("zh_CN")
    try:
        summary = bench.gpu_summary(record)
    finally:
        i18n.set_language("en")
    assert "记录于" in summary["provenance"] and "模型" in summary["decode"][0]
