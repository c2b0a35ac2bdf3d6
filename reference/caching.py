"""Caching beyond one request: the tokens a block-hashed prefix cache reuses, and the KV cache a
request moves between GPUs or memory tiers (disaggregated prefill and decode, KV offload).

Sources:

- vLLM, *Automatic Prefix Caching* design document (``docs/design/prefix_caching.md``): a block's
  hash covers its parent block's hash, its own tokens and extra keys; only full blocks are cached.
  vLLM's KV-cache manager caps a hit at the prompt length minus one ("when all tokens hit the cache,
  we must recompute the last token to obtain logits"), so the hit is the largest multiple of the
  block size that is at most ``min(shared, prompt - 1)``.
- Zhong et al. 2024, *DistServe* (OSDI 2024); Patel et al. 2024, *Splitwise* (ISCA 2024); Qin et
  al. 2025, *Mooncake* (FAST 2025): disaggregated serving moves each request's KV cache from the
  prefill instance to the decode instance. Its size is the KV-cache bytes of the prompt
  (``inferview.reference.kv_memory.kv_cache_bytes``: sliding layers hold at most their window).
- Time over a link: bytes / bandwidth, the bandwidth-bound lower limit (no latency or protocol
  overhead); the link's bandwidth is a parameter in GB/s (10^9 bytes per second).

Pure Python; no torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inferview.reference.kv_memory import kv_cache_bytes
from inferview.reference.quantity import Quantity

__all__ = [
    "QUANTITIES",
    "kv_transfer_bytes",
    "kv_transfer_seconds",
    "prefix_cache_hit_tokens",
    "prefix_cache_prefill_tokens",
]


def _nonneg_int(value: Any, name: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or int(value) != value or int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def prefix_cache_hit_tokens(shared_tokens: int, prompt_tokens: int, block_size: int = 16) -> int:
    """Prompt tokens served from a block-hashed prefix cache: whole blocks of the shared prefix,
    at most ``prompt_tokens - 1`` (the last prompt token is always computed, for its logits).

    ``block_size x floor(min(shared, prompt - 1) / block_size)``. Example: 3,000 shared tokens of
    a 3,200-token prompt, 16-token blocks: 187 full blocks = 2,992 tokens.
    """
    b = _nonneg_int(block_size, "block_size", 1)
    n = _nonneg_int(prompt_tokens, "prompt_tokens", 1)
    s = _nonneg_int(shared_tokens, "shared_tokens")
    return b * (min(s, n - 1) // b)


def prefix_cache_prefill_tokens(shared_tokens: int, prompt_tokens: int, block_size: int = 16) -> int:
    """Prompt tokens that still need prefill: ``prompt - prefix_cache_hit_tokens``."""
    return int(prompt_tokens) - prefix_cache_hit_tokens(shared_tokens, prompt_tokens, block_size)


def kv_transfer_bytes(config: Mapping[str, Any], prompt_tokens: int, dtype: str = "bf16") -> int:
    """KV-cache bytes one request's prompt occupies, which disaggregated serving ships from the
    prefill to the decode instance: KV bytes per token x prompt tokens (per layer kind: sliding
    layers hold only their window). Example: Llama-3-70B, 8,192 tokens, bf16: 320 KiB x 8,192 =
    2.5 GiB."""
    n = _nonneg_int(prompt_tokens, "prompt_tokens", 1)
    return kv_cache_bytes(dict(config), n, 1, dtype)


def kv_transfer_seconds(config: Mapping[str, Any], prompt_tokens: int, link_gb_s: float,
                        dtype: str = "bf16") -> float:
    """Lower limit on the time to move that cache over a link of ``link_gb_s`` GB/s:
    ``kv_transfer_bytes / (link_gb_s x 10^9)``. Example: 2.5 GiB over 50 GB/s (one 400 Gb/s NIC):
    54 ms."""
    if not link_gb_s > 0:
        raise ValueError(f"link_gb_s must be > 0, got {link_gb_s!r}")
    return kv_transfer_bytes(config, prompt_tokens, dtype) / (float(link_gb_s) * 1e9)


QUANTITIES: list[Quantity] = [
    Quantity(
        "prefix_cache_hit_tokens", "tokens",
        "block_size x floor(min(shared prefix, prompt - 1) / block_size): only full blocks are "
        "cached, and the last prompt token is always recomputed (vLLM automatic prefix caching)",
        lambda c, p: float(prefix_cache_hit_tokens(int(p["shared_tokens"]), int(p["prompt_tokens"]),
                                                   int(p["block_size"]))),
        needs_model=False, required=("shared_tokens", "prompt_tokens"), defaults={"block_size": 16},
    ),
    Quantity(
        "prefix_cache_prefill_tokens", "tokens",
        "prompt - block_size x floor(min(shared prefix, prompt - 1) / block_size) (vLLM automatic "
        "prefix caching)",
        lambda c, p: float(prefix_cache_prefill_tokens(int(p["shared_tokens"]),
                                                       int(p["prompt_tokens"]), int(p["block_size"]))),
        needs_model=False, required=("shared_tokens", "prompt_tokens"), defaults={"block_size": 16},
    ),
    Quantity(
        "kv_transfer_bytes", "bytes",
        "KV bytes per token x prompt tokens (layers x 2 x kv_heads x head_dim x bytes per value x "
        "tokens; MLA: kv_lora_rank + qk_rope_head_dim values per token and layer)",
        lambda c, p: float(kv_transfer_bytes(c, int(p["prompt_tokens"]), str(p["dtype"]))),
        required=("prompt_tokens",), defaults={"dtype": "bf16"},
    ),
    Quantity(
        "kv_transfer_seconds", "seconds",
        "KV bytes per token x prompt tokens / link bandwidth (bytes/s): the bandwidth-bound lower "
        "limit on moving one request's cache",
        lambda c, p: kv_transfer_seconds(c, int(p["prompt_tokens"]), float(p["link_gb_s"]),
                                         str(p["dtype"])),
        required=("prompt_tokens", "link_gb_s"), defaults={"dtype": "bf16"},
    ),
]
"""The caching quantities numeric drills ask for (registered in ``formulas``)."""
