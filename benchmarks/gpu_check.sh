#!/usr/bin/env bash
# `make gpu-check`: on a machine with a CUDA GPU, the torch and kernel tests on the GPU and the benchmarks, into
# attnlab/recorded/bench_gpu.json (and $OUT when set); see benchmarks/gpu_check.py. Arguments go to it:
# `bash benchmarks/gpu_check.sh --dry-run` tries the whole script on the CPU with tiny sizes.
# Python: $PYTHON, else .venv, else python3. The venv needs the kernels extra (pip install -e .[kernels]).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
"$PY" -c "import triton" 2>/dev/null || { echo "Triton is missing: pip install -e .[kernels]" >&2; exit 2; }
exec "$PY" benchmarks/gpu_check.py "$@"
