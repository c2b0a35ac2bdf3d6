"""KV-cache size: values and bytes per token, for a batch at a context length, and the largest
batch or context that fits a memory budget (the reference for the ``kv-cache-size`` challenge).

Pure Python; no torch.
"""

from __future__ import annotations

from inferview.reference.dtypes import dtype_bits
from inferview.reference.model_shape import (
    Config,
    _int,
    _opt_int,
    head_dim,
    is_mla,
    layer_kinds,
    num_kv_heads,
)


def kv_values_per_token(config: Config) -> int:
    """Values one layer caches per token.

    MLA: ``kv_lora_rank + qk_rope_head_dim`` (one compressed latent shared by every head plus the
    decoupled RoPE key). Otherwise ``2 * num_key_value_heads * head_dim`` (K and V).
    """
    if is_mla(config):
        return _int(config, "kv_lora_rank") + (_opt_int(config, "qk_rope_head_dim") or 0)
    return 2 * num_kv_heads(config) * head_dim(config)


def _tokens_cached(config: Config, kind: str, seq_len: int) -> int:
    if kind == "sliding_attention":
        return min(seq_len, _int(config, "sliding_window"))
    return seq_len


def kv_cache_values(config: Config, seq_len: int, batch_size: int = 1) -> int:
    """Total cached values: ``batch * sum over layers of values_per_token * tokens_cached``."""
    if seq_len < 0 or batch_size < 0:
        raise ValueError("seq_len and batch_size must be >= 0")
    per_tok = kv_values_per_token(config)
    tokens = sum(_tokens_cached(config, k, seq_len) for k in layer_kinds(config))
    return batch_size * per_tok * tokens


def kv_cache_bytes(config: Config, seq_len: int, batch_size: int = 1, dtype: str = "bf16") -> int:
    """Exact KV-cache size in bytes for ``batch_size`` sequences of ``seq_len`` tokens.

    ``bytes = ceil(batch * sum_layers(values_per_token * tokens_cached(layer)) * bits / 8)`` with
    ``values_per_token = 2 * kv_heads * head_dim`` (or ``kv_lora_rank + qk_rope_head_dim`` for MLA)
    and ``tokens_cached = min(seq_len, sliding_window)`` for sliding layers, ``seq_len`` otherwise.
    Example: Llama-3-70B, 131072 tokens, bf16: 80 * 2 * 8 * 128 * 2 B * 131072 = 40 GiB.
    """
    bits = dtype_bits(dtype)
    return -(-kv_cache_values(config, seq_len, batch_size) * bits // 8)


def kv_bytes_per_token(config: Config, dtype: str = "bf16") -> float:
    """Bytes one token adds to the cache while it lies inside every window (all layers cache it):
    ``num_layers * values_per_token * bits / 8``. Fractional only for int4 with an odd value count.
    """
    n = _int(config, "num_hidden_layers")
    return n * kv_values_per_token(config) * dtype_bits(dtype) / 8


def max_batch_size(config: Config, seq_len: int, gpu_bytes: int, weight_bytes: int,
                   dtype: str = "bf16") -> int:
    """Largest batch whose cache of ``seq_len`` tokens per sequence fits in
    ``gpu_bytes - weight_bytes`` (exact fit fits); 0 when none does.

    ``kv_cache_bytes(B) = ceil(B * V * bits / 8) <= budget`` holds exactly when
    ``B * V * bits <= 8 * budget``, so ``B = floor(8 * budget / (V * bits))`` with ``V`` the values
    one sequence caches.
    """
    budget = gpu_bytes - weight_bytes
    if budget < 0:
        return 0
    per_seq_bits = kv_cache_values(config, seq_len, 1) * dtype_bits(dtype)
    if per_seq_bits == 0:
        raise ValueError("the cache of one sequence is empty (seq_len 0?): any batch fits")
    return (8 * budget) // per_seq_bits


def max_context_length(config: Config, gpu_bytes: int, weight_bytes: int, batch_size: int = 1,
                       dtype: str = "bf16", limit: int | None = None) -> int | None:
    """Largest ``seq_len`` (at most ``limit`` if given) whose cache for ``batch_size`` sequences
    fits in ``gpu_bytes - weight_bytes``.

    The cache grows monotonically with ``seq_len`` (linearly, and only up to the window on sliding
    layers), so a binary search finds the boundary. Returns ``None`` when memory never binds:
    every layer slides, the full-window cache fits, and no ``limit`` was given; returns
    ``limit`` when even ``limit`` tokens fit.
    """
    budget = gpu_bytes - weight_bytes
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")

    def fits(s: int) -> bool:
        return kv_cache_bytes(config, s, batch_size, dtype) <= budget

    if kv_cache_values(config, 1, 1) == 0:
        raise ValueError("the config caches nothing per token (zero KV heads or head_dim?)")
    if budget < 0 or not fits(1):
        return 0
    kinds = layer_kinds(config)
    if all(k == "sliding_attention" for k in kinds):
        window = _int(config, "sliding_window")
        if fits(window):
            return limit
    if limit is not None and fits(limit):
        return limit
    lo, hi = 1, 2
    while fits(hi) and (limit is None or hi < limit):
        lo, hi = hi, hi * 2
    if limit is not None:
        hi = min(hi, limit)
    while hi - lo > 1:  # invariant: fits(lo), not fits(hi)
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo
