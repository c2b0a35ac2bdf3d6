"""The StreamingLLM reference cache: which tokens it keeps (the paper's example, chunks equal to
single appends), keys rotated at their slots, attention against a loop of the definition, and
rejected calls."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from inferview.reference.sink_cache import SinkCache, cached_token_ids, rope_half

F64 = torch.float64


def _rand(shape, seed):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def test_paper_example():
    """Xiao et al. 2023, section 3.2: 4 sinks, tokens [0, 1, 2, 3, 6, 7, 8, 9] at positions 0..7."""
    assert cached_token_ids(10, 4, 4) == [0, 1, 2, 3, 6, 7, 8, 9]
    cache = SinkCache(4, 4, 1, 4)
    for i in range(10):
        cache.append(torch.full((1, 1, 4), float(i)), torch.full((1, 1, 4), float(i)))
    assert cache.token_ids() == [0, 1, 2, 3, 6, 7, 8, 9]
    assert cache.values()[0, :, 0].tolist() == [0, 1, 2, 3, 6, 7, 8, 9]
    assert cache.query_positions(1) == [7]


@pytest.mark.parametrize("n, s, w, want", [(0, 2, 3, []), (2, 4, 2, [0, 1]), (5, 0, 3, [2, 3, 4]),
                                           (6, 2, 3, [0, 1, 3, 4, 5]), (5, 2, 3, [0, 1, 2, 3, 4])])
def test_cached_token_ids(n, s, w, want):
    assert cached_token_ids(n, s, w) == want


@settings(max_examples=30, deadline=None)
@given(s=st.integers(0, 4), w=st.integers(1, 5), chunks=st.lists(st.integers(1, 9), min_size=1, max_size=6))
def test_chunks_equal_single_appends(s, w, chunks):
    total = sum(chunks)
    k, v = _rand((2, total, 4), 1), _rand((2, total, 4), 2)
    a, b = SinkCache(s, w, 2, 4), SinkCache(s, w, 2, 4)
    at = 0
    for t in chunks:
        a.append(k[:, at:at + t], v[:, at:at + t])
        at += t
    for i in range(total):
        b.append(k[:, i:i + 1], v[:, i:i + 1])
    ids = cached_token_ids(total, s, w)
    assert a.token_ids() == b.token_ids() == ids
    assert a.num_cached == len(ids) == min(total, s + w) and a.num_seen == total
    assert torch.equal(a.raw_keys(), k[:, ids]) and torch.equal(a.values(), v[:, ids])
    assert torch.equal(a.keys(), b.keys())


def test_keys_are_rotated_at_slots():
    cache = SinkCache(1, 2, 1, 8)
    k = _rand((1, 6, 8), 3)
    cache.append(k, k)
    assert cache.token_ids() == [0, 4, 5]
    want = rope_half(k[:, [0, 4, 5]], torch.arange(3))
    assert torch.allclose(cache.keys(), want)
    assert not torch.allclose(cache.keys(), rope_half(k[:, [0, 4, 5]], torch.tensor([0, 4, 5])))


def test_rope_half_matches_rotate_half():
    x = _rand((2, 5, 8), 4).double()
    pos = torch.arange(5)
    inv = 10000.0 ** (-torch.arange(0, 8, 2, dtype=F64) / 8)
    emb = torch.cat([pos[:, None] * inv] * 2, dim=-1)
    rot = torch.cat([-x[..., 4:], x[..., :4]], dim=-1)
    assert torch.allclose(rope_half(x, pos), x * emb.cos() + rot * emb.sin())


def _loop_attend(cache, q):
    """The definition in float64: query i at slot n - t_q + i sees slots 0..that one."""
    n, tq, d = cache.num_cached, q.shape[1], cache.head_dim
    keys = cache.keys(F64)
    out = torch.zeros(q.shape, dtype=F64)
    for i in range(tq):
        slot = n - tq + i
        qi = rope_half(q[:, i:i + 1].double(), torch.tensor([slot]))
        s = (qi @ keys[:, :slot + 1].transpose(1, 2)) / math.sqrt(d)
        out[:, i:i + 1] = torch.softmax(s, dim=-1) @ cache.values()[:, :slot + 1].double()
    return out


@pytest.mark.parametrize("s, w, fill, tq", [(2, 3, 11, 1), (2, 3, 11, 3), (0, 4, 9, 2), (3, 5, 4, 4)])
def test_attend_matches_the_definition(s, w, fill, tq):
    cache = SinkCache(s, w, 2, 8)
    cache.append(_rand((2, fill, 8), 5), _rand((2, fill, 8), 6))
    q = _rand((2, tq, 8), 7)
    assert torch.allclose(cache.attend(q, F64), _loop_attend(cache, q), atol=1e-12)
    assert torch.allclose(cache.attend(q), _loop_attend(cache, q).float(), atol=1e-5)


def test_rejected_calls_change_nothing():
    cache = SinkCache(1, 2, 2, 4)
    cache.append(_rand((2, 5, 4), 1), _rand((2, 5, 4), 2))
    before = (cache.token_ids(), cache.raw_keys(), cache.values())
    for k, v in ((_rand((3, 1, 4), 0), _rand((3, 1, 4), 0)), (_rand((2, 0, 4), 0), _rand((2, 0, 4), 0)),
                 (_rand((2, 1, 4), 0), _rand((2, 2, 4), 0)), (_rand((2, 4), 0), _rand((2, 4), 0))):
        with pytest.raises(ValueError):
            cache.append(k, v)
    for tq in (0, 3):
        with pytest.raises(ValueError):
            cache.attend(_rand((2, tq, 4), 0))
    assert cache.token_ids() == before[0]
    assert torch.equal(cache.raw_keys(), before[1]) and torch.equal(cache.values(), before[2])
    assert cache.attend(_rand((2, 2, 4), 0)).shape == (2, 2, 4)


def test_dtype_is_kept():
    cache = SinkCache(1, 2, 1, 4, dtype=torch.bfloat16)
    k = _rand((1, 4, 4), 1).to(torch.bfloat16)
    cache.append(k, k)
    assert cache.values().dtype == cache.keys().dtype == torch.bfloat16
    assert cache.attend(k[:, -1:]).dtype == torch.bfloat16
