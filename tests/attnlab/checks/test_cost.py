"""KV-cache byte-count checker: each mistake is named.

Every "student" function is written independently, the way a student would write the mistake,
not taken from the package's mistake models; each test asserts the diagnosis it gets.
"""


import numpy as np
import torch

from attnlab import checks as C

from .support import assert_diagnosis, assert_not_attempted, stub

# ------------------------------------------------------------------------------------ KV-cache bytes


def test_kv_cache_bytes_reference_passes():
    assert C.check_kv_cache_bytes(lambda b, s, L, H, Hkv, d, n: 2 * b * s * L * Hkv * d * n).passed


def test_kv_cache_bytes_stub_not_attempted():
    assert_not_attempted(C.check_kv_cache_bytes(stub))


def test_kv_cache_bytes_without_factor_two():
    assert_diagnosis(C.check_kv_cache_bytes(lambda b, s, L, H, Hkv, d, n: b * s * L * Hkv * d * n), "no_factor_two",
                     "keys AND values")


def test_kv_cache_bytes_with_query_heads():
    assert_diagnosis(C.check_kv_cache_bytes(lambda b, s, L, H, Hkv, d, n: 2 * b * s * L * H * d * n), "query_heads",
                     "query heads")


def test_kv_cache_bytes_in_bits():
    assert_diagnosis(C.check_kv_cache_bytes(lambda b, s, L, H, Hkv, d, n: 16 * b * s * L * Hkv * d * n), "bits",
                     "bits")


def test_kv_cache_bytes_one_layer():
    assert_diagnosis(C.check_kv_cache_bytes(lambda b, s, L, H, Hkv, d, n: 2 * b * s * Hkv * d * n), "one_layer",
                     "layers")


def test_kv_cache_bytes_one_sequence():
    assert_diagnosis(C.check_kv_cache_bytes(lambda b, s, L, H, Hkv, d, n: 2 * s * L * Hkv * d * n), "one_sequence",
                     "batch size")


# ------------------------------------------------------------------------------------ new wrong implementations


def test_kv_cache_bytes_with_int32_overflow():
    def int32(b, s, L, H, Hkv, d, n):
        total = np.int32(2)
        for factor in np.array([b, s, L, Hkv, d, n], dtype=np.int32):
            total = total * factor                          # int32 times int32 wraps past 2**31 - 1
        return int(total)
    assert_diagnosis(C.check_kv_cache_bytes(int32), "int32_overflow", "32-bit")


def test_kv_cache_bytes_with_torch_int32_overflow():
    def int32(b, s, L, H, Hkv, d, n):
        total = torch.tensor(2, dtype=torch.int32)
        for factor in (b, s, L, Hkv, d, n):
            total = total * factor                          # stays int32 and wraps past 2**31 - 1
        return int(total)
    assert_diagnosis(C.check_kv_cache_bytes(int32), "int32_overflow", "2**31")


def test_kv_cache_bytes_as_a_string_is_refused():
    assert_diagnosis(C.check_kv_cache_bytes(lambda b, s, L, H, Hkv, d, n: str(2 * b * s * L * Hkv * d * n)),
                     "not_an_int", "a str")


def test_kv_cache_bytes_as_a_float_is_refused():
    assert_diagnosis(C.check_kv_cache_bytes(lambda b, s, L, H, Hkv, d, n: 2.0 * b * s * L * Hkv * d * n),
                     "not_an_int", "the float")


def test_kv_cache_bytes_as_a_numpy_int64_passes():
    assert C.check_kv_cache_bytes(lambda b, s, L, H, Hkv, d, n: np.int64(2) * b * s * L * Hkv * d * n).passed


def test_kv_cache_bytes_counting_megabytes():
    result = C.check_kv_cache_bytes(lambda b, s, L, H, Hkv, d, n: 2 * b * s * L * Hkv * d * n // 2**20)
    assert not result.passed and "the reference" in result.message, result


def test_kv_cache_bytes_with_head_dim_times_heads_of_queries_over_kv():
    result = C.check_kv_cache_bytes(lambda b, s, L, H, Hkv, d, n: 2 * b * s * L * (H // Hkv) * d * n)
    assert not result.passed and result.status == "failed", result
