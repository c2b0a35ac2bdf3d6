"""The attention references: naive GQA ground truth and the tiled online-softmax version."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import example, given, note
from hypothesis import strategies as st
from inferview.reference.attention import (
    AttentionConfig,
    attention,
    attention_flops,
    attention_fp64,
    cached_attention,
    causal_mask,
    kv_head_for,
    repeat_kv,
)
from inferview.reference.tiled_attention import tiled_attention


def _rand(shape, seed, scale=1.0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype)


def _loop_attention(q, k, v, causal):
    """Per-head, per-query loops in float64: the definition, written without any tensor tricks."""
    b, hq, tq, d = q.shape
    hkv, tk = k.shape[1], k.shape[2]
    out = torch.zeros(b, hq, tq, d, dtype=torch.float64)
    for bi in range(b):
        for h in range(hq):
            g = h // (hq // hkv)
            for i in range(tq):
                w = [float(q[bi, h, i].double() @ k[bi, g, j].double()) / math.sqrt(d)
                     if not causal or j <= i + tk - tq else -math.inf for j in range(tk)]
                mx = max(w)
                e = [math.exp(x - mx) for x in w]
                z = sum(e)
                for j in range(tk):
                    out[bi, h, i] += e[j] / z * v[bi, g, j].double()
    return out


@pytest.mark.parametrize("hq,hkv", [(4, 4), (4, 2), (4, 1), (6, 3)])
@pytest.mark.parametrize("tq,tk,causal", [(5, 5, True), (1, 7, True), (3, 8, True), (4, 6, False)])
def test_attention_matches_the_definition(hq, hkv, tq, tk, causal):
    q, k, v = _rand((2, hq, tq, 8), 1), _rand((2, hkv, tk, 8), 2), _rand((2, hkv, tk, 8), 3)
    got = attention_fp64(q, k, v, causal=causal)
    torch.testing.assert_close(got, _loop_attention(q, k, v, causal))


def test_kv_heads_are_grouped_contiguously_not_by_modulo():
    cfg = AttentionConfig(num_heads=8, num_kv_heads=2, head_dim=4)
    assert [kv_head_for(h, 8, 2) for h in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert cfg.group_size == 4 and cfg.kind == "GQA"
    assert AttentionConfig(8, 1, 4).kind == "MQA" and AttentionConfig(8, 8, 4).kind == "MHA"
    x = torch.arange(2).float().view(1, 2, 1, 1)
    assert repeat_kv(x, 3).flatten().tolist() == [0, 0, 0, 1, 1, 1]
    with pytest.raises(ValueError):
        AttentionConfig(6, 4, 8)


def test_causal_mask_is_bottom_right():
    m = causal_mask(2, 4)
    assert m.tolist() == [[True, True, True, False], [True, True, True, True]]
    assert causal_mask(3, 3).tolist() == torch.ones(3, 3).tril().bool().tolist()


def test_decode_chunk_and_prefill_agree():
    """A chunk of queries at the end of the sequence equals the last rows of the full prefill."""
    q, k, v = _rand((1, 4, 9, 16), 4), _rand((1, 2, 9, 16), 5), _rand((1, 2, 9, 16), 6)
    full = cached_attention(q, k, v)
    torch.testing.assert_close(cached_attention(q[:, :, -3:], k, v), full[:, :, -3:])
    torch.testing.assert_close(cached_attention(q[:, :, -1:], k, v), full[:, :, -1:])
    # The newest token sees everything: causal decode equals non-causal.
    torch.testing.assert_close(cached_attention(q[:, :, -1:], k, v), attention(q[:, :, -1:], k, v))


def test_attention_rejects_bad_layouts():
    q, k = _rand((1, 3, 2, 4), 0), _rand((1, 2, 2, 4), 0)
    with pytest.raises(ValueError):
        attention(q, k, k)
    with pytest.raises(ValueError):
        attention(_rand((1, 2, 5, 4), 0), k, k, causal=True)


def test_attention_flops():
    assert attention_flops(2, 3, 5, 7, 8) == 4 * 2 * 3 * 5 * 7 * 8
    pairs = int(causal_mask(5, 7).sum())
    assert attention_flops(1, 1, 5, 7, 8, causal=True) == 4 * pairs * 8
    assert attention_flops(1, 1, 4, 4, 1, causal=True) == 4 * 10


@st.composite
def attention_inputs(draw, max_len: int = 40):
    """(q, k, v, causal, block) with GQA layouts and lengths around the block boundaries."""
    hkv = draw(st.sampled_from([1, 2]))
    hq = hkv * draw(st.sampled_from([1, 2]))
    block = draw(st.integers(1, 16))
    tk = draw(st.integers(1, max_len))
    causal = draw(st.booleans())
    tq = draw(st.integers(1, tk)) if causal else draw(st.integers(1, max_len))
    d = draw(st.sampled_from([4, 8, 16]))
    seed = draw(st.integers(0, 2**16))
    scale = draw(st.sampled_from([1.0, 30.0]))
    note(f"q=(1,{hq},{tq},{d}) k=(1,{hkv},{tk},{d}) causal={causal} block={block} seed={seed}")
    q = _rand((1, hq, tq, d), seed, scale)
    k = _rand((1, hkv, tk, d), seed + 1, scale)
    v = _rand((1, hkv, tk, d), seed + 2)
    return q, k, v, causal, block


@given(attention_inputs())
@example((_rand((1, 1, 1, 4), 0), _rand((1, 1, 1, 4), 1), _rand((1, 1, 1, 4), 2), True, 16))
@example((_rand((1, 2, 15, 8), 0), _rand((1, 2, 15, 8), 1), _rand((1, 2, 15, 8), 2), True, 16))
@example((_rand((1, 2, 3, 8), 0), _rand((1, 2, 17, 8), 1), _rand((1, 2, 17, 8), 2), True, 16))
def test_tiled_attention_is_exact(case):
    q, k, v, causal, block = case
    exact = attention_fp64(q, k, v, causal=causal)
    got = tiled_attention(q, k, v, causal=causal, block_size=block)
    base = attention(q, k, v, causal=causal)  # same precision, one pass
    err_got = (got.double() - exact).abs().max().item()
    err_base = (base.double() - exact).abs().max().item()
    assert got.dtype == q.dtype and got.shape == q.shape
    assert err_got <= 2 * err_base + 1e-5, (err_got, err_base)


def test_tiled_attention_survives_huge_logits():
    q = _rand((1, 1, 8, 16), 0, scale=1e3)
    out = tiled_attention(q, q, q, causal=True, block_size=3)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out.double(), attention_fp64(q, q, q, causal=True), rtol=1e-4, atol=1e-4)


def test_tiled_attention_never_holds_the_score_matrix():
    """The largest intermediate grows with the block, not with seq_k."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Largest(TorchDispatchMode):
        biggest = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in out if isinstance(out, (tuple, list)) else [out]:
                if isinstance(t, torch.Tensor):
                    Largest.biggest = max(Largest.biggest, t.numel())
            return out

    q, k = _rand((1, 1, 64, 8), 0), _rand((1, 1, 512, 8), 1)
    with Largest():
        tiled_attention(q, k, k, block_size=16)
    assert Largest.biggest < 64 * 512 // 4
    assert Largest.biggest >= 64 * 16


def test_tiled_attention_half_precision_accumulates_in_fp32():
    q, k, v = (_rand((1, 2, 20, 16), s, dtype=torch.bfloat16) for s in (1, 2, 3))
    got = tiled_attention(q, k, v, causal=True, block_size=8)
    assert got.dtype == torch.bfloat16
    exact = attention_fp64(q, k, v, causal=True)
    base = attention(q, k, v, causal=True)
    assert (got.double() - exact).abs().max() <= 2 * (base.double() - exact).abs().max() + 1e-3
