"""Checks for the paged-decode-attention challenge.

Every case builds a pool of shuffled blocks: live slots hold the sequences' keys and values; the
slots past a sequence's length, the spare blocks and the blocks that padding entries of a table
name hold stale rows. Each sequence's output is then held to the shared attention rule
(``expect_attention_close``) against the dense attention over its own gathered keys, so the
allowance is the one every attention challenge uses and a stale row never widens it. On a CPU the
kernel runs in Triton's interpreter, so the shapes stay small and fp32.
"""

from __future__ import annotations

import math

import torch
from hypothesis import example, given, note
from hypothesis import strategies as st
from inferview.graders import strategies as gs
from inferview.graders.api import CheckFailed, Ctx, check, expect, expect_attention_close
from inferview.reference import decode_attention as ref

NAME = "paged_decode_attention"
HEAD_DIMS = (16, 32, 64, 128)
BLOCK_SIZES = (4, 8, 16, 32)
POOL_LAYOUTS = ("contiguous", "kv-interleaved", "head-major", "mixed")
HUGE_KEY = 2.0**15
"""Every entry of a stale key row in the ``huge`` cases. The query entries are then at least 0.5,
so a stale row scores at least ``0.5 * 2^15 * D / sqrt(D) >= 65536`` (D >= 16): one that is read
takes all the weight, and a finite penalty such as -1e4 does not hide it. The visible keys stay
ordinary, so the allowance (computed from the visible scores only) stays tight."""

SUNK_SHIFT = 2.0**13
"""Subtracted from every live key in the ``sunk`` cases (with the same positive queries as
``huge``): every visible score is then below ``-0.5 * 2^13 * D / sqrt(D) <= -16384``, while a
stale slot loaded as zero (a masked load with ``other=0``) scores 0. A finite penalty such as
-1e4 leaves such a slot above every visible key, so it takes all the weight; only -inf hides it.
The stale rows themselves stay ordinary, so a kernel that does not mask at all fails too."""

MAX_SCALAR_READS = 32
"""Numbers a call may read out of tensors into Python (``int(seq_lens[b])``, ``.item()``): a few
per sequence for a launch grid, not the cache."""

OUT_FACTOR = 8
"""The statement's memory rule: no tensor a torch op returns during the call may hold more
elements than ``OUT_FACTOR`` times the output's or than ``block_tables``, whichever is larger.
That leaves room for float32 partial outputs of a few splits and a copy of the table, and none for
a copy of the cache: the ``in place`` check's sequence holds twice that many rows. The engine
measures every op's result, views included (it cannot tell a view from a copy), which is why the
statement asks for the pools to be passed to the kernel untouched."""


@st.composite
def paged_cases(draw, *, hkv=(1, 2), groups=(1, 2), dims=(16, 32), block_sizes=(4, 8, 16),
                max_len=20, batch=(1, 2), layouts=("contiguous",), strided=(False,),
                garbage="normal", scale=1.0, dtype=torch.float32):
    """One decode batch over a paged pool, described by sizes and a seed.

    The interpreter runs every program of the grid one after another, so the defaults keep
    ``B * Hq * pages`` to a few dozen: a kernel with one program per (sequence, head) that walks
    the pages one at a time grades in seconds, not minutes."""
    bs = draw(st.sampled_from(block_sizes))
    b = draw(st.integers(*batch))
    lens = draw(st.lists(st.integers(1, max_len), min_size=b, max_size=b))
    kv = draw(st.sampled_from(hkv))
    case = {"batch": b, "num_kv_heads": kv, "num_heads": kv * draw(st.sampled_from(groups)),
            "head_dim": draw(st.sampled_from(dims)), "block_size": bs, "seq_lens": lens,
            "extra_cols": draw(st.integers(0, 2)), "shared": draw(st.booleans()),
            "layout": draw(st.sampled_from(layouts)), "strided": draw(st.sampled_from(strided)),
            "garbage": garbage, "scale": scale,
            "dtype": draw(dtype) if isinstance(dtype, st.SearchStrategy) else dtype,
            "seed": draw(gs.seeds())}
    return case


def describe(c) -> str:
    dt = str(c["dtype"]).replace("torch.", "")
    views = ", strided q and block_tables" if c["strided"] else ""
    return (f"B={c['batch']}, Hq={c['num_heads']}, Hkv={c['num_kv_heads']}, D={c['head_dim']}, "
            f"block_size={c['block_size']}, seq_lens={c['seq_lens']}, padding columns="
            f"{c['extra_cols']}, shared prefix={c['shared']}, pool {c['layout']}{views}, "
            f"stale rows {c['garbage']}, values x{c['scale']:g}, {dt}, seed={c['seed']}")


def _tables(c, gen: torch.Generator) -> tuple[torch.Tensor, int, list[list[int]]]:
    """``(block_tables, num_blocks, owned)``: shuffled physical ids, sequence 1 sharing sequence
    0's full leading blocks when ``shared``, padding entries pointing at arbitrary blocks."""
    bs, lens = c["block_size"], c["seq_lens"]
    need = [ref.blocks_for(n, bs) for n in lens]
    share = min(lens[0], lens[1]) // bs if c["shared"] and len(lens) > 1 else 0
    num_blocks = sum(need) - share + 2  # two spare blocks of stale rows
    ids = torch.randperm(num_blocks, generator=gen).tolist()
    cols = max(need) + c["extra_cols"]
    table = torch.randint(0, num_blocks, (len(lens), cols), generator=gen, dtype=torch.int32)
    owned, nxt = [], 0
    for b, k in enumerate(need):
        row = list(owned[0][:share]) if b == 1 and share else []
        while len(row) < k:
            row.append(ids[nxt])
            nxt += 1
        table[b, :k] = torch.tensor(row, dtype=torch.int32)
        owned.append(row)
    return table, num_blocks, owned


def _pool(shape, layout: str, dtype, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Empty ``k_pool``, ``v_pool`` of ``(N, bs, Hkv, D)`` in one of four storage layouts
    (``mixed``: a contiguous ``k_pool`` beside a head-major ``v_pool``, so that their strides
    differ)."""
    n, bs, hkv, d = shape
    if layout == "mixed":
        return (torch.empty(shape, dtype=dtype, device=device),
                torch.empty((n, hkv, bs, d), dtype=dtype, device=device).transpose(1, 2))
    if layout == "kv-interleaved":  # one (N, 2, bs, Hkv, D) buffer: a page holds its K and V
        buf = torch.empty((n, 2, bs, hkv, d), dtype=dtype, device=device)
        return buf[:, 0], buf[:, 1]
    if layout == "head-major":  # stored (N, Hkv, bs, D), seen through a transposed view
        return (torch.empty((n, hkv, bs, d), dtype=dtype, device=device).transpose(1, 2),
                torch.empty((n, hkv, bs, d), dtype=dtype, device=device).transpose(1, 2))
    return (torch.empty(shape, dtype=dtype, device=device),
            torch.empty(shape, dtype=dtype, device=device))


def build(c, device):
    """``(q, k_pool, v_pool, block_tables, seq_lens)`` of a case, on ``device``."""
    gen = torch.Generator().manual_seed(int(c["seed"]))
    b, hq, hkv, d, bs = c["batch"], c["num_heads"], c["num_kv_heads"], c["head_dim"], c["block_size"]
    table, nblk, owned = _tables(c, gen)
    s, sc = c["seed"], c["scale"]
    live = torch.zeros((nblk, bs), dtype=torch.bool)
    for row, n in zip(owned, c["seq_lens"], strict=True):
        pos = torch.arange(n)
        live[torch.tensor(row, dtype=torch.long)[pos // bs], pos % bs] = True
    k = gs.tensor((nblk, bs, hkv, d), s + 1, scale=sc)
    v = gs.tensor((nblk, bs, hkv, d), s + 2)
    q = gs.tensor((b, hq, d), s, scale=sc)
    if c["garbage"] == "huge":
        q = (q.abs() * 2).round() / 2 + 0.5  # positive: a stale key of 2^15 scores above 1e4
        k_stale, v_stale = torch.full_like(k, HUGE_KEY), torch.full_like(v, 100.0)
    elif c["garbage"] == "sunk":
        q = (q.abs() * 2).round() / 2 + 0.5
        k = k - SUNK_SHIFT
        k_stale, v_stale = gs.tensor(k.shape, s + 3, scale=3.0), gs.tensor(v.shape, s + 4) + 20.0
    else:
        k_stale, v_stale = gs.tensor(k.shape, s + 3, scale=3.0), gs.tensor(v.shape, s + 4) + 20.0
    mask = live[:, :, None, None]
    k_pool, v_pool = _pool((nblk, bs, hkv, d), c["layout"], c["dtype"], device)
    k_pool.copy_(torch.where(mask, k, k_stale))
    v_pool.copy_(torch.where(mask, v, v_stale))
    q = q.to(device=device, dtype=c["dtype"])
    if c["strided"]:  # q: the query part of a fused (B, Hq + 2 Hkv, D) projection; a wider table
        buf = torch.zeros((b, hq + 2 * hkv, d), dtype=c["dtype"], device=device)
        buf[:, :hq] = q
        q = buf[:, :hq]
        wide = torch.zeros((b, table.shape[1] + 3), dtype=torch.int32, device=device)
        wide[:, :table.shape[1]] = table.to(device)
        table = wide[:, :table.shape[1]]
    else:
        table = table.to(device)
    lens = torch.tensor(c["seq_lens"], dtype=torch.int32, device=device)
    return q, k_pool, v_pool, table, lens


def _expect_output(got, q) -> None:
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(f"{NAME} must return a tensor, got {type(got).__name__}")
    expect(tuple(got.shape) == tuple(q.shape), f"{NAME} output: expected shape {tuple(q.shape)} "
           f"(B, Hq, D), got {tuple(got.shape)}")
    expect(got.dtype == q.dtype, f"{NAME} output: expected dtype {q.dtype}, got {got.dtype}")
    expect(got.device.type == q.device.type,
           f"{NAME} output: expected device {q.device.type}, got {got.device.type}")


def expect_decode_close(got, q, k_pool, v_pool, table, lens, sm_scale=None) -> None:
    """Each sequence's output under the attention rule, against its gathered dense keys."""
    _expect_output(got, q)
    for b in range(q.shape[0]):
        k, v = ref.dense_kv(k_pool, v_pool, table, lens, b)
        expect_attention_close(got[b][None, :, None], q[b][None, :, None], k, v, sm_scale=sm_scale,
                               what=f"{NAME} output of sequence {b} (seq_len {int(lens[b])})")


def _expect_in_place(ctx: Ctx, q, table) -> None:
    """The call did its work in the kernel: few scalar reads, no tensor the size of the cache."""
    stats = ctx.sub.last_call_stats()
    ops = stats.get("torch_ops", {})
    reads = int(ops.get("_local_scalar_dense", 0)) + int(ops.get("is_nonzero", 0))
    expect(reads <= MAX_SCALAR_READS,
           f"the call read {reads} numbers out of tensors into Python (int(), float(), .item()); "
           f"at most {MAX_SCALAR_READS} are allowed: the kernel reads the block table itself")
    limit = max(OUT_FACTOR * q.numel(), table.numel())
    biggest = int(stats.get("max_numel", 0))
    expect(biggest <= limit,
           f"a torch operation during the call returned a tensor of {biggest} elements; the limit "
           f"is {limit} (the larger of {OUT_FACTOR} x the output's {q.numel()} and the block "
           f"table's {table.numel()}, views included): copying K/V into a dense tensor in torch "
           "is forbidden, and the pools go to the kernel as they are, through their strides")


def run(ctx: Ctx, case, sm_scale: float | None = None) -> None:
    note(describe(case))
    q, k_pool, v_pool, table, lens = build(case, ctx.device)
    kwargs = {} if sm_scale is None else {"sm_scale": sm_scale}
    got = ctx.sub.call(NAME, q, k_pool, v_pool, table, lens, **kwargs)
    _expect_in_place(ctx, q, table)
    expect_decode_close(got, q, k_pool, v_pool, table, lens, sm_scale)


def _case(**kw):
    base = {"batch": 1, "num_heads": 1, "num_kv_heads": 1, "head_dim": 16, "block_size": 4,
            "seq_lens": [5], "extra_cols": 0, "shared": False, "layout": "contiguous",
            "strided": False, "garbage": "normal", "scale": 1.0, "dtype": torch.float32, "seed": 0}
    return {**base, **kw}


@check("matches float64, one query head per kv head", max_examples=5, hint="One program per "
       "(sequence, head). Block i of sequence b is block_tables[b, i]; its slot j holds token "
       "i * block_size + j, at k_pool[block, j, kv_head, :]. Online softmax over the pages.")
@given(case=paged_cases(groups=(1,)))
@example(case=_case(seq_lens=[9], seed=1))
def mha(ctx: Ctx, case) -> None:
    run(ctx, case)


@check("grouped heads: query head h reads kv head h // (Hq // Hkv)", max_examples=4, hint="Heads "
       "0..G-1 share kv head 0 (G = Hq // Hkv); h % Hkv is a different model.")
@given(case=paged_cases(hkv=(1, 2), groups=(2, 3, 4), batch=(1, 1)))
@example(case=_case(num_heads=4, num_kv_heads=2, seq_lens=[6, 3], batch=2, seed=2))
def gqa(ctx: Ctx, case) -> None:
    run(ctx, case)


@check("ragged lengths: each sequence stops at its own seq_len", max_examples=4, hint="Load "
       "seq_lens[b] in the kernel; mask the tokens at or past it in the last page (their slots "
       "hold stale rows) and never follow the table past ceil(seq_len / block_size) entries.")
@given(case=paged_cases(batch=(2, 3), hkv=(1,), groups=(1, 2), max_len=17))
@example(case=_case(batch=3, seq_lens=[1, 4, 7], extra_cols=2, seed=3))
def ragged(ctx: Ctx, case) -> None:
    run(ctx, case)


@check("stale slots and padding blocks get no weight, however large their keys", max_examples=2,
       hint="Set the scores of tokens past seq_len to -inf with tl.where before the maximum; a "
       "finite penalty such as -1e4 leaves weight on a stale key that scores higher, or on a "
       "slot loaded as 0 when every visible score is far below zero.")
@given(case=paged_cases(garbage="huge", hkv=(1,)))
@example(case=_case(batch=2, seq_lens=[5, 2], extra_cols=1, garbage="huge", seed=4))
@example(case=_case(batch=2, seq_lens=[6, 3], extra_cols=1, garbage="sunk", seed=10))
def stale_rows(ctx: Ctx, case) -> None:
    run(ctx, case)


@check("every block_size from 4 to 32 and head_dim from 16 to 128", max_examples=4, hint="Both "
       "are tl.constexpr tile widths (tl.arange(0, BLOCK_SIZE), tl.arange(0, HEAD_DIM)).")
@given(case=paged_cases(dims=HEAD_DIMS, block_sizes=BLOCK_SIZES, batch=(1, 1), hkv=(1,), max_len=40))
def sizes(ctx: Ctx, case) -> None:
    run(ctx, case)


@check("pools, queries and tables as strided views", max_examples=3, hint="Pass every stride "
       "(k_pool.stride(0..3), v_pool.stride(...), q.stride(...), block_tables.stride(...)) to the "
       "kernel: k_pool and v_pool may be halves of one buffer or transposed views, and their "
       "strides need not be the same.")
@given(case=paged_cases(layouts=POOL_LAYOUTS, strided=(False, True)))
@example(case=_case(batch=2, seq_lens=[6, 9], layout="head-major", strided=True, seed=5))
@example(case=_case(batch=2, seq_lens=[6, 9], layout="kv-interleaved", seed=6))
@example(case=_case(batch=1, num_kv_heads=2, num_heads=2, seq_lens=[7], layout="mixed", seed=9))
def strided_views(ctx: Ctx, case) -> None:
    run(ctx, case)


@check("an explicit sm_scale is used", max_examples=3, hint="Only sm_scale=None means "
       "1/sqrt(head_dim); an explicit 0.0 is a scale too (equal weights).")
@given(case=paged_cases(), sm_scale=st.sampled_from([0.05, 0.5, 2.0]))
@example(case=_case(seq_lens=[7], seed=7), sm_scale=0.0)
def custom_scale(ctx: Ctx, case, sm_scale: float) -> None:
    note(f"sm_scale={sm_scale}")
    run(ctx, case, sm_scale)


@check("stable for large logits", max_examples=3, hint="Subtract the running maximum before "
       "exponentiating; exp of a score of a few hundred is inf in float32.")
@given(case=paged_cases(scale=20.0))
@example(case=_case(seq_lens=[24], scale=20.0, seed=8))  # page 0's maximum 138, later ones 853
def large_logits(ctx: Ctx, case) -> None:
    run(ctx, case)


@check("reads the pool in place: no dense copy of the cache", max_examples=2, hint="Copying the "
       "pages into a dense (B, Hkv, T, D) tensor, with torch.cat or a copy kernel, is what paged "
       "attention exists to avoid: load each page inside the kernel through the block table.")
@given(case=paged_cases(batch=(1, 1), groups=(2,), hkv=(1,), dims=(16,), max_len=48,
                        block_sizes=(16,)), length=st.integers(33, 48))
def in_place(ctx: Ctx, case, length) -> None:
    """One sequence of 33 to 48 tokens, Hq 2, Hkv 1, D 16: the limit is ``8 * B * Hq * D = 256``
    elements, its dense keys hold ``seq_len * Hkv * D >= 528`` and a copy of the (interleaved,
    so non-contiguous) pool at least ``5 * 16 * 16 = 1280``."""
    case = dict(case, seq_lens=[length], layout="kv-interleaved")
    note(f"seq_lens=[{length}]")
    run(ctx, case)


@check("a second call with new values gets a new answer", max_examples=1, hint="Nothing may be "
       "cached between calls: compute every result from the tensors given.")
@given(case=paged_cases())
def no_stale_results(ctx: Ctx, case) -> None:
    run(ctx, case)
    again = dict(case, seed=case["seed"] + 7919)
    note(f"then the same shapes with seed={again['seed']}")
    run(ctx, again)


@check("float16 and bfloat16 on CUDA, larger shapes", needs_cuda=True, max_examples=8, hint="Load "
       "pages in the pool's dtype, accumulate in float32, store in q's dtype.")
@given(case=paged_cases(hkv=(1, 2, 8), groups=(1, 4, 8), dims=(64, 128), block_sizes=(16, 32),
                        max_len=1500, batch=(1, 8), layouts=POOL_LAYOUTS, strided=(False, True),
                        dtype=st.sampled_from([torch.float16, torch.bfloat16])))
def half_precision_cuda(ctx: Ctx, case) -> None:
    run(ctx, case)


def _cuda_time(fn, reps: int = 20) -> float:
    """Median seconds per call, measured with CUDA events after a warm-up."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return sorted(times)[len(times) // 2]


@check("memory bandwidth on CUDA (reported)", needs_cuda=True, hint="Decode is bound by reading "
       "the cache: serve a whole GQA group per program so each page is read once, and use "
       "num_warps 4 with pages of 16 or more tokens.")
def bandwidth_cuda(ctx: Ctx) -> str:
    """Correct at a serving-like size (16 sequences of 512-2048 tokens with the attention heads
    of Llama-3-8B, Hq 32, Hkv 8, D 128 per its config.json, fp16, block_size 16) and reports GB/s
    of K/V read: the submission's call (timed inside the worker), the reference (gather, then
    attention in torch) and torch's SDPA on the gathered cache (the gather not timed)."""
    gen = torch.Generator().manual_seed(ctx.seed % 1000)
    lens = torch.randint(512, 2049, (16,), generator=gen).tolist()
    case = _case(batch=16, num_heads=32, num_kv_heads=8, head_dim=128, block_size=16,
                 seq_lens=lens, dtype=torch.float16, seed=ctx.seed % 1000)
    q, k_pool, v_pool, table, seq = build(case, ctx.device)
    nbytes = ref.decode_bytes(seq, 8, 128, 2)
    t_ref = _cuda_time(lambda: ref.paged_decode_attention(q, k_pool, v_pool, table, seq), reps=3)
    dense = [ref.dense_kv(k_pool, v_pool, table, seq, b) for b in range(16)]

    def sdpa() -> None:
        for b, (k, v) in enumerate(dense):
            torch.nn.functional.scaled_dot_product_attention(q[b][None, :, None], k, v, enable_gqa=True)

    t_sdpa = _cuda_time(sdpa, reps=5)
    ctx.sub.call(NAME, q, k_pool, v_pool, table, seq)  # warm-up: compiles the kernel
    got = ctx.sub.call(NAME, q, k_pool, v_pool, table, seq)
    t_sub = float(ctx.sub.last_call_stats()["elapsed_s"])
    _expect_in_place(ctx, q, table)
    expect_decode_close(got, q, k_pool, v_pool, table, seq)
    expect(math.isfinite(t_sub) and t_sub > 0, "timing failed")
    report = (f"B=16, seq_lens 512-2048, Hq=32 Hkv=8 D=128 fp16, block_size 16: yours "
              f"{nbytes / t_sub / 1e9:.0f} GB/s, reference (gather + torch) {nbytes / t_ref / 1e9:.0f}, "
              f"SDPA per sequence on a gathered cache {nbytes / t_sdpa / 1e9:.0f}")
    ctx.note(report)
    return report
