"""The caching quantities: tokens a block-hashed prefix cache reuses (vLLM's full-block rule and
its cap at prompt - 1) and the KV cache disaggregated serving moves, with its time over a link."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from inferview.reference import caching
from inferview.reference.formulas import QUANTITIES
from inferview.reference.presets import get_model

LLAMA3_70B = get_model("llama-3-70b").config  # 320 KiB per token in bf16
MISTRAL_7B = get_model("mistral-7b").config  # sliding window 4096 on every layer


def test_prefix_hit_counts_whole_blocks_only():
    assert caching.prefix_cache_hit_tokens(3000, 3200) == 2992  # 187 blocks of 16
    assert caching.prefix_cache_hit_tokens(3000, 3200, block_size=32) == 2976
    assert caching.prefix_cache_hit_tokens(15, 100) == 0
    assert caching.prefix_cache_hit_tokens(0, 100) == 0


def test_full_hit_still_computes_the_last_token():
    # the whole 4,096-token prompt is cached: the hit stops one block short
    assert caching.prefix_cache_hit_tokens(4096, 4096) == 4080
    assert caching.prefix_cache_prefill_tokens(4096, 4096) == 16
    assert caching.prefix_cache_prefill_tokens(3000, 3200) == 208


@given(st.integers(0, 10**6), st.integers(1, 10**6), st.integers(1, 512))
def test_hit_is_block_aligned_and_leaves_work(shared, prompt, block):
    hit = caching.prefix_cache_hit_tokens(shared, prompt, block)
    assert hit % block == 0
    assert 0 <= hit <= min(shared, prompt - 1)
    assert min(shared, prompt - 1) - hit < block
    assert caching.prefix_cache_prefill_tokens(shared, prompt, block) >= 1


def test_bad_inputs_raise():
    with pytest.raises(ValueError):
        caching.prefix_cache_hit_tokens(10, 0)
    with pytest.raises(ValueError):
        caching.prefix_cache_hit_tokens(10, 20, block_size=0)
    with pytest.raises(ValueError):
        caching.kv_transfer_seconds(LLAMA3_70B, 1024, 0)


def test_kv_transfer_bytes_and_seconds():
    assert caching.kv_transfer_bytes(LLAMA3_70B, 8192) == 320 * 1024 * 8192 == 2.5 * 2**30
    assert caching.kv_transfer_bytes(LLAMA3_70B, 8192, "fp8") == 1.25 * 2**30
    assert caching.kv_transfer_seconds(LLAMA3_70B, 8192, 50) == pytest.approx(2.5 * 2**30 / 50e9)
    # a sliding layer holds (and ships) at most its window
    assert caching.kv_transfer_bytes(MISTRAL_7B, 16384) == caching.kv_transfer_bytes(MISTRAL_7B, 4096)


def test_quantities_are_registered_and_compute():
    q = QUANTITIES
    assert q["prefix_cache_hit_tokens"].compute(None, {"shared_tokens": 3000,
                                                       "prompt_tokens": 3200}) == 2992
    assert q["prefix_cache_prefill_tokens"].compute(None, {"shared_tokens": 3000,
                                                           "prompt_tokens": 3200}) == 208
    assert q["kv_transfer_bytes"].compute(LLAMA3_70B, {"prompt_tokens": 8192}) == 2.5 * 2**30
    assert q["kv_transfer_seconds"].compute(LLAMA3_70B, {"prompt_tokens": 8192, "link_gb_s": 50}) == (
        pytest.approx(0.05369, rel=1e-3))
