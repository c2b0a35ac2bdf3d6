"""Tests for ``inferview.reference.lora``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from inferview.reference import lora
from inferview.reference.formulas import QUANTITIES
from inferview.reference.presets import get_model


def test_llama_3_8b_rank_16_all_linear_is_41_9m_params():
    # per layer: q 16(4096+4096) + k, v 16(4096+1024) + o 16(4096+4096) + gate, up, down 16(4096+14336)
    c = get_model("llama-3-8b").config
    assert lora.adapter_params(c, 16, "all-linear") == 32 * 1_310_720 == 41_943_040
    assert lora.adapter_bytes(c, 16, "all-linear", "bf16") == 2 * 41_943_040


def test_qkvo_counts_only_attention():
    c = get_model("llama-2-7b").config                # MHA: every projection 4096 x 4096
    assert lora.adapter_params(c, 8, "qkvo") == 32 * 4 * 8 * (4096 + 4096)


@given(rank=st.integers(1, 256), name=st.sampled_from(["llama-2-7b", "llama-3-8b", "llama-3-70b"]))
def test_params_are_linear_in_rank(rank, name):
    c = get_model(name).config
    for t in lora.TARGETS:
        assert lora.adapter_params(c, rank, t) == rank * lora.adapter_params(c, 1, t)


def test_rejects_moe_mla_unknown_targets_and_bad_rank():
    with pytest.raises(ValueError):
        lora.adapter_params(get_model("mixtral-8x7b").config, 16)
    with pytest.raises(ValueError):
        lora.adapter_params(get_model("deepseek-v3").config, 16)
    with pytest.raises(ValueError, match="unknown targets"):
        lora.adapter_params(get_model("llama-3-8b").config, 16, "mlp")
    with pytest.raises(ValueError):
        lora.adapter_params(get_model("llama-3-8b").config, 0)


def test_quantities_are_registered():
    q = QUANTITIES["lora_adapter_bytes"]
    assert q.compute(get_model("llama-3-8b").config, {"rank": 16}) == 83_886_080
    assert "lora_adapter_params" in QUANTITIES
