"""Challenge kv-cache-size: estimate the KV cache of a model from its config.json.

`inferview grade kv-cache-size <this file>` runs the checks.
"""

from __future__ import annotations


def kv_cache_bytes(config: dict, seq_len: int, batch_size: int = 1, dtype: str = "bf16") -> int:
    """Exact bytes of the KV cache for `batch_size` sequences of `seq_len` tokens."""
    raise NotImplementedError("kv_cache_bytes: layers x tokens x values per token x bits / 8")


def max_batch_size(config: dict, seq_len: int, gpu_bytes: int, weight_bytes: int,
                   dtype: str = "bf16") -> int:
    """Largest batch whose cache fits in gpu_bytes - weight_bytes (0 if none)."""
    raise NotImplementedError("max_batch_size: divide the budget by one sequence's cache")
