"""Latency quantities: TPOT from a request's timings, Little's-law concurrency, and the GPUs a
memory-bound decode pool needs for a request rate at a TPOT target."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from inferview.reference import estimators as est
from inferview.reference import latency as lat
from inferview.reference.formulas import QUANTITIES
from inferview.reference.presets import get_gpu, get_model

LLAMA3_70B = get_model("llama-3-70b").config


def test_tpot_worked_example():
    # 10 s after the first token for 200 more tokens: 50 ms each
    assert lat.tpot_seconds(10.5, 0.5, 201) == pytest.approx(0.05)


@pytest.mark.parametrize("bad", [(1.0, 2.0, 10), (1.0, 0.5, 1), (0.0, 0.0, 10), (1.0, -0.1, 10)])
def test_tpot_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        lat.tpot_seconds(*bad)


@given(st.floats(0.01, 5), st.floats(0.001, 0.2), st.integers(2, 4000))
def test_tpot_inverts_the_request_time(ttft, tpot, n):
    e2e = lat.request_seconds(ttft, tpot, n)
    assert lat.tpot_seconds(e2e, ttft, n) == pytest.approx(tpot)


def test_littles_law_worked_example():
    # 10,000 requests/s that each last 0.3 + 299 x 0.03 = 9.27 s: 92,700 in flight
    assert lat.concurrent_requests(10_000, 0.3, 0.03, 300) == pytest.approx(92_700)


def test_decode_plan_worked_example():
    # Llama 3 70B, fp8 weights, bf16 cache of 4096 tokens, replicas of 2 x H100 80GB
    plan = lat.decode_plan(LLAMA3_70B, "h100-sxm", 2, 100, 256, 4096, 0.05, "fp8", "bf16")
    g = get_gpu("h100-sxm")
    free = 2 * g.memory_bytes - est.weight_bytes(LLAMA3_70B, "fp8")
    assert plan.batch == free // est.kv_cache_bytes(LLAMA3_70B, 4096, 1)
    assert plan.memory_bound
    step = est.decode_step_bytes(LLAMA3_70B, plan.batch, 4096, "fp8") / (2 * g.bandwidth_bytes_per_s)
    assert plan.step_s == pytest.approx(step)
    assert plan.tokens_per_s == pytest.approx(plan.batch / step)
    assert plan.replicas == 9  # ceil(25,600 tokens/s / 2,953 tokens/s per replica)
    assert plan.gpus == 2 * plan.replicas == 18


def test_a_tight_tpot_caps_the_batch_below_memory():
    loose = lat.decode_plan(LLAMA3_70B, "h200", 2, 100, 256, 2048, 0.05, "fp8", "bf16")
    tight = lat.decode_plan(LLAMA3_70B, "h200", 2, 100, 256, 2048, 0.015, "fp8", "bf16")
    assert not tight.memory_bound and tight.batch < loose.batch
    assert tight.step_s <= 0.015
    assert tight.gpus >= loose.gpus


@given(st.floats(0.012, 0.2), st.sampled_from([1024, 2048, 8192]))
def test_the_batch_is_the_largest_that_meets_the_target(tpot, ctx):
    plan = lat.decode_plan(LLAMA3_70B, "h200", 2, 10, 128, ctx, tpot, "fp8", "bf16")
    assert plan.step_s <= tpot
    g = get_gpu("h200")
    if not plan.memory_bound:
        b = plan.batch + 1
        nxt = max(est.decode_step_flops(LLAMA3_70B, b, ctx) / (2 * g.bf16_flops),
                  est.decode_step_bytes(LLAMA3_70B, b, ctx, "fp8") / (2 * g.bandwidth_bytes_per_s))
        assert nxt > tpot


def test_decode_plan_rejects_what_cannot_work():
    with pytest.raises(ValueError):  # 141 GB of bf16 weights on one 80 GB GPU
        lat.decode_plan(LLAMA3_70B, "h100-sxm", 1, 10, 128, 2048, 0.05)
    with pytest.raises(ValueError):  # reading 70 GB of weights takes 10 ms on two H100s
        lat.decode_plan(LLAMA3_70B, "h100-sxm", 2, 10, 128, 2048, 0.005, "fp8")


def test_quantities_are_registered_and_compute():
    assert QUANTITIES["tpot_seconds"].compute(
        None, {"e2e_s": 10.5, "ttft_s": 0.5, "output_tokens": 201}) == pytest.approx(0.05)
    assert QUANTITIES["concurrent_requests"].compute(
        None, {"qps": 10_000, "ttft_s": 0.3, "tpot_s": 0.03, "output_tokens": 300}) \
        == pytest.approx(92_700)
    assert QUANTITIES["decode_gpus_for_qps"].compute(
        LLAMA3_70B, {"gpu": "h100-sxm", "tp": 2, "qps": 100, "output_tokens": 256,
                     "context_len": 4096, "tpot_ms": 50, "weight_dtype": "fp8"}) == 18
