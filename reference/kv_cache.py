"""A contiguous KV cache: one preallocated buffer per layer, written in place.

During generation every new token's keys and values are computed once and kept, so step ``t``
runs the model on one token instead of re-encoding the whole prefix: total work goes from
quadratic to linear in the output length (the seed's "recompute less"). The price is memory:
``2 * layers * batch * kv_heads * head_dim * seq_len * bytes`` — which is why GQA/MQA shrink
``kv_heads`` (Ainslie et al. 2023; Shazeer 2019).

This is the layout of gpt-fast's ``KVCache`` and of Hugging Face's ``StaticCache``: the buffers are
allocated once for ``max_seq_len`` tokens, an update is a slice assignment (no ``torch.cat``, which
would copy the whole cache every step), and the returned keys and values are views of the buffer
up to ``seq_len``. A rejected update leaves the cache exactly as it was.

The challenge ``kv-cache`` asks for this class (as ``KVCache``) and :func:`cached_attention`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from inferview.reference.attention import cached_attention
from torch import Tensor

__all__ = ["CacheConfig", "ContiguousKVCache", "KVCache", "cached_attention"]


@dataclass(frozen=True)
class CacheConfig:
    """Sizes of one layer's cache."""

    batch_size: int
    num_kv_heads: int
    head_dim: int
    max_seq_len: int

    def bytes(self, dtype: torch.dtype) -> int:
        """Bytes of both buffers: ``2 * B * Hkv * T_max * D * itemsize``."""
        itemsize = torch.empty((), dtype=dtype).element_size()
        return 2 * self.batch_size * self.num_kv_heads * self.max_seq_len * self.head_dim * itemsize


class ContiguousKVCache:
    """Keys and values of one attention layer for ``batch_size`` sequences that grow together."""

    def __init__(
        self,
        batch_size: int,
        num_kv_heads: int,
        head_dim: int,
        max_seq_len: int,
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
    ) -> None:
        self.config = CacheConfig(batch_size, num_kv_heads, head_dim, max_seq_len)
        shape = (batch_size, num_kv_heads, max_seq_len, head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)  # k: (B, Hkv, T_max, D)
        self.v = torch.zeros(shape, dtype=dtype, device=device)  # v: (B, Hkv, T_max, D)
        self.seq_len = 0  # tokens cached so far

    def update(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Append ``k``, ``v`` ``(B, Hkv, t_new, D)``; return all cached ``(B, Hkv, seq_len, D)``.

        Raises ``ValueError`` (and changes nothing) when a shape does not match or the cache would
        overflow ``max_seq_len``.
        """
        c = self.config
        want = (c.batch_size, c.num_kv_heads, c.head_dim)
        for name, x in (("k", k), ("v", v)):
            if x.dim() != 4 or (x.shape[0], x.shape[1], x.shape[3]) != want or x.shape[2] < 1:
                raise ValueError(
                    f"{name} has shape {tuple(x.shape)}; expected (batch={c.batch_size}, "
                    f"kv_heads={c.num_kv_heads}, t_new>=1, head_dim={c.head_dim})"
                )
        if k.shape != v.shape:
            raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} differ")
        t0, t1 = self.seq_len, self.seq_len + k.shape[2]
        if t1 > c.max_seq_len:
            raise ValueError(f"cache overflow: {t0} + {k.shape[2]} tokens > max_seq_len={c.max_seq_len}")
        # Validate everything before writing: a rejected update must leave the cache unchanged.
        self.k[:, :, t0:t1] = k  # in-place write into the preallocated buffer
        self.v[:, :, t0:t1] = v
        self.seq_len = t1
        return self.k[:, :, :t1], self.v[:, :, :t1]  # views, no copy

    def reset(self) -> None:
        """Forget every token. The buffers are kept; stale values beyond ``seq_len`` are never read."""
        self.seq_len = 0


KVCache = ContiguousKVCache
"""The name the ``kv-cache`` challenge uses."""
