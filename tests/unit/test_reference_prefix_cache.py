"""The reference prefix cache: vLLM's worked example, the hashing and eviction rules, and its
invariants (reference counts, the free queue, sharing only identical prefixes) over random programs."""

from __future__ import annotations

import random

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from inferview.reference.prefix_cache import PrefixCache, block_hashes, chain_hash


def toks(n: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(1000) for _ in range(n)]


def test_vllm_design_doc_example():
    """docs/design/prefix_caching.md: 10 blocks of 4 tokens, requests of 15, 14 and 29 tokens."""
    c = PrefixCache(10, 4)
    p0 = toks(15, 1)
    assert c.allocate(0, p0) == 0 and c.block_table(0) == [0, 1, 2, 3] and c.num_cached_blocks == 3
    c.append(0, [7])  # fills block 3
    c.append(0, [8])  # claims block 4
    assert c.block_table(0) == [0, 1, 2, 3, 4] and c.num_cached_blocks == 4
    assert list(c.free_queue) == [5, 6, 7, 8, 9]
    assert c.allocate(1, p0[:10] + toks(4, 2)) == 8 and c.block_table(1) == [0, 1, 5, 6]
    c.free(0)
    assert list(c.free_queue) == [7, 8, 9, 4, 3, 2]
    c.free(1)
    assert list(c.free_queue) == [7, 8, 9, 4, 3, 2, 6, 5, 1, 0]
    assert c.allocate(2, p0[:12] + toks(17, 3)) == 12
    assert c.block_table(2) == [0, 1, 2, 7, 8, 9, 4, 3]
    assert list(c.free_queue) == [6, 5]


def test_hash_chains_the_parent():
    a, b = toks(4, 1), toks(4, 2)
    assert block_hashes(a + b, 4)[1] == chain_hash(chain_hash(None, a), b)
    assert block_hashes(a + b, 4)[1] != block_hashes(b + b, 4)[1]  # same tokens, other prefix
    assert block_hashes(a + b[:3], 4) == [chain_hash(None, a)]  # only full blocks
    c = PrefixCache(8, 2)
    c.allocate(0, [1, 2, 3, 4])
    assert c.allocate(1, [9, 9, 3, 4]) == 0  # block [3, 4] after another prefix: a miss
    assert c.allocate(2, [1, 2, 3, 5]) == 2


def test_free_releases_last_block_first_and_eviction_forgets():
    c = PrefixCache(3, 2)
    c.allocate(0, [1, 2, 3, 4, 5])  # 2 full blocks cached, one partial
    c.free(0)
    assert list(c.free_queue) == [2, 1, 0] and c.num_cached_blocks == 2
    c.allocate(1, [7, 7])  # takes block 2 (uncached, the partial one)
    c.allocate(2, [8, 8])  # takes block 1: evicts [3, 4]
    assert c.num_cached_blocks == 3  # [1, 2] survives, [7, 7] and [8, 8] are new
    c.free(1)
    c.free(2)
    assert c.allocate(3, [1, 2, 3, 4]) == 2  # the prefix hit survives; its child was evicted


def test_duplicate_block_stays_uncached():
    c = PrefixCache(5, 2)
    c.allocate(0, [1, 2, 3])
    c.allocate(1, [1, 2, 3])  # hits [1, 2]; its own partial block
    c.append(0, [4])
    c.append(1, [4])  # same hash as sequence 0's second block
    first, dup = c.block_table(0)[1], c.block_table(1)[1]
    assert c.num_cached_blocks == 2 and first != dup
    c.free(0)
    assert c.lookup([1, 2, 3, 4]) == [0, first]  # freed, still cached
    c.allocate(2, [5, 5, 6, 6, 7])  # 3 fresh blocks from the queue [3, 4, first]: evicts first
    assert c.lookup([1, 2, 3, 4]) == [0]  # the duplicate never took over the hash


def test_failed_calls_change_nothing():
    c = PrefixCache(4, 2)
    c.allocate(0, [1, 2, 3, 4])
    c.free(0)
    queue = list(c.free_queue)
    # hits 2 blocks that sit in the queue; needs 3 fresh, and only 2 others are free
    with pytest.raises(RuntimeError):
        c.allocate(1, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    assert list(c.free_queue) == queue and c.ref_counts == [0, 0, 0, 0] and 1 not in c.tables
    assert c.allocate(1, [1, 2, 3, 4, 5, 6, 7, 8]) == 4  # exactly fits
    with pytest.raises(RuntimeError):
        c.append(1, [9])
    for call in (lambda: c.allocate(1, [1]), lambda: c.allocate(2, []), lambda: c.append(5, [1]),
                 lambda: c.append(1, []), lambda: c.free(5), lambda: c.block_table(5)):
        with pytest.raises(ValueError):
            call()
    assert c.block_table(1) == [0, 1, 2, 3] and c.num_free_blocks == 0


class CacheInvariants(RuleBasedStateMachine):
    """Random programs over a 3-token vocabulary; after each step the bookkeeping is consistent and
    every shared or cached block holds exactly the prefix its sequences say it does."""

    def __init__(self) -> None:
        super().__init__()
        self.bs = 2
        self.c = PrefixCache(6, self.bs)
        self.next_id = 0
        self.contents: dict[int, tuple[int, ...]] = {}  # block -> the prefix it holds (full blocks)

    @rule(prompt=st.lists(st.integers(0, 2), min_size=1, max_size=7))
    def allocate(self, prompt):
        try:
            hit = self.c.allocate(self.next_id, prompt)
        except RuntimeError:
            return
        table = self.c.block_table(self.next_id)
        assert hit % self.bs == 0 and hit <= len(prompt)
        for i in range(hit // self.bs):
            assert self.contents[table[i]] == tuple(prompt[: (i + 1) * self.bs])  # a hit is exact
        self._record(self.next_id)
        self.next_id += 1

    @precondition(lambda self: self.c.tables)
    @rule(data=st.data(), tokens=st.lists(st.integers(0, 2), min_size=1, max_size=3))
    def append(self, data, tokens):
        sid = data.draw(st.sampled_from(sorted(self.c.tables)))
        try:
            self.c.append(sid, tokens)
        except RuntimeError:
            return
        self._record(sid)

    @precondition(lambda self: self.c.tables)
    @rule(data=st.data())
    def free(self, data):
        self.c.free(data.draw(st.sampled_from(sorted(self.c.tables))))

    def _record(self, sid):
        t, table = self.c.tokens[sid], self.c.block_table(sid)
        for i in range(len(t) // self.bs):
            self.contents[table[i]] = tuple(t[: (i + 1) * self.bs])

    @invariant()
    def consistent(self):
        c = self.c
        held = [b for table in c.tables.values() for b in table]
        assert all(c.ref_counts[b] == held.count(b) for b in range(c.num_blocks))
        assert set(c.free_queue) == {b for b in range(c.num_blocks) if c.ref_counts[b] == 0}
        assert all(c.block_hash[b] == h for h, b in c.cached.items())
        assert sum(h is not None for h in c.block_hash) == len(c.cached)
        for sid, table in c.tables.items():
            assert len(table) == -(-len(c.tokens[sid]) // c.block_size)
            hashes = block_hashes(c.tokens[sid], c.block_size)
            assert c.hashes[sid] == hashes
            for i, h in enumerate(hashes):
                if c.block_hash[table[i]] is not None:
                    assert c.block_hash[table[i]] == h  # a cached block in a table is that prefix


TestCacheInvariants = CacheInvariants.TestCase
TestCacheInvariants.settings = settings(max_examples=100, stateful_step_count=15, deadline=None)
