"""Shared pytest fixtures."""
import sys
from pathlib import Path

import pytest
import torch

# tests/ is a package (tests/attnlab/ mirrors the package and must not shadow it), so the helper
# modules beside this file (browser_support) are found through the end of the path, after attnlab
sys.path.append(str(Path(__file__).resolve().parent))

_DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(params=_DEVICES, scope="session")
def device(request):
    """Every torch test runs on the CPU, and on CUDA too when a GPU is present."""
    return torch.device(request.param)


@pytest.fixture(scope="module")
def torch_one_thread():
    """Run torch on one thread for a module, then restore the setting.

    Tiny tensors gain nothing from threads, and on a busy 2-core machine the threads of
    each small operation wait for each other.
    """
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
