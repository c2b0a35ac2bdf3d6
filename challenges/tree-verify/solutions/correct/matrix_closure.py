"""Tensor style: the ancestor matrix by repeated squaring of the parent relation, depths as its
row sums, acceptance as "every ancestor edge on the path matches", all with tensor ops."""

from __future__ import annotations

import torch
from torch import Tensor


def _check(parents: Tensor) -> None:
    if parents.dim() != 1 or parents.numel() == 0 or int(parents[0]) != -1:
        raise ValueError("parents must be 1-D, non-empty, with parents[0] == -1")
    idx = torch.arange(parents.numel(), device=parents.device)
    rest = parents[1:]
    if bool(((rest < 0) | (rest >= idx[1:])).any()):
        raise ValueError("every parents[i] must lie in [0, i)")


def _ancestors(parents: Tensor) -> Tensor:
    """anc[i, j]: j is i or an ancestor of i."""
    n = parents.numel()
    eye = torch.eye(n, dtype=torch.bool, device=parents.device)
    step = torch.zeros(n, n, dtype=torch.bool, device=parents.device)
    child = torch.arange(1, n, device=parents.device)
    step[child, parents[1:]] = True  # edge i -> parent(i)
    anc = eye | step
    for _ in range(max(1, n.bit_length())):  # reachability doubles the path length each time
        anc = anc | ((anc.int() @ anc.int()) > 0)
    return anc


def tree_attention_mask(parents: Tensor, prefix_len: int) -> Tensor:
    _check(parents)
    anc = _ancestors(parents)
    prefix = torch.ones(anc.shape[0], prefix_len, dtype=torch.bool, device=parents.device)
    return torch.cat([prefix, anc], dim=1)


def tree_position_ids(parents: Tensor, prefix_len: int) -> Tensor:
    _check(parents)
    return _ancestors(parents).sum(dim=1).to(torch.int64) - 1 + prefix_len


def verify_tree(parents: Tensor, tokens: Tensor, target_logits: Tensor) -> tuple[Tensor, Tensor]:
    _check(parents)
    n = parents.numel()
    anc = _ancestors(parents)
    greedy = target_logits.argmax(dim=-1)  # (N,), lowest id on ties
    match = torch.ones(n, dtype=torch.bool, device=tokens.device)
    match[1:] = tokens[1:] == greedy[parents[1:]]  # does node i continue its parent's prediction?
    accepted = (anc & ~match.unsqueeze(0)).sum(dim=1) == 0  # no rejected node on the path
    depth = anc.sum(dim=1) - 1
    score = torch.where(accepted, depth, torch.full_like(depth, -1))
    last = int(torch.argmax(score))  # argmax keeps the first maximum: the lowest index
    path = torch.nonzero(anc[last]).flatten()  # ancestors in index order = root-to-leaf order
    path = path[path != 0]
    emitted = torch.cat([tokens[path], greedy[last].reshape(1)])
    return path.to(torch.int64), emitted.to(torch.int64)
