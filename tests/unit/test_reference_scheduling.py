"""Scheduling quantities: prefill iterations under a token budget, the roofline time of a mixed
prefill/decode step, and the CUDA-graph batch a step is padded to."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from inferview.reference import estimators as est
from inferview.reference import scheduling as sch
from inferview.reference.formulas import QUANTITIES
from inferview.reference.presets import get_gpu, get_model

LLAMA3_8B = get_model("llama-3-8b").config
H100 = get_gpu("h100-sxm")


def test_prefill_iterations_worked_example():
    # 256 decodes leave 2048 - 256 = 1792 prompt tokens a step: 32768 / 1792 = 18.3 -> 19 steps
    assert sch.prefill_iterations(32768, 2048, 256) == 19
    assert sch.prefill_iterations(2048, 2048) == 1
    assert sch.prefill_iterations(2049, 2048) == 2


@given(st.integers(1, 200_000), st.integers(2, 16384), st.integers(0, 1024))
def test_prefill_iterations_cover_the_prompt_exactly(n, budget, decodes):
    if decodes >= budget:
        with pytest.raises(ValueError):
            sch.prefill_iterations(n, budget, decodes)
        return
    k = sch.prefill_iterations(n, budget, decodes)
    per_step = budget - decodes
    assert (k - 1) * per_step < n <= k * per_step


@pytest.mark.parametrize("bad", [(0, 2048, 0), (100, 0, 0), (100, 64, 64), (100, 2048, -1)])
def test_prefill_iterations_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        sch.prefill_iterations(*bad)


def test_capture_sizes_follow_vllms_default_list():
    sizes = sch.cuda_graph_capture_sizes(512)
    assert sizes[:5] == [1, 2, 4, 8, 16]
    assert sizes[sizes.index(248) + 1] == 256 and sizes[sizes.index(256) + 1] == 272
    assert sizes[-1] == 512 and len(sizes) == 3 + 31 + 17
    assert sch.cuda_graph_capture_sizes(64)[-1] == 64


@pytest.mark.parametrize("batch, padded", [(1, 1), (3, 4), (5, 8), (13, 16), (37, 40), (256, 256),
                                           (257, 272), (300, 304), (512, 512)])
def test_padded_batch(batch, padded):
    assert sch.cuda_graph_padded_batch(batch) == padded


def test_padded_batch_above_the_largest_size_runs_eagerly():
    with pytest.raises(ValueError):
        sch.cuda_graph_padded_batch(513)
    with pytest.raises(ValueError):
        sch.cuda_graph_padded_batch(100, max_capture_size=64)


def test_decode_only_step_matches_the_decode_estimators():
    t = sch.mixed_step_seconds(LLAMA3_8B, H100.bf16_flops, H100.bandwidth_bytes_per_s, 64, 2048, 0)
    moved = est.decode_step_bytes(LLAMA3_8B, 64, 2048)
    assert t == pytest.approx(moved / H100.bandwidth_bytes_per_s)


def test_a_big_chunk_makes_the_step_compute_bound_and_longer():
    g = H100
    small = sch.mixed_step_seconds(LLAMA3_8B, g.bf16_flops, g.bandwidth_bytes_per_s, 64, 2048, 256)
    big = sch.mixed_step_seconds(LLAMA3_8B, g.bf16_flops, g.bandwidth_bytes_per_s, 64, 2048, 8192)
    flops = sch.mixed_step_flops(LLAMA3_8B, 64, 2048, 8192)
    assert big == pytest.approx(flops / g.bf16_flops)
    assert big > 10 * small
    # the linear layers dominate: 2 x matmul params per token
    assert flops > 2 * est.param_counts(LLAMA3_8B).matmul * (64 + 8192)


def test_chunk_attention_counts_the_prefix():
    no_prefix = sch.mixed_step_flops(LLAMA3_8B, 0, 0, 2048, prefix=0)
    with_prefix = sch.mixed_step_flops(LLAMA3_8B, 0, 0, 2048, prefix=30720)
    extra = est.attention_flops(LLAMA3_8B, 32768) - est.attention_flops(LLAMA3_8B, 30720) \
        - est.attention_flops(LLAMA3_8B, 2048)
    assert with_prefix - no_prefix == pytest.approx(extra)


def test_tensor_parallel_divides_the_roofline_time():
    args = (H100.bf16_flops, H100.bandwidth_bytes_per_s, 32, 4096, 1024)
    one = sch.mixed_step_seconds(LLAMA3_8B, *args)
    four = sch.mixed_step_seconds(LLAMA3_8B, *args, gpus=4)
    assert four == pytest.approx(one / 4)


def test_quantities_are_registered_and_compute():
    assert QUANTITIES["chunked_prefill_iterations"].compute(
        None, {"prompt_len": 32768, "token_budget": 2048, "decodes": 256}) == 19
    assert QUANTITIES["cuda_graph_padded_batch"].compute(None, {"batch": 257}) == 272
    t = QUANTITIES["mixed_step_seconds"].compute(
        LLAMA3_8B, {"gpu": "h100-sxm", "decodes": 64, "context_len": 2048, "chunk": 2048})
    assert math.isfinite(t) and t > 0
