"""attend exponentiates the scores without subtracting the row maximum, so large scores overflow to inf and the output is NaN."""
from __future__ import annotations
import math
import torch
from torch import Tensor


def _rope(x, pos, theta):
    D = x.shape[-1]
    h = D // 2
    inv = theta ** (-torch.arange(0, h, dtype=torch.float32, device=x.device) * 2 / D)
    ang = pos.to(torch.float32)[:, None] * inv[None, :]
    cos, sin = ang.cos(), ang.sin()
    xf = x.float()
    a, b = xf[..., :h], xf[..., h:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], -1)


class SinkCache:
    def __init__(self, num_sinks, window, num_heads, head_dim, rope_theta=10000.0,
                 dtype=torch.float32, device="cpu"):
        self.S, self.W, self.H, self.D = num_sinks, window, num_heads, head_dim
        self.theta, self.dtype, self.device = rope_theta, dtype, torch.device(device)
        self._k = torch.empty(num_heads, 0, head_dim, dtype=dtype, device=self.device)
        self._v = torch.empty(num_heads, 0, head_dim, dtype=dtype, device=self.device)
        self._ids: list[int] = []
        self._n = 0

    @property
    def num_seen(self):
        return self._n

    @property
    def num_cached(self):
        return len(self._ids)

    def _check(self, t, name):
        if not isinstance(t, torch.Tensor) or t.dim() != 3 or t.shape[0] != self.H or t.shape[2] != self.D or t.shape[1] < 1:
            raise ValueError(f"bad {name}")

    def append(self, k, v):
        self._check(k, "k")
        self._check(v, "v")
        if k.shape != v.shape:
            raise ValueError("k, v shapes differ")
        t = k.shape[1]
        n0 = self._n
        new_ids = list(range(n0, n0 + t))
        # drop new tokens that could never survive, to keep the temporary small
        n1 = n0 + t
        keep_from = max(self.S, n1 - self.W)
        sel_new = [i for i, tid in enumerate(new_ids) if tid < self.S or tid >= keep_from]
        idx = torch.tensor(sel_new, dtype=torch.long, device=k.device)
        k2 = k.index_select(1, idx).to(self.device, self.dtype)
        v2 = v.index_select(1, idx).to(self.device, self.dtype)
        ids_all = self._ids + [new_ids[i] for i in sel_new]
        keep = [j for j, tid in enumerate(ids_all) if tid < self.S or tid >= keep_from]
        kall = torch.cat([self._k, k2], 1)
        vall = torch.cat([self._v, v2], 1)
        kidx = torch.tensor(keep, dtype=torch.long, device=self.device)
        self._k = kall.index_select(1, kidx)
        self._v = vall.index_select(1, kidx)
        self._ids = [ids_all[j] for j in keep]
        self._n = n1

    def token_ids(self):
        return list(self._ids)

    def _pos(self, n):
        return torch.arange(n, device=self.device)

    def keys(self):
        return _rope(self._k, self._pos(self.num_cached), self.theta).to(self.dtype)

    def values(self):
        return self._v.clone()

    def attend(self, q):
        self._check(q, "q")
        tq = q.shape[1]
        nc = self.num_cached
        if tq > nc or (self._n > self.S + self.W and tq > self.W):
            raise ValueError("t_q out of range")
        qpos = torch.arange(nc - tq, nc, device=self.device)
        qr = _rope(q.to(self.device), qpos, self.theta)
        kr = _rope(self._k, self._pos(nc), self.theta)
        s = qr @ kr.transpose(-1, -2) / math.sqrt(self.D)
        mask = torch.arange(nc, device=self.device)[None, :] > qpos[:, None]
        s = s.masked_fill(mask, float("-inf"))
        e = s.exp()
        p = e / e.sum(-1, keepdim=True)
        return (p @ self._v.float()).to(self.dtype)
