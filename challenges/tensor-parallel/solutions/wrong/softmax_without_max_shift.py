"""Mistake: the softmax exponentiates the raw scores without subtracting the row maximum, so a
score past 88.7 overflows float32 to inf and the row turns to NaN (right on small activations)."""

from __future__ import annotations

import math

import torch
from torch import Tensor


def shard_mlp(w_gate: Tensor, w_up: Tensor, w_down: Tensor,
              world_size: int) -> list[tuple[Tensor, Tensor, Tensor]]:
    inter = w_gate.shape[0]
    if inter % world_size != 0:
        raise ValueError(f"{inter} intermediate features do not split over {world_size} ranks")
    g = w_gate.chunk(world_size, dim=0)
    u = w_up.chunk(world_size, dim=0)
    d = w_down.chunk(world_size, dim=1)
    return list(zip(g, u, d, strict=True))


def mlp_forward(x: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor) -> Tensor:
    g = torch.einsum("bth,ih->bti", x, w_gate)
    u = torch.einsum("bth,ih->bti", x, w_up)
    return torch.einsum("bti,hi->bth", g * torch.sigmoid(g) * u, w_down)


def shard_attention(w_q: Tensor, w_k: Tensor, w_v: Tensor, w_o: Tensor, num_heads: int,
                    num_kv_heads: int, world_size: int) -> list[tuple[Tensor, Tensor, Tensor, Tensor]]:
    n, hq, hkv = world_size, num_heads, num_kv_heads
    if hq % hkv != 0:
        raise ValueError("num_heads must be a multiple of num_kv_heads")
    if hq % n != 0:
        raise ValueError("world_size must divide num_heads")
    if hkv % n != 0 and n % hkv != 0:
        raise ValueError("num_kv_heads and world_size must divide one another")
    qs, os_ = w_q.chunk(n, dim=0), w_o.chunk(n, dim=1)
    if hkv >= n:
        ks, vs = w_k.chunk(n, dim=0), w_v.chunk(n, dim=0)
    else:
        heads_k, heads_v = w_k.chunk(hkv, dim=0), w_v.chunk(hkv, dim=0)
        copies = n // hkv
        ks = [heads_k[r // copies] for r in range(n)]
        vs = [heads_v[r // copies] for r in range(n)]
    return [(qs[r], ks[r], vs[r], os_[r]) for r in range(n)]


def attention_forward(x: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor, w_o: Tensor,
                      head_dim: int) -> Tensor:
    b, t, _ = x.shape
    hq, hkv = w_q.shape[0] // head_dim, w_k.shape[0] // head_dim
    g = hq // hkv
    q = torch.einsum("bth,oh->bto", x, w_q).view(b, t, hkv, g, head_dim)  # head = kv * g + j
    k = torch.einsum("bth,oh->bto", x, w_k).view(b, t, hkv, head_dim)
    v = torch.einsum("bth,oh->bto", x, w_v).view(b, t, hkv, head_dim)
    s = torch.einsum("bikjd,blkd->bkjil", q.float(), k.float()) / math.sqrt(head_dim)
    causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
    s = s.masked_fill(~causal, float("-inf"))
    p = torch.exp(s)
    p = p / p.sum(dim=-1, keepdim=True)
    o = torch.einsum("bkjil,blkd->bikjd", p, v.float()).to(x.dtype)  # (b, t, hkv, g, d)
    return torch.einsum("bto,ho->bth", o.reshape(b, t, hq * head_dim), w_o)


def all_reduce(tensors: list[Tensor]) -> list[Tensor]:
    total = torch.stack([t.float() for t in tensors]).sum(dim=0).to(tensors[0].dtype)
    return [total] * len(tensors)


def tp_mlp(x: Tensor, shards: list[tuple[Tensor, Tensor, Tensor]]) -> tuple[Tensor, int]:
    partials = [mlp_forward(x, g, u, d) for g, u, d in shards]
    if len(shards) == 1:
        return partials[0], 0
    return all_reduce(partials)[0], partials[0].nelement() * partials[0].element_size()


def tp_attention(x: Tensor, shards: list[tuple[Tensor, Tensor, Tensor, Tensor]],
                 head_dim: int) -> tuple[Tensor, int]:
    partials = [attention_forward(x, q, k, v, o, head_dim) for q, k, v, o in shards]
    if len(shards) == 1:
        return partials[0], 0
    return all_reduce(partials)[0], partials[0].nelement() * partials[0].element_size()
