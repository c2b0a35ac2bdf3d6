"""KV-cache size: values and bytes per token, for a batch at a context length, and the largest
batch or context that fits a memory budget (the reference for the ``kv-cache-size`` challenge).

Layers that slide keep ``min(seq_len, sliding_window)`` tokens, chunked layers (Llama 4)
``min(seq_len, attention_chunk_size)``; attention sinks (gpt-oss) are learned logits and cache
nothing. Block-scaled formats (``mxfp4``, ``nvfp4``, ``int4-gN``) count their scales, and
``fp8-mla`` is DeepSeek's FlashMLA cache layout (see ``inferview.reference.dtypes``).

Pure Python; no torch.
"""

from __future__ import annotations

from fractions import Fraction

from inferview.reference.dtypes import bits_to_bytes, exact_bits, get_dtype
from inferview.reference.model_shape import (
    Config,
    _int,
    _opt_int,
    head_dim,
    is_mla,
    layer_kinds,
    layer_span,
    num_kv_heads,
    tokens_cached,
)


def kv_values_per_token(config: Config) -> int:
    """Values one layer caches per token.

    MLA: ``kv_lora_rank + qk_rope_head_dim`` (one compressed latent shared by every head plus the
    decoupled RoPE key). Otherwise ``2 * num_key_value_heads * head_dim`` (K and V).
    """
    if is_mla(config):
        return _int(config, "kv_lora_rank") + (_opt_int(config, "qk_rope_head_dim") or 0)
    return 2 * num_kv_heads(config) * head_dim(config)


def kv_bits_per_token_layer(config: Config, dtype: str = "bf16") -> Fraction:
    """Bits one layer stores per cached token: ``kv_values_per_token * bits`` (scales included).

    ``fp8-mla`` (MLA only): ``kv_lora_rank`` fp8 values with one fp32 scale per 128 of them plus
    the RoPE key in bf16 — ``512 * 8 + 4 * 32 + 64 * 16 = 5248`` bits = 656 bytes for DeepSeek-V3,
    as FlashMLA's README lays it out.
    """
    d = get_dtype(dtype)
    if d.mla_only:
        if not is_mla(config):
            raise ValueError(f"{d.name} is DeepSeek's MLA cache format; this model caches keys "
                             "and values per KV head (use fp8, int8, nvfp4...)")
        latent = _int(config, "kv_lora_rank")
        rope = _opt_int(config, "qk_rope_head_dim") or 0
        return latent * d.bits + rope * exact_bits(d.rope_dtype or "bf16")
    return kv_values_per_token(config) * exact_bits(dtype)


def kv_cache_values(config: Config, seq_len: int, batch_size: int = 1) -> int:
    """Total cached values: ``batch * sum over layers of values_per_token * tokens_cached``."""
    if seq_len < 0 or batch_size < 0:
        raise ValueError("seq_len and batch_size must be >= 0")
    per_tok = kv_values_per_token(config)
    tokens = sum(tokens_cached(config, k, seq_len) for k in layer_kinds(config))
    return batch_size * per_tok * tokens


def _cache_bits(config: Config, seq_len: int, batch_size: int, dtype: str) -> Fraction:
    if seq_len < 0 or batch_size < 0:
        raise ValueError("seq_len and batch_size must be >= 0")
    tokens = sum(tokens_cached(config, k, seq_len) for k in layer_kinds(config))
    return batch_size * tokens * kv_bits_per_token_layer(config, dtype)


def kv_cache_bytes(config: Config, seq_len: int, batch_size: int = 1, dtype: str = "bf16") -> int:
    """Exact KV-cache size in bytes for ``batch_size`` sequences of ``seq_len`` tokens.

    ``bytes = ceil(batch * sum_layers(values_per_token * tokens_cached(layer)) * bits / 8)`` with
    ``values_per_token = 2 * kv_heads * head_dim`` (or ``kv_lora_rank + qk_rope_head_dim`` for MLA)
    and ``tokens_cached = min(seq_len, sliding_window)`` for sliding layers,
    ``min(seq_len, attention_chunk_size)`` for chunked ones, ``seq_len`` otherwise; ``bits``
    counts block scales (``kv_bits_per_token_layer``).
    Example: Llama-3-70B, 131072 tokens, bf16: 80 * 2 * 8 * 128 * 2 B * 131072 = 40 GiB.
    """
    return bits_to_bytes(_cache_bits(config, seq_len, batch_size, dtype))


def kv_bytes_per_token(config: Config, dtype: str = "bf16") -> float:
    """Bytes one token adds to the cache while it lies inside every window and chunk (all layers
    cache it): ``num_layers * values_per_token * bits / 8``. Fractional only for 4-bit formats with
    an odd value count.
    """
    n = _int(config, "num_hidden_layers")
    return float(n * kv_bits_per_token_layer(config, dtype) / 8)


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
    per_seq_bits = _cache_bits(config, seq_len, 1, dtype)
    if per_seq_bits == 0:
        raise ValueError("the cache of one sequence is empty (seq_len 0?): any batch fits")
    return int((8 * budget) // per_seq_bits)


def max_context_length(config: Config, gpu_bytes: int, weight_bytes: int, batch_size: int = 1,
                       dtype: str = "bf16", limit: int | None = None) -> int | None:
    """Largest ``seq_len`` (at most ``limit`` if given) whose cache for ``batch_size`` sequences
    fits in ``gpu_bytes - weight_bytes``.

    The cache grows monotonically with ``seq_len`` (linearly, and only up to the window or chunk
    on sliding and chunked layers), so a binary search finds the boundary. Returns ``None`` when
    memory never binds: every layer slides or attends in chunks, the cache of a full window fits,
    and no ``limit`` was given; returns ``limit`` when even ``limit`` tokens fit.
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
    spans = [layer_span(config, k) for k in layer_kinds(config)]
    if all(s is not None for s in spans):
        if fits(max(s for s in spans if s is not None)):
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
