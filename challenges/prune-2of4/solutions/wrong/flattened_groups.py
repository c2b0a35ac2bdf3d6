"""Mistake: is_2_4_sparse flattens the tensor and ignores the shape, so a last dimension that is not a multiple of 4 passes."""


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
    flat = (t != 0).flatten()
    pad = (-flat.numel()) % 4
    flat = torch.cat([flat, flat.new_zeros(pad)])
    counts = flat.reshape(-1, 4).sum(dim=-1)
    return bool((counts <= 2).all())
