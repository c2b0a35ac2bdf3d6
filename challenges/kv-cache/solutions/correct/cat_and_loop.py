"""Growing the cache with torch.cat; attention head by head with a hand-written stable softmax."""

from __future__ import annotations

import math

import torch
from torch import Tensor


class KVCache:
    def __init__(self, batch_size, num_kv_heads, head_dim, max_seq_len, dtype=torch.float32,
                 device="cpu"):
        self.shape = (batch_size, num_kv_heads, head_dim)
        self.max_seq_len = max_seq_len
        self.dtype, self.device = dtype, device
        self.reset()

    @property
    def seq_len(self) -> int:
        return self.keys.shape[2]

    def update(self, k, v):
        for x in (k, v):
            if x.dim() != 4 or (x.shape[0], x.shape[1], x.shape[3]) != self.shape:
                raise ValueError("shape does not match the cache")
        if k.shape != v.shape:
            raise ValueError("k and v differ")
        if self.seq_len + k.shape[2] > self.max_seq_len:
            raise ValueError("too many tokens")
        self.keys = torch.cat([self.keys, k.to(self.dtype)], dim=2)
        self.values = torch.cat([self.values, v.to(self.dtype)], dim=2)
        return self.keys, self.values

    def reset(self):
        b, h, d = self.shape
        self.keys = torch.empty(b, h, 0, d, dtype=self.dtype, device=self.device)
        self.values = torch.empty(b, h, 0, d, dtype=self.dtype, device=self.device)


def cached_attention(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    hq, t_new, d = q.shape[1], q.shape[2], q.shape[3]
    hkv, seq_len = k.shape[1], k.shape[2]
    out = torch.empty_like(q)
    for h in range(hq):
        kh, vh = k[:, h // (hq // hkv)], v[:, h // (hq // hkv)]  # (B, T, D)
        for i in range(t_new):
            visible = seq_len - t_new + i + 1
            s = (q[:, h, i, None, :] * kh[:, :visible]).sum(-1) / math.sqrt(d)  # (B, visible)
            e = torch.exp(s - s.max(dim=-1, keepdim=True).values)
            out[:, h, i] = (e[..., None] * vh[:, :visible]).sum(1) / e.sum(-1, keepdim=True)
    return out
