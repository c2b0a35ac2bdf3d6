"""Mistake: expert_capacity divides before it multiplies (tokens / num_experts * k * capacity_factor):
the rounded quotient can land just above an integer, and the ceiling then adds one."""

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
    p = torch.softmax(router_logits.float(), dim=-1).mean(dim=0)
    counts = torch.bincount(expert_indices.flatten(), minlength=num_experts).float()
    f = counts / expert_indices.numel()
    return num_experts * torch.sum(f * p)


def expert_capacity(tokens: int, num_experts: int, k: int, capacity_factor: float) -> int:
    return math.ceil(tokens / num_experts * k * capacity_factor)


def apply_capacity(expert_indices: Tensor, num_experts: int, capacity: int) -> Tensor:
    flat = expert_indices.flatten()
    onehot = torch.nn.functional.one_hot(flat, num_experts)
    place = (onehot.cumsum(dim=0) * onehot).sum(dim=-1) - 1
    return (place < capacity).reshape(expert_indices.shape)
