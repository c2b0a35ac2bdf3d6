"""Checks for the kv-cache challenge: the cache's bookkeeping, the causal offset, GQA heads, and a
tiny transformer decoded through the submitted cache against full recomputation."""

from __future__ import annotations

import torch
from hypothesis import example, given, note
from hypothesis import strategies as st
from inferview.graders import strategies as gs
from inferview.graders.api import (
    CheckFailed,
    Ctx,
    check,
    expect,
    expect_attention_close,
    expect_close,
    expect_equal,
    expect_raises,
)
from inferview.reference.tiny_decoder import TinyDecoder, TinyDecoderConfig


@st.composite
def cache_cases(draw):
    """A cache shape and a list of chunk lengths that fits in it."""
    b, h, d = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.sampled_from([4, 8]))
    chunks = draw(st.lists(st.integers(1, 5), min_size=1, max_size=5))
    spare = draw(st.integers(0, 3))
    seed = draw(gs.seeds())
    note(f"KVCache(batch={b}, kv_heads={h}, head_dim={d}, max_seq_len={sum(chunks) + spare}); "
         f"updates of t_new={chunks}; seed={seed}")
    return b, h, d, sum(chunks) + spare, chunks, seed


@st.composite
def attention_cases(draw, *, groups=(1,), decode=False, scale=1.0):
    """q (B, Hq, t_new, D), k, v (B, Hkv, seq_len, D) with t_new == seq_len unless ``decode``."""
    hkv = draw(st.sampled_from([1, 2]))
    hq = hkv * draw(st.sampled_from(groups))
    seq_len = draw(st.integers(2 if decode else 1, 24))
    t_new = draw(st.integers(1, seq_len - 1)) if decode else seq_len
    b, d, seed = draw(st.integers(1, 2)), draw(st.sampled_from([8, 16, 32])), draw(gs.seeds())
    note(f"q=({b}, {hq}, {t_new}, {d}), k=v=({b}, {hkv}, {seq_len}, {d}), seed={seed}, scale={scale}")
    return (b, hq, hkv, t_new, seq_len, d, seed)


def _tensors(case, device, scale=1.0):
    b, hq, hkv, t_new, seq_len, d, seed = case
    q = gs.tensor((b, hq, t_new, d), seed, device=device, scale=scale)
    k = gs.tensor((b, hkv, seq_len, d), seed + 1, device=device, scale=scale)
    v = gs.tensor((b, hkv, seq_len, d), seed + 2, device=device)
    return q, k, v


def _expect_attention(got, q, k, v) -> None:
    expect_attention_close(got, q, k, v, causal=True, what="cached_attention output")


@check("update returns every cached token", max_examples=10, hint="Return the whole cache up to seq_len (new tokens "
       "included), not just the slice you were given.")
@given(case=cache_cases())
@example(case=(1, 1, 4, 3, [1, 1, 1], 0))
def update_returns_everything(ctx: Ctx, case) -> None:
    b, h, d, max_len, chunks, seed = case
    cache = ctx.sub.new("KVCache", b, h, d, max_len, dtype=torch.float32, device=ctx.device)
    expect_equal(cache.get("seq_len"), 0, what="seq_len of a new cache")
    ks, vs = [], []
    for i, t in enumerate(chunks):
        k = gs.tensor((b, h, t, d), seed + 2 * i, device=ctx.device)
        v = gs.tensor((b, h, t, d), seed + 2 * i + 1, device=ctx.device)
        ks.append(k)
        vs.append(v)
        got = cache.call("update", k, v)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise CheckFailed(f"update must return a (keys, values) pair, got {type(got).__name__}")
        expect_close(got[0], torch.cat(ks, dim=2), what=f"keys returned by update #{i + 1}")
        expect_close(got[1], torch.cat(vs, dim=2), what=f"values returned by update #{i + 1}")
        expect_equal(cache.get("seq_len"), sum(chunks[: i + 1]), what=f"seq_len after update #{i + 1}")


@check("a rejected update leaves the cache unchanged", max_examples=10, hint="Validate the shape and the capacity "
       "before you write or move anything; raise ValueError and leave seq_len where it was.")
@given(case=cache_cases(), extra=st.integers(1, 3))
def rejected_update(ctx: Ctx, case, extra) -> None:
    b, h, d, _, chunks, seed = case
    first, max_len = chunks[0], sum(chunks)
    cache = ctx.sub.new("KVCache", b, h, d, max_len, dtype=torch.float32, device=ctx.device)
    k1, v1 = gs.tensor((b, h, first, d), seed, device=ctx.device), gs.tensor((b, h, first, d), seed + 1, device=ctx.device)
    cache.call("update", k1, v1)
    room = max_len - first
    big = gs.tensor((b, h, room + extra, d), seed + 2, device=ctx.device)
    with expect_raises(ctx, "ValueError", what=f"update of {room + extra} tokens with room for {room}"):
        cache.call("update", big, big)
    expect_equal(cache.get("seq_len"), first, what="seq_len after the rejected overflow")
    good1, good2 = gs.tensor((b, h, 1, d), seed + 3, device=ctx.device), gs.tensor((b, h, 2, d), seed + 6, device=ctx.device)
    # Each wrong shape on its own, and in v alone: a cache that checks only k's heads would let a
    # wrong batch broadcast into the buffer, or store a v that does not match its k.
    rejected = [
        (f"update with {h + 1} kv heads into a {h}-head cache", gs.tensor((b, h + 1, 1, d), seed + 3, device=ctx.device), None),
        (f"update with batch {b + 1} into a batch-{b} cache", gs.tensor((b + 1, h, 1, d), seed + 3, device=ctx.device), None),
        (f"update with head_dim {2 * d} into a head_dim-{d} cache", gs.tensor((b, h, 1, 2 * d), seed + 3, device=ctx.device), None),
        (f"update whose v has {h + 1} kv heads (k is right)", good1, gs.tensor((b, h + 1, 1, d), seed + 7, device=ctx.device)),
        ("update with k of 2 new tokens and v of 1", good2, good1),
    ]
    for what, bad_k, bad_v in rejected:
        with expect_raises(ctx, "ValueError", what=what):
            cache.call("update", bad_k, bad_k if bad_v is None else bad_v)
        expect_equal(cache.get("seq_len"), first, what=f"seq_len after the rejected {what}")
    if room == 0:
        return
    k2, v2 = gs.tensor((b, h, room, d), seed + 4, device=ctx.device), gs.tensor((b, h, room, d), seed + 5, device=ctx.device)
    got_k, got_v = cache.call("update", k2, v2)  # fills the cache exactly: allowed
    expect_close(got_k, torch.cat([k1, k2], 2), what="keys after filling the cache exactly")
    expect_close(got_v, torch.cat([v1, v2], 2), what="values after filling the cache exactly")


@check("reset empties the cache", max_examples=10, hint="After reset, seq_len is 0 and the next update starts at position 0.")
@given(case=cache_cases())
def reset_empties(ctx: Ctx, case) -> None:
    b, h, d, max_len, chunks, seed = case
    cache = ctx.sub.new("KVCache", b, h, d, max_len, dtype=torch.float32, device=ctx.device)
    k = gs.tensor((b, h, chunks[0], d), seed, device=ctx.device)
    cache.call("update", k, k)
    cache.call("reset")
    expect_equal(cache.get("seq_len"), 0, what="seq_len after reset")
    k2, v2 = gs.tensor((b, h, 1, d), seed + 1, device=ctx.device), gs.tensor((b, h, 1, d), seed + 2, device=ctx.device)
    got_k, got_v = cache.call("update", k2, v2)
    expect_close(got_k, k2, what="keys returned by the first update after reset")
    expect_close(got_v, v2, what="values returned by the first update after reset")
    if max_len > 1:  # the whole capacity is free again: a count of tokens ever written is not seq_len
        k3 = gs.tensor((b, h, max_len - 1, d), seed + 3, device=ctx.device)
        got_k, _ = cache.call("update", k3, k3)
        expect_close(got_k, torch.cat([k2, k3], 2), what="keys after refilling the reset cache to max_seq_len")


@check("the cache stores and returns its dtype", max_examples=5, hint="Allocate the buffers with the dtype "
       "passed to the constructor; update returns keys and values in that dtype.")
@given(case=cache_cases(), dtype=st.sampled_from([torch.float16, torch.bfloat16, torch.float64]))
def cache_dtype(ctx: Ctx, case, dtype) -> None:
    b, h, d, max_len, chunks, seed = case
    note(f"dtype={dtype}")
    cache = ctx.sub.new("KVCache", b, h, d, max_len, dtype=dtype, device=ctx.device)
    ks = []
    for i, t in enumerate(chunks):
        k = gs.tensor((b, h, t, d), seed + i, dtype=dtype, device=ctx.device)
        ks.append(k)
        got_k, got_v = cache.call("update", k, k)
        expect_close(got_k, torch.cat(ks, 2), rtol=0, atol=0, what=f"keys returned by update #{i + 1}")
        expect_close(got_v, torch.cat(ks, 2), rtol=0, atol=0, what=f"values returned by update #{i + 1}")


@check("cached_attention on a prefill", max_examples=10, hint="Plain causal attention: scores q k^T / sqrt(head_dim), "
       "mask keys after the query, softmax over keys, weight the values.")
@given(case=attention_cases())
def prefill(ctx: Ctx, case) -> None:
    q, k, v = _tensors(case, ctx.device)
    _expect_attention(ctx.sub.call("cached_attention", q, k, v), q, k, v)


@check("causal mask is aligned bottom-right (decode and chunked prefill)", max_examples=10, hint="Query i sits at "
       "position seq_len - t_new + i: key j is visible when j <= i + (seq_len - t_new). A top-left "
       "tril is right only when t_new == seq_len.")
@given(case=attention_cases(decode=True))
@example(case=(1, 1, 1, 1, 2, 8, 0))
def decode_offsets(ctx: Ctx, case) -> None:
    q, k, v = _tensors(case, ctx.device)
    _expect_attention(ctx.sub.call("cached_attention", q, k, v), q, k, v)


@check("grouped-query heads read kv head h // group", max_examples=10, hint="With G = num_heads // num_kv_heads, query "
       "heads 0..G-1 share kv head 0, G..2G-1 share kv head 1: repeat_interleave, not repeat.")
@given(case=attention_cases(groups=(2, 4), decode=True))
def grouped_heads(ctx: Ctx, case) -> None:
    q, k, v = _tensors(case, ctx.device)
    _expect_attention(ctx.sub.call("cached_attention", q, k, v), q, k, v)


@check("cached_attention keeps q's dtype (float16, bfloat16)", max_examples=5, hint="Return the output in q's "
       "dtype; computing in float32 internally is fine (and more accurate), handing back float32 is not.")
@given(case=attention_cases(groups=(1, 2), decode=True), dtype=st.sampled_from([torch.float16, torch.bfloat16]))
def half_precision(ctx: Ctx, case, dtype) -> None:
    note(f"dtype={dtype}")
    q, k, v = (x.to(dtype) for x in _tensors(case, ctx.device))
    _expect_attention(ctx.sub.call("cached_attention", q, k, v), q, k, v)


@check("stays finite for large scores", max_examples=10, hint="exp overflows float32 past ~88: subtract each row's "
       "maximum score before exponentiating (torch.softmax does this for you).")
@given(case=attention_cases(scale=30.0))
@example(case=(1, 1, 1, 1, 6, 8, 3))  # a single decode query: no mask at all, so only exp can go wrong
def large_logits(ctx: Ctx, case) -> None:
    # Plain multi-head prefill, so only the size of the scores is new here: mask and head-mapping
    # mistakes have checks of their own and should not be blamed on exp overflowing.
    q, k, v = _tensors(case, ctx.device, scale=30.0)
    got = ctx.sub.call("cached_attention", q, k, v)
    if isinstance(got, torch.Tensor) and got.is_floating_point():
        bad = (~torch.isfinite(got)).sum().item()
        expect(bad == 0, f"{bad} of {got.numel()} outputs are NaN or Inf for scores of a few hundred")
    _expect_attention(got, q, k, v)


class _RemoteCache:
    """Adapts a cache living in the worker to the decoder's ``update(k, v)`` protocol."""

    def __init__(self, remote) -> None:
        self.remote = remote

    def update(self, k, v):
        return tuple(self.remote.call("update", k, v))


@check("cached generation equals recomputation", max_examples=3, hint="Run the tiny decoder by hand: "
       "each step appends one token's keys and values per layer and attends over the whole cache. "
       "If the logits drift, look at seq_len, the returned slice and the causal offset.")
@given(prompt_len=st.integers(1, 6), seed=gs.seeds(), steps=st.integers(2, 4))
def tiny_decoder(ctx: Ctx, prompt_len: int, seed: int, steps: int) -> None:
    cfg = TinyDecoderConfig(dim=32, num_layers=2, num_heads=4, num_kv_heads=2, ffn_dim=64, seed=seed % 7)
    model = TinyDecoder(cfg, device=ctx.device)
    tokens = model.prompt(2, prompt_len, seed=seed)
    caches = [_RemoteCache(ctx.sub.new("KVCache", 2, cfg.num_kv_heads, cfg.head_dim, prompt_len + steps,
                                       dtype=torch.float32, device=ctx.device))
              for _ in range(cfg.num_layers)]

    def attn(q, k, v):
        return ctx.sub.call("cached_attention", q, k, v)

    with torch.no_grad():
        logits = model.forward(tokens, caches, start_pos=0, attn=attn)
        expect_close(logits, model.forward(tokens), rtol=1e-4, atol=1e-4,
                     what=f"logits after prefilling {prompt_len} token{'s' if prompt_len != 1 else ''}")
        for step in range(steps):
            nxt = model.forward(tokens)[:, -1].argmax(-1, keepdim=True)  # the reference's token
            logits = model.forward(nxt, caches, start_pos=tokens.shape[1], attn=attn)
            tokens = torch.cat([tokens, nxt], dim=1)
            expect_close(logits[:, -1], model.forward(tokens)[:, -1], rtol=1e-4, atol=1e-4,
                         what=f"logits at decode step {step + 1} (position {tokens.shape[1] - 1})")
