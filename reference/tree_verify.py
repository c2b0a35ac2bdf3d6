"""Verifying a draft token tree in one forward pass: the tree attention mask, the position ids,
and greedy acceptance of the longest path that matches the target.

Sources:

- Cai et al. 2024, *Medusa: Simple LLM Inference Acceleration Framework with Multiple Decoding
  Heads* (arXiv:2401.10774), Section 2.1.2 "Tree Attention": the candidates of several heads form
  a tree that the target scores in one pass; each token attends only to its predecessors on its
  own path, and the position indices follow the depth in the tree. Greedy verification in
  Medusa's reference code (``evaluate_posterior``, temperature 0) accepts a candidate's tokens
  while each equals the target's argmax at the token before it, keeps the longest accepted
  candidate, and takes the target's argmax after the last accepted token as the extra token.
- Li et al. 2024, *EAGLE: Speculative Sampling Requires Rethinking Feature Uncertainty*
  (arXiv:2401.15077): the same tree attention over a draft tree.

Layout. A tree of ``N`` nodes is given by ``parents`` (int64 ``(N,)``), in topological order:
node 0 is the **root** (``parents[0] == -1``), the last token already chosen, whose key and value
are not in the cache yet; every other node ``i`` has ``0 <= parents[i] < i``. ``tokens[i]`` is the
token at node ``i`` (``tokens[0]`` the root's). The target runs once over the ``N`` nodes after a
cached prefix of ``prefix_len`` tokens; its logits at node ``i`` predict the token that follows
node ``i`` on its path.

Acceptance (greedy). ``greedy[i] = argmax(target_logits[i])`` (ties: the lowest token id, which
is what ``torch.argmax`` returns). The root is always accepted; node ``i >= 1`` is accepted when
its parent is and ``tokens[i] == greedy[parents[i]]``. The deepest accepted node wins, ties between
equally deep ones going to the **lowest node index**; the result is the path to it (root excluded)
and the emitted tokens: the path's tokens followed by the bonus token ``greedy[last]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = [
    "TreeVerdict",
    "node_depths",
    "tree_ancestors",
    "tree_attention_mask",
    "tree_position_ids",
    "validate_tree",
    "verify_tree",
    "verify_tree_result",
]


def validate_tree(parents: Tensor) -> list[int]:
    """The parent list of a valid tree, or ``ValueError``: a 1-D integer tensor with at least one
    node, ``parents[0] == -1`` and ``0 <= parents[i] < i`` for every ``i >= 1``."""
    if not isinstance(parents, Tensor) or parents.dim() != 1 or parents.is_floating_point() \
            or parents.dtype == torch.bool:
        raise ValueError("parents must be a 1-D integer tensor")
    par = [int(p) for p in parents.tolist()]
    if not par or par[0] != -1:
        raise ValueError("parents[0] must be -1: node 0 is the root")
    for i, p in enumerate(par[1:], start=1):
        if not 0 <= p < i:
            raise ValueError(f"parents[{i}] = {p}: a node's parent must come before it (0 <= p < {i})")
    return par


def node_depths(parents: Tensor) -> list[int]:
    """Depth of every node: the root 0, any other node its parent's depth plus one."""
    par = validate_tree(parents)
    depth = [0] * len(par)
    for i in range(1, len(par)):
        depth[i] = depth[par[i]] + 1
    return depth


def tree_ancestors(parents: Tensor) -> Tensor:
    """bool ``(N, N)``: ``anc[i, j]`` is True when node ``j`` is node ``i`` or one of its ancestors."""
    par = validate_tree(parents)
    n = len(par)
    anc = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n):
        if par[i] >= 0:
            anc[i] = anc[par[i]]  # a node sees whatever its parent sees ...
        anc[i, i] = True  # ... and itself
    return anc


def tree_attention_mask(parents: Tensor, prefix_len: int) -> Tensor:
    """bool ``(N, prefix_len + N)``; row ``i`` is node ``i``'s query, column ``j < prefix_len`` the
    cached prefix token ``j`` and column ``prefix_len + a`` tree node ``a``. True where attention is
    allowed: the whole prefix, the node itself and its ancestors."""
    if isinstance(prefix_len, bool) or int(prefix_len) != prefix_len or prefix_len < 0:
        raise ValueError(f"prefix_len must be an integer >= 0, got {prefix_len!r}")
    anc = tree_ancestors(parents)
    n = anc.shape[0]
    prefix = torch.ones(n, int(prefix_len), dtype=torch.bool)
    return torch.cat([prefix, anc], dim=1).to(parents.device)


def tree_position_ids(parents: Tensor, prefix_len: int) -> Tensor:
    """int64 ``(N,)``: node ``i`` sits at position ``prefix_len + depth(i)`` (the root at
    ``prefix_len``), the position it would have if its path were decoded one token at a time."""
    if isinstance(prefix_len, bool) or int(prefix_len) != prefix_len or prefix_len < 0:
        raise ValueError(f"prefix_len must be an integer >= 0, got {prefix_len!r}")
    depth = node_depths(parents)
    return (torch.tensor(depth, dtype=torch.int64) + int(prefix_len)).to(parents.device)


@dataclass(frozen=True)
class TreeVerdict:
    """What greedy verification of a tree decides."""

    path: list[int]
    """Accepted nodes, root excluded, from the root's child down to the deepest accepted node."""
    last: int
    """The deepest accepted node (0, the root, when no child of the root matches)."""
    greedy: list[int]
    """``argmax(target_logits[i])`` for every node, lowest token id on ties."""

    @property
    def bonus(self) -> int:
        """The target's greedy token after the last accepted node."""
        return self.greedy[self.last]


def verify_tree_result(parents: Tensor, tokens: Tensor, target_logits: Tensor) -> TreeVerdict:
    """Greedy verification as a :class:`TreeVerdict` (the rule in the module docstring)."""
    par = validate_tree(parents)
    n = len(par)
    if tokens.shape != (n,) or target_logits.dim() != 2 or target_logits.shape[0] != n:
        raise ValueError(f"tokens must be ({n},) and target_logits ({n}, vocab), got "
                         f"{tuple(tokens.shape)} and {tuple(target_logits.shape)}")
    greedy = target_logits.argmax(dim=-1).tolist()  # torch.argmax: the first maximal index
    tok = tokens.tolist()
    depth = [0] * n
    accepted = [True] + [False] * (n - 1)
    for i in range(1, n):
        p = par[i]
        depth[i] = depth[p] + 1
        # node i is accepted when its whole path is: its parent is, and the target, run on the
        # path up to the parent, greedily predicts exactly node i's token
        accepted[i] = accepted[p] and tok[i] == greedy[p]
    last = 0
    for i in range(1, n):
        if accepted[i] and depth[i] > depth[last]:  # strictly deeper: ties keep the lower index
            last = i
    path = []
    node = last
    while node != 0:
        path.append(node)
        node = par[node]
    return TreeVerdict(path=path[::-1], last=last, greedy=greedy)


def verify_tree(parents: Tensor, tokens: Tensor, target_logits: Tensor) -> tuple[Tensor, Tensor]:
    """``(accepted_nodes, emitted)``: int64 ``(L,)`` node indices of the accepted path (root
    excluded, root-to-leaf order) and int64 ``(L + 1,)`` tokens: the path's tokens, then the bonus
    token ``greedy[last]``. ``target_logits``: ``(N, vocab)`` float, row ``i`` scoring the token
    after node ``i``."""
    v = verify_tree_result(parents, tokens, target_logits)
    device = tokens.device
    nodes = torch.tensor(v.path, dtype=torch.int64, device=device)
    emitted = torch.tensor([int(tokens[i]) for i in v.path] + [v.bonus], dtype=torch.int64,
                           device=device)
    return nodes, emitted
