"""Where the checkers' cases come from: fixed seeds in a notebook, fresh ones in a grading run.

Every checker draws its random inputs from ``rng(n)`` (a NumPy Generator) or
``torch_generator(n)``, with a small fixed number n per battery. In a notebook, and in the
book's tests, that is ``np.random.default_rng(n)``: the same cases on every run, so a verdict is
reproducible. A grading run chooses a seed of its own (:func:`new_seed`, recorded in each
student's feedback) and checks inside ``with cases_from(seed):``; every stream then starts from
(seed, n). The inputs change from one grading run to the next, so a table of the outputs of the
published cases does not pass, while a regrade with the same seed sees the same cases.
"""
from __future__ import annotations

import contextlib
import contextvars
import secrets

import numpy as np

_SEED: contextvars.ContextVar[int | None] = contextvars.ContextVar("attnlab_cases_seed", default=None)


def new_seed() -> int:
    """A fresh seed for a grading run."""
    return secrets.randbelow(2**31 - 1) + 1


def current() -> int | None:
    """The grading run's seed, or None (fixed cases)."""
    return _SEED.get()


@contextlib.contextmanager
def cases_from(seed: int | None):
    """Draw every checker's cases from ``seed`` inside the block (None: the fixed cases)."""
    token = _SEED.set(seed)
    try:
        yield
    finally:
        _SEED.reset(token)


def rng(n: int) -> np.random.Generator:
    """The checker's stream number ``n``: ``default_rng(n)``, or one from (seed, n) in a grading run."""
    seed = _SEED.get()
    return np.random.default_rng(n if seed is None else [seed, n])


def torch_generator(n: int):
    """The same for torch: a ``torch.Generator`` seeded with n, or from (seed, n) in a grading run."""
    import torch
    seed = _SEED.get()
    if seed is not None:
        n = int(np.random.SeedSequence([seed, n]).generate_state(1, np.uint64)[0] >> np.uint64(1))
    return torch.Generator().manual_seed(n)
