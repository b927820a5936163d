"""The confusion matrix of every checker's mistake models: each model, run as a student's function, is named
as itself, never as another mistake of the same checker.

For each checker, each mistake that has a model is turned into a "student" (an adapter converts the inputs
the checker passes into the model's own, for the torch tasks and the dropout task) and checked. The matrix
has one row per model and one column per mistake name of the checker: its off-diagonal cells must be zero.
A model that cannot run as a student on the first case (it raises) is listed and skipped; its row is empty.
"""
import collections

import numpy as np
import pytest
import torch

from attnlab.checks.registry import REGISTRY


def _torch_out(x):
    return torch.from_numpy(np.asarray(x, dtype=np.float64)).float()


def _causal_student(model, dropout_model=False):
    from attnlab.checks.causal import _weights, fake_dropout_numpy

    def student(query, key, value, query_offset=0, dropout=None):
        q, k, v = (t.double().numpy() for t in (query, key, value))
        w = _weights(q, k, query_offset)
        if dropout_model and dropout is None:
            return _torch_out(w @ v), _torch_out(w)
        out = model(q, k, v, query_offset)
        if not dropout_model and dropout is not None:
            out = fake_dropout_numpy(w) @ v
        return _torch_out(out), _torch_out(w)
    return student


def _mha_student(model):
    def student(x, mha):
        params = [p.detach().double().numpy() for p in (mha.in_proj_weight, mha.in_proj_bias,
                                                        mha.out_proj.weight, mha.out_proj.bias)]
        return _torch_out(model(x.double().numpy(), *params, mha.num_heads))
    return student


def _numpy_in_torch_out(model):
    return lambda *args: _torch_out(model(*(a.double().numpy() if torch.is_tensor(a) else a for a in args)))


def _dropout_student(model):
    return lambda a, p, rng: model(a, rng.random(a.shape) >= p, p)


ADAPTERS = {
    "check_dropout": _dropout_student,
    "check_causal_attention": None,        # two kinds of models: see _student
    "check_split_heads": _numpy_in_torch_out,
    "check_merge_heads": _numpy_in_torch_out,
    "check_gqa_attention": _numpy_in_torch_out,
    "check_mha_from_torch": _mha_student,
}


def _student(checker, mistake):
    if checker == "check_causal_attention":
        from attnlab.checks.causal import DROPOUT_MISTAKES
        return _causal_student(mistake.model, dropout_model=mistake in DROPOUT_MISTAKES)
    return ADAPTERS.get(checker, lambda model: model)(mistake.model)


def confusion(checker):
    """{(intended, diagnosed): count} for every model of ``checker``, the models that could not run, and the
    names of the checker's catalogue; a diagnosis the engine could not confirm on a second case counts as
    diagnosed "unconfirmed"."""
    entry = REGISTRY[checker]
    names = entry.mistake_names()
    cells, skipped = collections.Counter(), []
    for mistake in entry.mistakes:
        if mistake.model is None:
            continue
        result = entry.function(_student(checker, mistake))
        if "no other case could confirm it" in result.message:
            cells[(mistake.name, "unconfirmed")] += 1
            continue
        diagnosed = set(result.mistake.split(",")) if result.mistake else set()
        if not diagnosed & set(names) and "raised" in result.message:
            skipped.append((mistake.name, result.message.splitlines()[-1][:80]))
            continue
        for name in diagnosed or {""}:
            cells[(mistake.name, name)] += 1
    return cells, skipped, names


CHECKERS = sorted(name for name, entry in REGISTRY.items() if any(m.model is not None for m in entry.mistakes))


@pytest.mark.parametrize("checker", CHECKERS)
def test_no_mistake_is_diagnosed_as_another_of_the_same_checker(checker):
    cells, skipped, names = confusion(checker)
    off_diagonal = {cell: n for cell, n in cells.items() if cell[1] in names and cell[0] != cell[1]}
    missed = {cell: n for cell, n in cells.items() if cell[1] not in names}
    assert not off_diagonal, off_diagonal
    assert not missed, missed          # every model is named (as itself, given the line above)


def matrix_size():
    """Rows x columns summed over the checkers (one row and one column per mistake name with a model)."""
    sizes = {}
    for checker in CHECKERS:
        n = len({m.name for m in REGISTRY[checker].mistakes if m.model is not None})
        sizes[checker] = n
    return sizes
