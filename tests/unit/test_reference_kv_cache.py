"""The contiguous and paged KV caches, and the tiny decoder that checks them end to end."""

from __future__ import annotations

import pytest
import torch
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from inferview.reference.attention import attention
from inferview.reference.kv_cache import ContiguousKVCache, KVCache
from inferview.reference.paged_kv_cache import PagedKVCache, paged_attention
from inferview.reference.tiny_decoder import TinyDecoder, TinyDecoderConfig


def _rand(shape, seed):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


# ---- contiguous -------------------------------------------------------------------------


def test_update_returns_everything_as_views_of_one_buffer():
    cache = KVCache(2, 3, 4, 10)
    chunks = [(_rand((2, 3, t, 4), s), _rand((2, 3, t, 4), s + 50)) for s, t in enumerate([4, 1, 2])]
    for k, v in chunks:
        got_k, got_v = cache.update(k, v)
        assert got_k.data_ptr() == cache.k.data_ptr()  # a view, not a copy
    torch.testing.assert_close(got_k, torch.cat([k for k, _ in chunks], dim=2))
    torch.testing.assert_close(got_v, torch.cat([v for _, v in chunks], dim=2))
    assert cache.seq_len == 7


def test_rejected_update_changes_nothing():
    cache = ContiguousKVCache(1, 2, 4, 5)
    k = _rand((1, 2, 4, 4), 0)
    cache.update(k, k)
    before = cache.k.clone()
    with pytest.raises(ValueError, match="overflow"):
        cache.update(_rand((1, 2, 2, 4), 1), _rand((1, 2, 2, 4), 1))
    with pytest.raises(ValueError):
        cache.update(_rand((1, 3, 1, 4), 1), _rand((1, 3, 1, 4), 1))  # wrong kv heads
    with pytest.raises(ValueError):
        cache.update(_rand((1, 2, 1, 4), 1), _rand((1, 2, 2, 4), 1))  # k and v differ
    assert cache.seq_len == 4 and torch.equal(cache.k, before)
    got_k, _ = cache.update(_rand((1, 2, 1, 4), 2), _rand((1, 2, 1, 4), 2))  # exactly full is fine
    assert got_k.shape == (1, 2, 5, 4)
    cache.reset()
    assert cache.seq_len == 0
    assert cache.update(k, k)[0].shape == (1, 2, 4, 4)


def test_cache_bytes():
    assert ContiguousKVCache(2, 8, 128, 4096).config.bytes(torch.bfloat16) == 2 * 2 * 8 * 4096 * 128 * 2


@pytest.mark.parametrize("prompt_len,steps", [(1, 6), (7, 5)])
def test_cached_decoding_equals_recomputation(prompt_len, steps):
    model = TinyDecoder(TinyDecoderConfig(num_layers=2, num_heads=4, num_kv_heads=2))
    tokens = model.prompt(2, prompt_len, seed=3)
    caches = model.new_caches(2, prompt_len + steps)
    logits = model.forward(tokens, caches)
    torch.testing.assert_close(logits, model.forward(tokens))
    for _ in range(steps):
        nxt = logits[:, -1].argmax(-1, keepdim=True)
        logits = model.forward(nxt, caches, start_pos=tokens.shape[1])
        tokens = torch.cat([tokens, nxt], 1)
        torch.testing.assert_close(logits[:, -1], model.forward(tokens)[:, -1], rtol=1e-5, atol=1e-5)
    assert torch.equal(model.generate(tokens[:, :prompt_len], steps), tokens)
    assert torch.equal(model.generate(tokens[:, :prompt_len], steps, use_cache=False), tokens)


def test_tiny_decoder_is_deterministic_and_position_aware():
    a, b = TinyDecoder(), TinyDecoder()
    p = a.prompt(1, 6)
    assert torch.equal(a.forward(p), b.forward(p))
    caches = a.new_caches(1)
    a.forward(p[:, :3], caches)
    wrong_pos = a.forward(p[:, 3:], caches, start_pos=0)  # positions restarted: RoPE differs
    assert not torch.allclose(wrong_pos, a.forward(p)[:, 3:])


# ---- paged ------------------------------------------------------------------------------

HKV, D, BS, NBLOCKS = 2, 4, 4, 12


class PagedModel(RuleBasedStateMachine):
    """Drive the paged cache with random allocate/append/fork/free; the model is a dict of lists."""

    def __init__(self) -> None:
        super().__init__()
        self.cache = PagedKVCache(NBLOCKS, HKV, D, block_size=BS)
        self.seqs: dict[int, list[torch.Tensor]] = {}  # seq id -> tokens' (k, v) rows, (2, Hkv, D)
        self.next_id = 0
        self.counter = 0

    def _owned_blocks(self) -> int:
        return len({b for s in self.seqs for b in self.cache.block_table(s)})

    @rule()
    def allocate(self) -> None:
        self.cache.allocate(self.next_id)
        self.seqs[self.next_id] = []
        self.next_id += 1

    @precondition(lambda self: self.seqs)
    @rule(data=st.data(), t=st.integers(1, 6))
    def append(self, data, t) -> None:
        sid = data.draw(st.sampled_from(sorted(self.seqs)))
        self.counter += 1
        kv = _rand((2, HKV, t, D), self.counter)
        table = self.cache.block_table(sid)
        n = len(self.seqs[sid])
        need = -(-(n + t) // BS) - len(table)
        shared_tail = n % BS != 0 and sum(table[-1] in self.cache.block_table(o) for o in self.seqs) > 1
        if need + shared_tail > self.cache.num_free_blocks:
            before = self.cache.num_free_blocks
            with pytest.raises(RuntimeError):
                self.cache.append(sid, kv[0], kv[1])
            assert self.cache.num_free_blocks == before and self.cache.seq_len(sid) == n
            return
        self.cache.append(sid, kv[0], kv[1])
        self.seqs[sid] += [kv[:, :, i] for i in range(t)]

    @precondition(lambda self: self.seqs)
    @rule(data=st.data())
    def fork(self, data) -> None:
        src = data.draw(st.sampled_from(sorted(self.seqs)))
        free = self.cache.num_free_blocks
        self.cache.fork(src, self.next_id)
        assert self.cache.num_free_blocks == free  # sharing, not copying
        self.seqs[self.next_id] = list(self.seqs[src])
        self.next_id += 1

    @precondition(lambda self: self.seqs)
    @rule(data=st.data())
    def free(self, data) -> None:
        sid = data.draw(st.sampled_from(sorted(self.seqs)))
        self.cache.free(sid)
        del self.seqs[sid]

    @invariant()
    def contents_match(self) -> None:
        for sid, rows in self.seqs.items():
            k, v = self.cache.gather(sid)
            assert k.shape == (HKV, len(rows), D)
            if rows:
                want = torch.stack(rows, dim=2)  # (2, Hkv, T, D)
                assert torch.equal(k, want[0]) and torch.equal(v, want[1])

    @invariant()
    def blocks_are_accounted_for(self) -> None:
        assert self.cache.num_free_blocks + self._owned_blocks() == NBLOCKS


TestPagedCacheStateful = PagedModel.TestCase
TestPagedCacheStateful.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)


def test_fork_then_append_copies_only_the_partial_block():
    cache = PagedKVCache(8, 1, 2, block_size=4)
    cache.allocate(0)
    x = _rand((1, 6, 2), 0)
    cache.append(0, x, x)  # blocks: [full, 2/4]
    cache.fork(0, 1)
    assert cache.block_table(0) == cache.block_table(1) and cache.num_free_blocks == 6
    y = _rand((1, 1, 2), 1)
    cache.append(1, y, y)
    t0, t1 = cache.block_table(0), cache.block_table(1)
    assert t0[0] == t1[0] and t0[1] != t1[1] and cache.num_free_blocks == 5
    assert torch.equal(cache.gather(0)[0], x)
    assert torch.equal(cache.gather(1)[0], torch.cat([x, y], 1))
    cache.free(0)
    assert cache.num_free_blocks == 6  # the private tail went back, the shared block stays
    cache.free(1)
    assert cache.num_free_blocks == 8


def test_paged_errors():
    cache = PagedKVCache(1, 1, 2, block_size=2)
    cache.allocate(0)
    with pytest.raises(ValueError):
        cache.allocate(0)
    with pytest.raises(ValueError):
        cache.append(5, torch.zeros(1, 1, 2), torch.zeros(1, 1, 2))
    with pytest.raises(ValueError):
        cache.append(0, torch.zeros(2, 1, 2), torch.zeros(2, 1, 2))
    with pytest.raises(RuntimeError):
        cache.append(0, torch.zeros(1, 3, 2), torch.zeros(1, 3, 2))
    assert cache.seq_len(0) == 0 and cache.num_free_blocks == 1


def test_paged_attention_equals_contiguous():
    cache = PagedKVCache(16, 2, 8, block_size=16)
    cache.allocate(7)
    k, v = _rand((2, 40, 8), 1), _rand((2, 40, 8), 2)
    cache.append(7, k[:, :33], v[:, :33])
    cache.append(7, k[:, 33:], v[:, 33:])
    q = _rand((4, 3, 8), 3)
    want = attention(q[None], k[None], v[None], causal=True)[0]
    torch.testing.assert_close(paged_attention(q, cache, 7), want)
