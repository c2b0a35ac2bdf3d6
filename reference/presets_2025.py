"""Model presets of the 2025 releases: Qwen3 dense and MoE, Llama 4 Scout and Maverick, Gemma 3,
gpt-oss-20b and Kimi K2, each from its published ``config.json`` (the language model's part of
it: multimodal releases nest it under ``text_config``).

Only the keys the estimators read, and a few that say what the model is, are copied; a key that
could not be checked against the published file is left out rather than guessed (the notes say
which). The parameter totals the estimators compute from these configs are checked against the
figures of each source in ``tests/unit/test_presets_2025.py``.

Pure Python; no torch.
"""

from __future__ import annotations

from typing import Any

from inferview.reference.preset_types import ModelPreset


def _qwen3(hidden: int, layers: int, heads: int, kv_heads: int, ffn: int,
           **extra: Any) -> dict[str, Any]:
    moe = "num_experts" in extra
    cfg: dict[str, Any] = {
        "architectures": ["Qwen3MoeForCausalLM" if moe else "Qwen3ForCausalLM"],
        "model_type": "qwen3_moe" if moe else "qwen3",
        "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
        "num_key_value_heads": kv_heads, "head_dim": 128, "intermediate_size": ffn,
        "vocab_size": 151936, "max_position_embeddings": 40960, "rope_theta": 1000000,
        "sliding_window": None, "use_sliding_window": False, "max_window_layers": layers,
        "attention_bias": False, "hidden_act": "silu", "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }
    cfg.update(extra)
    return cfg


def _llama4(experts: int, interleave: int, max_pos: int, **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4_text",
        "hidden_size": 5120, "num_hidden_layers": 48, "num_attention_heads": 40,
        "num_key_value_heads": 8, "head_dim": 128,
        "intermediate_size": 8192, "intermediate_size_mlp": 16384,
        "num_local_experts": experts, "num_experts_per_tok": 1,
        "interleave_moe_layer_step": interleave, "attention_chunk_size": 8192,
        "vocab_size": 202048, "max_position_embeddings": max_pos, "rope_theta": 500000.0,
        "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    }
    cfg.update(extra)
    return cfg


def _gpt_oss_layer_types(n: int) -> list[str]:
    return ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n)]


_LLAMA4_NOTE = (
    "Language model only (text_config of the multimodal release). RoPE layers attend within "
    "8,192-token chunks (attention_chunk_size); every fourth layer is a NoPE layer with global "
    "attention (no_rope_layers, default interval 4 in transformers' Llama4TextConfig), so 36 of "
    "48 layers cache at most one chunk. Each MoE layer routes a token to 1 expert and always runs "
    "one shared expert of intermediate_size. The published totals count the vision encoder too.")

RECENT_MODELS: list[ModelPreset] = [
    ModelPreset(
        "qwen3-8b", "Qwen3-8B",
        _qwen3(4096, 36, 32, 8, 12288),
        "huggingface.co/Qwen/Qwen3-8B config.json and model card (8.2B parameters, 6.95B "
        "non-embedding); Qwen Team 2025, Qwen3 Technical Report",
        notes="Per-head RMSNorms on queries and keys (QK-norm) replace Qwen2's Q/K/V biases.",
    ),
    ModelPreset(
        "qwen3-32b", "Qwen3-32B",
        _qwen3(5120, 64, 64, 8, 25600),
        "huggingface.co/Qwen/Qwen3-32B config.json and model card (32.8B parameters, 31.2B "
        "non-embedding); Qwen Team 2025, Qwen3 Technical Report",
    ),
    ModelPreset(
        "qwen3-30b-a3b", "Qwen3-30B-A3B",
        _qwen3(2048, 48, 32, 4, 6144, moe_intermediate_size=768, num_experts=128,
               num_experts_per_tok=8, decoder_sparse_step=1, mlp_only_layers=[],
               norm_topk_prob=True),
        "huggingface.co/Qwen/Qwen3-30B-A3B config.json and model card (30.5B total, 3.3B "
        "activated, 29.9B non-embedding); Qwen Team 2025, Qwen3 Technical Report",
        notes="Every layer is MoE (decoder_sparse_step 1, no mlp_only_layers): 128 experts of "
              "768, 8 per token, no shared expert; intermediate_size is unused.",
    ),
    ModelPreset(
        "qwen3-235b-a22b", "Qwen3-235B-A22B",
        _qwen3(4096, 94, 64, 4, 12288, moe_intermediate_size=1536, num_experts=128,
               num_experts_per_tok=8, decoder_sparse_step=1, mlp_only_layers=[],
               norm_topk_prob=True),
        "huggingface.co/Qwen/Qwen3-235B-A22B config.json and model card (235B total, 22B "
        "activated); Qwen Team 2025, Qwen3 Technical Report",
        notes="Every layer is MoE: 128 experts of 1536, 8 per token, no shared expert. 64 query "
              "heads share 4 KV heads (GQA group of 16).",
    ),
    ModelPreset(
        "llama-4-scout", "Llama-4-Scout-17B-16E",
        _llama4(16, 1, 10485760, use_qk_norm=True,
                rope_scaling={"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                              "high_freq_factor": 1.0, "original_max_position_embeddings": 8192}),
        "huggingface.co/meta-llama/Llama-4-Scout-17B-16E config.json (text_config); Meta 2025, "
        "Llama 4 model card (17B active, 109B total, 10M context)",
        notes=_LLAMA4_NOTE + " Scout: every layer is MoE (interleave_moe_layer_step 1), 16 experts.",
    ),
    ModelPreset(
        "llama-4-maverick", "Llama-4-Maverick-17B-128E",
        _llama4(128, 2, 1048576, use_qk_norm=False, rope_scaling=None),
        "huggingface.co/meta-llama/Llama-4-Maverick-17B-128E config.json (text_config); Meta "
        "2025, Llama 4 model card (17B active, 400B total, 1M context)",
        notes=_LLAMA4_NOTE + " Maverick: MoE and dense layers alternate (interleave_moe_layer_step "
              "2: the odd layers hold 128 experts, the even ones a dense MLP of "
              "intermediate_size_mlp 16384).",
    ),
    ModelPreset(
        "gemma-3-27b", "Gemma-3-27B",
        {
            "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3_text",
            "hidden_size": 5376, "num_hidden_layers": 62, "num_attention_heads": 32,
            "num_key_value_heads": 16, "head_dim": 128, "intermediate_size": 21504,
            "vocab_size": 262208, "max_position_embeddings": 131072,
            "sliding_window": 1024, "sliding_window_pattern": 6, "query_pre_attn_scalar": 168,
            "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
            "rope_scaling": {"rope_type": "linear", "factor": 8.0},
            "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": True,
            "torch_dtype": "bfloat16",
        },
        "huggingface.co/google/gemma-3-27b-it config.json (text_config; vocab_size, "
        "max_position_embeddings and sliding_window_pattern from transformers' Gemma3TextConfig "
        "defaults); Gemma Team 2025, Gemma 3 Technical Report (5 local layers per global layer, "
        "local window 1024; 1,416M embedding and 25,600M non-embedding parameters)",
        notes="Five local (sliding, 1,024-token window) layers for every global layer, starting "
              "with a local one: layers 6, 12, ..., 60 (1-based) are global, 10 of 62. Embeddings "
              "are tied to the output head. The report's 1,416M embedding parameters differ a "
              "little from 262,208 x 5,376 = 1,409.6M; its 25,600M non-embedding parameters match "
              "the config exactly. The vision encoder (417M) is not counted here.",
    ),
    ModelPreset(
        "gpt-oss-20b", "gpt-oss-20b",
        {
            "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss",
            "hidden_size": 2880, "num_hidden_layers": 24,
            "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
            "intermediate_size": 2880, "vocab_size": 201088,
            "max_position_embeddings": 131072, "initial_context_length": 4096,
            "rope_theta": 150000.0, "sliding_window": 128,
            "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                             "beta_slow": 1.0, "original_max_position_embeddings": 4096,
                             "truncate": False},
            "layer_types": _gpt_oss_layer_types(24),
            "num_local_experts": 32, "num_experts_per_tok": 4, "experts_per_token": 4,
            "attention_bias": True,
            "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        },
        "huggingface.co/openai/gpt-oss-20b config.json; OpenAI 2025, gpt-oss-120b & gpt-oss-20b "
        "model card (20.91B total, 3.61B active; fits in 16 GB with MXFP4 experts)",
        notes="Layers alternate sliding-window (128 tokens) and full attention, starting with a "
              "sliding one; each head has a learned attention-sink logit (no cache). 32 experts, "
              "4 per token. Expert weights ship in MXFP4, the rest in BF16.",
    ),
    ModelPreset(
        "kimi-k2", "Kimi-K2-Instruct",
        {
            "architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2",
            "hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 64,
            "num_key_value_heads": 64, "intermediate_size": 18432, "vocab_size": 163840,
            "max_position_embeddings": 131072,
            "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64, "v_head_dim": 128,
            "moe_intermediate_size": 2048, "n_routed_experts": 384, "n_shared_experts": 1,
            "num_experts_per_tok": 8, "first_k_dense_replace": 1, "moe_layer_freq": 1,
            "n_group": 1, "topk_group": 1, "topk_method": "noaux_tc", "scoring_func": "sigmoid",
            "routed_scaling_factor": 2.827, "num_nextn_predict_layers": 0,
            "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        },
        "huggingface.co/moonshotai/Kimi-K2-Instruct config.json and model card (MLA, 384 experts, "
        "1T total / 32B activated parameters); Kimi Team 2025, Kimi K2: Open Agentic Intelligence",
        notes="DeepSeek-V3's architecture with 64 attention heads instead of 128, 384 routed "
              "experts instead of 256 and one dense first layer instead of three. MLA caches the "
              "same 512 + 64 values per token and layer as DeepSeek-V3. The card's 1T and 32B are "
              "rounded: the config gives 1.026T, and 32.9B active with the input embedding "
              "(31.7B without). RoPE keys (rope_theta, YaRN scaling) are not copied: the "
              "estimators do not read them.",
    ),
]
"""The 2025 model presets, in the order ``inferview calc models`` lists them."""
