"""Challenge tree-verify: the tree attention mask, position ids and greedy verification of a
draft tree (Medusa, EAGLE).

Fill in the three functions. `inferview grade tree-verify <this file>` runs the checks.
"""

from __future__ import annotations

import torch  # noqa: F401  (you will need it)
from torch import Tensor


def tree_attention_mask(parents: Tensor, prefix_len: int) -> Tensor:
    """parents int64 (N,) -> bool (N, prefix_len + N): the prefix, the node's ancestors, itself."""
    raise NotImplementedError("tree_attention_mask: prefix columns, then ancestors and self")


def tree_position_ids(parents: Tensor, prefix_len: int) -> Tensor:
    """parents int64 (N,) -> int64 (N,): prefix_len + depth."""
    raise NotImplementedError("tree_position_ids: prefix_len + depth of each node")


def verify_tree(parents: Tensor, tokens: Tensor, target_logits: Tensor) -> tuple[Tensor, Tensor]:
    """-> (accepted_nodes int64 (L,), emitted int64 (L + 1,)): the longest matching path, root
    excluded, and its tokens followed by the bonus token."""
    raise NotImplementedError("verify_tree: accept the deepest matching path, then the bonus token")
