"""attnlab.occupancy and the decode points of attnlab.roofline against their closed forms: programs, waves,
busy fractions and split-KV speed-ups on a GPU's SMs; MHA, GQA and MLA decoding against the ridge.
"""
import math

import pytest

from attnlab import occupancy, roofline, traffic
from attnlab.errors import AttentionInputError

H100 = roofline.GPU_SPECS["H100"]


def test_programs_of_a_prefill_and_of_a_decoding_step():
    assert occupancy.flash_programs(2, 16, 4096, block_q=128) == 2 * 16 * 32
    assert occupancy.flash_programs(1, 32, 1) == 32                         # one query per head
    assert occupancy.decode_programs(1, 8) == 8 and occupancy.decode_programs(1, 8, 16) == 128


@pytest.mark.parametrize("n,n_sm,per_sm", [(8, 132, 1), (132, 132, 1), (133, 132, 1), (1000, 108, 2), (1, 1, 1)])
def test_waves_and_busy_fraction(n, n_sm, per_sm):
    w = occupancy.waves(n, n_sm, per_sm)
    assert (w - 1) * n_sm * per_sm < n <= w * n_sm * per_sm
    assert occupancy.busy_fraction(n, n_sm, per_sm) == pytest.approx(n / (w * n_sm * per_sm))


def test_one_query_row_per_head_cannot_fill_a_gpu():
    """A GQA model with 8 key heads, batch 1, on an H100's 132 SMs: 8 programs keep 6 % of them busy;
    16 chunks per head fill one wave (128 programs), 17 would start a second."""
    assert H100.n_sm == 132
    assert occupancy.busy_fraction(occupancy.decode_programs(1, 8), H100.n_sm) == pytest.approx(8 / 132)
    n = occupancy.splits_to_fill(1, 8, H100.n_sm, S=65536)
    assert n == 132 // 8 == 16
    assert occupancy.split_kv_speedup(1, 8, H100.n_sm, n) == pytest.approx(16.0)
    assert occupancy.split_kv_speedup(1, 8, H100.n_sm, n + 1) < occupancy.split_kv_speedup(1, 8, H100.n_sm, n)
    assert occupancy.splits_to_fill(1, 8, H100.n_sm, S=100, block_k=64) == 2     # a short cache has 2 blocks
    assert occupancy.splits_to_fill(64, 8, H100.n_sm, S=65536) == 1              # a big batch fills it alone


def test_decode_points_against_the_ridge():
    rows = {r["model"]: r for r in roofline.decode_points(H100, S=2**20)}
    # long cache, 2-byte numbers: MHA does ~1 FLOP per byte, GQA H / H_kv = 4, absorbed MLA ~ 2 H (2 d_c + d_R)
    # / (2 (d_c + d_R)) = 241.8, near the H100's ridge of 295 but below it
    assert rows["MHA"]["intensity"] == pytest.approx(1.0, rel=1e-3)
    assert rows["GQA"]["intensity"] == pytest.approx(4.0, rel=1e-3)
    assert rows["MLA"]["intensity"] == pytest.approx(2 * 128 * (2 * 512 + 64) / (2 * (512 + 64)), rel=1e-3)
    assert all(r["bound"] == "bandwidth" for r in rows.values())
    assert rows["MLA"]["intensity"] > 0.8 * H100.ridge
    for r in rows.values():
        assert r["time"] == pytest.approx(max(r["FLOPs"] / H100.flops, r["bytes"] / H100.bandwidth))
        assert r["attainable"] == pytest.approx(min(H100.flops, r["intensity"] * H100.bandwidth))
    assert rows["GQA"]["bytes"] == traffic.decode_step_bytes(1, 32, 8, 2**20, 128, itemsize=2)


def test_mla_crosses_the_ridge_at_the_predicted_head_count():
    h = roofline.mla_heads_at_ridge(H100)
    assert h == pytest.approx(H100.ridge * 2 * 576 / (2 * 1088))
    models = {f"H={n}": dict(H=n, d_latent=512, d_rope=64) for n in (math.floor(h), math.ceil(h))}
    below, above = roofline.decode_points(H100, S=2**22, models=models)
    assert below["bound"] == "bandwidth" and above["bound"] == "compute"


def test_bad_arguments():
    with pytest.raises(AttentionInputError, match="n_sm must be a positive integer"):
        occupancy.waves(4, 0)
    with pytest.raises(AttentionInputError, match="n_splits"):
        occupancy.decode_programs(1, 8, 0)
