"""al.kv_cache_bytes against hand counts, allocated tensors and published configurations."""
import numpy as np
import pytest
import torch

import attnlab as al
from attnlab.widgets import state


def test_hand_count_of_chapter_6():
    # 6 KV heads of width 64, 2048 positions, fp16: 2 (K and V) * 2048 * 6 * 64 numbers of 2 bytes = 3 MiB
    assert al.kv_cache_bytes(6, 2048, 64) == 3 * 2**20
    assert al.kv_cache_bytes(24, 2048, 64) == 12 * 2**20


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_equals_the_bytes_of_allocated_tensors(dtype):
    B, L, H_kv, S, d_k, d_v = 3, 2, 4, 10, 8, 5
    k = torch.empty(L, B, H_kv, S, d_k, dtype=dtype)
    v = torch.empty(L, B, H_kv, S, d_v, dtype=dtype)
    got = al.kv_cache_bytes(H_kv, S, d_k, d_v=d_v, n_layers=L, batch=B, dtype=dtype)
    assert got == k.nbytes + v.nbytes
    assert got == al.kv_cache_bytes(H_kv, S, d_k, d_v=d_v, n_layers=L, batch=B, dtype=str(dtype).split(".")[1])
    assert al.kv_cache_bytes(H_kv, S, d_k, dtype=np.dtype("float32")) == 2 * H_kv * S * d_k * 4


# (layers, query heads, KV heads, head width) as published; bytes per token in fp16 counted by hand
PUBLISHED = {
    "Llama 2 7B (Touvron et al. 2023, MHA)": ((32, 32, 32, 128), 2 * 32 * 32 * 128 * 2),      # 512 KiB
    "Llama 2 70B (Touvron et al. 2023, GQA)": ((80, 64, 8, 128), 2 * 80 * 8 * 128 * 2),       # 320 KiB
    "Mistral 7B (Jiang et al. 2023, GQA)": ((32, 32, 8, 128), 2 * 32 * 8 * 128 * 2),          # 128 KiB
}


@pytest.mark.parametrize("name", PUBLISHED)
def test_published_configurations(name):
    (layers, _, kv_heads, d_head), per_token = PUBLISHED[name]
    assert al.kv_cache_bytes(kv_heads, 1, d_head, n_layers=layers) == per_token
    assert al.kv_cache_bytes(kv_heads, 4096, d_head, n_layers=layers, batch=2) == 2 * 4096 * per_token
    assert per_token % 1024 == 0


def test_llama2_7b_is_half_a_mebibyte_per_token():
    assert al.kv_cache_bytes(32, 1, 128, n_layers=32) == 2**19


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, None])
def test_bad_counts(bad):
    with pytest.raises(al.AttentionInputError, match="seq_len"):
        al.kv_cache_bytes(2, bad, 64)


def test_bad_dtype():
    with pytest.raises(al.AttentionInputError, match="dtype"):
        al.kv_cache_bytes(2, 4, 64, dtype="float128")
    with pytest.raises(al.AttentionInputError, match="dtype"):
        al.kv_cache_bytes(2, 4, 64, dtype=3)


def test_widget_state_uses_the_package_formula():
    assert state.kv_cache_bytes(8, 32, 4096, 128) == al.kv_cache_bytes(8, 4096, 128, n_layers=32)
    assert state.kv_cache_bytes(2, 3, 5, 7, "float32", batch=4) == al.kv_cache_bytes(2, 5, 7, n_layers=3, batch=4,
                                                                                       dtype="float32")
