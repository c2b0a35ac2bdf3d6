"""Loop solution with the Shazeer-style gate: top-k on the logits, then softmax over the k kept
logits — the same weights as softmax-then-top-k-then-renormalise, since softmax is monotone and
renormalising a subset of a softmax is the softmax of that subset. Capacity with a Python queue."""

from __future__ import annotations

import torch
from torch import Tensor


def route(logits: Tensor, k: int) -> tuple[Tensor, Tensor]:
    x = logits.float()
    tokens, e = x.shape
    experts = torch.empty(tokens, k, dtype=torch.int64, device=x.device)
    for t in range(tokens):
        row = x[t].tolist()
        order = sorted(range(e), key=lambda j: (-row[j], j))  # largest first, lower index on ties
        experts[t] = torch.tensor(order[:k], device=x.device)
    kept = torch.gather(x, 1, experts)
    return torch.softmax(kept, dim=-1), experts


def load_balancing_loss(router_logits: Tensor, expert_indices: Tensor, num_experts: int) -> Tensor:
    probs = torch.softmax(router_logits.float(), dim=-1)
    n = expert_indices.numel()
    total = torch.zeros((), dtype=torch.float32, device=router_logits.device)
    for i in range(num_experts):
        f_i = (expert_indices == i).sum().float() / n
        total = total + f_i * probs[:, i].mean()
    return total * num_experts


def expert_capacity(tokens: int, num_experts: int, k: int, capacity_factor: float) -> int:
    slots = capacity_factor * tokens * k / num_experts
    whole = int(slots)
    return whole if whole == slots else whole + 1


def apply_capacity(expert_indices: Tensor, num_experts: int, capacity: int) -> Tensor:
    used = [0] * num_experts
    keep = torch.zeros(expert_indices.shape, dtype=torch.bool)
    for t, row in enumerate(expert_indices.tolist()):
        for s, e in enumerate(row):
            if used[e] < capacity:
                keep[t, s] = True
                used[e] += 1
    return keep.to(expert_indices.device)
