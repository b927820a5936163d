#!/usr/bin/env bash
# On a machine with a CUDA GPU: run the torch tests (cpu and cuda) and the attention benchmark.
# Writes $OUT/bench_gpu.json (and bench_gpu.md) when $OUT is set. Python: $PYTHON, else .venv, else python3.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
"$PY" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device visible'; print(torch.__version__, torch.cuda.get_device_name(0))"
"$PY" -m pytest -q -p no:cacheprovider tests/test_torch_*.py
if [ -n "${OUT:-}" ]; then
    "$PY" benchmarks/attention.py --device cuda --json "$OUT/bench_gpu.json" | tee "$OUT/bench_gpu.md"
else
    "$PY" benchmarks/attention.py --device cuda
fi
