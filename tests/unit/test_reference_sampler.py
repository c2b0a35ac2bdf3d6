"""Tests for ``inferview.reference.sampler`` against the rules written out with Python lists."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from inferview.reference import sampler


def _naive(row: list[float], t: float, k: int, top_p: float, min_p: float) -> list[float]:
    """The statement's steps, one token at a time."""
    v = len(row)
    if t == 0:
        best = max(range(v), key=lambda i: (row[i], -i))
        return [1.0 if i == best else 0.0 for i in range(v)]
    z = [x / t for x in row]
    keep = [math.isfinite(x) for x in z]
    if 0 < k < v:
        kth = sorted(z, reverse=True)[k - 1]
        keep = [kp and x >= kth for kp, x in zip(keep, z, strict=True)]

    def norm(w: list[float]) -> list[float]:
        s = sum(w)
        return [x / s for x in w]

    m = max(x for x, kp in zip(z, keep, strict=True) if kp)
    p = norm([math.exp(x - m) if kp else 0.0 for x, kp in zip(z, keep, strict=True)])
    if top_p < 1:
        keep = [kp and sum(q for q in p if q > pi) < top_p for kp, pi in zip(keep, p, strict=True)]
        p = norm([pi if kp else 0.0 for pi, kp in zip(p, keep, strict=True)])
    if min_p > 0:
        top = max(p)
        p = norm([pi if pi >= min_p * top else 0.0 for pi in p])
    return p


@given(seed=st.integers(0, 2**16), v=st.integers(1, 12), t=st.sampled_from([0.0, 0.5, 1.0, 1.7]),
       k=st.integers(0, 14), top_p=st.sampled_from([0.3, 0.75, 0.9, 1.0]),
       min_p=st.sampled_from([0.0, 0.05, 0.3, 1.0]))
def test_filter_matches_the_naive_rules(seed, v, t, k, top_p, min_p) -> None:
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(3, v, generator=g, dtype=torch.float64) * 2 * 4).round() / 4  # ties likely
    got = sampler.filter_probs_f64(x, t, k, top_p, min_p)
    for b in range(3):
        want = _naive(x[b].tolist(), t, k, top_p, min_p)
        assert got[b].tolist() == pytest.approx(want, rel=1e-9, abs=1e-15)
        assert [g_ > 0 for g_ in got[b].tolist()] == [w > 0 for w in want]


def test_ties_are_kept_whole() -> None:
    x = torch.tensor([[3.0, 1.0, 1.0, 1.0, 0.0]])
    p = sampler.filter_probs_f64(x, top_k=2)  # the 2nd largest is tied three ways: all stay
    assert (p > 0).tolist() == [[True, True, True, True, False]]
    p0 = torch.softmax(x.double(), -1)[0]
    top_p = float(p0[0] + p0[1] / 2)  # falls inside the tied run: the whole run is kept
    p = sampler.filter_probs_f64(x, top_p=top_p)
    assert (p > 0).tolist() == [[True, True, True, True, False]]
    p = sampler.filter_probs_f64(torch.tensor([[2.0, 2.0, 1.0]]), min_p=1.0)
    assert p.tolist() == [[0.5, 0.5, 0.0]]


def test_edge_cases() -> None:
    x = torch.tensor([[0.0, -30.0, -math.inf, 5.0, 5.0]])
    assert sampler.filter_probs_f64(x, temperature=0.0).tolist() == [[0, 0, 0, 1, 0]]
    p = sampler.filter_probs_f64(x, top_p=1.0)
    assert p[0, 1] > 0 and p[0, 2] == 0  # top_p = 1 removes nothing; -inf is never kept
    for bad in ({"temperature": -1.0}, {"top_k": -1}, {"top_p": 0.0}, {"top_p": 1.5},
                {"min_p": -0.1}, {"min_p": 1.1}):
        with pytest.raises(ValueError):
            sampler.filter_probs_f64(x, **bad)
    assert sampler.filter_probs(x.half()).dtype == torch.float32


def test_mass_above_is_strict() -> None:
    p = torch.tensor([[0.4, 0.2, 0.2, 0.1, 0.1]], dtype=torch.float64)
    torch.testing.assert_close(sampler.mass_above(p),
                               torch.tensor([[0.0, 0.4, 0.4, 0.8, 0.8]], dtype=torch.float64))


def test_sample_uses_only_the_generator_and_follows_the_filter() -> None:
    x = torch.tensor([[2.0, 1.0, 0.5, -1.0, -3.0]]).expand(4000, 5)
    a = sampler.sample(x, torch.Generator().manual_seed(3), 0.8, 3, 0.95, 0.05)
    b = sampler.sample(x, torch.Generator().manual_seed(3), 0.8, 3, 0.95, 0.05)
    assert torch.equal(a, b) and a.dtype == torch.int64
    want = sampler.filter_probs_f64(x[:1], 0.8, 3, 0.95, 0.05)[0]
    freq = torch.bincount(a, minlength=5).double() / a.numel()
    assert bool((freq[want == 0] == 0).all())
    torch.testing.assert_close(freq, want, atol=0.03, rtol=0)
    assert sampler.sample(x[:2], torch.Generator(), temperature=0.0).tolist() == [0, 0]


def test_decision_margins() -> None:
    x = torch.tensor([[1.0, 0.0, -1.0]])
    p = torch.softmax(x.double(), -1)[0]
    m = sampler.decision_margins(x, top_p=float(p[0]) + 1e-6)
    assert m.top_p == pytest.approx(1e-6, abs=1e-9)
    assert sampler.decision_margins(x).top_p == math.inf
    m = sampler.decision_margins(x, min_p=math.exp(-1) * 1.001)
    assert m.min_p == pytest.approx(0.001 / 1.001, rel=1e-6)
