"""Concatenate, then keep the sinks and the newest window; RoPE with rotate_half at read time."""

from __future__ import annotations

import math

import torch


def _rotate_half(x):
    d = x.shape[-1] // 2
    return torch.cat([-x[..., d:], x[..., :d]], dim=-1)


class SinkCache:
    def __init__(self, num_sinks, window, num_heads, head_dim, rope_theta=10000.0, dtype=torch.float32,
                 device="cpu"):
        self.s, self.w, self.h, self.d = num_sinks, window, num_heads, head_dim
        self.theta, self.dtype, self.device = rope_theta, dtype, device
        self.k = torch.empty(num_heads, 0, head_dim, dtype=dtype, device=device)
        self.v = torch.empty(num_heads, 0, head_dim, dtype=dtype, device=device)
        self.ids = []
        self.num_seen = 0

    @property
    def num_cached(self):
        return len(self.ids)

    def _check(self, x, name):
        if x.dim() != 3 or x.shape[0] != self.h or x.shape[2] != self.d or x.shape[1] == 0:
            raise ValueError(f"{name} has shape {tuple(x.shape)}")

    def append(self, k, v):
        self._check(k, "k")
        if v.shape != k.shape:
            raise ValueError("k and v differ in shape")
        t = k.shape[1]
        ids = self.ids + list(range(self.num_seen, self.num_seen + t))
        kk = torch.cat([self.k, k.to(self.device, self.dtype)], dim=1)
        vv = torch.cat([self.v, v.to(self.device, self.dtype)], dim=1)
        n_sink = sum(1 for i in ids if i < self.s)
        keep = list(range(n_sink)) + list(range(max(n_sink, len(ids) - self.w), len(ids)))
        idx = torch.tensor(keep, dtype=torch.long, device=kk.device)
        self.k, self.v = kk.index_select(1, idx), vv.index_select(1, idx)
        self.ids = [ids[i] for i in keep]
        self.num_seen += t

    def token_ids(self):
        return list(self.ids)

    def _rope(self, x, start):
        n = x.shape[1]
        inv = 1.0 / (self.theta ** (torch.arange(0, self.d, 2, dtype=torch.float32, device=x.device) / self.d))
        ang = torch.outer(torch.arange(start, start + n, dtype=torch.float32, device=x.device), inv)
        emb = torch.cat([ang, ang], dim=-1)
        xf = x.float()
        return xf * emb.cos() + _rotate_half(xf) * emb.sin()

    def keys(self):
        return self._rope(self.k, 0).to(self.dtype)

    def values(self):
        return self.v.clone()

    def attend(self, q):
        self._check(q, "q")
        tq, n = q.shape[1], self.num_cached
        if tq > n or (self.num_seen > self.s + self.w and tq > self.w):
            raise ValueError(f"the newest {tq} tokens are not all cached")
        qr = self._rope(q, n - tq)
        kr = self._rope(self.k, 0)
        s = qr @ kr.transpose(1, 2) / math.sqrt(self.d)
        i = torch.arange(n - tq, n, device=s.device)[:, None]
        j = torch.arange(n, device=s.device)[None, :]
        p = torch.softmax(s.masked_fill(j > i, float("-inf")), dim=-1)
        return (p @ self.v.float()).to(self.dtype)
