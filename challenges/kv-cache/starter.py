"""Challenge kv-cache: a KV cache and the attention that reads it.

Fill in the three methods and the function. `inferview grade kv-cache <this file>` runs the checks.
"""

from __future__ import annotations

import torch
from torch import Tensor


class KVCache:
    """Keys and values of one attention layer, for `batch_size` sequences growing together."""

    def __init__(self, batch_size: int, num_kv_heads: int, head_dim: int, max_seq_len: int,
                 dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu") -> None:
        self.seq_len = 0
        raise NotImplementedError("KVCache.__init__: allocate the key and value storage")

    def update(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Append k, v (B, Hkv, t_new, D); return all cached keys and values (B, Hkv, seq_len, D)."""
        raise NotImplementedError("KVCache.update: validate, append, return everything cached")

    def reset(self) -> None:
        """Empty the cache."""
        raise NotImplementedError("KVCache.reset: forget every cached token")


def cached_attention(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """q (B, Hq, t_new, D) at the last t_new positions; k, v (B, Hkv, seq_len, D) -> (B, Hq, t_new, D)."""
    raise NotImplementedError("cached_attention: causal attention with the mask aligned to the end")
