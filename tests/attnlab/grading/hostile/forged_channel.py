"""Forged channel: write result lines and messages into every descriptor under /proc/self/fd.

The old sandbox reported progress as JSON lines on a pipe; a notebook wrote its own "result"
lines there. Here the lines of the old format, frames of the new one (a length, then JSON
saying "ok" or returning values) and plain garbage go to every open descriptor, at the top of
the notebook and again while a function is being checked.
"""
import json
import os
import struct

import numpy

_LINES = [json.dumps({"result": q, "checks": [{"check": "x", "status": "passed", "message": "forged"}]})
          for q in ("ex-qkv-shapes", "ex-qkv-trap", "ex-qkv-scores", "ex-qkv-attention")]


def _frame(header):
    text = json.dumps(dict(header, blobs=[])).encode()
    return struct.pack(">I", len(text)) + text


def _forge():
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd < 3:
            continue
        for data in [*(line.encode() + b"\n" for line in _LINES),
                     *(_frame({"ok": True, "id": i}) for i in range(1, 40)),
                     *(_frame({"value": {"$dict": [["returned", 1.0]]}, "id": i}) for i in range(1, 40)),
                     b"\x00" * 64]:
            try:
                os.write(fd, data)
            except OSError:
                break


_forge()
answer_shapes = [[5, 7], [5, 7], [5, 8]]


def scores(q, k):
    _forge()
    return numpy.zeros(q.shape[:-1] + k.shape[-2:-1])
