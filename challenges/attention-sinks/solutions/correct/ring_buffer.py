"""Preallocated buffers: a sink area and a ring for the window, filled one token at a time; the
logical order is read out at use time, and RoPE is a complex multiplication on (a, b) pairs."""

from __future__ import annotations

import math

import torch


class SinkCache:
    def __init__(self, num_sinks, window, num_heads, head_dim, rope_theta=10000.0, dtype=torch.float32,
                 device="cpu"):
        self.S, self.W, self.H, self.D = num_sinks, window, num_heads, head_dim
        self.theta, self.dtype = rope_theta, dtype
        self.kbuf = torch.zeros(num_heads, num_sinks + window, head_dim, dtype=dtype, device=device)
        self.vbuf = torch.zeros_like(self.kbuf)
        self.idbuf = [-1] * (num_sinks + window)
        self._seen = 0

    @property
    def num_seen(self):
        return self._seen

    @property
    def num_cached(self):
        return min(self._seen, self.S + self.W)

    def _valid(self, x):
        return x.dim() == 3 and x.shape[0] == self.H and x.shape[2] == self.D and x.shape[1] >= 1

    def append(self, k, v):
        if not self._valid(k) or tuple(v.shape) != tuple(k.shape):
            raise ValueError("k and v must both be (num_heads, t_new >= 1, head_dim)")
        for t in range(k.shape[1]):
            n = self._seen
            if n < self.S:
                slot = n
            else:
                slot = self.S + (n - self.S) % self.W  # ring position of the window token
            self.kbuf[:, slot] = k[:, t]
            self.vbuf[:, slot] = v[:, t]
            self.idbuf[slot] = n
            self._seen += 1

    def _order(self):
        """Buffer rows in slot order."""
        sinks = list(range(min(self._seen, self.S)))
        m = self._seen - self.S
        if m <= 0:
            return sinks
        if m <= self.W:
            return sinks + [self.S + i for i in range(m)]
        oldest = (m - self.W) % self.W
        return sinks + [self.S + (oldest + i) % self.W for i in range(self.W)]

    def token_ids(self):
        return [self.idbuf[r] for r in self._order()]

    def _gather(self, buf):
        rows = torch.tensor(self._order(), dtype=torch.long, device=buf.device)
        return buf[:, rows]

    def _rotate(self, x, positions):
        half = self.D // 2
        freq = self.theta ** (-torch.arange(half, dtype=torch.float64, device=x.device) * 2 / self.D)
        ang = positions.to(torch.float64)[:, None] * freq
        z = torch.complex(x[..., :half].double(), x[..., half:].double()) * torch.polar(torch.ones_like(ang), ang)
        return torch.cat([z.real, z.imag], dim=-1).float()

    def keys(self):
        n = self.num_cached
        return self._rotate(self._gather(self.kbuf), torch.arange(n, device=self.kbuf.device)).to(self.dtype)

    def values(self):
        return self._gather(self.vbuf)

    def attend(self, q):
        if not self._valid(q):
            raise ValueError("q must be (num_heads, t_q >= 1, head_dim)")
        n, tq = self.num_cached, q.shape[1]
        if tq > n or (self._seen > self.S + self.W and tq > self.W):
            raise ValueError("the newest t_q tokens must all be cached")
        dev = self.kbuf.device
        qr = self._rotate(q, torch.arange(n - tq, n, device=dev))
        kr = self._rotate(self._gather(self.kbuf), torch.arange(n, device=dev))
        out = torch.empty(self.H, tq, self.D, dtype=torch.float32, device=dev)
        vals = self._gather(self.vbuf).float()
        for i in range(tq):
            s_i = n - tq + i
            sc = (qr[:, i : i + 1] @ kr[:, : s_i + 1].transpose(1, 2)) / math.sqrt(self.D)
            sc = sc - sc.amax(dim=-1, keepdim=True)
            w = sc.exp()
            out[:, i : i + 1] = (w / w.sum(dim=-1, keepdim=True)) @ vals[:, : s_i + 1]
        return out.to(self.dtype)
