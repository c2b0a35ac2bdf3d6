"""Treats latent attention like multi-head attention: ignores kv_lora_rank and caches 2 x heads x head_dim."""

from __future__ import annotations

BITS = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4}


def _values_per_token(config: dict) -> int:
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    return 2 * kv_heads * head_dim


def _bits_per_sequence(config: dict, seq_len: int, dtype: str) -> int:
    window = config.get("sliding_window")
    kinds = config.get("layer_types")
    if kinds is None:
        kinds = ["sliding_attention" if window is not None else "full_attention"] * config["num_hidden_layers"]
    per_token = _values_per_token(config)
    total = 0
    for kind in kinds:
        tokens = min(seq_len, window) if kind == "sliding_attention" and window is not None else seq_len
        total += per_token * tokens
    return total * BITS[dtype]


def kv_cache_bytes(config: dict, seq_len: int, batch_size: int = 1, dtype: str = "bf16") -> int:
    bits = batch_size * _bits_per_sequence(config, seq_len, dtype)
    return (bits + 7) // 8


def max_batch_size(config: dict, seq_len: int, gpu_bytes: int, weight_bytes: int,
                   dtype: str = "bf16") -> int:
    budget = gpu_bytes - weight_bytes
    if budget < 0:
        return 0
    return (8 * budget) // _bits_per_sequence(config, seq_len, dtype)
