"""Mistake: The load-balancing loss takes the softmax of float16 logits in float16 and only then converts
to float32, so P_i carries float16 rounding."""

from __future__ import annotations

import math

import torch
from torch import Tensor


def route(logits: Tensor, k: int) -> tuple[Tensor, Tensor]:
    p = torch.softmax(logits.float(), dim=-1)
    top, experts = torch.sort(p, dim=-1, descending=True, stable=True)
    top, experts = top[:, :k], experts[:, :k]
    return top / top.sum(dim=-1, keepdim=True), experts


def load_balancing_loss(router_logits: Tensor, expert_indices: Tensor, num_experts: int) -> Tensor:
    p = torch.softmax(router_logits, dim=-1).float().mean(dim=0)
    counts = torch.bincount(expert_indices.flatten(), minlength=num_experts).float()
    f = counts / expert_indices.numel()
    return num_experts * torch.sum(f * p)


def expert_capacity(tokens: int, num_experts: int, k: int, capacity_factor: float) -> int:
    return math.ceil(capacity_factor * tokens * k / num_experts)


def apply_capacity(expert_indices: Tensor, num_experts: int, capacity: int) -> Tensor:
    flat = expert_indices.flatten()
    onehot = torch.nn.functional.one_hot(flat, num_experts)
    place = (onehot.cumsum(dim=0) * onehot).sum(dim=-1) - 1
    return (place < capacity).reshape(expert_indices.shape)
