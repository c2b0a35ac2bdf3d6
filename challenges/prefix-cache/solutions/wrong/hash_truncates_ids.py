"""A block's hash packs each token id into 16 bits, so ids that differ by 2**16 look alike."""

from __future__ import annotations

import hashlib
from collections import OrderedDict


def _key(parent, tokens):
    h = hashlib.sha256(parent or b"")
    for t in tokens:
        h.update((t & 0xFFFF).to_bytes(2, "little"))
    return h.digest()


class PrefixCache:
    def __init__(self, num_blocks: int, block_size: int) -> None:
        self.bs = block_size
        self.ref = [0] * num_blocks
        self.block_hash: list = [None] * num_blocks
        self.cache: dict = {}
        self.freeq: OrderedDict = OrderedDict((b, None) for b in range(num_blocks))
        self.tables: dict = {}
        self.tokens: dict = {}
        self.hashes: dict = {}

    @property
    def num_free_blocks(self) -> int:
        return len(self.freeq)

    @property
    def num_cached_blocks(self) -> int:
        return len(self.cache)

    def _claim(self) -> int:
        b, _ = self.freeq.popitem(last=False)
        h = self.block_hash[b]
        if h is not None:
            del self.cache[h]
            self.block_hash[b] = None
        self.ref[b] = 1
        return b

    def _cache(self, b, h):
        if h not in self.cache and self.block_hash[b] is None:
            self.cache[h] = b
            self.block_hash[b] = h

    def allocate(self, seq_id: int, prompt: list[int]) -> int:
        if seq_id in self.tables or not prompt:
            raise ValueError("bad allocate")
        bs = self.bs
        nfull = len(prompt) // bs
        hs = []
        parent = None
        for i in range(nfull):
            parent = _key(parent, prompt[i * bs:(i + 1) * bs])
            hs.append(parent)
        hits = []
        for h in hs:
            if h in self.cache:
                hits.append(self.cache[h])
            else:
                break
        total = -(-len(prompt) // bs)
        fresh = total - len(hits)
        in_queue = sum(1 for b in hits if self.ref[b] == 0)
        if fresh > len(self.freeq) - in_queue:
            raise RuntimeError("out of blocks")
        for b in hits:
            if self.ref[b] == 0:
                del self.freeq[b]
            self.ref[b] += 1
        table = list(hits)
        for i in range(len(hits), total):
            b = self._claim()
            table.append(b)
            if i < nfull:
                self._cache(b, hs[i])
        self.tables[seq_id] = table
        self.tokens[seq_id] = list(prompt)
        self.hashes[seq_id] = hs
        return len(hits) * bs

    def append(self, seq_id: int, tokens: list[int]) -> None:
        if seq_id not in self.tables or not tokens:
            raise ValueError("bad append")
        bs = self.bs
        toks = self.tokens[seq_id]
        table = self.tables[seq_id]
        new_len = len(toks) + len(tokens)
        need = -(-new_len // bs) - len(table)
        if need > len(self.freeq):
            raise RuntimeError("out of blocks")
        toks.extend(tokens)
        for _ in range(need):
            table.append(self._claim())
        hs = self.hashes[seq_id]
        while len(hs) < new_len // bs:
            i = len(hs)
            parent = hs[-1] if hs else None
            h = _key(parent, toks[i * bs:(i + 1) * bs])
            hs.append(h)
            self._cache(table[i], h)

    def free(self, seq_id: int) -> None:
        if seq_id not in self.tables:
            raise ValueError("unknown")
        for b in reversed(self.tables.pop(seq_id)):
            self.ref[b] -= 1
            if self.ref[b] == 0:
                self.freeq[b] = None
        del self.tokens[seq_id]
        del self.hashes[seq_id]

    def block_table(self, seq_id: int) -> list[int]:
        if seq_id not in self.tables:
            raise ValueError("unknown")
        return list(self.tables[seq_id])
