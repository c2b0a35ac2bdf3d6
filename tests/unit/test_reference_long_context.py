"""Tests for ``inferview.reference.long_context`` against the published configs and formulas."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from inferview.reference import long_context as lc
from inferview.reference.estimators import kv_cache_bytes
from inferview.reference.formulas import QUANTITIES
from inferview.reference.presets import get_model

LLAMA2 = get_model("llama-2-7b").config
LLAMA31 = get_model("llama-3.1-405b").config


def test_rotary_dim_and_training_context_follow_the_config() -> None:
    assert lc.rotary_dim(LLAMA2) == 128
    assert lc.rotary_dim(get_model("deepseek-v3").config) == 64  # the decoupled RoPE key
    assert lc.training_context(LLAMA2) == 4096
    assert lc.training_context(LLAMA31) == 8192  # original_max_position_embeddings


def test_wavelengths_start_at_two_pi_and_grow_geometrically() -> None:
    w = lc.wavelengths(128, 10000.0)
    assert len(w) == 64
    assert w[0] == pytest.approx(2 * math.pi)
    ratios = {round(b / a, 9) for a, b in zip(w, w[1:], strict=False)}
    assert ratios == {round(10000.0 ** (2 / 128), 9)}
    assert lc.longest_wavelength(LLAMA2) == pytest.approx(2 * math.pi * 10000 ** (126 / 128))


def test_pairs_beyond_context_by_hand() -> None:
    # 2 pi 10000^(i/64) > 4096  <=>  i > 64 ln(4096 / 2 pi) / ln(10000) = 45.03
    assert lc.pairs_longer_than(LLAMA2, 4096) == 64 - 46
    assert lc.pairs_longer_than(LLAMA2, 1) == 64
    assert lc.pairs_longer_than(LLAMA2, 10**9) == 0


def test_llama31_bands_cover_every_pair() -> None:
    counts = {b: lc.llama3_band_pairs(LLAMA31, b) for b in lc.LLAMA3_BANDS}
    assert sum(counts.values()) == 64
    # wavelength < 2048 kept, > 8192 divided by 8: i < 28.2 and i > 34.99
    assert counts == {"unscaled": 29, "blended": 6, "divided": 29}
    with pytest.raises(ValueError):
        lc.llama3_band_pairs(LLAMA2, "divided")
    with pytest.raises(ValueError):
        lc.llama3_band_pairs(LLAMA31, "kept")


@given(st.floats(1.0, 64.0), st.sampled_from([64, 128, 256]))
def test_ntk_base_keeps_the_slowest_pair_interpolated_by_s(scale, dim) -> None:
    # the NTK-aware base makes the lowest frequency exactly s times slower (PI for that pair)
    new = lc.ntk_aware_base(10000.0, dim, scale)
    slow_old = 10000.0 ** (-(dim - 2) / dim)
    slow_new = new ** (-(dim - 2) / dim)
    assert slow_new == pytest.approx(slow_old / scale)
    # and leaves the fastest pair (i = 0) untouched: theta^0 = 1 for any base
    assert lc.wavelengths(dim, new)[0] == pytest.approx(2 * math.pi)


def test_yarn_factor_matches_the_paper() -> None:
    assert lc.yarn_mscale(1.0) == 1.0
    assert lc.yarn_mscale(0.5) == 1.0
    assert lc.yarn_mscale(16) == pytest.approx(0.1 * math.log(16) + 1)
    assert lc.yarn_logit_factor(32) == pytest.approx((0.1 * math.log(32) + 1) ** 2)


def test_streaming_cache_stops_growing() -> None:
    assert lc.streaming_cache_tokens(100, 4, 1020) == 100
    assert lc.streaming_cache_tokens(10**6, 4, 1020) == 1024
    q = QUANTITIES["streaming_kv_bytes"]
    c = get_model("llama-3-8b").config
    got = q.compute(c, {"seq_len": 131072, "window": 4092})
    assert got == kv_cache_bytes(c, 4096)
    with pytest.raises(ValueError):
        lc.streaming_cache_tokens(-1, 4, 10)


def test_quantities_are_registered_with_their_units() -> None:
    for q in lc.QUANTITIES:
        assert QUANTITIES[q.name] is q
    assert QUANTITIES["rope_pairs_beyond_context"].compute(LLAMA2, {}) == 18
    assert QUANTITIES["rope_pairs_beyond_context"].compute(LLAMA2, {"train_len": 1}) == 64
    assert QUANTITIES["yarn_logit_factor"].compute(None, {"scale": 8}) == pytest.approx(1.2079**2, rel=1e-4)
