"""NumPy building blocks that the topics' mistake models share: correct unless a knob says otherwise."""
from __future__ import annotations

import numpy as np


def swap(x):
    return np.swapaxes(x, -1, -2)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def attend(q, k, v, allowed=None, *, scale=None, scores=None, axis=-1, fill=-np.inf,
           mask="before", stable=True, normalise=True):
    """Attention with one knob per classic mistake; the defaults give the right answer.

    ``mask``: "before" (correct), "after" (zero weights after the softmax, no renormalising),
    "ignore", "invert", "add" (add the boolean mask to the scores).
    """
    d_k = q.shape[-1]
    scale = 1 / np.sqrt(d_k) if scale is None else scale
    s = (q @ swap(k) if scores is None else scores) * scale
    if allowed is not None and mask in ("before", "invert"):
        keep = np.broadcast_to(allowed if mask == "before" else ~allowed, s.shape)
        s = np.where(keep, s, fill)
    if allowed is not None and mask == "add":
        s = s + allowed
    if not normalise:
        a = s
    elif stable:
        a = softmax(s, axis)
    else:
        e = np.exp(s)
        a = e / e.sum(axis=axis, keepdims=True)
    if allowed is not None and mask == "after":
        a = a * allowed
    return a @ v
