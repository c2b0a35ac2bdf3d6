"""Mistake: walks down from the root into the first child that matches and never looks back, so a deeper branch under a twin sibling with the same token is missed."""


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
    greedy = target_logits.argmax(dim=-1).tolist()
    tok = tokens.tolist()
    children: list[list[int]] = [[] for _ in par]
    for i in range(1, len(par)):
        children[par[i]].append(i)
    path = []
    node = 0
    while True:  # walk down, each time into the first child that matches
        nxt = [c for c in children[node] if tok[c] == greedy[node]]
        if not nxt:
            break
        node = nxt[0]
        path.append(node)
    nodes = torch.tensor(path, dtype=torch.int64, device=tokens.device)
    emitted = torch.tensor([tok[i] for i in path] + [greedy[node]], dtype=torch.int64,
                           device=tokens.device)
    return nodes, emitted
