"""Rebinding and patching: every way a notebook used to earn points by changing the checkers.

Rebinds the check_* names, patches attnlab.checks, CheckResult, numpy.allclose and
numpy.testing, returns an output computed once, and patches again while being checked.
"""
import numpy
import numpy.testing

import attnlab.checks
import attnlab.checks.engine
import attnlab.checks.result
from attnlab.checks import CheckResult

_passed = CheckResult("anything", "passed", "looks right")
for _name in dir(attnlab.checks):
    if _name.startswith("check_"):
        setattr(attnlab.checks, _name, lambda *args, **kwargs: _passed)
        globals()[_name] = lambda *args, **kwargs: _passed
attnlab.checks.result.CheckResult.passed = property(lambda self: True)
numpy.allclose = lambda *args, **kwargs: True
numpy.array_equal = lambda *args, **kwargs: True
numpy.testing.assert_allclose = lambda *args, **kwargs: None
answer_shapes = [[0, 0], [0, 0], [0, 0]]

_q = numpy.arange(6.0).reshape(2, 3)
_precomputed = _q @ _q.T


def scores(q, k):
    return _precomputed


def attention(q, k, v, allowed=None):
    for name in dir(attnlab.checks.engine):
        if callable(getattr(attnlab.checks.engine, name)):
            setattr(attnlab.checks.engine, name, lambda *args, **kwargs: None)
    numpy.allclose = lambda *args, **kwargs: True
    return None
