"""Comparison solution: an entry is kept when fewer than 2 entries of its group beat it, where
"beat" means a larger magnitude, or an equal magnitude at a lower index. No sorting at all."""

from __future__ import annotations

import torch
from torch import Tensor


def prune_2_4(w: Tensor) -> tuple[Tensor, Tensor]:
    out, n = w.shape
    a = w.abs().float().reshape(out, n // 4, 4)
    ai = a.unsqueeze(-1)  # (out, G, 4, 1): the entry being ranked
    aj = a.unsqueeze(-2)  # (out, G, 1, 4): its rivals
    pos = torch.arange(4, device=w.device)
    lower = pos.view(1, 4) < pos.view(4, 1)  # [i, j]: rival j sits before entry i
    beats = (aj > ai) | ((aj == ai) & lower)
    mask = (beats.sum(dim=-1) < 2).reshape(out, n)
    return w * mask.to(w.dtype), mask


def is_2_4_sparse(t: Tensor) -> bool:
    if t.ndim < 1 or t.shape[-1] % 4:
        return False
    nz = t.ne(0).to(torch.int32)
    per_group = nz.unflatten(-1, (t.shape[-1] // 4, 4)).sum(-1)
    return not bool(per_group.gt(2).any())
