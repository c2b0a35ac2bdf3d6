"""A paged KV cache: fixed-size blocks, a block table per sequence, copy-on-write sharing.

Kwon et al. 2023, *Efficient Memory Management for Large Language Model Serving with
PagedAttention* (vLLM). A contiguous cache reserves ``max_seq_len`` slots per sequence up front and
wastes what a request never uses; a paged cache cuts memory into blocks of ``block_size`` tokens
(16 in vLLM) and gives each sequence a *block table* — logical block ``i`` of the sequence lives in
physical block ``table[i]`` — so memory is claimed one block at a time and waste is under one block
per sequence.

Blocks are reference-counted so sequences can share them: ``fork`` (parallel sampling, beam search,
a shared prompt prefix) copies the parent's block table, not its data. A shared block is copied only
when one of its owners is about to write into it (*copy-on-write*): appending to a sequence whose
last block is partly filled and shared first moves that sequence onto a private copy. A block goes
back to the free pool when its last owner frees it.

Physical storage: ``k_blocks``, ``v_blocks``: ``(num_blocks, Hkv, block_size, D)``. Token ``p`` of a
sequence is at block ``table[p // block_size]``, slot ``p % block_size``.

The challenge ``paged-kv-cache`` asks for this class with the same methods.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from inferview.reference.attention import attention
from torch import Tensor

__all__ = ["PagedCacheConfig", "PagedKVCache", "gather_blocks", "paged_attention"]


@dataclass(frozen=True)
class PagedCacheConfig:
    """Sizes of one layer's block pool."""

    num_blocks: int
    num_kv_heads: int
    head_dim: int
    block_size: int = 16

    def blocks_for(self, num_tokens: int) -> int:
        """Blocks needed to hold ``num_tokens`` tokens: ``ceil(n / block_size)``."""
        return -(-num_tokens // self.block_size)


def gather_blocks(blocks: Tensor, table: list[int], seq_len: int, block_size: int) -> Tensor:
    """Read ``seq_len`` tokens of one sequence out of a block pool.

    ``blocks``: ``(N, Hkv, block_size, D)``; returns ``(Hkv, seq_len, D)``.
    """
    pos = torch.arange(seq_len, device=blocks.device)  # p: (T,)
    phys = torch.tensor(table, dtype=torch.long, device=blocks.device)[pos // block_size] \
        if seq_len else pos  # physical block of token p: (T,)
    slot = pos % block_size  # slot of token p inside its block: (T,)
    return blocks[phys, :, slot].permute(1, 0, 2)  # (T, Hkv, D) -> (Hkv, T, D)


class PagedKVCache:
    """A pool of KV blocks shared by many sequences, each addressed by a caller-chosen int id."""

    def __init__(
        self,
        num_blocks: int,
        num_kv_heads: int,
        head_dim: int,
        block_size: int = 16,
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
    ) -> None:
        self.config = PagedCacheConfig(num_blocks, num_kv_heads, head_dim, block_size)
        shape = (num_blocks, num_kv_heads, block_size, head_dim)
        self.k_blocks = torch.zeros(shape, dtype=dtype, device=device)  # (N, Hkv, bs, D)
        self.v_blocks = torch.zeros(shape, dtype=dtype, device=device)  # (N, Hkv, bs, D)
        self.ref_counts = [0] * num_blocks  # owners of each physical block
        self.free_list = list(range(num_blocks - 1, -1, -1))  # stack; pops block 0 first
        self.tables: dict[int, list[int]] = {}  # seq id -> physical block of each logical block
        self.lengths: dict[int, int] = {}  # seq id -> tokens stored

    # ---- queries -------------------------------------------------------------------------
    @property
    def num_free_blocks(self) -> int:
        """Blocks no sequence owns."""
        return len(self.free_list)

    def seq_len(self, seq_id: int) -> int:
        """Tokens stored for ``seq_id``."""
        self._require(seq_id)
        return self.lengths[seq_id]

    def block_table(self, seq_id: int) -> list[int]:
        """Physical block ids of ``seq_id``, in logical order (a copy)."""
        self._require(seq_id)
        return list(self.tables[seq_id])

    # ---- lifecycle -----------------------------------------------------------------------
    def allocate(self, seq_id: int) -> None:
        """Start an empty sequence. No block is claimed until its first token arrives."""
        if seq_id in self.tables:
            raise ValueError(f"sequence {seq_id} already exists")
        self.tables[seq_id] = []
        self.lengths[seq_id] = 0

    def append(self, seq_id: int, k: Tensor, v: Tensor) -> None:
        """Append ``t_new`` tokens: ``k``, ``v`` are ``(Hkv, t_new, D)``.

        Claims new blocks as needed and copies a shared, partly filled last block before writing
        into it. Raises ``ValueError`` for an unknown id or a wrong shape and ``RuntimeError`` when
        the pool has too few free blocks; either way nothing changes.
        """
        self._require(seq_id)
        c = self.config
        for name, x in (("k", k), ("v", v)):
            if x.dim() != 3 or x.shape[0] != c.num_kv_heads or x.shape[2] != c.head_dim or x.shape[1] < 1:
                raise ValueError(
                    f"{name} has shape {tuple(x.shape)}; expected (kv_heads={c.num_kv_heads}, "
                    f"t_new>=1, head_dim={c.head_dim})"
                )
        if k.shape != v.shape:
            raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} differ")

        table, n, t = self.tables[seq_id], self.lengths[seq_id], k.shape[1]
        new_blocks = c.blocks_for(n + t) - len(table)
        # Copy-on-write is needed only if we will write into a partly filled block someone shares.
        cow = n % c.block_size != 0 and self.ref_counts[table[-1]] > 1
        if new_blocks + cow > self.num_free_blocks:
            raise RuntimeError(
                f"out of blocks: sequence {seq_id} needs {new_blocks + cow}, "
                f"{self.num_free_blocks} free"
            )

        if cow:
            old, fresh = table[-1], self._claim()
            self.k_blocks[fresh] = self.k_blocks[old]  # private copy of the shared block
            self.v_blocks[fresh] = self.v_blocks[old]
            self.ref_counts[old] -= 1
            table[-1] = fresh
        for _ in range(new_blocks):
            table.append(self._claim())

        pos = torch.arange(n, n + t, device=self.k_blocks.device)  # absolute positions: (t,)
        phys = torch.tensor(table, dtype=torch.long, device=pos.device)[pos // c.block_size]
        slot = pos % c.block_size
        self.k_blocks[phys, :, slot] = k.permute(1, 0, 2).to(self.k_blocks.dtype)  # (t, Hkv, D)
        self.v_blocks[phys, :, slot] = v.permute(1, 0, 2).to(self.v_blocks.dtype)
        self.lengths[seq_id] = n + t

    def fork(self, src_id: int, dst_id: int) -> None:
        """Make ``dst_id`` a copy of ``src_id`` that shares all its blocks (no data is copied)."""
        self._require(src_id)
        if dst_id in self.tables:
            raise ValueError(f"sequence {dst_id} already exists")
        table = self.tables[src_id]
        for b in table:
            self.ref_counts[b] += 1  # one more owner; copied lazily on write
        self.tables[dst_id] = list(table)
        self.lengths[dst_id] = self.lengths[src_id]

    def free(self, seq_id: int) -> None:
        """Drop ``seq_id``; its blocks return to the pool once no other sequence shares them."""
        self._require(seq_id)
        for b in self.tables.pop(seq_id):
            self.ref_counts[b] -= 1
            if self.ref_counts[b] == 0:
                self.free_list.append(b)
        del self.lengths[seq_id]

    def gather(self, seq_id: int) -> tuple[Tensor, Tensor]:
        """All keys and values of ``seq_id``, each ``(Hkv, seq_len, D)`` (a contiguous copy)."""
        self._require(seq_id)
        table, n, bs = self.tables[seq_id], self.lengths[seq_id], self.config.block_size
        return gather_blocks(self.k_blocks, table, n, bs), gather_blocks(self.v_blocks, table, n, bs)

    # ---- internals -----------------------------------------------------------------------
    def _claim(self) -> int:
        b = self.free_list.pop()
        self.ref_counts[b] = 1
        return b

    def _require(self, seq_id: int) -> None:
        if seq_id not in self.tables:
            raise ValueError(f"unknown sequence {seq_id}")


def paged_attention(q: Tensor, cache: PagedKVCache, seq_id: int) -> Tensor:
    """Decode-time attention of one sequence's newest queries over its paged cache.

    ``q``: ``(Hq, Tq, D)`` for the last ``Tq`` positions; returns ``(Hq, Tq, D)``. The gather is
    what a PagedAttention kernel does inside the kernel, block by block, through the block table.
    """
    k, v = cache.gather(seq_id)  # (Hkv, T, D)
    return attention(q[None], k[None], v[None], causal=True)[0]
