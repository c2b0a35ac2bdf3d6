"""Model and GPU presets: published configurations only, each with its source.

Model presets are Hugging Face ``config.json``-style dicts holding the keys the estimators read
(``inferview.reference.estimators``), copied from the model repository's ``config.json`` named in
``source`` (plus the paper where the repository is not public). GPU presets hold the memory
capacity, dense BF16 tensor-core peak and HBM/GDDR bandwidth from the vendor's datasheet.

Memory capacities: vendors write "80 GB", "141 GB", "192 GB" for memories built from binary-sized
HBM/GDDR stacks (an A100 80GB reports 81920 MiB), so the presets store ``N * 2**30`` bytes for an
"N GB" datasheet figure. Usable memory is somewhat lower (ECC, driver and framework reservations).
Peak FLOP/s are *dense* (without 2:4 structured sparsity, which datasheets quote at twice the value).

Pure Python; no torch.
"""

from __future__ import annotations

import difflib
from typing import Any

from inferview.reference.preset_types import GiB, GpuPreset, ModelPreset
from inferview.reference.presets_2025 import RECENT_MODELS

__all__ = ["GPUS", "MODELS", "GiB", "GpuPreset", "ModelPreset", "get_gpu", "get_model"]


def _llama(hidden: int, layers: int, heads: int, kv_heads: int, ffn: int, vocab: int,
           max_pos: int, rope_theta: float, **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "intermediate_size": ffn,
        "vocab_size": vocab,
        "max_position_embeddings": max_pos,
        "rope_theta": rope_theta,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }
    cfg.update(extra)
    return cfg


_GPT_OSS_LAYERS = 36

MODELS: dict[str, ModelPreset] = {
    p.name: p
    for p in [
        ModelPreset(
            "llama-2-7b", "Llama-2-7B",
            _llama(4096, 32, 32, 32, 11008, 32000, 4096, 10000.0, torch_dtype="float16"),
            "huggingface.co/meta-llama/Llama-2-7b-hf config.json; Touvron et al. 2023, Llama 2 (6.74B parameters)",
        ),
        ModelPreset(
            "llama-2-70b", "Llama-2-70B",
            _llama(8192, 80, 64, 8, 28672, 32000, 4096, 10000.0, torch_dtype="float16"),
            "huggingface.co/meta-llama/Llama-2-70b-hf config.json; Touvron et al. 2023, Llama 2 (GQA, 8 KV heads)",
        ),
        ModelPreset(
            "llama-3-8b", "Llama-3-8B",
            _llama(4096, 32, 32, 8, 14336, 128256, 8192, 500000.0),
            "huggingface.co/meta-llama/Meta-Llama-3-8B config.json",
        ),
        ModelPreset(
            "llama-3-70b", "Llama-3-70B",
            _llama(8192, 80, 64, 8, 28672, 128256, 8192, 500000.0),
            "huggingface.co/meta-llama/Meta-Llama-3-70B config.json",
        ),
        ModelPreset(
            "llama-3.1-405b", "Llama-3.1-405B",
            _llama(16384, 126, 128, 8, 53248, 128256, 131072, 500000.0,
                   rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
            "huggingface.co/meta-llama/Llama-3.1-405B config.json; Llama Team 2024, The Llama 3 Herd of Models (Table 3)",
        ),
        ModelPreset(
            "mistral-7b", "Mistral-7B-v0.1",
            {
                "architectures": ["MistralForCausalLM"], "model_type": "mistral",
                "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000,
                "max_position_embeddings": 32768, "rope_theta": 10000.0, "sliding_window": 4096,
                "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16",
            },
            "huggingface.co/mistralai/Mistral-7B-v0.1 config.json; Jiang et al. 2023, Mistral 7B (sliding window 4096)",
        ),
        ModelPreset(
            "mixtral-8x7b", "Mixtral-8x7B-v0.1",
            {
                "architectures": ["MixtralForCausalLM"], "model_type": "mixtral",
                "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000,
                "max_position_embeddings": 32768, "rope_theta": 1000000.0, "sliding_window": None,
                "num_local_experts": 8, "num_experts_per_tok": 2,
                "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16",
            },
            "huggingface.co/mistralai/Mixtral-8x7B-v0.1 config.json; Mistral AI 2023, Mixtral of experts "
            "announcement (46.7B total, 12.9B per token); Jiang et al. 2024, Mixtral of Experts (47B, 13B active)",
            notes="sliding_window is null in the official config.json (an early version said 4096): "
                  "Mixtral attends densely over its 32k context. The 12.9B active figure counts the "
                  "input embedding.",
        ),
        ModelPreset(
            "qwen2.5-72b", "Qwen2.5-72B-Instruct",
            {
                "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
                "hidden_size": 8192, "num_hidden_layers": 80, "num_attention_heads": 64,
                "num_key_value_heads": 8, "intermediate_size": 29568, "vocab_size": 152064,
                "max_position_embeddings": 32768, "rope_theta": 1000000.0,
                "sliding_window": 131072, "use_sliding_window": False, "max_window_layers": 70,
                "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16",
            },
            "huggingface.co/Qwen/Qwen2.5-72B-Instruct config.json; Qwen Team 2024, Qwen2.5 Technical Report",
            notes="config.json sets sliding_window 131072 but use_sliding_window false: every layer "
                  "attends to the full context (max_window_layers is then unused); the estimators "
                  "honour use_sliding_window. Q/K/V "
                  "projections carry biases (implied by model_type qwen2; config.json has no key for it).",
        ),
        ModelPreset(
            "deepseek-v3", "DeepSeek-V3",
            {
                "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
                "hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128,
                "num_key_value_heads": 128, "intermediate_size": 18432, "vocab_size": 129280,
                "max_position_embeddings": 163840, "rope_theta": 10000.0,
                "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
                "qk_rope_head_dim": 64, "v_head_dim": 128,
                "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1,
                "num_experts_per_tok": 8, "first_k_dense_replace": 3, "moe_layer_freq": 1,
                "n_group": 8, "topk_group": 4, "num_nextn_predict_layers": 1,
                "topk_method": "noaux_tc", "scoring_func": "sigmoid",
                "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096,
                                 "beta_fast": 32, "beta_slow": 1, "mscale": 1.0,
                                 "mscale_all_dim": 1.0},
                "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16",
            },
            "huggingface.co/deepseek-ai/DeepSeek-V3 config.json; DeepSeek-AI 2024, DeepSeek-V3 "
            "Technical Report (MLA, 671B total / 37B active)",
            notes="Multi-head latent attention: each layer caches the 512-dim compressed KV latent "
                  "plus the 64-dim decoupled RoPE key per token. The 671B total excludes the "
                  "multi-token-prediction module (num_nextn_predict_layers), as the report does.",
        ),
        ModelPreset(
            "gpt-oss-120b", "gpt-oss-120b",
            {
                "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss",
                "hidden_size": 2880, "num_hidden_layers": _GPT_OSS_LAYERS,
                "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
                "intermediate_size": 2880, "vocab_size": 201088,
                "max_position_embeddings": 131072, "initial_context_length": 4096,
                "rope_theta": 150000.0, "sliding_window": 128,
                "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                                 "beta_slow": 1.0, "original_max_position_embeddings": 4096,
                                 "truncate": False},
                "layer_types": ["sliding_attention" if i % 2 == 0 else "full_attention"
                                for i in range(_GPT_OSS_LAYERS)],
                "num_local_experts": 128, "num_experts_per_tok": 4, "experts_per_token": 4,
                "attention_bias": True,
                "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16",
            },
            "huggingface.co/openai/gpt-oss-120b config.json; OpenAI 2025, gpt-oss-120b & "
            "gpt-oss-20b model card (116.83B total, 5.13B active)",
            notes="Layers alternate sliding-window (128 tokens) and full attention. Expert weights "
                  "ship in MXFP4 (about 4.25 bits per parameter); attention, router and embeddings in BF16.",
        ),
        *RECENT_MODELS,
    ]
}
"""Model presets by name (the 2025 releases in ``inferview.reference.presets_2025``)."""

GPUS: dict[str, GpuPreset] = {
    g.name: g
    for g in [
        GpuPreset("a100-80gb", "NVIDIA A100 SXM 80GB", 80 * GiB, 312e12, 2039e9,
                  "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM: 2,039 GB/s; BF16 312 TFLOPS dense)"),
        GpuPreset("h100-sxm", "NVIDIA H100 SXM 80GB", 80 * GiB, 989.4e12, 3.35e12,
                  "NVIDIA H100 Tensor Core GPU datasheet (SXM: 3.35 TB/s; BF16 1,979 TFLOPS with sparsity = 989.4 dense)"),
        GpuPreset("h200", "NVIDIA H200 SXM 141GB", 141 * GiB, 989.4e12, 4.8e12,
                  "NVIDIA H200 Tensor Core GPU datasheet (141 GB HBM3e, 4.8 TB/s; BF16 1,979 TFLOPS with "
                  "sparsity = 989.4 dense). 141 GB is what is enabled of six 24 GB stacks, not a "
                  "binary size: read as 141 GiB it is an upper bound, and software sees a little less"),
        GpuPreset("l4", "NVIDIA L4 24GB", 24 * GiB, 121e12, 300e9,
                  "NVIDIA L4 Tensor Core GPU datasheet (24 GB GDDR6, 300 GB/s; BF16 242 TFLOPS with sparsity = 121 dense)"),
        GpuPreset("rtx-4090", "NVIDIA GeForce RTX 4090", 24 * GiB, 165.2e12, 1008e9,
                  "NVIDIA Ada Lovelace architecture whitepaper (RTX 4090: 24 GB GDDR6X, 1,008 GB/s; "
                  "peak BF16 tensor with FP32 accumulate 165.2 TFLOPS dense)"),
        GpuPreset("mi300x", "AMD Instinct MI300X", 192 * GiB, 1307.4e12, 5.3e12,
                  "AMD Instinct MI300X data sheet (192 GB HBM3, 5.3 TB/s; peak BF16 1,307.4 TFLOPS dense)"),
    ]
}
"""GPU presets by name."""


def _did_you_mean(key: str, names: dict[str, Any]) -> str:
    close = difflib.get_close_matches(key, list(names), n=1, cutoff=0.75)
    return f" (did you mean {close[0]}?)" if close else ""


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(" ", "-")


def get_model(name: str) -> ModelPreset:
    """The model preset called ``name`` (case-insensitive; ``_`` and spaces read as ``-``).

    Raises ``KeyError`` naming the known presets when there is none.
    """
    key = _norm(name)
    if key in MODELS:
        return MODELS[key]
    for p in MODELS.values():
        if _norm(p.title) == key:
            return p
    raise KeyError(f"unknown model {name!r}{_did_you_mean(key, MODELS)}; known: {', '.join(MODELS)}")


def get_gpu(name: str) -> GpuPreset:
    """The GPU preset called ``name`` (case-insensitive). Raises ``KeyError`` when unknown."""
    key = _norm(name)
    if key in GPUS:
        return GPUS[key]
    aliases = {"a100": "a100-80gb", "h100": "h100-sxm", "h100-80gb": "h100-sxm", "4090": "rtx-4090",
               "h200-sxm": "h200"}
    if key in aliases:
        return GPUS[aliases[key]]
    raise KeyError(f"unknown GPU {name!r}{_did_you_mean(key, GPUS)}; known: {', '.join(GPUS)}")
