"""Checks for the w4a16-matmul challenge.

Every output is compared with the exact (float64) ``x @ dequant(W)^T`` under one bound per
element, :func:`inferview.reference.w4a16.w4a16_error_bound`: the worst case of float32
accumulation in any order (Higham's ``gamma_K |x| |W|``), of rounding the dequantized weight to
``x``'s dtype by either formula, and of rounding the result, times a margin of 2. A correct kernel
cannot exceed it (it stays under 5% of it in practice); every targeted mistake misses it by orders
of magnitude. On a CPU the kernel runs in Triton's interpreter, so the shapes stay small; the
interpreter has float16 (not bfloat16), so the dtype rule is checked on a CPU too.
"""

from __future__ import annotations

import itertools
import math

import torch
from hypothesis import example, given, note
from hypothesis import strategies as st
from inferview.graders import strategies as gs
from inferview.graders.api import CheckFailed, Ctx, check, expect
from inferview.reference.w4a16 import (
    dequantize_w4,
    pack_uint4,
    w4a16_error_bound,
    w4a16_matmul,
    weight_bytes,
)

ENTRY = "w4a16_matmul"
GROUPS = (16, 32, 64, 128)
LAYOUTS = ("contiguous", "row slice", "transposed")


@st.composite
def w4_cases(draw, *, ms=(1, 2, 5, 16, 33), ns=(1, 7, 32, 50), groups=(32, 64), max_groups=3,
             layouts=("contiguous",), dtypes=(torch.float32,)):
    """One problem, described by sizes and a seed (the tensors are rebuilt from them):
    ``K = group_size * n_groups``."""
    g = draw(st.sampled_from(groups))
    case = {"m": draw(st.sampled_from(ms)), "n": draw(st.sampled_from(ns)), "group_size": g,
            "k": g * draw(st.integers(1, max_groups)), "layout": draw(st.sampled_from(layouts)),
            "dtype": draw(st.sampled_from(dtypes)), "seed": draw(gs.seeds())}
    note(_describe(case))
    return case


def _describe(c) -> str:
    dt = str(c["dtype"]).replace("torch.", "")
    return (f"x=({c['m']}, {c['k']}) {dt} ({c['layout']}), w_packed=({c['n']}, {c['k'] // 2}) uint8, "
            f"scales=zeros=({c['n']}, {c['k'] // c['group_size']}), group_size={c['group_size']}, "
            f"seed={c['seed']}")


def _x(c, device) -> torch.Tensor:
    """``x`` in the case's layout: contiguous, a column slice of a wider buffer (row stride
    ``K + 24``), or the transpose of a ``(K, M)`` tensor (strides ``(1, M)``)."""
    m, k, s, dt = c["m"], c["k"], c["seed"], c["dtype"]
    if c["layout"] == "row slice":
        return gs.tensor((m, k + 24), s, dt, device)[:, 8:8 + k]
    if c["layout"] == "transposed":
        return gs.tensor((k, m), s, dt, device).t()
    return gs.tensor((m, k), s, dt, device)


def _weight(c, device):
    """Codes, zero points and scales drawn over their whole ranges: codes and zeros 0..15 (so
    half the codes have the top bit set), scales in [0.02, 0.2) varying from group to group."""
    n, k, g = c["n"], c["k"], c["group_size"]
    gen = torch.Generator().manual_seed(c["seed"] + 101)
    q = torch.randint(0, 16, (n, k), generator=gen)
    zeros = torch.randint(0, 16, (n, k // g), generator=gen).to(torch.uint8)
    scales = (torch.rand((n, k // g), generator=gen) * 0.18 + 0.02).to(c["dtype"])
    return pack_uint4(q).to(device), scales.to(device), zeros.to(device)


MAX_SCALAR_READS = 32
"""Scalars a call may read out of tensors (``float(t[i])``, ``.item()``): reading ``x`` and the
weight one number at a time is computing the matmul in Python beside a token Triton launch."""


def _after_call(ctx: Ctx) -> None:
    ops = ctx.sub.last_call_stats().get("torch_ops", {})
    reads = int(ops.get("_local_scalar_dense", 0)) + int(ops.get("is_nonzero", 0))
    expect(reads <= MAX_SCALAR_READS,
           f"the call read {reads} numbers out of tensors into Python (float(), .item(), int()); "
           "the matmul must be computed inside the Triton kernel, not in Python")


def _call(ctx: Ctx, x, w_packed, scales, zeros, group_size):
    got = ctx.sub.call(ENTRY, x, w_packed, scales, zeros, group_size)
    _after_call(ctx)
    return got


def expect_w4a16_close(got, x, w_packed, scales, zeros, group_size, *, what="w4a16_matmul output"):
    """Shape ``(M, N)``, ``x``'s dtype and device, and every element within the bound."""
    m, n = x.shape[0], w_packed.shape[0]
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(f"{what}: expected a tensor of shape ({m}, {n}), got {type(got).__name__}")
    if tuple(got.shape) != (m, n):
        raise CheckFailed(f"{what}: expected shape ({m}, {n}), got {tuple(got.shape)}")
    if got.dtype != x.dtype:
        raise CheckFailed(f"{what}: expected dtype {x.dtype} (x's dtype), got {got.dtype}")
    if got.device.type != x.device.type:
        raise CheckFailed(f"{what}: expected device {x.device.type}, got {got.device.type}")
    if not got.is_contiguous():
        raise CheckFailed(f"{what}: expected a contiguous tensor, got strides {got.stride()}")
    xc, pc, sc, zc = (t.detach().cpu() for t in (x, w_packed, scales, zeros))
    exact = w4a16_matmul(xc, pc, sc, zc, group_size, compute_dtype=torch.float64)
    bound = w4a16_error_bound(xc, pc, sc, zc, group_size)
    g = got.detach().cpu().double()
    diff = (g - exact).abs()
    bad = ~(diff <= bound)  # NaN is bad
    if not bool(bad.any()):
        return
    idx = bad.nonzero()
    lines = [f"{what}: {idx.shape[0]} of {g.numel()} elements are further from the exact result "
             "than float32 accumulation allows"]
    n_nan, n_inf = int(torch.isnan(g).sum()), int(torch.isinf(g).sum())
    if n_nan or n_inf:
        lines.append(f"  the result holds {n_nan} NaN and {n_inf} Inf values")
    for row in idx[:5].tolist():
        pos = tuple(row)
        lines.append(f"  at {pos}: expected {exact[pos].item():.6g}, got {g[pos].item():.6g} "
                     f"(error {diff[pos].item():.3g}, allowed {bound[pos].item():.3g})")
    if idx.shape[0] > 5:
        lines.append(f"  ... and {idx.shape[0] - 5} more")
    raise CheckFailed("\n".join(lines))


def _run(ctx: Ctx, case) -> None:
    x = _x(case, ctx.device)
    w_packed, scales, zeros = _weight(case, ctx.device)
    got = _call(ctx, x, w_packed, scales, zeros, case["group_size"])
    expect_w4a16_close(got, x, w_packed, scales, zeros, case["group_size"])


def _case(m, n, k, g, *, layout="contiguous", dtype=torch.float32, seed=0) -> dict:
    return {"m": m, "n": n, "k": k, "group_size": g, "layout": layout, "dtype": dtype, "seed": seed}


@check("matches float64 (decode and prefill shapes)", max_examples=6, hint="One program per output "
       "tile; loop over K, unpack the codes, subtract the zero point, multiply by the scale, "
       "accumulate with tl.dot in float32.")
@given(case=w4_cases())
@example(case=_case(1, 32, 128, 32))
def matches_reference(ctx: Ctx, case) -> None:
    _run(ctx, case)


@check("weights dequantize exactly: low nibble first, unsigned codes, per-group zero and scale",
       max_examples=3, hint="Column 2j is the low nibble (byte & 0xF), column 2j+1 the high one "
       "(byte >> 4); codes are unsigned 0..15; W = (q - zeros[n, k // group_size]) * "
       "scales[n, k // group_size].")
@given(n=st.sampled_from([4, 16]), group_size=st.sampled_from(GROUPS[:3]), seed=gs.seeds())
@example(n=4, group_size=16, seed=0)
def dequantizes_exactly(ctx: Ctx, n: int, group_size: int, seed: int) -> None:
    """``x`` is the identity (M = K = 64): row ``k`` of the result is column ``k`` of the
    dequantized weight, one product per element, so the answer is exact in any order."""
    k = 64
    case = _case(k, n, k, group_size, seed=seed)
    note(f"x = identity ({k} x {k}), so y[k, n] = W[n, k]; w_packed=({n}, {k // 2}), "
         f"group_size={group_size}, seed={seed}")
    w_packed, scales, zeros = _weight(case, ctx.device)
    x = torch.eye(k, device=ctx.device)
    got = _call(ctx, x, w_packed, scales, zeros, group_size)
    expect_w4a16_close(got, x, w_packed, scales, zeros, group_size,
                       what="w4a16_matmul(identity, W), i.e. W transposed,")


@check("M and N that are not multiples of the block", max_examples=5, hint="Mask the loads of x "
       "rows past M and weight rows past N, and the store, with (rm < M) and (rn < N); launch "
       "cdiv(M, BLOCK_M) x cdiv(N, BLOCK_N) programs.")
@given(case=w4_cases(ms=(1, 3, 17, 33), ns=(1, 5, 33, 65), groups=(32,), max_groups=2))
@example(case=_case(17, 33, 64, 32))
def ragged_m_n(ctx: Ctx, case) -> None:
    _run(ctx, case)


@check("every group size, smaller and larger than a K tile", max_examples=6, hint="Look the group "
       "up per column, g = k // group_size, rather than once per K tile; mask columns past K when "
       "K is not a multiple of BLOCK_K (K = 48 with groups of 16).")
@given(case=w4_cases(ms=(1, 4), ns=(7, 32), groups=GROUPS, max_groups=3))
@example(case=_case(2, 16, 48, 16))
@example(case=_case(2, 16, 128, 128))
def group_sizes(ctx: Ctx, case) -> None:
    _run(ctx, case)


@check("non-contiguous x (strides)", max_examples=4, hint="Pass x.stride(0) and x.stride(1) to the "
       "kernel and index x with both; a slice of a wider buffer has row stride > K, a transposed "
       "view has x.stride(1) != 1.")
@given(case=w4_cases(ms=(1, 3, 16), ns=(7, 32), layouts=LAYOUTS[1:]))
@example(case=_case(3, 32, 64, 32, layout="row slice"))
def strided_x(ctx: Ctx, case) -> None:
    _run(ctx, case)


def _integer_case(c, device):
    """Inputs on which a float32 accumulator is exact and a 16-bit one is not.

    Columns ``k`` and ``k + K/2`` have opposite weights, ``+w`` then ``-w`` with ``w`` in 4..7
    times a scale of 1 or 2 (the mirrored groups share their scales), and ``x`` is an integer in
    [112, 128] on the first half and the same plus ``d`` in [-3, 3] on the second: the partial sums
    climb to about 127000 on average, never below 57344 (float16 overflows at 65504; bfloat16
    holds integers only up to 256) and come back to
    ``y = -sum d w``, at most 5376 in size. Every input and every weight is exact in float16 and
    bfloat16 and every partial sum is an integer below 2^24, so float32 accumulation in any order
    returns the exact sum."""
    m, n, k, g = c["m"], c["n"], c["k"], c["group_size"]
    half = k // 2
    gen = torch.Generator().manual_seed(c["seed"] + 7)
    q1 = torch.randint(12, 16, (n, half), generator=gen)  # weights +4..+7 (zero point 8)
    q = torch.cat([q1, 16 - q1], dim=1)  # then -4..-7
    zeros = torch.full((n, k // g), 8, dtype=torch.uint8)
    s1 = 2.0 ** torch.randint(0, 2, (n, half // g), generator=gen).double()
    scales = torch.cat([s1, s1], dim=1).to(c["dtype"])
    x1 = torch.randint(112, 129, (m, half), generator=gen)
    x = torch.cat([x1, x1 + torch.randint(-3, 4, (m, half), generator=gen)], dim=1).to(c["dtype"])
    return x.to(device), pack_uint4(q).to(device), scales.to(device), zeros.to(device)


def _half_dtypes(ctx: Ctx) -> list[torch.dtype]:
    # Triton's interpreter has no bfloat16 arithmetic; a GPU runs both.
    return [torch.float16, torch.bfloat16] if ctx.device == "cuda" else [torch.float16]


@check("16-bit x: the result in x's dtype, accumulated in float32", max_examples=3, hint="Load x "
       "in its dtype, dequantize to that dtype for tl.dot, keep the accumulator in float32 "
       "(tl.zeros(..., tl.float32); tl.dot's default out_dtype) and cast only at the store.")
@given(m=st.sampled_from([1, 4]), n=st.sampled_from([8, 32]), group_size=st.sampled_from([32, 64]),
       pick=st.integers(0, 1), seed=gs.seeds())
@example(m=1, n=8, group_size=32, pick=0, seed=0)
def half_precision(ctx: Ctx, m: int, n: int, group_size: int, pick: int, seed: int) -> None:
    """Exact integer inputs whose partial sums climb to about 127000 (a float16 accumulator
    overflows, a bfloat16 one rounds them to multiples of 256 or more): a float32 accumulator returns the exact sum, so
    the result must equal it rounded once to x's dtype. Then random inputs under the general
    bound."""
    dtypes = _half_dtypes(ctx)
    dtype = dtypes[pick % len(dtypes)]
    c = _case(m, n, 256, group_size, dtype=dtype, seed=seed)
    note(f"x=({m}, 256) {str(dtype).replace('torch.', '')} integers, w_packed=({n}, 128), "
         f"group_size={group_size}, seed={seed}: columns k and k + 128 carry opposite weights, so the "
         "partial sums climb to about 127000 before they come back down")
    x, w_packed, scales, zeros = _integer_case(c, ctx.device)
    got = _call(ctx, x, w_packed, scales, zeros, group_size)
    exact = w4a16_matmul(x.cpu(), w_packed.cpu(), scales.cpu(), zeros.cpu(), group_size,
                         compute_dtype=torch.float64)
    expect_w4a16_close(got, x, w_packed, scales, zeros, group_size)
    want = exact.to(dtype)
    g = got.detach().cpu()
    if not torch.equal(g, want):
        idx = (g != want).nonzero()[0].tolist()
        raise CheckFailed(f"the exact integer sum, rounded once to {dtype}, is {want[tuple(idx)].item()!r} "
                          f"at {tuple(idx)}; got {g[tuple(idx)].item()!r} ({int((g != want).sum())} of "
                          f"{g.numel()} elements differ): the partial sums must be kept in float32")
    _run(ctx, _case(m, n, 128, group_size, dtype=dtype, seed=seed))


MEMORY_CASE = (2, 64, 256, 32)  # (M, N, K, group_size): N * K / 8 >= 2048 >> M * N, M * K
_MEMORY_RUNS = itertools.count()
"""Each run of the memory check widens ``N`` by 16, so that its first call is the first with
that weight shape even when Hypothesis replays an example."""
MAX_CREATED = 3
MAX_LAUNCHES = 2
CREATION_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided",
    "zeros", "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like",
    "new_full", "_to_copy", "clone", "cat", "stack", "arange", "lift_fresh", "lift_fresh_copy",
    "resize_", "set_",
})
"""ATen ops that give a call new memory (or resize a tensor's)."""


def _expect_warm_up_lean(stats: dict, limit: int) -> None:
    """The size rule, applied to the warm-up call too when it did not autotune.

    A scratch buffer allocated on the first call and kept (in a global, a cache, a default
    argument) lets every later call dequantize the whole weight into it and multiply in a second
    launch: two launches and one new tensor, like a split-K kernel. The first call is where such a
    buffer is made. A warm-up that launched no more kernels than a measured call may did not
    autotune (an autotuner launches every configuration it times, and may allocate a large
    buffer to flush the cache), so it is held to the same size limit."""
    if int(stats.get("triton_launches", 0)) > MAX_LAUNCHES:
        return
    largest = int(stats.get("max_numel", -1))
    expect(largest < limit, f"the first call with these shapes produced a tensor of {largest} "
           f"elements; the limit is {limit} (N * K / 8) on every call, the first included: a "
           "buffer made once and kept for later calls still materialises the weight")


@check("the dequantized weight is never materialised", max_examples=2, hint="Dequantize a tile in "
       "registers inside the matmul kernel; do not write W to memory, and pass w_packed to the "
       "kernel as it is (no .view, .to or copy of it).")
@given(seed=gs.seeds(), layout=st.sampled_from(LAYOUTS[:2]))
@example(seed=0, layout="contiguous")
def never_materialised(ctx: Ctx, seed: int, layout: str) -> None:
    """Observed in the second of two calls with the same shapes and other values (the first
    may autotune or compile; the values differ so that a weight dequantized by the first call and
    kept cannot serve the second). A dequantized ``(N, K)`` weight needs ``N * K`` elements, or
    ``N * K / 8`` of the widest dtype Triton loads (8 bytes) holding 16-bit values. The call may create at most three tensors
    (the output and two buffers, which together hold less than ``2 N K`` bytes), none of
    ``N * K / 8`` elements or more (views of w_packed included), and launch at most two kernels,
    so no split into dequantize-then-multiply fits."""
    m, n, k, g = MEMORY_CASE
    n += 16 * next(_MEMORY_RUNS)  # a weight shape this worker has not seen: no buffer kept for it
    case = _case(m, n, k, g, layout=layout, seed=seed)
    note(_describe(case))
    warm = dict(case, seed=seed + 1)  # the same shapes and strides, other values
    _call(ctx, _x(warm, ctx.device), *_weight(warm, ctx.device), g)  # warm-up
    _expect_warm_up_lean(ctx.sub.last_call_stats(), n * k // 8)
    x = _x(case, ctx.device)
    w_packed, scales, zeros = _weight(case, ctx.device)
    got = _call(ctx, x, w_packed, scales, zeros, g)
    stats = ctx.sub.last_call_stats()
    expect_w4a16_close(got, x, w_packed, scales, zeros, g)
    largest = int(stats.get("max_numel", -1))
    expect(largest >= 0, "the grader could not measure the memory of the call")
    limit = n * k // 8
    expect(largest < limit, f"a torch op produced a tensor of {largest} elements during the call; "
           f"the limit is {limit} (N * K / 8; the dequantized weight has {n * k}, w_packed "
           f"{n * k // 2}, the output {m * n})")
    ops = stats.get("torch_ops", {})
    created = {op: int(c) for op, c in ops.items() if op in CREATION_OPS}
    expect(sum(created.values()) <= MAX_CREATED,
           f"the call created {sum(created.values())} tensors ({created}); at most {MAX_CREATED} "
           "(the output and two buffers) are allowed")
    launches = int(stats.get("triton_launches", 0))
    expect(launches <= MAX_LAUNCHES, f"the call launched {launches} Triton kernels; at most "
           f"{MAX_LAUNCHES} are allowed (the matmul, and a split-K reduction if you need one)")


@check("float16 and bfloat16 on CUDA, larger shapes", needs_cuda=True, max_examples=6, hint="Keep "
       "the accumulator in float32 and the dequantized tile in x's dtype for tl.dot.")
@given(case=w4_cases(ms=(1, 16, 100), ns=(129, 1000), groups=(64, 128), max_groups=16,
                     layouts=LAYOUTS, dtypes=(torch.float16, torch.bfloat16)))
def half_precision_cuda(ctx: Ctx, case) -> None:
    _run(ctx, case)


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


@check("speed on CUDA (reported)", needs_cuda=True, hint="At decode sizes the kernel is bound by "
       "reading the weight: BLOCK_K of 64-128, more programs along N (or split-K) to fill the GPU, "
       "num_warps 4 and num_stages 3-4.")
def speed_cuda(ctx: Ctx) -> str:
    """Correct at a benchmark size (M = 16 tokens, a 4096 x 4096 fp16 layer, groups of 128) and
    reports the submission's time (measured inside the worker, synchronised) and the effective
    bandwidth of its weight read, beside the reference (dequantize, then torch's matmul) and a
    dense fp16 matmul with the unquantized weight (four times the bytes)."""
    m, n, k, g = 16, 4096, 4096, 128
    case = _case(m, n, k, g, dtype=torch.float16, seed=ctx.seed % 1000)
    x = _x(case, ctx.device)
    w_packed, scales, zeros = _weight(case, ctx.device)
    dense = dequantize_w4(w_packed, scales, zeros, g, torch.float16)
    t_ref = _cuda_time(lambda: w4a16_matmul(x, w_packed, scales, zeros, g, compute_dtype=torch.float16))
    t_dense = _cuda_time(lambda: x @ dense.T)
    _call(ctx, x, w_packed, scales, zeros, g)  # warm-up: compiles the kernel
    got = _call(ctx, x, w_packed, scales, zeros, g)
    t_sub = float(ctx.sub.last_call_stats()["elapsed_s"])
    expect_w4a16_close(got, x, w_packed, scales, zeros, g)
    expect(math.isfinite(t_sub) and t_sub > 0, "timing failed")
    gbs = weight_bytes(n, k, g) / t_sub / 1e9
    report = (f"M={m} N={n} K={k} group 128 fp16: yours {t_sub * 1e6:.0f} us ({gbs:.0f} GB/s of "
              f"weight), dequantize + torch matmul {t_ref * 1e6:.0f} us, dense fp16 matmul "
              f"{t_dense * 1e6:.0f} us")
    ctx.note(report)
    return report
