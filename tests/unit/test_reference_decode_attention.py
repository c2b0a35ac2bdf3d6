"""The decode references: paged decode attention through block tables, split-K partials and the
log-sum-exp merge, against the definitions written as loops."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from inferview.reference.decode_attention import (
    Merged,
    SplitPartials,
    blocks_for,
    decode_bytes,
    dense_kv,
    gather_sequence,
    merge_partials,
    paged_decode_attention,
    ragged_decode_attention,
    split_chunk,
    split_k_decode,
    split_k_partials,
    split_range,
)


def _rand(shape, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64) * scale


def _loop_decode(q, k, v, lens):
    """softmax(q . k_j / sqrt(D)) v over keys 0..n-1, one (sequence, head) at a time, in floats."""
    b_, hq, d = q.shape
    out = torch.zeros(b_, hq, d, dtype=torch.float64)
    for b in range(b_):
        for h in range(hq):
            g = h // (hq // k.shape[1])
            s = [float(q[b, h] @ k[b, g, j]) / math.sqrt(d) for j in range(int(lens[b]))]
            mx = max(s)
            e = [math.exp(x - mx) for x in s]
            for j, w in enumerate(e):
                out[b, h] += w / sum(e) * v[b, g, j]
    return out


def _paged(k, v, lens, block_size, seed):
    """Scatter a dense (B, Hkv, T, D) cache into a shuffled pool with stale slots and padding."""
    b_, hkv, t, d = k.shape
    need = [blocks_for(int(n), block_size) for n in lens]
    num_blocks = sum(need) + 3
    g = torch.Generator().manual_seed(seed)
    ids = torch.randperm(num_blocks, generator=g).tolist()
    cols = blocks_for(t, block_size) + 1
    table = torch.randint(0, num_blocks, (b_, cols), generator=g, dtype=torch.int32)
    k_pool = torch.full((num_blocks, block_size, hkv, d), 1e3, dtype=k.dtype)  # stale everywhere
    v_pool = torch.full_like(k_pool, -1e3)
    for b, n in enumerate(lens.tolist()):
        for i in range(need[b]):
            blk = ids.pop()
            table[b, i] = blk
            for p in range(i * block_size, min(n, (i + 1) * block_size)):
                k_pool[blk, p % block_size] = k[b, :, p]
                v_pool[blk, p % block_size] = v[b, :, p]
    return k_pool, v_pool, table


def test_blocks_and_splits():
    assert [blocks_for(n, 16) for n in (1, 16, 17, 32)] == [1, 1, 2, 2]
    assert split_chunk(10, 4) == 3
    assert [split_range(s, 3, 10) for s in range(4)] == [(0, 3), (3, 6), (6, 9), (9, 10)]
    assert split_chunk(5, 4) == 2 and split_range(3, 2, 5) == (5, 5)  # the last split is empty
    assert split_chunk(3, 8) == 1 and split_range(5, 1, 3) == (3, 3)  # more splits than keys
    assert [split_range(s, 3, 4) for s in range(4)] == [(0, 3), (3, 4), (4, 4), (4, 4)]  # ragged
    with pytest.raises(ValueError):
        split_chunk(10, 0)


def test_gather_follows_the_block_table():
    pool = torch.arange(5 * 4 * 1 * 2, dtype=torch.float64).view(5, 4, 1, 2)
    table = torch.tensor([3, 0, 4], dtype=torch.int32)
    got = gather_sequence(pool, table, 6)  # tokens 0-3 in block 3, 4-5 in block 0
    want = torch.stack([pool[3, 0], pool[3, 1], pool[3, 2], pool[3, 3], pool[0, 0], pool[0, 1]])
    torch.testing.assert_close(got, want.permute(1, 0, 2))


@pytest.mark.parametrize("hq,hkv", [(2, 2), (4, 2), (4, 1), (6, 3)])
@pytest.mark.parametrize("block_size", [1, 4, 16])
def test_paged_decode_is_attention_over_each_sequence(hq, hkv, block_size):
    lens = torch.tensor([1, 7, 16, 5], dtype=torch.int32)
    q, k, v = _rand((4, hq, 8), 1), _rand((4, hkv, 16, 8), 2), _rand((4, hkv, 16, 8), 3)
    k_pool, v_pool, table = _paged(k, v, lens, block_size, seed=4)
    got = paged_decode_attention(q, k_pool, v_pool, table, lens)
    torch.testing.assert_close(got, _loop_decode(q, k, v, lens))
    torch.testing.assert_close(ragged_decode_attention(q, k, v, lens), got)
    kd, vd = dense_kv(k_pool, v_pool, table, lens, 2)
    torch.testing.assert_close(kd, k[2:3])
    torch.testing.assert_close(vd, v[2:3])


def test_paged_decode_rejects_bad_lengths():
    pool = torch.zeros(2, 4, 1, 8)
    table = torch.zeros(1, 2, dtype=torch.int32)
    for n in (0, 9):
        with pytest.raises(ValueError):
            paged_decode_attention(torch.zeros(1, 1, 8), pool, pool, table, torch.tensor([n]))


def test_partials_are_attention_over_each_split():
    q, k, v = _rand((2, 4, 8), 5), _rand((2, 2, 10, 8), 6), _rand((2, 2, 10, 8), 7)
    lens = torch.tensor([10, 4], dtype=torch.int32)
    parts = split_k_partials(q, k, v, lens, 4, compute_dtype=torch.float64)
    assert isinstance(parts, SplitPartials) and parts.out.shape == (2, 4, 4, 8)
    for b in range(2):
        for s in range(4):
            lo, hi = split_range(s, 3, int(lens[b]))
            if lo == hi:
                assert bool((parts.out[b, :, s] == 0).all()) and bool(torch.isneginf(parts.lse[b, :, s]).all())
                continue
            kk = k[b].repeat_interleave(2, dim=0)[:, lo:hi]  # (Hq, n, D): head h reads kv h // 2
            scores = torch.einsum("hd,htd->ht", q[b], kk) / math.sqrt(8)
            torch.testing.assert_close(parts.lse[b, :, s], torch.logsumexp(scores, -1))
            sub = ragged_decode_attention(q[b:b + 1], k[b:b + 1, :, lo:hi], v[b:b + 1, :, lo:hi],
                                          torch.tensor([hi - lo]))
            torch.testing.assert_close(parts.out[b, :, s], sub[0])
    assert torch.isneginf(parts.lse[1, :, 2:]).all()  # sequence 1 has 4 keys: splits 2, 3 empty


@settings(max_examples=30, deadline=None)
@given(t=st.integers(1, 20), splits=st.integers(1, 25), seed=st.integers(0, 1000),
       scale=st.sampled_from([1.0, 30.0]))
def test_merged_splits_equal_attention_over_all_keys(t, splits, seed, scale):
    g = torch.Generator().manual_seed(seed)
    lens = torch.randint(1, t + 1, (2,), generator=g, dtype=torch.int32)
    q, k, v = _rand((2, 2, 8), seed, scale), _rand((2, 1, t, 8), seed + 1, scale), _rand((2, 1, t, 8), seed + 2)
    got = split_k_decode(q, k, v, lens, splits, compute_dtype=torch.float64)
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got, ragged_decode_attention(q, k, v, lens, compute_dtype=torch.float64))
    parts = split_k_partials(q, k, v, lens, splits, compute_dtype=torch.float64)
    full = split_k_partials(q, k, v, lens, 1, compute_dtype=torch.float64)
    torch.testing.assert_close(merge_partials(parts.out, parts.lse).lse, full.lse[..., 0])


def test_merge_is_shift_invariant_and_stable_for_huge_lse():
    o = _rand((1, 2, 3, 4), 8)
    lse = _rand((1, 2, 3), 9)
    base = merge_partials(o, lse)
    assert isinstance(base, Merged)
    for c in (3e4, -3e4):
        shifted = merge_partials(o, lse + c)
        torch.testing.assert_close(shifted.out, base.out)
        torch.testing.assert_close(shifted.lse, base.lse + c)
        o32, l32 = o.float(), (lse + c).float()
        assert torch.isfinite(merge_partials(o32, l32).out).all()


def test_merge_of_merges_is_the_merge():
    """Merging is associative: merge two halves, then merge the two results."""
    o, lse = _rand((2, 1, 6, 4), 10), _rand((2, 1, 6), 11, 5.0)
    lse[0, 0, 1] = -math.inf
    o[0, 0, 1] = 0.0
    left, right = merge_partials(o[:, :, :3], lse[:, :, :3]), merge_partials(o[:, :, 3:], lse[:, :, 3:])
    two = merge_partials(torch.stack([left.out, right.out], 2), torch.stack([left.lse, right.lse], 2))
    one = merge_partials(o, lse)
    torch.testing.assert_close(two.out, one.out)
    torch.testing.assert_close(two.lse, one.lse)


def test_merge_with_empty_splits():
    o = torch.tensor([[[[0.0, 0.0], [1.0, 2.0], [0.0, 0.0]]]])
    lse = torch.tensor([[[-math.inf, 0.5, -math.inf]]])
    got = merge_partials(o, lse)  # one split with keys: its output, its lse
    torch.testing.assert_close(got.out, torch.tensor([[[1.0, 2.0]]]))
    torch.testing.assert_close(got.lse, torch.tensor([[0.5]]))
    none = merge_partials(torch.zeros(1, 1, 2, 2), torch.full((1, 1, 2), -math.inf))
    assert bool((none.out == 0).all()) and bool(torch.isneginf(none.lse).all())


def test_decode_bytes():
    # two sequences of 1000 and 3000 tokens, 8 kv heads of 128, fp16: K and V, 2 bytes each
    assert decode_bytes(torch.tensor([1000, 3000]), 8, 128, 2) == 2 * 4000 * 8 * 128 * 2
