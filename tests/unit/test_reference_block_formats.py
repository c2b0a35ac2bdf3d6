"""Tests for ``inferview.reference.block_formats`` against the published layouts."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from inferview.reference import block_formats as bf
from inferview.reference.formulas import QUANTITIES
from inferview.reference.presets import get_model


@pytest.mark.parametrize("name, bits", [("mxfp4", 4.25), ("nvfp4", 4.5), ("mxfp8", 8.25),
                                        ("mxfp6", 6.25), ("int4-g128", 4.125)])
def test_bits_per_value_match_the_specifications(name, bits):
    assert bf.get_format(name).bits_per_value == bits


def test_mxfp4_block_is_136_bits_and_nvfp4_block_72():
    # OCP MX: 32 x 4-bit E2M1 + one 8-bit E8M0; NVFP4: 16 x E2M1 + one E4M3 (+ 32-bit tensor scale)
    assert bf.tensor_bytes(1, 32, "mxfp4") * 8 == 136
    assert bf.tensor_bytes(1, 16, "nvfp4") * 8 == 72 + 32


@given(rows=st.integers(1, 64), cols=st.integers(1, 600),
       name=st.sampled_from(sorted(bf.FORMATS)))
def test_tensor_bytes_equal_a_naive_count_of_every_block(rows, cols, name):
    f = bf.FORMATS[name]
    bits = f.tensor_scale_bits
    for _ in range(rows):
        start = 0
        while start < cols:
            n = min(f.block, cols - start)
            bits += n * f.element_bits + f.scale_bits
            start += f.block
    assert bf.tensor_bytes(rows, cols, name) == math.ceil(bits / 8)


def test_unknown_format_and_bad_shape_raise():
    with pytest.raises(ValueError, match="unknown block format"):
        bf.get_format("fp3")
    with pytest.raises(ValueError):
        bf.tensor_bytes(0, 32, "mxfp4")


def test_gpt_oss_120b_with_mxfp4_experts_is_about_its_released_checkpoint():
    # gpt-oss ships its routed experts in MXFP4 and the rest in bf16: about 65 GB on disk
    b = bf.model_weight_bytes(get_model("gpt-oss-120b").config, "mxfp4", "experts")
    assert 64e9 < b < 66e9


def test_scope_linear_keeps_embeddings_and_head_in_bf16():
    c = get_model("llama-3-8b").config
    b = bf.model_weight_bytes(c, "nvfp4", "linear")
    emb = 2 * 128256 * 4096 * 2                      # input table + output head, bf16
    assert b > emb
    with pytest.raises(ValueError, match="no experts"):
        bf.model_weight_bytes(c, "mxfp4", "experts")
    with pytest.raises(ValueError, match="unknown scope"):
        bf.model_weight_bytes(c, "mxfp4", "all")


def test_flashmla_fp8_entry_is_656_bytes_per_token_and_layer():
    assert bf.MlaFp8Layout(512, 64).bytes == 512 + 16 + 128 == 656
    c = get_model("deepseek-v3").config
    assert bf.mla_fp8_kv_bytes_per_token(c) == 61 * 656
    with pytest.raises(ValueError, match="MLA"):
        bf.mla_fp8_kv_bytes_per_token(get_model("llama-3-8b").config)


def test_quantities_are_registered():
    for name in ("block_scaled_tensor_bytes", "block_scaled_weight_bytes",
                 "mla_fp8_kv_bytes_per_token"):
        assert name in QUANTITIES
    q = QUANTITIES["block_scaled_tensor_bytes"]
    assert q.compute(None, {"rows": 4096, "cols": 14336, "format": "mxfp4"}) == 4096 * 14336 * 4.25 / 8
