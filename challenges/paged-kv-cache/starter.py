"""Challenge paged-kv-cache: blocks, block tables, reference counts and copy-on-write.

`inferview grade paged-kv-cache <this file>` runs the checks.
"""

from __future__ import annotations

import torch
from torch import Tensor


class PagedKVCache:
    """A pool of KV blocks shared by many sequences, each addressed by an int id."""

    def __init__(self, num_blocks: int, num_kv_heads: int, head_dim: int, block_size: int = 16,
                 dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu") -> None:
        raise NotImplementedError("PagedKVCache.__init__: block pools, free list, ref counts, tables")

    @property
    def num_free_blocks(self) -> int:
        raise NotImplementedError("num_free_blocks: blocks no sequence owns")

    def allocate(self, seq_id: int) -> None:
        raise NotImplementedError("allocate: a new empty sequence (claims no block)")

    def append(self, seq_id: int, k: Tensor, v: Tensor) -> None:
        raise NotImplementedError("append: k, v (Hkv, t_new, D); claim blocks, copy-on-write, write")

    def fork(self, src_id: int, dst_id: int) -> None:
        raise NotImplementedError("fork: share every block of src_id with dst_id")

    def free(self, seq_id: int) -> None:
        raise NotImplementedError("free: release blocks whose reference count drops to zero")

    def gather(self, seq_id: int) -> tuple[Tensor, Tensor]:
        raise NotImplementedError("gather: (Hkv, seq_len, D) keys and values of one sequence")

    def seq_len(self, seq_id: int) -> int:
        raise NotImplementedError("seq_len: tokens stored for seq_id")

    def block_table(self, seq_id: int) -> list[int]:
        raise NotImplementedError("block_table: physical block ids in logical order")
