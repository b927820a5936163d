"""Shared pytest fixtures."""
import pathlib
import sys

import pytest
import torch

# tests/attnlab/ mirrors the package; with tests/ on sys.path (pytest's rootdir-based imports) it would be
# imported as a namespace package named attnlab in place of the real one, so the checkout comes first.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import attnlab  # noqa: E402, F401

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
