"""Memory and compute estimators over Hugging Face ``config.json``-style model configs.

Sources: the KV-cache arithmetic of the seed "Inference interview guide — The KV cache" (per token
and layer, keys and values: ``2 * num_kv_heads * head_dim`` values); Shazeer 2019 (MQA) and
Ainslie et al. 2023 (GQA) for shared KV heads; Beltagy et al. 2020 / Jiang et al. 2023 (Mistral)
for sliding-window attention; DeepSeek-AI 2024, DeepSeek-V2/V3 (multi-head latent attention:
``kv_lora_rank + qk_rope_head_dim`` cached values per token and layer); Fedus et al. 2022 and
Jiang et al. 2024 (Mixtral) for total versus active parameters; Kaplan et al. 2020 (2 FLOPs per
parameter per token) and Williams et al. 2009 (roofline, arithmetic intensity).

``kv_cache_bytes`` and ``max_batch_size`` are the reference for the ``kv-cache-size`` challenge and
follow CHALLENGES.md exactly:

- ``num_key_value_heads`` defaults to ``num_attention_heads`` (MHA); 1 is MQA; anything between is
  GQA. ``head_dim`` defaults to ``hidden_size // num_attention_heads``.
- A layer with ``kv_lora_rank`` (MLA) caches ``kv_lora_rank + qk_rope_head_dim`` values per token;
  any other layer caches ``2 * num_key_value_heads * head_dim`` (a key and a value per KV head).
- ``layer_types`` (``"full_attention"`` / ``"sliding_attention"``, one per layer) says which layers
  slide; without it every layer slides when ``sliding_window`` is set (not null). A sliding layer
  caches ``min(seq_len, sliding_window)`` tokens. (Extensions for real configs, keys the challenge
  never sends: Qwen2's ``use_sliding_window``/``max_window_layers`` and Gemma/Cohere2's
  ``sliding_window_pattern``, read as transformers reads them; Llama 4's ``"chunked_attention"``
  layers, which cache ``min(seq_len, attention_chunk_size)`` tokens; see ``layer_kinds``.)
- Bits per value: fp32 32, fp16/bf16 16, fp8/int8 8, int4 4. The byte count is exact and rounded up
  to a whole byte once, for the whole cache. (Extensions: block-scaled formats that count their
  scales, ``mxfp4`` 4.25, ``nvfp4`` 4.5, ``int4-g128`` 4.125 bits, and FlashMLA's ``fp8-mla``
  cache, 656 bytes per token and layer for DeepSeek-V3; see ``dtypes``.)

Mixture-of-experts layouts: experts in every layer (Mixtral, gpt-oss, Qwen3-MoE), after dense first
layers (DeepSeek-V3, Kimi K2), or interleaved with dense layers (Llama 4 Maverick), with shared
experts where the model has them; see ``model_shape.moe_layers`` and ``param_counts``.

The functions live in one module per concern (``dtypes``, ``model_shape``, ``kv_memory``,
``param_counts``, ``flops``); this module gathers them under one name. Pure Python; no torch.
"""

from __future__ import annotations

from inferview.reference.dtypes import (
    DTYPE_BITS,
    DTYPES,
    KV_DTYPES,
    WEIGHT_DTYPES,
    bytes_to_fit,
    dtype_bits,
    get_dtype,
)
from inferview.reference.flops import (
    attention_flops,
    attention_matrix_bytes,
    decode_arithmetic_intensity,
    decode_step_bytes,
    decode_step_flops,
    ridge_point,
)
from inferview.reference.kv_memory import (
    kv_bits_per_token_layer,
    kv_bytes_per_token,
    kv_cache_bytes,
    kv_cache_values,
    kv_values_per_token,
    max_batch_size,
    max_context_length,
)
from inferview.reference.model_shape import (
    head_dim,
    is_mla,
    layer_kinds,
    layer_span,
    moe_layers,
    num_kv_heads,
    tokens_cached,
)
from inferview.reference.param_counts import (
    QUANT_SCOPES,
    WEIGHT_SCOPES,
    ParamCounts,
    param_counts,
    quantized_part,
    quantized_weight_bytes,
    scoped_weight_bytes,
    weight_bytes,
)

__all__ = [
    "DTYPES",
    "DTYPE_BITS",
    "KV_DTYPES",
    "QUANT_SCOPES",
    "WEIGHT_DTYPES",
    "WEIGHT_SCOPES",
    "ParamCounts",
    "attention_flops",
    "attention_matrix_bytes",
    "bytes_to_fit",
    "decode_arithmetic_intensity",
    "decode_step_bytes",
    "decode_step_flops",
    "dtype_bits",
    "get_dtype",
    "head_dim",
    "is_mla",
    "kv_bits_per_token_layer",
    "kv_bytes_per_token",
    "kv_cache_bytes",
    "kv_cache_values",
    "kv_values_per_token",
    "layer_kinds",
    "layer_span",
    "max_batch_size",
    "max_context_length",
    "moe_layers",
    "num_kv_heads",
    "param_counts",
    "quantized_part",
    "quantized_weight_bytes",
    "ridge_point",
    "scoped_weight_bytes",
    "tokens_cached",
    "weight_bytes",
]
