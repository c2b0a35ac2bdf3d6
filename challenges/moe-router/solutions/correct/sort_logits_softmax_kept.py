"""Sorts the logits (stable, so ties keep the lower index) and takes the softmax of the k kept
logits, which equals the renormalised probabilities."""

from __future__ import annotations

import math

import torch
from torch import Tensor


def route(logits: Tensor, k: int) -> tuple[Tensor, Tensor]:
    top, experts = torch.sort(logits, dim=-1, descending=True, stable=True)
    return torch.softmax(top[:, :k].float(), dim=-1), experts[:, :k]


def load_balancing_loss(router_logits: Tensor, expert_indices: Tensor, num_experts: int) -> Tensor:
    p = torch.softmax(router_logits.float(), dim=-1).mean(dim=0)
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
