"""is_2_4_sparse groups with view(t.shape[0], -1, 4): a 1-D tensor raises."""

from __future__ import annotations

import torch
from torch import Tensor


def prune_2_4(w: Tensor) -> tuple[Tensor, Tensor]:
    out, n = w.shape
    groups = w.reshape(out, n // 4, 4)
    order = torch.sort(groups.abs(), dim=-1, descending=True, stable=True).indices
    mask = torch.zeros(groups.shape, dtype=torch.bool, device=w.device)
    mask.scatter_(-1, order[..., :2], True)
    mask = mask.reshape(out, n)
    return torch.where(mask, w, torch.zeros_like(w)), mask


def is_2_4_sparse(t: Tensor) -> bool:
    if t.dim() == 0 or t.shape[-1] % 4 != 0:
        return False
    counts = (t != 0).view(t.shape[0], -1, 4).sum(dim=-1)
    return bool((counts <= 2).all())
