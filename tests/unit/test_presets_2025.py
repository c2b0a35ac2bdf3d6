"""The 2025 presets (Qwen3, Llama 4, Gemma 3, gpt-oss-20b, Kimi K2) against their published
figures, and the estimators on what their configs contain: local/global and chunked attention
layers, attention sinks, shared experts, MoE layers interleaved with dense ones, MLA with many
experts. Every expected figure is worked out by hand in the comments."""

from __future__ import annotations

import pytest
from inferview.reference import estimators as e
from inferview.reference.presets import MODELS, get_model


def cfg(name: str) -> dict:
    return get_model(name).config_copy()


# ------------------------------------------------------------------ published totals


@pytest.mark.parametrize(
    "name, published, include_embedding_in_active, active_published, rel",
    [
        # model cards: Qwen3-8B 8.2B (6.95B non-embedding), Qwen3-32B 32.8B, Qwen3-30B-A3B 30.5B
        # total / 3.3B activated, Qwen3-235B-A22B 235B / 22B (Qwen counts the embedding as active)
        ("qwen3-8b", 8.2e9, True, None, 0.01),
        ("qwen3-32b", 32.8e9, True, None, 0.01),
        ("qwen3-30b-a3b", 30.5e9, True, 3.3e9, 0.02),
        ("qwen3-235b-a22b", 235e9, True, 22e9, 0.02),
        # Llama 4 model card: 17B active; Maverick 400B total (Scout's 109B counts vision too)
        ("llama-4-maverick", 400e9, True, 17e9, 0.02),
        ("llama-4-scout", 109e9, True, 17e9, 0.02),  # 107.8B without the vision encoder
        # gpt-oss model card: 20.91B total, 3.61B active (without the input embedding)
        ("gpt-oss-20b", 20.91e9, False, 3.61e9, 0.002),
        # Kimi K2 model card: 1T total, 32B activated (rounded figures)
        ("kimi-k2", 1.0e12, True, 32e9, 0.03),
    ],
)
def test_totals_match_the_published_figures(name, published, include_embedding_in_active,
                                            active_published, rel):
    pc = e.param_counts(cfg(name))
    assert pc.total == pytest.approx(published, rel=rel)
    if active_published:
        assert pc.active(include_embedding_in_active) == pytest.approx(active_published, rel=rel)


def test_qwen3_8b_by_hand():
    # per layer: q 4096*4096 + k, v 2*4096*1024 + o 4096*4096 = 41,943,040; SwiGLU 3*4096*12288
    # = 150,994,944; norms 2*4096 + q/k norms 2*128 = 8,448 -> 192,946,432; x 36 = 6,946,071,552,
    # + final norm 4096 = 6,946,075,648 non-embedding (the card's 6.95B); + 2 * 151936 * 4096
    pc = e.param_counts(cfg("qwen3-8b"))
    assert pc.total - pc.embedding - pc.unembedding == 6_946_075_648
    assert pc.total == 6_946_075_648 + 2 * 151_936 * 4096 == 8_190_735_360


def test_gemma3_27b_non_embedding_is_the_reports_25600m():
    # per layer: q 5376*4096 + k, v 2*5376*2048 + o 4096*5376 = 66,060,288; GeGLU 3*5376*21504
    # = 346,816,512; four norms 4*5376 + q/k norms 2*128 = 21,760 -> 412,898,560; x 62
    # = 25,599,710,720, + final norm 5376 = 25,599,716,096 (Gemma 3 report: 25,600M). Tied head.
    pc = e.param_counts(cfg("gemma-3-27b"))
    assert pc.unembedding == 0
    assert pc.total - pc.embedding == 25_599_716_096


def test_maverick_interleaves_moe_and_dense_layers_with_a_shared_expert():
    c = cfg("llama-4-maverick")
    flags = e.moe_layers(c, 128)
    assert flags[:4] == [False, True, False, True] and sum(flags) == 24  # odd layers hold experts
    pc = e.param_counts(c)
    expert = 3 * 5120 * 8192                     # 125,829,120 per expert (SwiGLU)
    assert pc.routed_experts == 24 * 128 * expert == 386_547_056_640
    assert pc.shared_experts == 24 * expert                    # one always-on shared expert
    assert pc.dense_mlp == 24 * 3 * 5120 * 16384               # intermediate_size_mlp
    assert pc.routed_experts_active == 24 * 1 * expert         # top-1
    # Scout: every layer MoE, 16 experts
    assert sum(e.moe_layers(cfg("llama-4-scout"), 16)) == 48
    assert e.param_counts(cfg("llama-4-scout")).dense_mlp == 0


def test_kimi_k2_has_one_dense_layer_and_384_experts():
    c = cfg("kimi-k2")
    assert e.moe_layers(c, 384) == [False] + [True] * 60
    pc = e.param_counts(c)
    # 60 MoE layers x 384 experts x 3 * 7168 * 2048 (44,040,192) = 1,014,686,023,680
    assert pc.routed_experts == 1_014_686_023_680
    assert pc.shared_experts == 60 * 44_040_192
    assert pc.dense_mlp == 3 * 7168 * 18432


def test_qwen_moe_layout_keys():
    base = {"num_hidden_layers": 6, "hidden_size": 8, "num_attention_heads": 2, "vocab_size": 10,
            "intermediate_size": 16, "moe_intermediate_size": 4, "num_experts": 4,
            "num_experts_per_tok": 2}
    assert e.moe_layers({**base, "decoder_sparse_step": 2}, 4) == [False, True] * 3
    assert e.moe_layers({**base, "mlp_only_layers": [0, 5]}, 4) == [False] + [True] * 4 + [False]
    # Qwen2-MoE's shared expert: 3 * h * shared_ffn plus a 1-output gate of h per MoE layer
    pc = e.param_counts({**base, "shared_expert_intermediate_size": 12})
    assert pc.shared_experts == 6 * (3 * 8 * 12 + 8)


# ------------------------------------------------------------------ KV cache of the new layouts


def test_gemma3_local_and_global_layers():
    c = cfg("gemma-3-27b")
    kinds = e.layer_kinds(c)
    assert kinds.count("full_attention") == 10 and kinds[5] == "full_attention"  # layer 6, 1-based
    assert kinds[0] == "sliding_attention"
    # per token and layer 2 * 16 * 128 * 2 B = 8192 B; 10 global layers x 131072 tokens + 52
    # local layers x 1024 = 1,363,968 token-layers -> 11,173,625,856 B (10.41 GiB)
    assert e.kv_cache_bytes(c, 131072) == 1_363_968 * 8192 == 11_173_625_856
    # inside the window every layer holds every token
    assert e.kv_cache_bytes(c, 1000) == 62 * 1000 * 8192
    # a Gemma 3 config.json that leaves sliding_window_pattern and vocab_size out gets
    # transformers' defaults (6 and 262208)
    bare = {k: v for k, v in c.items() if k not in ("sliding_window_pattern", "vocab_size")}
    assert e.layer_kinds(bare) == kinds
    assert e.param_counts(bare) == e.param_counts(c)


def test_llama4_chunked_layers_keep_at_most_one_chunk():
    c = cfg("llama-4-scout")
    kinds = e.layer_kinds(c)
    assert kinds[:4] == ["chunked_attention"] * 3 + ["full_attention"]
    assert kinds.count("chunked_attention") == 36
    per = 2 * 8 * 128 * 2  # 4096 B per token and layer
    # 1M tokens: 12 global layers x 1,048,576 + 36 chunked x 8192 = 12,877,824 token-layers
    assert e.kv_cache_bytes(c, 1_048_576) == 12_877_824 * per == 52_747_567_104
    # below one chunk every layer holds every token
    assert e.kv_cache_bytes(c, 5000) == 48 * 5000 * per
    # the global layers bound the context; an all-chunked model would not be bounded
    assert e.max_context_length(c, 10**12, 0) is not None
    only_chunks = {**c, "no_rope_layers": [1] * 48}
    assert e.max_context_length(only_chunks, 10**12, 0) is None


def test_llama4_layout_from_no_rope_layers_or_layer_types():
    base = {"model_type": "llama4_text", "num_hidden_layers": 4, "num_attention_heads": 2,
            "hidden_size": 8, "attention_chunk_size": 16}
    assert e.layer_kinds({**base, "no_rope_layers": [1, 0, 1, 0]}) == [
        "chunked_attention", "full_attention"] * 2
    typed = {**base, "layer_types": ["chunked_attention"] * 4}
    assert e.layer_kinds(typed) == ["chunked_attention"] * 4
    # a chunked layer without a chunk size attends fully
    assert e.layer_kinds({k: v for k, v in typed.items() if k != "attention_chunk_size"}) == [
        "full_attention"] * 4


def test_gpt_oss_20b_alternates_and_its_sinks_cache_nothing():
    c = cfg("gpt-oss-20b")
    per = 2 * 8 * 64 * 2  # 2048 B per token and layer
    # 12 full layers x 32768 + 12 sliding x 128 = 394,752 token-layers -> 808,452,096 B
    assert e.kv_cache_bytes(c, 32768) == 394_752 * per == 808_452_096
    # one sink logit per head and layer is a parameter, not cache: 24 * 64 of them
    no_sinks = {**c, "model_type": "gpt_oss_without_sinks"}
    assert e.param_counts(c).attention - e.param_counts(no_sinks).attention == 24 * 64


def test_kimi_k2_mla_cache_does_not_depend_on_heads():
    # 61 layers x (512 + 64) x 2 bytes = 70,272 B per token, DeepSeek-V3's figure with 64 heads
    assert e.kv_bytes_per_token(cfg("kimi-k2")) == 70_272 == e.kv_bytes_per_token(cfg("deepseek-v3"))
    # FlashMLA's FP8 cache: 512 x 1 + 4 x 4 + 64 x 2 = 656 B per layer -> 61 x 656 = 40,016 B
    assert e.kv_bytes_per_token(cfg("kimi-k2"), "fp8-mla") == 40_016


def test_qwen3_235b_gqa_group_of_16():
    c = cfg("qwen3-235b-a22b")
    # 94 layers x 2 x 4 KV heads x 128 x 2 bytes = 192,512 B per token (188 KiB)
    assert e.kv_bytes_per_token(c) == 192_512
    assert c["num_attention_heads"] // e.num_kv_heads(c) == 16


# ------------------------------------------------------------------ attention FLOPs with chunks


def test_chunked_attention_flops_and_decode_keys():
    c = {"model_type": "llama4_text", "num_hidden_layers": 1, "num_attention_heads": 1,
         "hidden_size": 4, "head_dim": 4, "attention_chunk_size": 8,
         "layer_types": ["chunked_attention"], "vocab_size": 2, "intermediate_size": 2}
    # causal within chunks of 8 over 20 tokens: 2 full chunks (8*9/2 = 36 pairs each) and a
    # remainder of 4 (4*5/2 = 10) -> 82 pairs; each pair costs 2 * (4 + 4) FLOPs
    assert e.attention_flops(c, 20, causal=True) == 82 * 16
    # without a mask the chunks are ignored, as sliding windows are: 20 * 20 pairs
    assert e.attention_flops(c, 20, causal=False) == 400 * 16
    # decode at 20 cached tokens: the new token is position 20, in the chunk starting at 16,
    # so it attends to 20 % 8 + 1 = 5 keys
    base = e.decode_step_flops({**c, "layer_types": ["full_attention"]}, 1, 20)
    chunked = e.decode_step_flops(c, 1, 20)
    assert base - chunked == 16 * (21 - 5)


def test_every_new_preset_renders_through_every_estimator():
    for name in ("qwen3-8b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b", "llama-4-scout",
                 "llama-4-maverick", "gemma-3-27b", "gpt-oss-20b", "kimi-k2"):
        p = MODELS[name]
        c = p.config_copy()
        assert "config.json" in p.source
        assert e.kv_cache_bytes(c, 4096, 2) > 0
        assert e.decode_arithmetic_intensity(c, 8, 1024) > 0
        assert e.attention_flops(c, 1024, causal=True) > 0
