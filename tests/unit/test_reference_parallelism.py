"""The parallelism quantities: tensor-parallel all-reduce bytes, ring all-reduce traffic, the
pipeline bubble and the expert-parallel all-to-all, checked against hand-computed figures from
published configs (Llama-3-70B: hidden 8192, 80 layers; DeepSeek-V3: hidden 7168, top 8)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from inferview.reference import parallelism as par
from inferview.reference.formulas import QUANTITIES
from inferview.reference.presets import get_model

LLAMA3_70B = get_model("llama-3-70b").config
DEEPSEEK_V3 = get_model("deepseek-v3").config


def test_tp_allreduce_bytes_per_token_layer_is_two_hidden_vectors():
    assert par.tp_allreduce_bytes_per_token_layer(LLAMA3_70B) == 2 * 8192 * 2 == 32768
    assert par.tp_allreduce_bytes_per_token_layer(LLAMA3_70B, "fp8") == 16384
    assert par.tp_allreduce_bytes_per_token_layer({"hidden_size": 4096}, "fp32") == 32768


def test_ring_allreduce_traffic_per_gpu():
    assert par.ring_allreduce_bytes_per_gpu(1000, 1) == 0
    assert par.ring_allreduce_bytes_per_gpu(1000, 2) == 1000
    assert par.ring_allreduce_bytes_per_gpu(1000, 8) == pytest.approx(1750)
    with pytest.raises(ValueError):
        par.ring_allreduce_bytes_per_gpu(1000, 0)
    with pytest.raises(ValueError):
        par.ring_allreduce_bytes_per_gpu(-1, 4)


@given(st.floats(min_value=0, max_value=1e12), st.integers(min_value=2, max_value=1024))
def test_ring_traffic_lies_between_one_and_two_messages(size, n):
    sent = par.ring_allreduce_bytes_per_gpu(size, n)
    assert size * (1 - 1e-12) <= sent <= 2 * size


def test_tp_decode_step_bytes_per_gpu():
    # 80 layers x 32 KiB x batch 1, times 2 * 7 / 8 at TP 8
    assert par.tp_decode_step_bytes_per_gpu(LLAMA3_70B, 1, 8) == pytest.approx(80 * 32768 * 1.75)
    assert par.tp_decode_step_bytes_per_gpu(LLAMA3_70B, 64, 2) == pytest.approx(80 * 32768 * 64)
    assert par.tp_decode_step_bytes_per_gpu(LLAMA3_70B, 8, 1) == 0


def test_pipeline_bubble_fraction():
    assert par.pipeline_bubble_fraction(1, 1) == 0
    assert par.pipeline_bubble_fraction(4, 8) == pytest.approx(3 / 11)
    assert par.pipeline_bubble_fraction(8, 1) == pytest.approx(7 / 8)
    with pytest.raises(ValueError):
        par.pipeline_bubble_fraction(0, 4)
    with pytest.raises(ValueError):
        par.pipeline_bubble_fraction(4, 2.5)


@given(st.integers(min_value=2, max_value=64), st.integers(min_value=1, max_value=512))
def test_bubble_shrinks_with_more_microbatches(p, m):
    assert 0 < par.pipeline_bubble_fraction(p, m + 1) < par.pipeline_bubble_fraction(p, m) < 1


def test_ep_alltoall_bytes_per_token_layer():
    assert par.ep_alltoall_bytes_per_token_layer(DEEPSEEK_V3) == 8 * 7168 * 3
    assert par.ep_alltoall_bytes_per_token_layer(DEEPSEEK_V3, "bf16", "bf16") == 8 * 7168 * 4
    with pytest.raises(ValueError):
        par.ep_alltoall_bytes_per_token_layer(LLAMA3_70B)  # dense: no experts per token


def test_quantities_are_registered_and_compute():
    q = QUANTITIES
    assert q["tp_allreduce_bytes_per_token_layer"].compute(LLAMA3_70B, {}) == 32768
    assert q["tp_decode_step_bytes_per_gpu"].compute(LLAMA3_70B, {"tp": 8}) == pytest.approx(
        80 * 32768 * 1.75)
    assert q["pipeline_bubble_fraction"].compute(None, {"stages": 4, "microbatches": 8}) == (
        pytest.approx(3 / 11))
    assert q["ep_alltoall_bytes_per_token_layer"].compute(DEEPSEEK_V3, {}) == 172032
    with pytest.raises(ValueError):
        q["pipeline_bubble_fraction"].compute(None, {"stages": 4})
