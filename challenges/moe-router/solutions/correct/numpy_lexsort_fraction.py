"""numpy: lexsort for the gate (probability down, index up), Fraction for the capacity, a dict walk for the drops."""
from fractions import Fraction

import numpy as np
import torch


def route(logits, k):
    x = logits.detach().float().cpu().numpy().astype(np.float64)
    p = np.exp(x - x.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    cols = np.arange(p.shape[-1])
    order = np.stack([np.lexsort((cols, -row)) for row in p])[:, :k]  # (T, k)
    top = np.take_along_axis(p, order, -1)
    w = top / top.sum(-1, keepdims=True)
    return (torch.from_numpy(w).float().to(logits.device), torch.from_numpy(order).long().to(logits.device))


def load_balancing_loss(router_logits, expert_indices, num_experts):
    probs = torch.softmax(router_logits.float(), dim=-1)
    f = torch.zeros(num_experts, dtype=torch.float32, device=router_logits.device)
    f.index_add_(0, expert_indices.reshape(-1), torch.ones(expert_indices.numel(), device=router_logits.device))
    f = f / expert_indices.numel()
    return (f * probs.mean(0)).sum() * num_experts


def expert_capacity(tokens, num_experts, k, capacity_factor):
    q = Fraction(capacity_factor) * tokens * k / num_experts
    return -(-q.numerator // q.denominator)


def apply_capacity(expert_indices, num_experts, capacity, *, policy="token"):
    used = {}
    keep = []
    for row in expert_indices.tolist():
        out = []
        for e in row:
            used[e] = used.get(e, 0) + 1
            out.append(used[e] <= capacity)
        keep.append(out)
    return torch.tensor(keep, dtype=torch.bool, device=expert_indices.device).reshape(expert_indices.shape)
