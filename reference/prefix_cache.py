"""Block-hash prefix caching over a paged KV pool: chained block hashes, reference counts, and an
LRU free queue from which unreferenced cached blocks are evicted.

This follows vLLM V1's design (vLLM docs, *Automatic Prefix Caching*, design/prefix_caching.md;
``vllm/v1/core/block_pool.py``). The keys and values of a block depend on every token before it
(causal attention), so a full block is identified by a hash of its **parent block's hash** and its
own tokens: two blocks match only when the whole prefix up to the end of the block is the same.
Only full blocks are cached. A new request's prompt is hashed block by block and looked up; the
hit is the longest run of leading blocks that are cached, and the request shares those blocks
instead of recomputing them.

Every block has a reference count: the sequences whose block table holds it. A block whose count
drops to zero is not wiped: it joins the tail of the **free queue** still holding its hash, so a
later prompt can hit it. The free queue is in least-recently-used order: a sequence's blocks are
freed last block first (the tail of a prompt hashes more tokens and is less likely to be shared, so
it should be evicted first), a block that is hit while in the queue is taken out of it ("touched"),
and a fresh block is always the head of the queue; if the head holds a cached hash, that hash is
**evicted** (forgotten) as the block is reused. Blocks in use are never evicted.

Two rules of this module that vLLM V1 does differently, to keep the state small: the cache maps a
hash to one block, so a block that fills with content already cached elsewhere stays uncached
(vLLM caches the duplicate too); and a prompt can hit all of its full blocks (vLLM stops one token
short so the model has a token to compute for the first output's logits).

The hash is SHA-256 over the parent's 32-byte digest (nothing for the first block) followed by the
block's token ids as 8-byte little-endian unsigned integers. vLLM first hashed a tuple with
Python's built-in ``hash``; its ``CacheConfig.prefix_caching_hash_algo`` now defaults to
``"sha256"``, which is collision resistant (built-in hash collisions can be engineered).

The challenge ``prefix-cache`` asks for ``PrefixCache`` with the same methods.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence

__all__ = ["PrefixCache", "block_hashes", "chain_hash"]


def chain_hash(parent: bytes | None, tokens: Sequence[int]) -> bytes:
    """The hash of a full block: SHA-256 of the parent's digest and the block's tokens."""
    h = hashlib.sha256(parent or b"")
    for t in tokens:
        h.update(int(t).to_bytes(8, "little"))
    return h.digest()


def block_hashes(tokens: Sequence[int], block_size: int, parent: bytes | None = None,
                 start: int = 0) -> list[bytes]:
    """Hashes of the full blocks of ``tokens[start:]`` (``start`` at a block boundary), each
    chaining the previous one (``parent`` for the first)."""
    out: list[bytes] = []
    for lo in range(start, len(tokens) - block_size + 1, block_size):
        parent = chain_hash(parent, tokens[lo:lo + block_size])
        out.append(parent)
    return out


class PrefixCache:
    """``num_blocks`` KV blocks of ``block_size`` tokens shared by sequences with caller-chosen ids."""

    def __init__(self, num_blocks: int, block_size: int) -> None:
        if num_blocks < 1 or block_size < 1:
            raise ValueError("num_blocks and block_size must be >= 1")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.ref_counts = [0] * num_blocks
        self.block_hash: list[bytes | None] = [None] * num_blocks  # the hash a block is cached under
        self.cached: dict[bytes, int] = {}  # hash -> the one block cached under it
        self.free_queue: OrderedDict[int, None] = OrderedDict.fromkeys(range(num_blocks))  # head: next
        self.tables: dict[int, list[int]] = {}  # seq id -> physical blocks, in logical order
        self.tokens: dict[int, list[int]] = {}  # seq id -> all its tokens
        self.hashes: dict[int, list[bytes]] = {}  # seq id -> hashes of its full blocks

    # ---- queries -------------------------------------------------------------------------
    @property
    def num_free_blocks(self) -> int:
        """Blocks no sequence holds (in the free queue), cached or not."""
        return len(self.free_queue)

    @property
    def num_cached_blocks(self) -> int:
        """Blocks cached under a hash, held by a sequence or not."""
        return len(self.cached)

    def block_table(self, seq_id: int) -> list[int]:
        """Physical block ids of ``seq_id`` in logical order (a copy)."""
        self._require(seq_id)
        return list(self.tables[seq_id])

    def lookup(self, prompt: Sequence[int]) -> list[int]:
        """The blocks a prompt would hit now: the longest run of its leading full blocks cached."""
        hits = []
        for h in block_hashes(prompt, self.block_size):
            if h not in self.cached:
                break
            hits.append(self.cached[h])
        return hits

    # ---- operations ----------------------------------------------------------------------
    def allocate(self, seq_id: int, prompt: Sequence[int]) -> int:
        """A new sequence holding ``prompt``; returns how many of its tokens hit the cache.

        The hit blocks are shared (touched first, so the allocation cannot evict them); the rest
        are fresh blocks from the head of the free queue, and those that are full are cached.
        ``ValueError`` for an existing id or an empty prompt; ``RuntimeError`` when too few blocks
        are free (the hit blocks that sit in the free queue do not count: they are about to be
        used). A call that raises changes nothing.
        """
        if seq_id in self.tables:
            raise ValueError(f"sequence {seq_id} already exists")
        prompt = self._tokens(prompt)
        hashes = block_hashes(prompt, self.block_size)
        hits = self.lookup(prompt)
        need = -(-len(prompt) // self.block_size) - len(hits)
        revived = sum(1 for b in hits if self.ref_counts[b] == 0)
        if need > self.num_free_blocks - revived:
            raise RuntimeError(f"allocate({seq_id}) needs {need} fresh blocks; "
                               f"{self.num_free_blocks - revived} can be claimed")
        for b in hits:  # touch: a hit in the free queue leaves it
            if self.ref_counts[b] == 0:
                del self.free_queue[b]
            self.ref_counts[b] += 1
        table = hits + [self._claim() for _ in range(need)]
        for i in range(len(hits), len(hashes)):
            self._cache(table[i], hashes[i])
        self.tables[seq_id], self.tokens[seq_id], self.hashes[seq_id] = table, prompt, hashes
        return len(hits) * self.block_size

    def append(self, seq_id: int, tokens: Sequence[int]) -> None:
        """Add generated tokens; claims blocks as needed and caches each block that becomes full.

        ``ValueError`` for an unknown id or no tokens; ``RuntimeError`` when too few blocks are
        free (nothing changes)."""
        self._require(seq_id)
        new = self._tokens(tokens)
        table, toks, hashes = self.tables[seq_id], self.tokens[seq_id], self.hashes[seq_id]
        total = toks + new
        need = -(-len(total) // self.block_size) - len(table)
        if need > self.num_free_blocks:
            raise RuntimeError(f"append to {seq_id} needs {need} blocks; {self.num_free_blocks} free")
        table += [self._claim() for _ in range(need)]
        full_before = len(hashes)
        hashes += block_hashes(total, self.block_size, hashes[-1] if hashes else None,
                               start=full_before * self.block_size)
        for i in range(full_before, len(hashes)):
            self._cache(table[i], hashes[i])
        self.tokens[seq_id] = total

    def free(self, seq_id: int) -> None:
        """Drop a sequence. Its blocks are released last block first; each whose count reaches
        zero joins the tail of the free queue, keeping its hash (a later prompt may hit it)."""
        self._require(seq_id)
        for b in reversed(self.tables.pop(seq_id)):
            self.ref_counts[b] -= 1
            if self.ref_counts[b] == 0:
                self.free_queue[b] = None
        del self.tokens[seq_id], self.hashes[seq_id]

    # ---- internals -----------------------------------------------------------------------
    def _claim(self) -> int:
        """Pop the head of the free queue, evicting its cached hash if it has one."""
        b, _ = self.free_queue.popitem(last=False)
        if self.block_hash[b] is not None:
            del self.cached[self.block_hash[b]]
            self.block_hash[b] = None
        self.ref_counts[b] = 1
        return b

    def _cache(self, block: int, h: bytes) -> None:
        """Cache a block that just became full, unless another block is cached under its hash."""
        if h not in self.cached:
            self.cached[h] = block
            self.block_hash[block] = h

    def _require(self, seq_id: int) -> None:
        if seq_id not in self.tables:
            raise ValueError(f"unknown sequence {seq_id}")

    @staticmethod
    def _tokens(tokens: Sequence[int]) -> list[int]:
        out = [int(t) for t in tokens]
        if not out:
            raise ValueError("at least one token is needed")
        return out
