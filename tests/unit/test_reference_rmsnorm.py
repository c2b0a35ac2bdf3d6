"""Tests for ``inferview.reference.rmsnorm``: the definition, the dtype rule and the accuracy
bound the ``fused-rmsnorm`` grader applies (it must hold for every correct ordering of the
computation and fail the classic mistakes)."""

from __future__ import annotations

import math

import pytest
import torch
from inferview.reference import rmsnorm as rn


def _rows(t: int, h: int, seed: int, dtype=torch.float32, scale: float = 1.0):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn((t, h), generator=g) * scale).to(dtype)
    r = (torch.randn((t, h), generator=g) * scale).to(dtype)
    w = (1.0 + 0.5 * torch.randn((h,), generator=g)).to(dtype)
    return x, r, w


def test_definition_by_hand() -> None:
    h = torch.tensor([[3.0, 4.0]])
    out = rn.rmsnorm(h, torch.tensor([1.0, 2.0]), eps=0.0, compute_dtype=torch.float64)
    rms = math.sqrt((9 + 16) / 2)
    assert torch.allclose(out, torch.tensor([[3 / rms, 8 / rms]], dtype=torch.float64))


def test_fused_returns_the_sum_and_its_norm() -> None:
    x, r, w = _rows(3, 10, 0, torch.float16)
    normed, new_res = rn.fused_add_rmsnorm(x, r, w, 1e-5)
    assert torch.equal(new_res, x + r) and new_res.dtype == torch.float16
    assert normed.dtype == torch.float16
    assert torch.equal(normed, rn.rmsnorm(x + r, w, 1e-5))


def test_zero_row_gives_zeros() -> None:
    out = rn.rmsnorm(torch.zeros(2, 7), torch.ones(7), 1e-6)
    assert torch.equal(out, torch.zeros(2, 7))


def _hf_order(h: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """Hugging Face's LlamaRMSNorm: statistics in float32, cast, then times the weight in dtype."""
    hf = h.float()
    inv = torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + eps)
    return w * (hf * inv).to(h.dtype)


def _chunked(h: torch.Tensor, w: torch.Tensor, eps: float, chunk: int) -> torch.Tensor:
    """A chunked kernel: the sum of squares in float32, chunk by chunk, in reverse order."""
    hf = h.float()
    s = torch.zeros(h.shape[0], 1)
    for c in reversed(range(0, h.shape[1], chunk)):
        s = s + hf[:, c:c + chunk].pow(2).sum(-1, keepdim=True)
    return (hf * (1.0 / torch.sqrt(s / h.shape[1] + eps)) * w.float()).to(h.dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("hidden", [1, 7, 100, 5120])
def test_bound_holds_for_correct_orders(dtype, hidden) -> None:
    for seed in range(3):
        x, r, w = _rows(4, hidden, seed, dtype)
        h = x + r
        exact = rn.rmsnorm(h, w, 1e-6, compute_dtype=torch.float64)
        bound = rn.rmsnorm_error_bound(h, w, 1e-6)
        for got in (rn.rmsnorm(h, w, 1e-6), _hf_order(h, w, 1e-6), _chunked(h, w, 1e-6, 256)):
            assert bool(((got.double() - exact).abs() <= bound).all())


@pytest.mark.parametrize("mistake", ["divide by block", "eps outside", "no eps", "layernorm",
                                     "norm of x"])
def test_bound_rejects_classic_mistakes(mistake) -> None:
    x, r, w = _rows(3, 100, 1, scale=3e-3)
    h = x + r
    eps = 1e-5
    hf = h.double()
    ms = hf.pow(2).mean(-1, keepdim=True)
    if mistake == "divide by block":
        got = hf * torch.rsqrt(hf.pow(2).sum(-1, keepdim=True) / 128 + eps) * w
    elif mistake == "eps outside":
        got = hf / (ms.sqrt() + eps) * w
    elif mistake == "no eps":
        got = hf * torch.rsqrt(ms) * w
    elif mistake == "layernorm":
        c = hf - hf.mean(-1, keepdim=True)
        got = c * torch.rsqrt(c.pow(2).mean(-1, keepdim=True) + eps) * w
    else:
        got = rn.rmsnorm(x, w, eps, compute_dtype=torch.float64)
    exact = rn.rmsnorm(h, w, eps, compute_dtype=torch.float64)
    bound = rn.rmsnorm_error_bound(h, w, eps)
    assert not bool(((got - exact).abs() <= bound).all())


def test_float16_squares_overflow_is_rejected() -> None:
    x, r, w = _rows(2, 64, 2, torch.float16, scale=300.0)
    h = x + r
    inv = torch.rsqrt((h * h).float().mean(-1, keepdim=True) + 1e-6)  # squares rounded in fp16
    got = (h.float() * inv * w.float()).to(torch.float16)
    exact = rn.rmsnorm(h, w, 1e-6, compute_dtype=torch.float64)
    assert bool(torch.isinf(h * h).any())
    assert not bool(((got.double() - exact).abs() <= rn.rmsnorm_error_bound(h, w, 1e-6)).all())


def test_bytes_moved() -> None:
    # read x, residual (T*H each) and weight (H), write normed and new_residual (T*H each)
    assert rn.bytes_moved(4096, 4096, 2) == (4 * 4096 * 4096 + 4096) * 2
