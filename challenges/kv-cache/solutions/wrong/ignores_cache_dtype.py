"""Allocates float32 buffers whatever dtype the cache was built with, so update hands back float32."""

from __future__ import annotations

import math

import torch
from torch import Tensor


class KVCache:
    def __init__(self, batch_size: int, num_kv_heads: int, head_dim: int, max_seq_len: int,
                 dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu") -> None:
        shape = (batch_size, num_kv_heads, max_seq_len, head_dim)
        self.k = torch.zeros(shape, dtype=torch.float32, device=device)  # (B, Hkv, T_max, D)
        self.v = torch.zeros(shape, dtype=torch.float32, device=device)
        self.max_seq_len = max_seq_len
        self.seq_len = 0

    def update(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        b, h, _, d = self.k.shape
        if k.shape != v.shape or k.dim() != 4 or (k.shape[0], k.shape[1], k.shape[3]) != (b, h, d):
            raise ValueError(f"bad shapes {tuple(k.shape)}, {tuple(v.shape)}")
        t = k.shape[2]
        if t < 1 or self.seq_len + t > self.max_seq_len:
            raise ValueError("cache overflow")
        self.k[:, :, self.seq_len:self.seq_len + t] = k
        self.v[:, :, self.seq_len:self.seq_len + t] = v
        self.seq_len += t
        return self.k[:, :, :self.seq_len], self.v[:, :, :self.seq_len]

    def reset(self) -> None:
        self.seq_len = 0


def cached_attention(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    b, hq, t_new, d = q.shape
    hkv, seq_len = k.shape[1], k.shape[2]
    group = hq // hkv
    k = k.repeat_interleave(group, dim=1)  # (B, Hq, T, D)
    v = v.repeat_interleave(group, dim=1)
    s = q @ k.transpose(-1, -2) / math.sqrt(d)  # (B, Hq, t_new, T)
    i = torch.arange(t_new, device=q.device)[:, None]
    j = torch.arange(seq_len, device=q.device)[None, :]
    s = s.masked_fill(j > i + (seq_len - t_new), float("-inf"))
    return torch.softmax(s, dim=-1) @ v
