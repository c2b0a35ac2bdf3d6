"""max_batch_size scans batches 1..1024 only: short sequences on a large GPU fit more than that."""

from __future__ import annotations

from fractions import Fraction

BYTES = {"fp32": Fraction(4), "fp16": Fraction(2), "bf16": Fraction(2), "fp8": Fraction(1),
         "int8": Fraction(1), "int4": Fraction(1, 2)}


def kv_cache_bytes(config: dict, seq_len: int, batch_size: int = 1, dtype: str = "bf16") -> int:
    n_layers = config["num_hidden_layers"]
    window = config.get("sliding_window")
    if window is None:
        n_sliding = 0
    elif "layer_types" in config and config["layer_types"] is not None:
        n_sliding = sum(t == "sliding_attention" for t in config["layer_types"])
    else:
        n_sliding = n_layers
    n_full = n_layers - n_sliding

    if config.get("kv_lora_rank"):
        per_token_layer = config["kv_lora_rank"] + config.get("qk_rope_head_dim", 0)
    else:
        h = config["num_attention_heads"]
        d = config["head_dim"] if config.get("head_dim") else config["hidden_size"] // h
        per_token_layer = 2 * config.get("num_key_value_heads", h) * d

    tokens = n_full * seq_len + (n_sliding * min(seq_len, window) if n_sliding else 0)
    exact = batch_size * per_token_layer * tokens * BYTES[dtype]
    return -(-exact.numerator // exact.denominator)  # ceil


def max_batch_size(config: dict, seq_len: int, gpu_bytes: int, weight_bytes: int,
                   dtype: str = "bf16") -> int:
    budget = gpu_bytes - weight_bytes

    def fits(b: int) -> bool:
        return kv_cache_bytes(config, seq_len, b, dtype) <= budget

    if not fits(1):
        return 0
    best = 1
    for b in range(1, 1025):
        if fits(b):
            best = b
    return best
