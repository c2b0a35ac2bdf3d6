"""Tests for ``inferview.reference.distillation`` against fp64 ground truth."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from inferview.reference import distillation as kd


def _naive(s, t, y, temp, alpha, ignore=-100) -> float:
    """Direct formula in Python floats: batchmean over rows with a real label."""
    rows = [i for i in range(len(y)) if int(y[i]) != ignore]
    if not rows:
        return 0.0
    kl = ce = 0.0
    for i in rows:
        ts = [float(v) / temp for v in t[i]]
        ss = [float(v) / temp for v in s[i]]
        lzt = math.log(sum(math.exp(v - max(ts)) for v in ts)) + max(ts)
        lzs = math.log(sum(math.exp(v - max(ss)) for v in ss)) + max(ss)
        kl += sum(math.exp(a - lzt) * ((a - lzt) - (b - lzs)) for a, b in zip(ts, ss, strict=True))
        s1 = [float(v) for v in s[i]]
        lz1 = math.log(sum(math.exp(v - max(s1)) for v in s1)) + max(s1)
        ce += lz1 - s1[int(y[i])]
    n = len(rows)
    return alpha * temp**2 * kl / n + (1 - alpha) * ce / n


@given(rows=st.integers(1, 5), vocab=st.integers(2, 7), temp=st.sampled_from([0.5, 1.0, 2.0, 4.0]),
       alpha=st.floats(0, 1), seed=st.integers(0, 2**16), n_ignored=st.integers(0, 5))
def test_matches_naive_formula(rows, vocab, temp, alpha, seed, n_ignored):
    g = torch.Generator().manual_seed(seed)
    s = torch.randn(rows, vocab, generator=g) * 3
    t = torch.randn(rows, vocab, generator=g) * 3
    y = torch.randint(0, vocab, (rows,), generator=g)
    y[: min(n_ignored, rows)] = -100
    got = kd.distillation_loss(s, t, y, temp, alpha)
    assert got.ndim == 0 and got.dtype == torch.float32
    assert math.isclose(float(got), _naive(s, t, y, temp, alpha), rel_tol=1e-4, abs_tol=1e-5)


def test_matches_torch_kl_div_and_cross_entropy() -> None:
    g = torch.Generator().manual_seed(0)
    s, t = torch.randn(6, 10, generator=g), torch.randn(6, 10, generator=g)
    y = torch.randint(0, 10, (6,), generator=g)
    temp, alpha = 3.0, 0.7
    soft = F.kl_div(F.log_softmax(s / temp, -1), F.log_softmax(t / temp, -1), reduction="batchmean",
                    log_target=True)
    want = alpha * temp**2 * soft + (1 - alpha) * F.cross_entropy(s, y)
    torch.testing.assert_close(kd.distillation_loss(s, t, y, temp, alpha), want)


def test_stable_for_huge_logits_and_zero_when_equal() -> None:
    s = torch.tensor([[1e4, -1e4, 0.0]])
    loss = kd.distillation_loss(s, s.clone(), torch.tensor([0]), 2.0, 1.0)
    assert float(loss) == 0.0
    loss = kd.distillation_loss(s, -s, torch.tensor([1]), 1.0, 0.5)
    assert math.isfinite(float(loss))
    assert float(kd.distillation_loss(s, s, torch.tensor([-100]), 2.0, 0.5)) == 0.0


def test_t_squared_keeps_gradient_scale() -> None:
    """Hinton et al.: the soft term's gradient shrinks as 1/T^2; the T^2 factor undoes it."""
    g = torch.Generator().manual_seed(0)
    s0, t = torch.randn(16, 32, generator=g), torch.randn(16, 32, generator=g)
    y = torch.zeros(16, dtype=torch.long)

    def grad_norm(temp: float, scaled: bool) -> float:
        s = s0.clone().requires_grad_(True)
        loss = kd.distillation_loss(s, t, y, temp, 1.0)
        (loss if scaled else loss / temp**2).backward()
        return float(s.grad.norm())

    ratio_scaled = grad_norm(8.0, True) / grad_norm(16.0, True)
    ratio_plain = grad_norm(8.0, False) / grad_norm(16.0, False)
    assert 0.9 < ratio_scaled < 1.1
    assert 3.5 < ratio_plain < 4.5


def test_sequence_variant_with_mask() -> None:
    g = torch.Generator().manual_seed(1)
    s, t = torch.randn(2, 5, 7, generator=g), torch.randn(2, 5, 7, generator=g)
    y = torch.randint(0, 7, (2, 5), generator=g)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    got = kd.distillation_loss_seq(s, t, y, 2.0, 0.5, mask=mask)
    want = kd.distillation_loss(s[mask], t[mask], y[mask], 2.0, 0.5)
    torch.testing.assert_close(got, want)
    y2 = y.masked_fill(~mask, -100)
    torch.testing.assert_close(kd.distillation_loss_seq(s, t, y2, 2.0, 0.5), want)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_matches_cpu() -> None:
    g = torch.Generator().manual_seed(3)
    s, t = torch.randn(4, 9, 50, generator=g) * 5, torch.randn(4, 9, 50, generator=g) * 5
    y = torch.randint(0, 50, (4, 9), generator=g)
    y[:, -2:] = -100
    want = kd.distillation_loss_seq(s, t, y, 4.0, 0.3)
    got = kd.distillation_loss_seq(s.cuda(), t.cuda(), y.cuda(), 4.0, 0.3)
    assert got.is_cuda
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-6)
