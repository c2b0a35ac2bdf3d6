"""Bits with numpy int64 per layer, a dataclass for the layer layout, closed-form batch."""
from dataclasses import dataclass

import numpy as np

BITS = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4}


@dataclass(frozen=True)
class Layout:
    per_token: int
    window: int | None
    sliding: tuple[bool, ...]

    @classmethod
    def of(cls, c: dict) -> "Layout":
        n = c["num_hidden_layers"]
        if c.get("kv_lora_rank"):
            per = c["kv_lora_rank"] + (c.get("qk_rope_head_dim") or 0)
        else:
            h = c["num_attention_heads"]
            kv = c.get("num_key_value_heads") or h
            d = c.get("head_dim") or c["hidden_size"] // h
            per = 2 * kv * d
        w = c.get("sliding_window")
        if w is None:
            sl = (False,) * n
        elif c.get("layer_types") is not None:
            sl = tuple(t == "sliding_attention" for t in c["layer_types"])
        else:
            sl = (True,) * n
        return cls(per, w, sl)

    def values(self, seq_len: int) -> int:
        toks = np.array([min(seq_len, self.window) if s else seq_len for s in self.sliding], dtype=np.int64)
        return int((toks * self.per_token).sum())


def kv_cache_bytes(config, seq_len, batch_size=1, dtype="bf16"):
    bits = Layout.of(config).values(seq_len) * batch_size * BITS[dtype]
    return (bits + 7) // 8


def max_batch_size(config, seq_len, gpu_bytes, weight_bytes, dtype="bf16"):
    free = gpu_bytes - weight_bytes
    if free < 0:
        return 0
    return free * 8 // (Layout.of(config).values(seq_len) * BITS[dtype])
