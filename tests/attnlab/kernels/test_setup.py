"""attnlab.kernels finds its way to Triton's interpreter on a machine without a GPU, says what is wrong when
it cannot, and says how to install Triton when it is missing (each case in a fresh Python process).
"""
import importlib.util
import os
import subprocess
import sys

import pytest
import torch

needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                                  reason="attnlab.kernels needs Triton: pip install -e .[kernels]")
no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="what happens without a GPU")


def python(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with TRITON_INTERPRET unset, as a user's first cell would."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


@needs_triton
@no_gpu
def test_without_a_gpu_the_kernels_run_in_the_interpreter_even_after_torch_ops():
    """attnlab.torch_ops imports torch.nn.attention.bias, which imports triton: import attnlab has set the
    variable before that."""
    done = python("import os, torch, attnlab.torch_ops, attnlab.kernels as K\n"
                  "q = torch.randn(1, 1, 20, 16)\n"
                  "out = K.flash_attention(q, q, q)\n"
                  "print(os.environ['TRITON_INTERPRET'], K.interpreted(), bool(out.isfinite().all()))")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "True", "True"]


@needs_triton
@no_gpu
def test_triton_imported_too_early_is_explained():
    done = python("import triton\nimport attnlab.kernels")                  # as torch.nn.attention.bias does
    assert done.returncode != 0 and "Set TRITON_INTERPRET=1 before importing torch" in done.stderr


def test_missing_triton_says_how_to_install_it():
    done = python("import sys\nsys.modules['triton'] = None\nimport attnlab.kernels")
    assert done.returncode != 0 and "pip install -e .[kernels]" in done.stderr
