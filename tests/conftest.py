"""Shared pytest fixtures."""
import sys
from pathlib import Path

import pytest
import torch

# tests/ is a package, so that tests/attnlab/ (mirroring the package) is imported as tests.attnlab and
# cannot shadow attnlab itself; the helper modules at its top (browser_support) stay importable by
# name, searched after everything else on the path.
sys.path.append(str(Path(__file__).parent))

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
