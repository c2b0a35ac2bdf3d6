"""Tests for ``inferview.reference.rope`` against per-element formulas written out with ``math``."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from inferview.reference import rope
from inferview.reference.presets import MODELS


def _cfg(head_dim: int = 64, theta: float = 10000.0, max_pos: int = 4096, **extra) -> dict:
    return {"hidden_size": head_dim * 4, "num_attention_heads": 4, "rope_theta": theta,
            "max_position_embeddings": max_pos, **extra}


def test_default_frequencies_and_head_dim_rules() -> None:
    inv, af = rope.rope_frequencies_f64(_cfg(head_dim=16, theta=100.0))
    assert af == 1.0
    assert inv.tolist() == pytest.approx([100.0 ** (-2 * i / 16) for i in range(8)])
    # head_dim wins over hidden_size // heads; partial_rotary_factor shortens the rotary part
    cfg = {**_cfg(head_dim=32), "head_dim": 80, "partial_rotary_factor": 0.4}
    assert rope.rotary_dim(cfg) == 32
    inv, _ = rope.rope_frequencies_f64(cfg)
    assert inv.tolist() == pytest.approx([10000.0 ** (-2 * i / 32) for i in range(16)])
    assert rope.rope_type(_cfg(rope_scaling=None)) == "default"
    assert rope.rope_type(_cfg(rope_scaling={"type": "linear", "factor": 2.0})) == "linear"
    with pytest.raises(ValueError):
        rope.rope_type(_cfg(rope_scaling={"rope_type": "longrope"}))


def test_linear_divides_every_frequency() -> None:
    base, _ = rope.rope_frequencies_f64(_cfg())
    inv, _ = rope.rope_frequencies_f64(_cfg(rope_scaling={"rope_type": "linear", "factor": 4.0}))
    torch.testing.assert_close(inv, base / 4)


@given(seq_len=st.integers(1, 40000), factor=st.sampled_from([2.0, 4.0, 8.0]))
def test_dynamic_changes_the_base_only_past_max_positions(seq_len: int, factor: float) -> None:
    cfg = _cfg(head_dim=32, rope_scaling={"rope_type": "dynamic", "factor": factor})
    inv, af = rope.rope_frequencies_f64(cfg, seq_len)
    length = max(seq_len, 4096)
    new_base = 10000.0 * (factor * length / 4096 - (factor - 1)) ** (32 / 30)
    assert af == 1.0
    assert inv.tolist() == pytest.approx([new_base ** (-2 * i / 32) for i in range(16)], rel=1e-12)
    if seq_len <= 4096:
        torch.testing.assert_close(inv, rope.rope_frequencies_f64(_cfg(head_dim=32))[0])


def _yarn_loop(cfg: dict) -> tuple[list[float], float]:
    """YaRN written out per pair with math (the statement's formulas)."""
    s = cfg["rope_scaling"]
    d, base, factor = rope.rotary_dim(cfg), cfg["rope_theta"], s["factor"]
    orig = s.get("original_max_position_embeddings") or cfg["max_position_embeddings"]
    c = [d * math.log(orig / (r * 2 * math.pi)) / (2 * math.log(base))
         for r in (s.get("beta_fast") or 32, s.get("beta_slow") or 1)]
    low, high = (math.floor(c[0]), math.ceil(c[1])) if s.get("truncate", True) else c
    low, high = max(low, 0), min(high, d - 1)
    high = high + 0.001 if low == high else high
    out = []
    for i in range(d // 2):
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)
        f = base ** (-2 * i / d)
        out.append(f * (1 - ramp) + f / factor * ramp)
    m = lambda x: 1.0 if factor <= 1 else 0.1 * x * math.log(factor) + 1  # noqa: E731
    if s.get("attention_factor") is not None:
        af = s["attention_factor"]
    elif s.get("mscale") and s.get("mscale_all_dim"):
        af = m(s["mscale"]) / m(s["mscale_all_dim"])
    else:
        af = m(1.0)
    return out, af


@pytest.mark.parametrize("scaling", [
    {"rope_type": "yarn", "factor": 4.0},
    {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048},
    {"rope_type": "yarn", "factor": 8.0, "beta_fast": 16, "beta_slow": 2, "truncate": False},
    {"rope_type": "yarn", "factor": 8.0, "attention_factor": 1.5},
    {"rope_type": "yarn", "factor": 40.0, "mscale": 0.707, "mscale_all_dim": 1.0},
])
def test_yarn_matches_the_per_pair_formula(scaling: dict) -> None:
    cfg = _cfg(head_dim=64, theta=50000.0, max_pos=8192, rope_scaling=scaling)
    inv, af = rope.rope_frequencies_f64(cfg)
    want, want_af = _yarn_loop(cfg)
    assert inv.tolist() == pytest.approx(want, rel=1e-12)
    assert af == pytest.approx(want_af, rel=1e-12)
    # high-frequency pairs extrapolate (unchanged), low-frequency pairs interpolate (divided)
    base, _ = rope.rope_frequencies_f64(_cfg(head_dim=64, theta=50000.0))
    assert inv[0] == base[0]
    assert inv[-1] == pytest.approx(base[-1] / scaling["factor"], rel=1e-12)


def test_yarn_presets() -> None:
    inv, af = rope.rope_frequencies_f64(MODELS["gpt-oss-120b"].config)  # truncate: false
    assert af == pytest.approx(0.1 * math.log(32) + 1)
    want, _ = _yarn_loop(MODELS["gpt-oss-120b"].config)
    assert inv.tolist() == pytest.approx(want, rel=1e-12)
    ds = dict(MODELS["deepseek-v3"].config, head_dim=64)  # mscale == mscale_all_dim
    assert rope.rope_frequencies_f64(ds)[1] == 1.0


def test_llama3_bands() -> None:
    cfg = MODELS["llama-3.1-405b"].config
    inv, af = rope.rope_frequencies_f64(cfg)
    base, _ = rope.rope_frequencies_f64({**cfg, "rope_scaling": None})
    assert af == 1.0
    for i in range(64):
        wl = 2 * math.pi / float(base[i])
        if wl < 8192 / 4:
            assert inv[i] == base[i]
        elif wl > 8192:
            assert float(inv[i]) == pytest.approx(float(base[i]) / 8, rel=1e-12)
        else:
            smooth = (8192 / wl - 1) / 3
            assert float(inv[i]) == pytest.approx((1 - smooth) * float(base[i]) / 8
                                                  + smooth * float(base[i]), rel=1e-12)
    assert (inv < base).sum() > 0 and (inv == base).sum() > 0


def _rope_loop(x: torch.Tensor, pos: torch.Tensor, inv: torch.Tensor, af: float,
               interleaved: bool) -> torch.Tensor:
    out = x.double().clone()
    b_, h_, t_, _ = x.shape
    half = inv.numel()
    for b in range(b_):
        for h in range(h_):
            for t in range(t_):
                for i in range(half):
                    ia, ib = (2 * i, 2 * i + 1) if interleaved else (i, i + half)
                    th = float(pos[b, t]) * float(inv[i])
                    a, c = float(x[b, h, t, ia]), float(x[b, h, t, ib])
                    out[b, h, t, ia] = af * (a * math.cos(th) - c * math.sin(th))
                    out[b, h, t, ib] = af * (c * math.cos(th) + a * math.sin(th))
    return out


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("rot", [8, 4])
def test_apply_rope_matches_the_loop(interleaved: bool, rot: int) -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 2, 3, 8, generator=g)
    pos = torch.tensor([[0, 1, 2], [7, 100, 5000]])
    inv = rope.rope_frequencies_f64(_cfg(head_dim=rot))[0]
    got = rope.apply_rope_f64(x, pos, inv, 1.3, interleaved)
    torch.testing.assert_close(got, _rope_loop(x, pos, inv, 1.3, interleaved))
    assert torch.equal(got[..., rot:], x[..., rot:].double())  # passed through untouched


def test_scores_depend_only_on_the_distance() -> None:
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(1, 1, 1, 16, generator=g), torch.randn(1, 1, 1, 16, generator=g)
    inv = rope.rope_frequencies_f64(_cfg(head_dim=16))[0]
    def score(m: int, n: int) -> float:
        qm = rope.apply_rope_f64(q, torch.tensor([[m]]), inv)
        kn = rope.apply_rope_f64(k, torch.tensor([[n]]), inv)
        return float((qm * kn).sum())
    assert score(10, 3) == pytest.approx(score(1007, 1000), rel=1e-9)
    assert score(10, 3) != pytest.approx(score(10, 4), rel=1e-3)
