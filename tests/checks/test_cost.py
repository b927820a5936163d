"""KV-cache byte-count checker: each mistake is named.

Every "student" function is written independently, the way a student would write the mistake,
not taken from the package's mistake models; each test asserts the diagnosis it gets.
"""


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
