"""Mistake: the logits are rounded to bfloat16 before the argmax, so float32 logits closer than
bfloat16 can tell apart tie, and the lower token id wins in place of the true maximum."""


from __future__ import annotations

import torch
from torch import Tensor


def _parents(parents: Tensor) -> list[int]:
    if parents.dim() != 1 or parents.numel() == 0:
        raise ValueError("parents must be a non-empty 1-D tensor")
    par = parents.tolist()
    if par[0] != -1:
        raise ValueError("parents[0] must be -1")
    for i in range(1, len(par)):
        if not 0 <= par[i] < i:
            raise ValueError(f"parents[{i}] = {par[i]} is not in [0, {i})")
    return par


def tree_attention_mask(parents: Tensor, prefix_len: int) -> Tensor:
    par = _parents(parents)
    n = len(par)
    mask = torch.zeros(n, prefix_len + n, dtype=torch.bool, device=parents.device)
    mask[:, :prefix_len] = True
    for i in range(n):
        node = i
        while node != -1:  # itself, then every ancestor up to the root
            mask[i, prefix_len + node] = True
            node = par[node]
    return mask


def tree_position_ids(parents: Tensor, prefix_len: int) -> Tensor:
    par = _parents(parents)
    depth = [0] * len(par)
    for i in range(1, len(par)):
        depth[i] = depth[par[i]] + 1
    return torch.tensor(depth, dtype=torch.int64, device=parents.device) + prefix_len


def verify_tree(parents: Tensor, tokens: Tensor, target_logits: Tensor) -> tuple[Tensor, Tensor]:
    par = _parents(parents)
    greedy = target_logits.to(torch.bfloat16).argmax(dim=-1).tolist()  # halves the memory
    tok = tokens.tolist()
    n = len(par)
    depth = [0] * n
    ok = [True] * n
    best = 0
    for i in range(1, n):
        depth[i] = depth[par[i]] + 1
        ok[i] = ok[par[i]] and tok[i] == greedy[par[i]]
        if ok[i] and depth[i] > depth[best]:
            best = i
    path = []
    node = best
    while node != 0:
        path.append(node)
        node = par[node]
    path.reverse()
    nodes = torch.tensor(path, dtype=torch.int64, device=tokens.device)
    emitted = torch.tensor([tok[i] for i in path] + [greedy[best]], dtype=torch.int64,
                           device=tokens.device)
    return nodes, emitted
