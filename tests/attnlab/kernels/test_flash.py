"""attnlab.kernels.flash_attention: the Triton FlashAttention-2 forward and backward against float64
autograd and SDPA, within rounding-error bounds derived for each dtype.

On a machine without a GPU the kernels run in Triton's CPU interpreter (float32, and small float16 and
bfloat16 cases, which the interpreter emulates); with a GPU every case runs compiled, in all three dtypes.
The cases are the ones that break kernels: T = 1, S much larger than T with an offset, rows that see
no key, T and S that are not multiples of the block, head widths 16 to 128, GQA, large logits.
"""
import importlib.util

import pytest

if importlib.util.find_spec("triton") is None:
    pytest.skip("attnlab.kernels needs Triton: pip install -e .[kernels]", allow_module_level=True)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from attnlab import kernels  # noqa: E402
from attnlab.errors import AttentionInputError  # noqa: E402
from attnlab.kernels import flash  # noqa: E402

from .bounds import bounds, reference, worst_ratio  # noqa: E402

# In the interpreter every lane of a tile is computed, also the masked ones that tl.where then discards:
# exp2 of a masked score may overflow there, and a tile of NaN inputs (test_causal_skips...) reduces to NaN.
pytestmark = [pytest.mark.filterwarnings("ignore:overflow encountered in exp2:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:All-NaN slice encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")]

DEVICE = "cpu" if kernels.interpreted() else "cuda"
LOW_PRECISION = (torch.float16, torch.bfloat16)
DTYPES = (torch.float32,) if kernels.interpreted() else (torch.float32, *LOW_PRECISION)   # the interpreter is slow


def inputs(B, H, H_kv, T, S, d, dtype=torch.float32, seed=0, spread=1.0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, T, d, generator=g) * spread
    k, v = (torch.randn(B, H_kv, S, d, generator=g) for _ in range(2))
    d_out, d_lse = torch.randn(B, H, T, d, generator=g), torch.randn(B, H, T, generator=g)
    return [x.to(DEVICE, dtype) for x in (q, k, v, d_out)] + [d_lse.to(DEVICE)]


def run(q, k, v, d_out, d_lse, **kwargs):
    """Kernel out, lse and the gradients of sum(out * d_out) + sum(lse * d_lse) (finite lse only)."""
    q, k, v = (x.detach().requires_grad_() for x in (q, k, v))
    out, lse = kernels.flash_attention_lse(q, k, v, **kwargs)
    finite = torch.isfinite(lse)
    loss = (out.float() * d_out.float()).sum() + (torch.where(finite, lse, 0.0) * d_lse).sum()
    dq, dk, dv = torch.autograd.grad(loss, (q, k, v))
    return dict(out=out, lse=lse, dq=dq, dk=dk, dv=dv)


def assert_within_bounds(got, q, k, v, d_out, d_lse, causal=False, offset=None, scale=None):
    ref = reference(q.cpu(), k.cpu(), v.cpu(), d_out.cpu(), d_lse.cpu(), causal, offset, scale)
    bound = bounds(ref, d_out.cpu(), d_lse.cpu(), q.dtype, truncating=kernels.interpreted())
    ratios = {name: worst_ratio(got[name].cpu(), ref[name], bound[name]) for name in bound}
    assert max(ratios.values()) <= 1.0, ratios
    return ref, bound


# (B, H, H_kv, T, S, d, causal, offset, block_q, block_k)
CASES = {
    "one query, one key": (1, 1, 1, 1, 1, 16, False, None, None, None),
    "decoding: T = 1 reads all S": (1, 2, 2, 1, 200, 64, True, None, 16, 32),
    "S >> T with an offset": (1, 2, 2, 3, 300, 32, True, 40, 16, 16),
    "T, S not multiples of the block": (2, 1, 1, 37, 53, 16, False, None, 16, 16),
    "causal, T > S: first rows see no key": (1, 2, 2, 53, 37, 16, True, None, 16, 16),
    "causal, negative offset": (1, 1, 1, 20, 24, 32, True, -5, 16, 16),
    "square causal, width 128": (1, 1, 1, 70, 70, 128, True, None, 32, 16),
    "non-causal, width 128": (1, 1, 1, 20, 33, 128, False, None, 16, 32),
    "GQA: 4 query heads on 2 key heads": (1, 4, 2, 33, 45, 32, True, None, 16, 16),
    "default blocks, several of them": (1, 1, 1, 300, 300, 64, True, None, None, None),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(CASES))
def test_values_and_gradients_within_the_rounding_bounds(case, dtype):
    B, H, H_kv, T, S, d, causal, offset, bq, bk = CASES[case]
    q, k, v, d_out, d_lse = inputs(B, H, H_kv, T, S, d, dtype=dtype)
    got = run(q, k, v, d_out, d_lse, causal=causal, offset=offset, block_q=bq, block_k=bk)
    assert all(bool(torch.isfinite(got[n]).all()) for n in ("out", "dq", "dk", "dv"))
    assert_within_bounds(got, q, k, v, d_out, d_lse, causal, offset)


@pytest.mark.parametrize("dtype", LOW_PRECISION)
def test_half_precision_accumulates_in_float32(dtype):
    """float16 / bfloat16 tiles, float32 accumulators: within the bounds for u_in = 2^-11 / 2^-8."""
    q, k, v, d_out, d_lse = inputs(1, 2, 2, 40, 70, 32, dtype=dtype, seed=3)
    got = run(q, k, v, d_out, d_lse, causal=True, block_q=16, block_k=32)
    assert got["out"].dtype == dtype and got["lse"].dtype == torch.float32
    assert_within_bounds(got, q, k, v, d_out, d_lse, causal=True)


def test_the_bounds_notice_one_missing_key():
    """The tolerance has teeth: a result computed without one visible key (the diagonal of row 30) fails it."""
    q, k, v, d_out, d_lse = inputs(1, 1, 1, 64, 64, 32, seed=1)
    good = reference(q, k, v, d_out, d_lse, True, None)
    wrong = reference(q, k, v, d_out, d_lse, True, None, drop=(30, 30))
    bound = bounds(good, d_out, d_lse, torch.float32)
    assert worst_ratio(wrong["out"], good["out"], bound["out"]) > 100
    assert worst_ratio(wrong["dq"], good["dq"], bound["dq"]) > 100


def test_matches_sdpa():
    q, k, v, *_ = inputs(2, 3, 3, 77, 77, 64, seed=2)
    for causal in (False, True):
        expected = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        torch.testing.assert_close(kernels.flash_attention(q, k, v, causal=causal, block_q=32, block_k=16),
                                   expected, atol=2e-6, rtol=2e-5)


def test_rows_that_see_no_key_give_zero_output_and_no_nan():
    q, k, v, d_out, d_lse = inputs(1, 2, 2, 12, 12, 16, seed=4)
    got = run(q, k, v, d_out, d_lse, causal=True, offset=-4, block_q=16, block_k=16)
    assert torch.equal(got["out"][:, :, :4], torch.zeros_like(got["out"][:, :, :4]))
    assert bool(torch.isneginf(got["lse"][:, :, :4]).all()) and bool(torch.isfinite(got["lse"][:, :, 4:]).all())
    assert torch.equal(got["dq"][:, :, :4], torch.zeros_like(got["dq"][:, :, :4]))
    assert all(bool(torch.isfinite(got[n]).all()) for n in ("out", "dq", "dk", "dv"))
    everything_masked = run(q, k, v, d_out, d_lse, causal=True, offset=-12)
    assert not everything_masked["out"].any() and not everything_masked["dk"].any()


def test_large_logits_stay_finite_and_exact():
    """Scores above a thousand (exp of them overflows even float64): the online softmax subtracts the
    running maximum before exp2."""
    q, k, v, d_out, d_lse = inputs(1, 1, 1, 50, 50, 32, seed=5, spread=300.0)
    got = run(q, k, v, d_out, d_lse, causal=True, block_q=16, block_k=16)
    ref, _ = assert_within_bounds(got, q, k, v, d_out, d_lse, causal=True)
    assert ref["s"].max() > 1000


def test_scale_is_honoured():
    q, k, v, d_out, d_lse = inputs(1, 1, 1, 20, 30, 16, seed=6)
    got = run(q, k, v, d_out, d_lse, scale=0.5, block_q=16, block_k=16)
    assert_within_bounds(got, q, k, v, d_out, d_lse, scale=0.5)


def test_causal_skips_whole_key_blocks_in_the_future():
    """Key blocks past a query block's last row are never read: NaN there leaves the rows before them exact.
    Likewise the dK/dV kernel never reads the query blocks that see none of its keys."""
    T, blk = 64, 16
    q, k, v, d_out, _ = inputs(1, 1, 1, T, T, 16, seed=7)
    k_bad, v_bad = k.clone(), v.clone()
    k_bad[..., 48:, :] = v_bad[..., 48:, :] = float("nan")                # the last key block
    out, _ = flash._forward(q, k_bad, v_bad, True, 0.25, 0, blk, blk)
    expected, lse = flash._forward(q, k, v, True, 0.25, 0, blk, blk)
    assert torch.equal(out[..., :48, :], expected[..., :48, :]) and not bool(out[..., 48:, :].isfinite().all())
    q_bad, do_bad = q.clone(), d_out.clone()
    q_bad[..., :16, :] = do_bad[..., :16, :] = float("nan")              # the first query block
    dq, dk, dv = flash._backward(q_bad, k, v, expected, lse, do_bad, torch.zeros_like(lse), True, 0.25, 0, blk, blk)
    assert bool(torch.isfinite(dk[..., 16:, :]).all()) and bool(torch.isfinite(dv[..., 16:, :]).all())
    assert bool(torch.isfinite(dq[..., 16:, :]).all())


@pytest.mark.parametrize("call,message", [
    (lambda q: kernels.flash_attention(q.double(), q.double(), q.double()), "float32, float16 or bfloat16"),
    (lambda q: kernels.flash_attention(q[0], q[0], q[0]), "must have 4 axes"),
    (lambda q: kernels.flash_attention(q, q[:, :, :, :8], q), "must agree"),
    (lambda q: kernels.flash_attention(q, q, q, offset=2), "only applies with causal=True"),
    (lambda q: kernels.flash_attention(q, q, q, causal=True, offset=1.5), "offset must be an integer"),
    (lambda q: kernels.flash_attention(q, q, q, block_q=24), "block_q must be a power of two"),
    (lambda q: kernels.flash_attention(q / 0, q, q), "non-finite"),
])
def test_bad_arguments_are_refused(call, message):
    q = torch.randn(1, 2, 8, 16, device=DEVICE)
    with pytest.raises(AttentionInputError, match=message):
        call(q)
