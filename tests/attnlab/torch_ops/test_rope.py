"""attnlab.torch_ops.rope against Hugging Face's Llama code (rotate_half / apply_rotary_pos_emb), the
NumPy reference, and autograd's gradcheck."""
import numpy as np
import pytest
import torch

import attnlab as al
from attnlab.torch_ops import rope

f64 = torch.float64


def hf_rope(q, k, positions, base):
    """Hugging Face's Llama: cos/sin of (freqs, freqs) concatenated, then apply_rotary_pos_emb."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    d = q.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=f64) / d))
    freqs = positions.to(f64)[:, None] * inv_freq[None, :]             # (T, d/2)
    emb = torch.cat([freqs, freqs], -1)                                # (T, d)
    return apply_rotary_pos_emb(q, k, emb.cos()[None], emb.sin()[None])


@pytest.mark.parametrize("base", [10000.0, 100000.0])
def test_half_pairing_matches_hugging_face_llama(base, device):
    torch.manual_seed(0)
    q, k = torch.randn(2, 3, 9, 64, dtype=f64), torch.randn(2, 3, 9, 64, dtype=f64)    # (B, H, T, d)
    positions = torch.tensor([0, 1, 2, 3, 17, 200, 1023, 4000, 8191])
    want_q, want_k = hf_rope(q, k, positions, base)
    got_q = rope(q.to(device), positions, base=base).cpu()
    got_k = rope(k.to(device), positions.tolist(), base=base).cpu()
    torch.testing.assert_close(got_q, want_q, rtol=0, atol=1e-12)
    torch.testing.assert_close(got_k, want_k, rtol=0, atol=1e-12)


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
def test_matches_numpy_reference_in_float64_and_float32(pairing, device):
    rng = np.random.default_rng(3)
    x, positions = rng.normal(size=(2, 5, 16)), np.array([4, 0, 9, 300, 2])
    want = al.position.rope(x, positions, pairing=pairing)
    got64 = rope(torch.from_numpy(x).to(device), positions, pairing=pairing).cpu().numpy()
    got32 = rope(torch.from_numpy(x).float().to(device), torch.from_numpy(positions), pairing=pairing).cpu().numpy()
    np.testing.assert_allclose(got64, want, rtol=0, atol=1e-13)
    np.testing.assert_allclose(got32, want, rtol=0, atol=2e-6 * np.abs(x).max())


def test_gradcheck():
    x = torch.randn(3, 6, dtype=f64, requires_grad=True)
    for pairing in ("half", "interleaved"):
        assert torch.autograd.gradcheck(lambda t, pairing=pairing: rope(t, [2, 5, 11], base=50.0, pairing=pairing),
                                        (x,))


def test_bad_input():
    with pytest.raises(al.AttentionInputError, match="torch.Tensor"):
        rope(np.ones((2, 4)), [0, 1])
    with pytest.raises(al.AttentionInputError, match="even"):
        rope(torch.ones(2, 3), [0, 1])
    with pytest.raises(al.AttentionInputError, match="integers"):
        rope(torch.ones(2, 4), torch.tensor([0.5, 1.0]))
    with pytest.raises(al.AttentionInputError, match="shape"):
        rope(torch.ones(2, 4), [0, 1, 2])
    with pytest.raises(al.AttentionInputError, match="non-finite"):
        rope(torch.tensor([[float("nan"), 0.0]]), [0])
