"""Storage formats with their scales (MXFP4, NVFP4, int4 with group scales, FlashMLA's FP8 MLA
cache) through the estimators, the calculator CLI and the app's calculation, with the expected
figures worked out by hand in the comments."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from inferview.reference import estimators as e
from inferview.reference.presets import get_model
from inferview.tui.calculation import CalcInputs, calculate

from inferview.cli import cli


def cfg(name: str) -> dict:
    return get_model(name).config_copy()


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize("dtype, bits", [
    ("mxfp4", 4.25),       # 4 + 8/32: one E8M0 scale per 32 FP4 values (OCP MX v1.0)
    ("nvfp4", 4.5),        # 4 + 8/16: one E4M3 scale per 16 FP4 values
    ("int4-g128", 4.125),  # 4 + 16/128: one fp16 scale per group of 128
    ("int4-g32", 4.5),     # 4 + 16/32
    ("int4", 4),           # plain: scales not counted
    ("MXFP4", 4.25),       # case-insensitive
])
def test_bits_per_value_count_the_scales(dtype, bits):
    assert e.dtype_bits(dtype) == bits


def test_whole_blocks_take_whole_bytes():
    assert e.bytes_to_fit(32, "mxfp4") == 17    # 16 bytes of FP4 + 1 scale byte (MX block)
    assert e.bytes_to_fit(16, "nvfp4") == 9     # 8 bytes + 1 E4M3 scale
    assert e.bytes_to_fit(128, "int4-g128") == 66  # 64 bytes + a 2-byte fp16 scale


def test_fp8_mla_is_656_bytes_per_layer_and_mla_only():
    c = cfg("deepseek-v3")
    # 512 fp8 values + 512/128 fp32 scales + 64 bf16 RoPE values = 512 + 16 + 128 = 656 B
    assert e.kv_bits_per_token_layer(c, "fp8-mla") == 656 * 8
    assert e.kv_bytes_per_token(c, "fp8-mla") == 61 * 656 == 40_016
    assert e.kv_cache_bytes(c, 1000, 2, "fp8-mla") == 2 * 1000 * 40_016
    # 14 % more than "fp8 = one byte per value": 656 / 576
    assert e.kv_bytes_per_token(c, "fp8-mla") / e.kv_bytes_per_token(c, "fp8") == pytest.approx(1.139, abs=1e-3)
    with pytest.raises(ValueError, match="MLA cache format"):
        e.kv_cache_bytes(cfg("llama-3-8b"), 10, 1, "fp8-mla")
    with pytest.raises(ValueError, match="MLA caches only"):
        e.weight_bytes(cfg("llama-3-8b"), "fp8-mla")


def test_nvfp4_kv_cache():
    # Llama-3-8B: 32 x 2 x 8 x 128 = 65,536 values per token at 4.5 bits = 36,864 B per token
    c = cfg("llama-3-8b")
    assert e.kv_bytes_per_token(c, "nvfp4") == 36_864
    assert e.kv_cache_bytes(c, 1000, 1, "nvfp4") == 36_864_000
    assert e.max_batch_size(c, 1000, 36_864_000 * 3 + 1, 0, "nvfp4") == 3


def test_int4_group_checkpoint_keeps_embeddings_in_bf16():
    c = cfg("llama-3-70b")
    pc = e.param_counts(c)
    # per layer: attention 2 * 8192^2 + 2 * 8192 * 1024 = 150,994,944, MLP 3 * 8192 * 28672
    # = 704,643,072 -> 855,638,016; x 80 layers = 68,451,041,280 in the linear layers
    blocks = pc.attention + pc.dense_mlp
    rest = pc.total - blocks  # 2 x 128256 x 8192 vocabulary rows + (80 x 2 + 1) x 8192 of norms
    assert blocks == 68_451_041_280 and rest == 2 * 1_050_673_152 + 1_318_912
    # 4.125 = 33/8 bits per linear weight, 16 bits for the rest, rounded up to bytes once
    want = -(-(blocks * 33 // 8 + rest * 16) // 8)
    assert blocks % 8 == 0 and e.quantized_weight_bytes(c, "int4-g128") == want == 39_500_398_592
    # 39.5 GB: 12 % above "every parameter at 4 bits" (35.28 GB)
    ratio = e.quantized_weight_bytes(c, "int4-g128") / e.weight_bytes(c, "int4")
    assert ratio == pytest.approx(1.12, abs=0.005)


def test_gpt_oss_mxfp4_experts_match_the_checkpoints():
    # routed experts at 4.25 bits, everything else in bf16: 60.7 GiB and 12.8 GiB, the
    # checkpoint sizes of the gpt-oss model card (60.8 GiB and 12.8 GiB)
    big = e.quantized_weight_bytes(cfg("gpt-oss-120b"), "mxfp4", "experts") / 2**30
    small = e.quantized_weight_bytes(cfg("gpt-oss-20b"), "mxfp4", "experts") / 2**30
    assert big == pytest.approx(60.8, rel=0.005)
    assert small == pytest.approx(12.8, rel=0.005)
    with pytest.raises(ValueError, match="mixture-of-experts"):
        e.scoped_weight_bytes(cfg("llama-3-8b"), "mxfp4", "experts")


# ------------------------------------------------------------------ the calculator


def kv_json(*args: str) -> dict:
    r = run("calc", "kv", *args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_calc_new_presets_and_formats():
    d = kv_json("--model", "gemma-3-27b", "--seq-len", "128k")
    assert d["kv_cache_bytes"] == 11_173_625_856 and d["sliding_layers"] == 52
    d = kv_json("--model", "llama-4-scout", "--seq-len", "1M")
    assert d["kv_cache_bytes"] == 52_747_567_104
    assert d["chunked_layers"] == 36 and d["attention_chunk_size"] == 8192
    d = kv_json("--model", "kimi-k2", "--seq-len", "1000", "--dtype", "fp8-mla")
    assert d["kv_bytes_per_token"] == 40_016 and d["kv_bytes_per_token_per_layer"] == 656
    assert d["dtype_bits"] is None
    d = kv_json("--model", "gpt-oss-120b", "--seq-len", "8k", "--weight-dtype", "mxfp4",
                "--weight-scope", "experts")
    assert d["weight_bytes"] == e.quantized_weight_bytes(cfg("gpt-oss-120b"), "mxfp4", "experts")
    d = kv_json("--model", "llama-4-maverick", "--seq-len", "8k", "--weight-dtype", "nvfp4")
    assert d["weight_bytes"] == e.weight_bytes(cfg("llama-4-maverick"), "nvfp4")
    assert d["moe_layers"] == 24


def test_calc_text_names_chunks_and_interleaving():
    out = run("calc", "kv", "--model", "llama-4-maverick", "--seq-len", "32k").output
    assert "36 of 48 layers attend within 8,192-token chunks" in out
    assert "past the chunk a token costs 48 KiB/token (12 full-attention layers)" in out
    assert "experts in 24 of 48 layers" in out
    out = run("calc", "kv", "--model", "deepseek-v3", "--seq-len", "8k", "--dtype", "fp8-mla").output
    assert "656 bytes per layer in fp8-mla" in out


def test_calc_bad_format_choices_are_usage_errors():
    r = run("calc", "kv", "--model", "llama-3-8b", "--seq-len", "8k", "--dtype", "fp8-mla")
    assert r.exit_code == 2 and "MLA cache format" in r.output and "Traceback" not in r.output
    r = run("calc", "kv", "--model", "llama-3-8b", "--seq-len", "8k", "--weight-dtype", "mxfp4",
            "--weight-scope", "experts")
    assert r.exit_code == 2 and "mixture-of-experts" in r.output
    r = run("calc", "kv", "--model", "llama-3-8b", "--seq-len", "8k", "--weight-dtype", "fp8-mla")
    assert r.exit_code == 2 and "Invalid value for '--weight-dtype'" in r.output
    r = run("calc", "kv", "--model", "llama-3-8b", "--seq-len", "8k", "--dtype", "fp5")
    assert r.exit_code == 2 and "nvfp4" in r.output  # the message lists the formats


def test_app_calculation_agrees_with_the_cli():
    res = calculate(CalcInputs(model="kimi-k2", kv_dtype="fp8-mla", weight_dtype="int4-g128",
                               weight_scope="linear", context=1000, gpu="h200", gpus=8))
    assert res.kv_cache == 1000 * 40_016
    assert res.weights == e.quantized_weight_bytes(cfg("kimi-k2"), "int4-g128", "linear")
    with pytest.raises(ValueError, match="MLA cache format"):
        calculate(CalcInputs(model="llama-3-8b", kv_dtype="fp8-mla"))
