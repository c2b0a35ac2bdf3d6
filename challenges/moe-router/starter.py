"""Challenge moe-router: top-k gating, load-balancing loss and expert capacity.

Fill in the four functions. `inferview grade moe-router <this file>` runs the checks.
"""

from __future__ import annotations

import torch  # noqa: F401  (you will need it)
from torch import Tensor


def route(logits: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """logits (tokens, E) -> (weights float32 (tokens, k), experts int64 (tokens, k))."""
    raise NotImplementedError("route: softmax, top-k (ties -> lower index), renormalise")


def load_balancing_loss(router_logits: Tensor, expert_indices: Tensor, num_experts: int) -> Tensor:
    """num_experts * sum_i f_i * P_i as a 0-dim float32 tensor."""
    raise NotImplementedError("load_balancing_loss: assignment fractions times mean probabilities")


def expert_capacity(tokens: int, num_experts: int, k: int, capacity_factor: float) -> int:
    """ceil(capacity_factor * tokens * k / num_experts)."""
    raise NotImplementedError("expert_capacity: slots per expert")


def apply_capacity(expert_indices: Tensor, num_experts: int, capacity: int) -> Tensor:
    """expert_indices (tokens, k) -> keep mask bool (tokens, k), first come first served."""
    raise NotImplementedError("apply_capacity: keep each expert's first `capacity` assignments")
