"""Checker for the KV-cache size formula (chapter 7)."""
from __future__ import annotations

from . import mistakes as M
from . import result as R
from .diagnose import Mistake
from .runner import Stop, call, checker

KV_MISTAKES = [
    Mistake("no_factor_two", "the factor 2 is missing: the cache holds keys AND values.",
            M.kv_bytes_without_factor_two),
    Mistake("query_heads", "you used the number of query heads; the cache stores one key and one value per "
            "KV head (n_kv_heads), which is the point of MQA and GQA.", M.kv_bytes_with_query_heads),
    Mistake("bits", "you counted bits (x 8); the question asks for bytes.", M.kv_bytes_in_bits),
    Mistake("one_layer", "the number of layers is missing: every layer keeps its own cache.", M.kv_bytes_one_layer),
    Mistake("one_sequence", "the batch size is missing: every sequence in the batch keeps its own cache.",
            M.kv_bytes_one_sequence),
]

FIELDS = ("batch", "seq_len", "n_layers", "n_heads", "n_kv_heads", "head_dim", "bytes_per_element")


def _reference(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, nbytes):
    return 2 * batch * seq_len * n_layers * n_kv_heads * head_dim * nbytes     # K and V


@checker("KV-cache bytes")
def check_kv_cache_bytes(fn):
    """Check ``fn(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, bytes_per_element)``: the
    number of bytes the keys and values of every layer take for a batch of cached sequences."""
    task = "KV-cache bytes"
    cases = [(3, 1024, 5, 32, 8, 128, 2), (1, 4096, 32, 32, 8, 128, 2), (5, 100, 3, 12, 12, 64, 4),
             (7, 10, 5, 8, 1, 16, 1)]
    for args in cases:
        case = ", ".join(f"{k}={v}" for k, v in zip(FIELDS, args))
        got = call(task, fn, case, *args)
        try:
            value = float(got)
        except (TypeError, ValueError):
            raise Stop(R.failed(task, f"For {case}, your function returned {type(got).__name__}; return a number."))
        expected = _reference(*args)
        if value == expected:
            continue
        for mistake in KV_MISTAKES:
            if value == mistake.model(*args):
                raise Stop(R.failed(task, f"For {case}, your count matches a classic mistake: {mistake.explanation}",
                                    mistake.name))
        raise Stop(R.failed(task, f"For {case}, your function returned {value:g} bytes; the count is "
                                  f"{expected:g}."))
    return R.passed(task, f"All {len(cases)} configurations match 2 x batch x seq_len x n_layers x n_kv_heads x "
                          f"head_dim x bytes_per_element.")
