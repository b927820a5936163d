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
