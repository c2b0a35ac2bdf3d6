"""Tests for ``inferview.reference.tensor_parallel``: sharded blocks equal the unsharded ones,
the shards follow Megatron's split and vLLM's KV-head replication, the byte count follows its
rule, and the rounding bound holds for several correct implementations while wrong ones exceed
it by orders of magnitude."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from inferview.reference import tensor_parallel as tp


def _t(shape: tuple[int, ...], seed: int, scale: float = 1.0, dtype=torch.float64) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype)


def _mlp(h: int, i: int, seed: int, dtype=torch.float64):
    return (_t((i, h), seed, h ** -0.5, dtype), _t((i, h), seed + 1, h ** -0.5, dtype),
            _t((h, i), seed + 2, i ** -0.5, dtype))


def _attn(h: int, hq: int, hkv: int, d: int, seed: int, dtype=torch.float64):
    return (_t((hq * d, h), seed, h ** -0.5, dtype), _t((hkv * d, h), seed + 1, h ** -0.5, dtype),
            _t((hkv * d, h), seed + 2, h ** -0.5, dtype), _t((h, hq * d), seed + 3, (hq * d) ** -0.5, dtype))


@given(n=st.sampled_from([1, 2, 3, 4, 8]), mult=st.integers(1, 4), seed=st.integers(0, 999))
def test_sharded_mlp_equals_unsharded(n: int, mult: int, seed: int) -> None:
    x = _t((2, 3, 8), seed)
    w = _mlp(8, n * mult, seed + 10)
    out, nbytes = tp.tp_mlp(x, *w, n)
    torch.testing.assert_close(out, tp.mlp_forward(x, *w), rtol=1e-12, atol=1e-12)
    assert nbytes == (0 if n == 1 else x.numel() * 8)
    shards = tp.shard_mlp(*w, n)
    assert [tuple(s.shape) for s in shards[0]] == [(mult, 8), (mult, 8), (8, mult)]
    assert torch.equal(torch.cat([s[0] for s in shards]), w[0])
    assert torch.equal(torch.cat([s[2] for s in shards], dim=1), w[2])


@given(case=st.sampled_from([(1, 4, 4), (2, 4, 2), (2, 8, 2), (4, 8, 8), (4, 8, 1), (8, 8, 2),
                             (6, 6, 3), (6, 12, 2), (3, 6, 6), (8, 16, 4)]),
       seed=st.integers(0, 999))
def test_sharded_attention_equals_unsharded(case: tuple[int, int, int], seed: int) -> None:
    n, hq, hkv = case
    x = _t((2, 5, 8), seed)
    w = _attn(8, hq, hkv, 4, seed + 10)
    out, nbytes = tp.tp_attention(x, *w, hq, hkv, n)
    torch.testing.assert_close(out, tp.attention_forward(x, *w, 4), rtol=1e-12, atol=1e-12)
    assert nbytes == (0 if n == 1 else x.numel() * 8)


def test_attention_matches_torch_sdpa() -> None:
    x = _t((2, 6, 16), 0)
    wq, wk, wv, wo = _attn(16, 4, 2, 8, 1)
    q = (x @ wq.T).view(2, 6, 4, 8).transpose(1, 2)
    k = (x @ wk.T).view(2, 6, 2, 8).transpose(1, 2)
    v = (x @ wv.T).view(2, 6, 2, 8).transpose(1, 2)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    want = o.transpose(1, 2).reshape(2, 6, 32) @ wo.T
    torch.testing.assert_close(tp.attention_forward(x, wq, wk, wv, wo, 8), want)


def test_kv_heads_are_replicated_like_vllm() -> None:
    # 8 ranks, 2 KV heads: ranks 0-3 hold head 0, ranks 4-7 head 1 (vLLM: rank // replicas)
    assert [tp.kv_head_of_rank(r, 2, 8) for r in range(8)] == [(0, 1)] * 4 + [(1, 1)] * 4
    assert [tp.kv_head_of_rank(r, 8, 4) for r in range(4)] == [(0, 2), (2, 2), (4, 2), (6, 2)]
    w = _attn(8, 8, 2, 4, 0)
    shards = tp.shard_attention(*w, 8, 2, 8)
    assert torch.equal(shards[3][1], w[1][:4]) and torch.equal(shards[4][1], w[1][4:])
    assert torch.equal(shards[5][0], w[0][20:24]) and torch.equal(shards[5][3], w[3][:, 20:24])


@pytest.mark.parametrize("hq,hkv,n", [(6, 2, 4), (12, 3, 4), (12, 6, 4), (6, 4, 2), (4, 4, 0)])
def test_heads_that_do_not_split_raise(hq: int, hkv: int, n: int) -> None:
    with pytest.raises(ValueError):
        tp.shard_attention(*_attn(8, hq, hkv, 4, 0), hq, hkv, n)


def test_uneven_intermediate_raises() -> None:
    with pytest.raises(ValueError):
        tp.shard_mlp(*_mlp(8, 6, 0), 4)


def test_all_reduce_sums_in_rank_order_and_leaves_inputs() -> None:
    ts = [_t((3, 4), s, dtype=torch.bfloat16) for s in range(5)]
    before = [t.clone() for t in ts]
    out = tp.all_reduce(ts)
    want = ts[0] + ts[1] + ts[2] + ts[3] + ts[4]
    assert len(out) == 5 and all(torch.equal(o, want) for o in out)
    assert all(torch.equal(a, b) for a, b in zip(ts, before, strict=True))


# ----------------------------------------------------------------------------------------------
# The rounding bound
# ----------------------------------------------------------------------------------------------


def _mlp_variants(x, w, n):
    """Correct ways to compute the sharded MLP: the reference, float32 upcast, g * sigmoid(g),
    and a stacked float32 all-reduce."""
    shards = tp.shard_mlp(*w, n)
    ref = tp.tp_mlp(x, *w, n)[0]
    up = sum(tp.mlp_forward(x.float(), *(s.float() for s in sh)).to(x.dtype) for sh in shards[::-1])
    manual = []
    for g_, u_, d_ in shards:
        g = x @ g_.T
        manual.append((g * torch.sigmoid(g) * (x @ u_.T)) @ d_.T)
    stacked = torch.stack([m.float() for m in manual]).sum(0).to(x.dtype)
    return {"reference": ref, "float32": up, "stacked": stacked}


def _attn_variants(x, w, hq, hkv, n, d):
    shards = tp.shard_attention(*w, hq, hkv, n)

    def sdpa(x, q_, k_, v_, o_):
        b, t, _ = x.shape
        q = (x @ q_.T).view(b, t, -1, d).transpose(1, 2)
        k = (x @ k_.T).view(b, t, -1, d).transpose(1, 2)
        v = (x @ v_.T).view(b, t, -1, d).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return o.transpose(1, 2).reshape(b, t, -1) @ o_.T

    parts = [sdpa(x, *s) for s in shards]
    return {"reference": tp.tp_attention(x, *w, hq, hkv, n)[0],
            "sdpa": tp.all_reduce(parts)[0],
            "sdpa-stacked": torch.stack([p.float() for p in parts]).sum(0).to(x.dtype)}


def _ratio(got: torch.Tensor, exact: torch.Tensor, bound: torch.Tensor) -> float:
    return float(((got.double() - exact).abs() / bound).max())


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 9999), n=st.sampled_from([1, 2, 4]),
       dtype=st.sampled_from([torch.float32, torch.bfloat16, torch.float16]),
       scale=st.sampled_from([0.5, 1.0, 3.0]))
def test_correct_implementations_stay_within_the_bound(seed, n, dtype, scale) -> None:
    x = _t((2, 5, 16), seed, scale, dtype)
    w = _mlp(16, 32, seed + 1, dtype)
    exact = tp.mlp_forward(x.double(), *(t.double() for t in w))
    bound = tp.mlp_error_bound(x, *w, n)
    for name, got in _mlp_variants(x, w, n).items():
        assert _ratio(got, exact, bound) < 0.5, name  # observed at most 0.06
    wa = _attn(16, 4, 2, 8, seed + 2, dtype)
    wa = (wa[0] * scale, wa[1] * scale, wa[2], wa[3])  # larger scores with the scale
    exact = tp.attention_forward(x.double(), *(t.double() for t in wa), 8)
    bound = tp.attention_error_bound(x, *wa, 4, 2, n)
    for name, got in _attn_variants(x, wa, 4, 2, n, 8).items():
        assert _ratio(got, exact, bound) < 0.5, name


def test_wrong_results_exceed_the_float32_bound_by_far() -> None:
    x = _t((2, 5, 16), 3, dtype=torch.float32)
    w = _mlp(16, 32, 4, torch.float32)
    exact = tp.mlp_forward(x.double(), *(t.double() for t in w))
    bound = tp.mlp_error_bound(x, *w, 2)
    parts = [tp.mlp_forward(x, *s) for s in tp.shard_mlp(*w, 2)]
    assert _ratio((parts[0] + parts[1]) / 2, exact, bound) > 100  # a mean for the sum
    assert _ratio(parts[0], exact, bound) > 100  # a rank dropped
    wa = _attn(16, 4, 2, 8, 5, torch.float32)
    exact = tp.attention_forward(x.double(), *(t.double() for t in wa), 8)
    bound = tp.attention_error_bound(x, *wa, 4, 2, 1)
    q = (x @ wa[0].T).view(2, 5, 4, 8).transpose(1, 2)
    k = (x @ wa[1].T).view(2, 5, 2, 8).transpose(1, 2)
    v = (x @ wa[2].T).view(2, 5, 2, 8).transpose(1, 2)
    for o in (F.scaled_dot_product_attention(q, k, v, enable_gqa=True),  # not causal
              F.scaled_dot_product_attention(q, k.repeat(1, 2, 1, 1), v.repeat(1, 2, 1, 1),
                                             is_causal=True)):  # repeat, not repeat_interleave
        assert _ratio(o.transpose(1, 2).reshape(2, 5, 32) @ wa[3].T, exact, bound) > 100


def test_bound_is_zero_only_where_the_output_is_exact() -> None:
    x = torch.zeros(1, 2, 8)
    w = _mlp(8, 8, 0, torch.float32)
    assert torch.equal(tp.mlp_error_bound(x, *w, 2), torch.zeros(1, 2, 8, dtype=torch.float64))
    assert tp.SAFETY == 2.0 and math.isclose(tp.SILU_LIPSCHITZ, 1.1)
