"""Wrong: tp_mlp puts the shards back together (torch.cat) and runs the unsharded MLP once, then
hands out the result; the numbers and the byte count are right, but every rank would need the
whole weights, which is what tensor parallelism exists to avoid."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def _block(t: Tensor, dim: int, rank: int, n: int) -> Tensor:
    size = t.shape[dim] // n
    return t.narrow(dim, rank * size, size)


def shard_mlp(w_gate: Tensor, w_up: Tensor, w_down: Tensor,
              world_size: int) -> list[tuple[Tensor, Tensor, Tensor]]:
    if w_gate.shape[0] % world_size:
        raise ValueError("world_size must divide the intermediate size")
    return [(_block(w_gate, 0, r, world_size), _block(w_up, 0, r, world_size),
             _block(w_down, 1, r, world_size)) for r in range(world_size)]


def mlp_forward(x: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor) -> Tensor:
    return F.linear(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down)


def shard_attention(w_q: Tensor, w_k: Tensor, w_v: Tensor, w_o: Tensor, num_heads: int,
                    num_kv_heads: int, world_size: int) -> list[tuple[Tensor, Tensor, Tensor, Tensor]]:
    n = world_size
    if num_heads % num_kv_heads or num_heads % n or (num_kv_heads % n and n % num_kv_heads):
        raise ValueError("these heads cannot be split over world_size ranks")
    d = w_q.shape[0] // num_heads
    out = []
    for r in range(n):
        if num_kv_heads >= n:
            k, v = _block(w_k, 0, r, n), _block(w_v, 0, r, n)
        else:  # replicate: rank r holds KV head r // (n / num_kv_heads)
            head = r // (n // num_kv_heads)
            k, v = w_k[head * d:(head + 1) * d], w_v[head * d:(head + 1) * d]
        out.append((_block(w_q, 0, r, n), k, v, _block(w_o, 1, r, n)))
    return out


def attention_forward(x: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor, w_o: Tensor,
                      head_dim: int) -> Tensor:
    b, t, _ = x.shape
    q = F.linear(x, w_q).view(b, t, -1, head_dim).transpose(1, 2)
    k = F.linear(x, w_k).view(b, t, -1, head_dim).transpose(1, 2)
    v = F.linear(x, w_v).view(b, t, -1, head_dim).transpose(1, 2)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    return F.linear(o.transpose(1, 2).reshape(b, t, -1), w_o)


def all_reduce(tensors: list[Tensor]) -> list[Tensor]:
    total = tensors[0].clone()
    for t in tensors[1:]:
        total += t
    return [total.clone() for _ in tensors]


def _run(partials: list[Tensor]) -> tuple[Tensor, int]:
    if len(partials) == 1:
        return partials[0], 0
    out = all_reduce(partials)[0]
    return out, partials[0].numel() * partials[0].element_size()


def tp_mlp(x: Tensor, shards: list[tuple[Tensor, Tensor, Tensor]]) -> tuple[Tensor, int]:
    gate = torch.cat([s[0] for s in shards], dim=0)
    up = torch.cat([s[1] for s in shards], dim=0)
    down = torch.cat([s[2] for s in shards], dim=1)
    out = mlp_forward(x, gate, up, down)
    return out, 0 if len(shards) == 1 else out.numel() * out.element_size()


def tp_attention(x: Tensor, shards: list[tuple[Tensor, Tensor, Tensor, Tensor]],
                 head_dim: int) -> tuple[Tensor, int]:
    return _run([attention_forward(x, *s, head_dim) for s in shards])
