"""Checks for ``tensor-parallel``: Megatron sharding of an MLP and an attention block, one rank's
partial sum, the all-reduce, the blocks over simulated ranks, and the bytes they all-reduce.

Ground truth: :mod:`inferview.reference.tensor_parallel` (Megatron-LM's column/row split; vLLM's
KV-head replication), restated in the statement.

Exact checks: the shards (slices of the given weights, compared bit for bit), the bytes, and the
all-reduce on integers of magnitude at most 15 over at most 8 ranks — sums of at most 120 in
magnitude, exact in float16, bfloat16 and float32 in any order of addition.

The accuracy rule for outputs (``mlp_forward``, ``attention_forward``, ``tp_mlp``,
``tp_attention``): every element within :func:`~inferview.reference.tensor_parallel.mlp_error_bound`
or :func:`~inferview.reference.tensor_parallel.attention_error_bound` of a float64 evaluation of the
unsharded block. Each bound is a first-order forward error analysis valid for **any** summation
order (every rounding in the dtype at most ``u`` relative, every ``K``-term product accumulated in
float32 at most ``K u32`` of its absolute sum, the all-reduce's ``N - 1`` roundings), doubled, so a
correct solution cannot exceed it: over 540 seeded configurations (60 seeds; float32, bfloat16
and float16; N = 1, 2, 4), each block computed four correct ways (the reference, torch's SDPA or
einsum, an explicit ``exp``/sum softmax or ``g * sigmoid(g)``, float32-upcast variants, reversed
or stacked all-reduce orders), the largest error was 0.06 of the bound. The bound is not tight,
but in float32 the wrong solutions this challenge targets (a mean for the sum, a dropped rank,
``repeat`` for ``repeat_interleave``, a missing causal mask, GELU for SiLU) exceed it by factors of
a thousand and more, so the structural checks run in float32; bfloat16 checks that the dtype is
kept (a wrong split is off by only a few bounds there).
One attention check scales the activations until a score reaches 150, past float32's ``exp``
range, so a softmax without the max shift turns to NaN; four correct ways of computing the block
stayed under 0.001 of the bound there over 150 seeded configurations.
"""

from __future__ import annotations

import math

import torch
from hypothesis import example, given
from hypothesis import strategies as st
from inferview.graders import strategies as gs
from inferview.graders.api import CheckFailed, Ctx, check, expect, expect_equal, expect_raises
from inferview.reference import tensor_parallel as ref

WORLD_SIZES = [1, 2, 3, 4, 6, 8]


# ----------------------------------------------------------------------------------------------
# Cases and inputs
# ----------------------------------------------------------------------------------------------


@st.composite
def mlp_cases(draw: st.DrawFn) -> dict:
    """Batch, tokens, hidden size, world size, intermediate size (a multiple of it) and a seed."""
    n = draw(st.sampled_from(WORLD_SIZES))
    return {"b": draw(st.integers(1, 2)), "t": draw(st.integers(1, 4)),
            "h": draw(st.sampled_from([8, 16, 32])), "n": n,
            "i": n * draw(st.sampled_from([1, 2, 4, 8])), "seed": draw(gs.seeds())}


@st.composite
def attention_cases(draw: st.DrawFn, *, replicate: bool | None = None) -> dict:
    """Heads that split over the world size: ``Hkv`` a multiple of ``N`` (``replicate=False``) or
    a proper divisor of it, each KV head copied on ``N / Hkv`` ranks (``replicate=True``)."""
    if replicate is None:
        replicate = draw(st.booleans())
    if replicate:
        n = draw(st.sampled_from([2, 3, 4, 6, 8]))
        hkv = draw(st.sampled_from([d for d in range(1, n) if n % d == 0]))
        hq = n * draw(st.sampled_from([1, 2]))  # a multiple of N, and of Hkv since Hkv divides N
    else:
        n = draw(st.sampled_from(WORLD_SIZES))
        hkv = n * draw(st.sampled_from([1, 2]))
        hq = hkv * draw(st.sampled_from([1, 2, 4]))
    return {"b": draw(st.integers(1, 2)), "t": draw(st.integers(1, 5)),
            "h": draw(st.sampled_from([8, 16])), "d": draw(st.sampled_from([4, 8])),
            "hq": hq, "hkv": hkv, "n": n, "seed": draw(gs.seeds())}


def _w(shape: tuple[int, ...], seed: int, dtype: torch.dtype, device: str) -> torch.Tensor:
    """A weight scaled by 1/sqrt(fan-in), so every activation is of order 1."""
    return gs.tensor(shape, seed, scale=1 / math.sqrt(shape[1])).to(dtype).to(device)


def _x(c: dict, dtype: torch.dtype, device: str) -> torch.Tensor:
    return gs.tensor((c["b"], c["t"], c["h"]), c["seed"]).to(dtype).to(device)


def _mlp(c: dict, dtype: torch.dtype, device: str) -> tuple[torch.Tensor, ...]:
    s, h, i = c["seed"], c["h"], c["i"]
    return _w((i, h), s + 1, dtype, device), _w((i, h), s + 2, dtype, device), _w((h, i), s + 3, dtype, device)


def _attn(c: dict, dtype: torch.dtype, device: str) -> tuple[torch.Tensor, ...]:
    s, h, d = c["seed"], c["h"], c["d"]
    return (_w((c["hq"] * d, h), s + 1, dtype, device), _w((c["hkv"] * d, h), s + 2, dtype, device),
            _w((c["hkv"] * d, h), s + 3, dtype, device), _w((h, c["hq"] * d), s + 4, dtype, device))


def _note_mlp(ctx: Ctx, c: dict, dtype: torch.dtype) -> None:
    ctx.note(f"x=({c['b']}, {c['t']}, {c['h']}), I={c['i']}, world_size={c['n']}, "
             f"dtype={str(dtype).replace('torch.', '')}, seed={c['seed']}")


def _note_attn(ctx: Ctx, c: dict, dtype: torch.dtype) -> None:
    ctx.note(f"x=({c['b']}, {c['t']}, {c['h']}), num_heads={c['hq']}, num_kv_heads={c['hkv']}, "
             f"head_dim={c['d']}, world_size={c['n']}, dtype={str(dtype).replace('torch.', '')}, "
             f"seed={c['seed']}")


# ----------------------------------------------------------------------------------------------
# Comparisons
# ----------------------------------------------------------------------------------------------


def expect_within(got: object, exact: torch.Tensor, bound: torch.Tensor, dtype: torch.dtype,
                  what: str) -> None:
    """``got`` is a tensor of ``exact``'s shape in ``dtype`` on ``exact``'s device, every element
    within ``bound`` of the float64 ``exact``."""
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(f"{what}: expected a tensor, got {type(got).__name__}")
    if tuple(got.shape) != tuple(exact.shape):
        raise CheckFailed(f"{what}: expected shape {tuple(exact.shape)}, got {tuple(got.shape)}")
    if got.dtype != dtype:
        raise CheckFailed(f"{what}: expected dtype {dtype}, got {got.dtype}")
    if got.device.type != exact.device.type:
        raise CheckFailed(f"{what}: expected device {exact.device.type}, got {got.device.type}")
    err = (got.detach().double().cpu() - exact.cpu()).abs()
    b = bound.cpu()
    bad = ~(err <= b)  # NaN counts as bad
    if bool(bad.any()):
        idx = bad.nonzero()
        ratio = (err / b.clamp_min(1e-300))[bad]
        lines = [f"{what}: {idx.shape[0]} of {err.numel()} elements exceed the rounding bound "
                 f"(worst by {float(ratio.max()):.3g}x)"]
        for row in idx[:3].tolist():
            i = tuple(row)
            lines.append(f"  at {i}: expected {float(exact[i]):.6g} +- {float(b[i]):.2g}, "
                         f"got {float(got[i]):.6g}")
        raise CheckFailed("\n".join(lines))


def expect_shards(got: object, want: list[tuple[torch.Tensor, ...]], names: tuple[str, ...]) -> None:
    """A list of one tuple per rank, each tensor equal to the reference slice."""
    expect(isinstance(got, (list, tuple)), f"expected a list of shards, got {type(got).__name__}")
    expect(len(got) == len(want), f"expected {len(want)} shards (one per rank), got {len(got)}")
    for r, (g, w) in enumerate(zip(got, want, strict=True)):
        expect(isinstance(g, (list, tuple)) and len(g) == len(w),
               f"rank {r}: expected a tuple of {len(w)} tensors {names}, got {type(g).__name__}")
        for name, gt, wt in zip(names, g, w, strict=True):
            expect_equal(gt, wt, what=f"rank {r}'s {name}")


def _pair(out: object, what: str) -> tuple[torch.Tensor, object]:
    expect(isinstance(out, (list, tuple)) and len(out) == 2,
           f"{what} must return (out, comm_bytes), got {type(out).__name__}")
    return out[0], out[1]


def _expect_bytes(got: object, want: int, what: str) -> None:
    expect(isinstance(got, int) and not isinstance(got, bool),
           f"{what}: comm_bytes must be a Python int, got {type(got).__name__}")
    expect_equal(got, want, what=what)


# ----------------------------------------------------------------------------------------------
# MLP
# ----------------------------------------------------------------------------------------------


@check("shard_mlp splits gate and up by rows and down by columns, rank by rank", max_examples=10,
       hint="nn.Linear stores (out_features, in_features): column-parallel gate/up split dim 0, "
            "row-parallel down splits dim 1, rank r taking the r-th contiguous block of I/N.")
@given(c=mlp_cases())
@example(c={"b": 1, "t": 1, "h": 8, "n": 2, "i": 4, "seed": 0})
def mlp_shards(ctx: Ctx, c: dict) -> None:
    _note_mlp(ctx, c, torch.float32)
    w = _mlp(c, torch.float32, ctx.device)
    got = ctx.sub.call("shard_mlp", *w, c["n"])
    expect_shards(got, ref.shard_mlp(*w, c["n"]), ("gate", "up", "down"))


@check("shard_mlp raises ValueError when world_size does not divide the intermediate size", max_examples=4,
       hint="Check I % world_size before slicing; an uneven split would give ranks different "
            "shapes (torch.chunk does that silently).")
@given(n=st.sampled_from([2, 3, 4, 8]), extra=st.integers(1, 7))
def mlp_uneven(ctx: Ctx, n: int, extra: int) -> None:
    i = 2 * n * 4 + (extra % n or 1)  # not a multiple of n
    c = {"b": 1, "t": 1, "h": 8, "n": n, "i": i, "seed": 0}
    with expect_raises(ctx, "ValueError", what=f"shard_mlp with I={i}, world_size={n}"):
        ctx.sub.call("shard_mlp", *_mlp(c, torch.float32, ctx.device), n)


@check("mlp_forward of one rank's shard is that rank's partial sum", max_examples=10,
       hint="h = silu(x @ gate.T) * (x @ up.T) is local to the rank; h @ down.T is the rank's "
            "partial sum of the output. No all-reduce, no division by N inside a rank.")
@given(c=mlp_cases(), rank=st.integers(0, 7))
def mlp_partial(ctx: Ctx, c: dict, rank: int) -> None:
    r = rank % c["n"]
    _note_mlp(ctx, c, torch.float32)
    ctx.note(f"rank {r}'s shard")
    x = _x(c, torch.float32, ctx.device)
    shard = ref.shard_mlp(*_mlp(c, torch.float32, ctx.device), c["n"])[r]
    got = ctx.sub.call("mlp_forward", x, *shard)
    exact = ref.mlp_forward(x.double(), *(s.double() for s in shard))
    expect_within(got, exact, ref.mlp_error_bound(x, *shard, 1), torch.float32, f"rank {r}'s partial sum")


# ----------------------------------------------------------------------------------------------
# The all-reduce
# ----------------------------------------------------------------------------------------------


@check("all_reduce hands every rank the sum", max_examples=10,
       hint="A sum, not a mean: every rank gets t_0 + t_1 + ... + t_{N-1}, in the inputs' dtype.")
@given(n=st.integers(1, 8), shape=gs.shapes(min_dims=1, max_dims=3, max_side=5), seed=gs.seeds(),
       dtype=gs.dtypes())
@example(n=2, shape=(2, 3), seed=0, dtype=torch.float32)
def all_reduce_sum(ctx: Ctx, n: int, shape: tuple[int, ...], seed: int, dtype: torch.dtype) -> None:
    ints = [gs.tensor(shape, seed + r, torch.int64, low=-15, high=16) for r in range(n)]
    tensors = [t.to(dtype).to(ctx.device) for t in ints]
    ctx.note(f"{n} ranks, tensors of shape {tuple(shape)}: integers in [-15, 15], exact sums")
    got = ctx.sub.call("all_reduce", tensors)
    expect(isinstance(got, (list, tuple)) and len(got) == n,
           f"all_reduce must return a list of {n} tensors (one per rank), got {type(got).__name__}")
    want = torch.stack(ints).sum(0).to(dtype).to(ctx.device)
    for r, g in enumerate(got):
        expect_equal(g, want, what=f"rank {r}'s result")


@check("all_reduce gives every rank a bit-identical copy", max_examples=8,
       hint="Compute the sum once and hand each rank a copy: ranks that sum in different orders "
            "end with different roundings, and a real all-reduce never does that.")
@given(n=st.integers(2, 8), seed=gs.seeds(), dtype=gs.dtypes())
@example(n=4, seed=0, dtype=torch.bfloat16)
def all_reduce_identical(ctx: Ctx, n: int, seed: int, dtype: torch.dtype) -> None:
    tensors = [gs.tensor((3, 16), seed + r).to(dtype).to(ctx.device) for r in range(n)]
    ctx.note(f"{n} ranks, random {str(dtype).replace('torch.', '')} tensors of shape (3, 16)")
    got = ctx.sub.call("all_reduce", tensors)
    expect(isinstance(got, (list, tuple)) and len(got) == n,
           f"all_reduce must return a list of {n} tensors (one per rank), got {type(got).__name__}")
    stacked = torch.stack([t.double() for t in tensors])
    u = torch.finfo(dtype).eps / 2
    # N - 1 additions, each rounding a running sum no larger than sum |t_r|, doubled
    bound = ref.SAFETY * (n - 1) * u * stacked.abs().sum(0)
    expect_within(got[0], stacked.sum(0), bound, dtype, "rank 0's result")
    for r in range(1, n):
        expect_equal(got[r], got[0], what=f"rank {r}'s result against rank 0's")


# ----------------------------------------------------------------------------------------------
# The MLP over ranks
# ----------------------------------------------------------------------------------------------


@check("tp_mlp matches the unsharded MLP within the rounding bound", max_examples=12,
       hint="Run mlp_forward on every rank's shard with the same x, then all-reduce the partial "
            "sums. Each rank sees all of x: only the weights are split.")
@given(c=mlp_cases())
@example(c={"b": 1, "t": 2, "h": 8, "n": 2, "i": 8, "seed": 0})
def tp_mlp_close(ctx: Ctx, c: dict) -> None:
    _note_mlp(ctx, c, torch.float32)
    x, w = _x(c, torch.float32, ctx.device), _mlp(c, torch.float32, ctx.device)
    out, _ = _pair(ctx.sub.call("tp_mlp", x, ref.shard_mlp(*w, c["n"])), "tp_mlp")
    exact = ref.mlp_forward(x.double(), *(t.double() for t in w))
    expect_within(out, exact, ref.mlp_error_bound(x, *w, c["n"]), torch.float32, "tp_mlp output")


@check("tp_mlp keeps bfloat16 and float16 activations", max_examples=6,
       hint="Partial sums and the all-reduce stay in x's dtype: that is what travels between GPUs.")
@given(c=mlp_cases(), dtype=st.sampled_from([torch.bfloat16, torch.float16]))
def tp_mlp_half(ctx: Ctx, c: dict, dtype: torch.dtype) -> None:
    _note_mlp(ctx, c, dtype)
    x, w = _x(c, dtype, ctx.device), _mlp(c, dtype, ctx.device)
    out, _ = _pair(ctx.sub.call("tp_mlp", x, ref.shard_mlp(*w, c["n"])), "tp_mlp")
    exact = ref.mlp_forward(x.double(), *(t.double() for t in w))
    expect_within(out, exact, ref.mlp_error_bound(x, *w, c["n"]), dtype, "tp_mlp output")


# ----------------------------------------------------------------------------------------------
# Attention
# ----------------------------------------------------------------------------------------------

ATTN_NAMES = ("q", "k", "v", "o")


@check("shard_attention gives each rank its query heads, their KV heads and its columns of w_o", max_examples=8,
       hint="Rows [r Hq D/N, (r+1) Hq D/N) of w_q, the r-th block of Hkv/N KV heads of w_k and "
            "w_v, columns [r Hq D/N, (r+1) Hq D/N) of w_o.")
@given(c=attention_cases(replicate=False))
@example(c={"b": 1, "t": 1, "h": 8, "d": 4, "hq": 4, "hkv": 2, "n": 2, "seed": 0})
def attn_shards(ctx: Ctx, c: dict) -> None:
    _note_attn(ctx, c, torch.float32)
    w = _attn(c, torch.float32, ctx.device)
    got = ctx.sub.call("shard_attention", *w, c["hq"], c["hkv"], c["n"])
    expect_shards(got, ref.shard_attention(*w, c["hq"], c["hkv"], c["n"]), ATTN_NAMES)


@check("shard_attention replicates each KV head on world_size / num_kv_heads ranks", max_examples=8,
       hint="With fewer KV heads than ranks, rank r holds the single KV head r // (N / Hkv): "
            "consecutive ranks share one, as their query heads all read it.")
@given(c=attention_cases(replicate=True))
@example(c={"b": 1, "t": 1, "h": 8, "d": 4, "hq": 4, "hkv": 2, "n": 4, "seed": 0})
def attn_replicated(ctx: Ctx, c: dict) -> None:
    _note_attn(ctx, c, torch.float32)
    w = _attn(c, torch.float32, ctx.device)
    got = ctx.sub.call("shard_attention", *w, c["hq"], c["hkv"], c["n"])
    expect_shards(got, ref.shard_attention(*w, c["hq"], c["hkv"], c["n"]), ATTN_NAMES)


BAD_HEADS = [  # (num_heads, num_kv_heads, world_size, why)
    (6, 2, 4, "world_size 4 does not divide 6 query heads"),
    (12, 3, 4, "neither of 3 KV heads and world_size 4 divides the other"),
    (12, 6, 4, "neither of 6 KV heads and world_size 4 divides the other"),
    (6, 4, 2, "6 query heads are not a multiple of 4 KV heads"),
]


@check("shard_attention raises ValueError when the heads do not split")
def attn_bad_heads(ctx: Ctx) -> None:
    for hq, hkv, n, why in BAD_HEADS:
        c = {"b": 1, "t": 1, "h": 8, "d": 4, "hq": hq, "hkv": hkv, "n": n, "seed": 0}
        with expect_raises(ctx, "ValueError", what=f"shard_attention: {why}"):
            ctx.sub.call("shard_attention", *_attn(c, torch.float32, ctx.device), hq, hkv, n)


def _attn_exact(x: torch.Tensor, w: tuple[torch.Tensor, ...], d: int) -> torch.Tensor:
    return ref.attention_forward(x.double(), *(t.double() for t in w), d)


@check("attention_forward of one rank's heads is that rank's partial sum", max_examples=10,
       hint="Causal attention per sequence, scale 1/sqrt(head_dim); local query head j reads local "
            "KV head j // (hq / hkv) (repeat_interleave, not repeat); then o @ w_o_shard.T.")
@given(c=attention_cases(), rank=st.integers(0, 7))
@example(c={"b": 1, "t": 3, "h": 8, "d": 4, "hq": 4, "hkv": 2, "n": 1, "seed": 0}, rank=0)
def attn_partial(ctx: Ctx, c: dict, rank: int) -> None:
    r = rank % c["n"]
    _note_attn(ctx, c, torch.float32)
    ctx.note(f"rank {r}'s shard")
    x = _x(c, torch.float32, ctx.device)
    shard = ref.shard_attention(*_attn(c, torch.float32, ctx.device), c["hq"], c["hkv"], c["n"])[r]
    got = ctx.sub.call("attention_forward", x, *shard, c["d"])
    hq, hkv = shard[0].shape[0] // c["d"], shard[1].shape[0] // c["d"]
    bound = ref.attention_error_bound(x, *shard, hq, hkv, 1)
    expect_within(got, _attn_exact(x, shard, c["d"]), bound, torch.float32, f"rank {r}'s partial sum")


@check("tp_attention matches the unsharded attention block within the rounding bound", max_examples=10,
       hint="Every rank runs attention_forward on its heads with the whole x, then one all-reduce.")
@given(c=attention_cases())
@example(c={"b": 1, "t": 3, "h": 8, "d": 4, "hq": 4, "hkv": 1, "n": 2, "seed": 0})
def tp_attn_close(ctx: Ctx, c: dict) -> None:
    _note_attn(ctx, c, torch.float32)
    x, w = _x(c, torch.float32, ctx.device), _attn(c, torch.float32, ctx.device)
    shards = ref.shard_attention(*w, c["hq"], c["hkv"], c["n"])
    out, _ = _pair(ctx.sub.call("tp_attention", x, shards, c["d"]), "tp_attention")
    bound = ref.attention_error_bound(x, *w, c["hq"], c["hkv"], c["n"])
    expect_within(out, _attn_exact(x, w, c["d"]), bound, torch.float32, "tp_attention output")


@check("tp_attention keeps bfloat16 and float16 activations", max_examples=5,
       hint="Partial sums and the all-reduce stay in x's dtype.")
@given(c=attention_cases(), dtype=st.sampled_from([torch.bfloat16, torch.float16]))
def tp_attn_half(ctx: Ctx, c: dict, dtype: torch.dtype) -> None:
    _note_attn(ctx, c, dtype)
    x, w = _x(c, dtype, ctx.device), _attn(c, dtype, ctx.device)
    shards = ref.shard_attention(*w, c["hq"], c["hkv"], c["n"])
    out, _ = _pair(ctx.sub.call("tp_attention", x, shards, c["d"]), "tp_attention")
    bound = ref.attention_error_bound(x, *w, c["hq"], c["hkv"], c["n"])
    expect_within(out, _attn_exact(x, w, c["d"]), bound, dtype, "tp_attention output")


LARGE_SCORE = 150.0
"""The largest attention score of :func:`attn_large_scores`: past 88.7, where ``exp`` overflows
float32 (and far past float16's 11.1), as the logits of a real model's attention can be."""


def _scaled_for_large_scores(x: torch.Tensor, w: tuple[torch.Tensor, ...], c: dict,
                             ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
    """``x`` scaled (and ``w_q`` negated if need be) so that the largest visible score, over
    every head, is about :data:`LARGE_SCORE`: scores grow with the square of ``x``."""
    b, t, d, hq, hkv = c["b"], c["t"], c["d"], c["hq"], c["hkv"]
    xd = x.double()
    q = (xd @ w[0].double().T).view(b, t, hq, d).transpose(1, 2)
    k = (xd @ w[1].double().T).view(b, t, hkv, d).transpose(1, 2).repeat_interleave(hq // hkv, 1)
    s = (q @ k.transpose(-1, -2)) / math.sqrt(d)
    causal = torch.ones(t, t, dtype=torch.bool).tril()
    top, bottom = float(s[..., causal].max()), float(s[..., causal].min())
    if top <= 0:  # every visible score negative: negating q makes the most negative the largest
        w, top = (-w[0], *w[1:]), -bottom
    return x * math.sqrt(LARGE_SCORE / max(top, 1e-6)), w


@check("attention_forward keeps its softmax finite when scores pass float32's exp range", max_examples=6,
       hint="Subtract each row's largest score before exp (torch.softmax does): exp(s) overflows "
            "to inf past s = 88.7 in float32, and inf / inf is NaN. The shift changes nothing "
            "mathematically, since softmax(s - m) = softmax(s).")
@given(c=attention_cases())
@example(c={"b": 1, "t": 3, "h": 8, "d": 4, "hq": 4, "hkv": 2, "n": 1, "seed": 0})
def attn_large_scores(ctx: Ctx, c: dict) -> None:
    _note_attn(ctx, c, torch.float32)
    x, w = _scaled_for_large_scores(_x(c, torch.float32, "cpu"), _attn(c, torch.float32, "cpu"), c)
    ctx.note(f"x scaled so that the largest attention score is about {LARGE_SCORE:g}; the whole "
             "block on one rank")
    x, w = x.to(ctx.device), tuple(t.to(ctx.device) for t in w)
    got = ctx.sub.call("attention_forward", x, *w, c["d"])
    bound = ref.attention_error_bound(x, *w, c["hq"], c["hkv"], 1)
    expect_within(got, _attn_exact(x, w, c["d"]), bound, torch.float32, "attention_forward output")


@check("tp_mlp and tp_attention work rank by rank and never rebuild a whole weight", max_examples=3,
       hint="Each rank multiplies the full x by its own shard and nothing else; concatenating the "
            "shards back into the unsharded weights (then splitting the result) gives the same "
            "numbers, but it is the one thing tensor parallelism exists to avoid: no GPU holds them.")
@given(n=st.sampled_from([4, 8]), seed=gs.seeds())
@example(n=4, seed=0)
def no_whole_weight(ctx: Ctx, n: int, seed: int) -> None:
    """Shapes where every tensor a rank-by-rank block makes (one rank's activations, its fused
    gate-and-up or q-k-v shard, the N partial sums) is smaller than one whole weight: one token,
    an intermediate size 8 N, query heads 2 N."""
    mc = {"b": 1, "t": 1, "h": 16, "n": n, "i": 8 * n, "seed": seed}
    ac = {"b": 1, "t": 2, "h": 16, "d": 8, "hq": 2 * n, "hkv": n, "n": n, "seed": seed}
    for name, c, shards, extra, whole in (
            ("tp_mlp", mc, ref.shard_mlp(*_mlp(mc, torch.float32, ctx.device), n), (),
             mc["i"] * mc["h"]),
            ("tp_attention", ac, ref.shard_attention(*_attn(ac, torch.float32, ctx.device),
                                                     ac["hq"], ac["hkv"], n), (ac["d"],),
             ac["hq"] * ac["d"] * ac["h"])):
        ctx.note(f"{name}: N={n}, x of shape {(c['b'], c['t'], c['h'])}, a whole weight has {whole} "
                 "elements")
        _pair(ctx.sub.call(name, _x(c, torch.float32, ctx.device), shards, *extra, track_ops=True),
              name)
        largest = int(ctx.sub.last_call_stats().get("max_numel", -1))
        if largest <= 0:
            raise RuntimeError(f"the grader saw no tensor op during {name} (op tracking is off)")
        expect(largest < whole, f"{name} produced a tensor of {largest} elements, as large as a "
               f"whole unsharded weight ({whole}): the shards were put back together instead of "
               "each rank computing with its own")


# ----------------------------------------------------------------------------------------------
# Communication
# ----------------------------------------------------------------------------------------------


@check("each block counts one all-reduce of one rank's output bytes, 0 on one rank", max_examples=6,
       hint="comm_bytes = out.numel() * out.element_size() when N > 1, else 0: one rank's input "
            "to the one all-reduce, in x's dtype; not times N, not the ring's 2(N-1)/N, and "
            "independent of I and of the number of heads.")
@given(c=attention_cases(), i_mult=st.sampled_from([1, 4]), dtype=gs.dtypes())
@example(c={"b": 2, "t": 3, "h": 8, "d": 4, "hq": 2, "hkv": 1, "n": 1, "seed": 0}, i_mult=1,
         dtype=torch.float32)
@example(c={"b": 2, "t": 3, "h": 8, "d": 4, "hq": 4, "hkv": 2, "n": 2, "seed": 0}, i_mult=4,
         dtype=torch.bfloat16)
@example(c={"b": 1, "t": 2, "h": 16, "d": 4, "hq": 4, "hkv": 4, "n": 4, "seed": 0}, i_mult=1,
         dtype=torch.float16)
def comm_bytes(ctx: Ctx, c: dict, i_mult: int, dtype: torch.dtype) -> None:
    _note_attn(ctx, c, dtype)
    x = _x(c, dtype, ctx.device)
    want = 0 if c["n"] == 1 else x.numel() * x.element_size()
    mc = {**c, "i": c["n"] * i_mult * 2}
    ctx.note(f"MLP intermediate size I={mc['i']}")
    _, got = _pair(ctx.sub.call("tp_mlp", x, ref.shard_mlp(*_mlp(mc, dtype, ctx.device), c["n"])), "tp_mlp")
    _expect_bytes(got, want, "tp_mlp's comm_bytes")
    shards = ref.shard_attention(*_attn(c, dtype, ctx.device), c["hq"], c["hkv"], c["n"])
    _, got = _pair(ctx.sub.call("tp_attention", x, shards, c["d"]), "tp_attention")
    _expect_bytes(got, want, "tp_attention's comm_bytes")
