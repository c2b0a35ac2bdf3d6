"""Challenge prefix-cache: chained block hashes, reference counts and an LRU free queue.

`inferview grade prefix-cache <this file>` runs the checks.
"""

from __future__ import annotations


class PrefixCache:
    """``num_blocks`` KV blocks of ``block_size`` tokens, shared by sequences through their hashes."""

    def __init__(self, num_blocks: int, block_size: int) -> None:
        raise NotImplementedError("PrefixCache.__init__: ref counts, hash -> block, the free queue")

    @property
    def num_free_blocks(self) -> int:
        raise NotImplementedError("num_free_blocks: blocks with reference count 0")

    @property
    def num_cached_blocks(self) -> int:
        raise NotImplementedError("num_cached_blocks: blocks cached under a hash")

    def allocate(self, seq_id: int, prompt: list[int]) -> int:
        raise NotImplementedError("allocate: hit the cached prefix, claim the rest; return tokens hit")

    def append(self, seq_id: int, tokens: list[int]) -> None:
        raise NotImplementedError("append: claim blocks as needed, cache the ones that fill")

    def free(self, seq_id: int) -> None:
        raise NotImplementedError("free: release blocks last first to the tail of the free queue")

    def block_table(self, seq_id: int) -> list[int]:
        raise NotImplementedError("block_table: physical block ids in logical order")
