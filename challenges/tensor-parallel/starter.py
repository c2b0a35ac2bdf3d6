"""Challenge tensor-parallel: Megatron-style sharding of an MLP and an attention block over
simulated ranks, with the all-reduce and the bytes it moves.

Fill in the seven functions. `inferview grade tensor-parallel <this file>` runs the checks.
Weights are nn.Linear weights, (out_features, in_features), applied as x @ W.T.
"""

from __future__ import annotations

import torch  # noqa: F401  (you will need it)
from torch import Tensor


def shard_mlp(w_gate: Tensor, w_up: Tensor, w_down: Tensor,
              world_size: int) -> list[tuple[Tensor, Tensor, Tensor]]:
    """Per rank (gate (I/N, H), up (I/N, H), down (H, I/N)); ValueError when N does not divide I."""
    raise NotImplementedError("shard_mlp: gate/up column-parallel, down row-parallel")


def mlp_forward(x: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor) -> Tensor:
    """(silu(x @ w_gate.T) * (x @ w_up.T)) @ w_down.T on whatever (shard of the) weights."""
    raise NotImplementedError("mlp_forward: one rank's partial sum")


def shard_attention(w_q: Tensor, w_k: Tensor, w_v: Tensor, w_o: Tensor, num_heads: int,
                    num_kv_heads: int, world_size: int) -> list[tuple[Tensor, Tensor, Tensor, Tensor]]:
    """Per rank (q, k, v, o): its query heads, their KV heads (replicated when Hkv < N), its
    columns of w_o; ValueError when the heads do not split."""
    raise NotImplementedError("shard_attention: split by heads, output projection by columns")


def attention_forward(x: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor, w_o: Tensor,
                      head_dim: int) -> Tensor:
    """Causal GQA attention over the heads these weights hold, then their slice of w_o."""
    raise NotImplementedError("attention_forward: one rank's partial sum")


def all_reduce(tensors: list[Tensor]) -> list[Tensor]:
    """Every rank receives the sum of all ranks' tensors (bit-identical copies)."""
    raise NotImplementedError("all_reduce: a sum, handed to every rank")


def tp_mlp(x: Tensor, shards: list[tuple[Tensor, Tensor, Tensor]]) -> tuple[Tensor, int]:
    """The MLP over len(shards) ranks: (output, bytes all-reduced)."""
    raise NotImplementedError("tp_mlp: partial sums on every rank, then one all-reduce")


def tp_attention(x: Tensor, shards: list[tuple[Tensor, Tensor, Tensor, Tensor]],
                 head_dim: int) -> tuple[Tensor, int]:
    """The attention block over len(shards) ranks: (output, bytes all-reduced)."""
    raise NotImplementedError("tp_attention: partial sums on every rank, then one all-reduce")
