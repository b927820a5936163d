"""Shared pytest fixtures."""
import pytest
import torch

_DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(params=_DEVICES, scope="session")
def device(request):
    """Every torch test runs on the CPU, and on CUDA too when a GPU is present."""
    return torch.device(request.param)
