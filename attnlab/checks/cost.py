"""Checker for the KV-cache size formula (chapter 8): an exact integer count of bytes.

The cases include made-up configurations whose count needs more than 24 and more than 53 significant bits,
so a product computed in float32 or float64 is caught; attnlab's own ``kv_cache_bytes`` may not be called.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..i18n import N_, _
from .diagnosis import Trial, describe_ratio
from .engine import Mistake, kind_of, models
from .registry import checker

KV_LIBRARIES = ("attnlab.cache_size.kv_cache_bytes",)

FIELDS = ("batch", "seq_len", "n_layers", "n_heads", "n_kv_heads", "head_dim", "bytes_per_element")

KV_MISTAKES: list[Mistake] = []
model = models(KV_MISTAKES)


@model("no_factor_two", N_("your count is half the right one: the factor 2 is missing (the cache holds keys AND "
       "values), or you halved it for a causal mask (causality does not halve a cache: every position keeps its "
       "key and value)."))
def kv_bytes_without_factor_two(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, nbytes):
    return batch * seq_len * n_layers * n_kv_heads * head_dim * nbytes


@model("query_heads", N_("you used the number of query heads; the cache stores one key and one value per KV head "
       "(n_kv_heads), which is the point of MQA and GQA."))
def kv_bytes_with_query_heads(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, nbytes):
    return 2 * batch * seq_len * n_layers * n_heads * head_dim * nbytes


@model("bits", N_("you counted bits (x 8); the question asks for bytes."))
def kv_bytes_in_bits(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, nbytes):
    return 2 * batch * seq_len * n_layers * n_kv_heads * head_dim * nbytes * 8


@model("one_layer", N_("the number of layers is missing: every layer keeps its own cache."))
def kv_bytes_one_layer(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, nbytes):
    return 2 * batch * seq_len * n_kv_heads * head_dim * nbytes


@model("one_sequence", N_("the batch size is missing: every sequence in the batch keeps its own cache."))
def kv_bytes_one_sequence(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, nbytes):
    return 2 * seq_len * n_layers * n_kv_heads * head_dim * nbytes


@model("int32_overflow", N_("the count wrapped around: it was computed with 32-bit integers (a product of "
       "`np.int32` values, or `torch.int32` tensors multiplied element by element), which overflow past "
       "2**31 - 1 = 2147483647 bytes (2 GiB). Multiply Python ints (they never overflow), or use `np.int64`."))
def kv_bytes_int32(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, nbytes):
    total = 2 * batch * seq_len * n_layers * n_kv_heads * head_dim * nbytes
    return (total + 2**31) % 2**32 - 2**31


@model("elements_not_bytes", N_("you counted numbers, not bytes: multiply by bytes_per_element (2 for fp16 and "
       "bf16, 4 for fp32)."))
def kv_elements(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, nbytes):
    return 2 * batch * seq_len * n_layers * n_kv_heads * head_dim


@model("group_size", N_("you used the group size n_heads // n_kv_heads; the cache stores n_kv_heads key heads and "
       "as many value heads, whatever the number of query heads."))
def kv_bytes_with_group_size(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, nbytes):
    return 2 * batch * seq_len * n_layers * (n_heads // n_kv_heads) * head_dim * nbytes


@model("float_product", N_("the count was computed in floating point (float32 keeps 24 significant bits, float64 "
       "53), so a large count is rounded. Multiply Python ints: they are exact at any size."))
def kv_bytes_float32(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, nbytes):
    return int(np.prod(np.array([2, batch, seq_len, n_layers, n_kv_heads, head_dim, nbytes], dtype=np.float32)))


@model("float_product", N_("the count was computed in floating point (float64 keeps 53 significant bits), so a "
       "count beyond 2**53 is rounded. Multiply Python ints: they are exact at any size."))
def kv_bytes_float64(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, nbytes):
    return int(float(2) * batch * seq_len * n_layers * n_kv_heads * head_dim * nbytes)


NOT_AN_INT = Mistake("not_an_int", N_("the count is not an integer (a float, a string, an array, ...): return an int."))


def _reference(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, nbytes):
    return 2 * batch * seq_len * n_layers * n_kv_heads * head_dim * nbytes     # K and V


def _as_count(run, got, case) -> int:
    if isinstance(got, (bool, np.bool_)) or not isinstance(got, (numbers.Integral, np.integer)):
        if isinstance(got, float) and got.is_integer():
            run.fail(_("For {case}, your function returned the float {got!r}; a byte count is a "
                       "whole number: return an int (multiply ints, and use `//` rather than `/` "
                       "if you divide).").format(case=_(case), got=got), NOT_AN_INT.name)
        run.fail(_("For {case}, your function returned {value} ({value2!r} when printed); return "
                   "the count as an int.").format(
                       case=_(case), value=kind_of(got), value2=str(got)[:40]), NOT_AN_INT.name)
    return int(got)


@checker(N_("KV-cache bytes"), KV_MISTAKES + [NOT_AN_INT], forbid=KV_LIBRARIES)
def check_kv_cache_bytes(run, fn):
    """Check ``fn(batch, seq_len, n_layers, n_heads, n_kv_heads, head_dim, bytes_per_element)``: the number of
    bytes (an int) the keys and values of every layer take for a batch of cached sequences."""
    cases = [(3, 1024, 5, 32, 8, 128, 2), (1, 4096, 32, 32, 8, 128, 2), (5, 100, 3, 12, 12, 64, 4),
             (7, 10, 5, 8, 1, 16, 1), (8, 32768, 80, 64, 8, 128, 2),
             (3, 100003, 61, 21, 7, 127, 2),              # made up: the count needs 36 significant bits
             (1001, 10000019, 127, 63, 63, 255, 1),       # made up: 55 significant bits, beyond float64
             (999, 20000003, 121, 61, 61, 253, 1)]        # made up: 55 significant bits again

    def trial(args):
        case = ", ".join(f"{k}={v}" for k, v in zip(FIELDS, args))
        value = _as_count(run, run.call(fn, case, *args), case)
        return Trial(case, value, _reference(*args), args)

    trials = []
    run.each_case(cases, _recorded(trial, trials), KV_MISTAKES, tol=None, name=N_("your count"),
                  explain=lambda got, expected: describe_ratio(got, expected, trials, FIELDS))
    return run.passed(_("All {n_cases} configurations match 2 x batch x seq_len x n_layers x "
                        "n_kv_heads x head_dim x bytes_per_element, up to {value:,} bytes (beyond "
                        "2**31 and 2**53: no overflow, no rounding).").format(n_cases=len(cases),
                                                                              value=_reference(*cases[-1])))


def _recorded(trial, trials: list):
    """``trial`` that also keeps every trial it makes, for a pattern across the cases."""
    def run_one(item):
        result = trial(item)
        trials.append(result)
        return result
    return run_one
