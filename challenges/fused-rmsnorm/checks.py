"""Checks for the fused-rmsnorm challenge.

``new_residual`` must equal ``x + residual`` exactly (one correctly rounded addition per element,
whatever the order of anything else). ``normed`` is compared with the exact (float64) RMSNorm of
that new residual under one bound per element,
:func:`inferview.reference.rmsnorm.rmsnorm_error_bound`: the worst case of a float32 sum of
squares in any order, a few float32 roundings and the output dtype's roundings, times 2. A correct
kernel stays well inside it; every targeted mistake misses it by orders of magnitude. On a CPU the
kernel runs in Triton's interpreter, which has float16 but not bfloat16.
"""

from __future__ import annotations

import math

import torch
from hypothesis import example, given, note
from hypothesis import strategies as st
from inferview.graders import strategies as gs
from inferview.graders.api import CheckFailed, Ctx, check, expect
from inferview.reference.rmsnorm import bytes_moved, fused_add_rmsnorm, rmsnorm, rmsnorm_error_bound

ENTRY = "fused_add_rmsnorm"
HIDDEN = (1, 3, 7, 64, 100, 257, 768, 1000)
LONG = (1025, 3000, 5120)


@st.composite
def rms_cases(draw, *, hidden=HIDDEN, tokens=(1, 2, 5, 16), layouts=("contiguous",),
              dtypes=(torch.float32,), scale=1.0, eps=(None,)):
    """One problem, described by sizes and a seed (the tensors are rebuilt from them)."""
    case = {"tokens": draw(st.sampled_from(tokens)), "hidden": draw(st.sampled_from(hidden)),
            "x_layout": draw(st.sampled_from(layouts)), "r_layout": draw(st.sampled_from(layouts)),
            "dtype": draw(st.sampled_from(dtypes)), "scale": scale, "eps": draw(st.sampled_from(eps)),
            "seed": draw(gs.seeds())}
    note(_describe(case))
    return case


def _describe(c) -> str:
    dt = str(c["dtype"]).replace("torch.", "")
    eps = "default eps" if c["eps"] is None else f"eps={c['eps']:g}"
    return (f"x=residual=({c['tokens']}, {c['hidden']}) {dt} (x {c['x_layout']}, residual "
            f"{c['r_layout']}), values x{c['scale']:g}, {eps}, seed={c['seed']}")


def _case(tokens, hidden, *, x_layout="contiguous", r_layout="contiguous", dtype=torch.float32,
          scale=1.0, eps=None, seed=0) -> dict:
    return {"tokens": tokens, "hidden": hidden, "x_layout": x_layout, "r_layout": r_layout,
            "dtype": dtype, "scale": scale, "eps": eps, "seed": seed}


def _in_layout(shape, seed, dtype, device, scale, layout) -> torch.Tensor:
    """Contiguous, or ``layout == "row slice"``: columns 16.. of a wider buffer (row stride
    ``hidden + 40``, the last dimension still contiguous)."""
    t, h = shape
    if layout == "row slice":
        return gs.tensor((t, h + 40), seed, dtype, device, scale=scale)[:, 16:16 + h]
    return gs.tensor((t, h), seed, dtype, device, scale=scale)


def _tensors(c, device):
    t, h, s, dt = c["tokens"], c["hidden"], c["seed"], c["dtype"]
    x = _in_layout((t, h), s, dt, device, c["scale"], c["x_layout"])
    r = _in_layout((t, h), s + 1, dt, device, c["scale"], c["r_layout"])
    w = (1.0 + 0.5 * gs.tensor((h,), s + 2)).to(dt).to(device)  # around 1, some negative
    return x, r, w


MAX_SCALAR_READS = 32
"""Scalars a call may read out of tensors (``float(t[i])``, ``.item()``): reading the rows one
number at a time is computing the norm in Python beside a token Triton launch."""


def _call(ctx: Ctx, x, r, w, eps):
    got = (ctx.sub.call(ENTRY, x, r, w) if eps is None
           else ctx.sub.call(ENTRY, x, r, w, eps=eps))
    ops = ctx.sub.last_call_stats().get("torch_ops", {})
    reads = int(ops.get("_local_scalar_dense", 0)) + int(ops.get("is_nonzero", 0))
    expect(reads <= MAX_SCALAR_READS,
           f"the call read {reads} numbers out of tensors into Python (float(), .item(), int()); "
           "the norm must be computed inside the Triton kernel, not in Python")
    return got


def _expect_tensor(got, like: torch.Tensor, what: str) -> torch.Tensor:
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(f"{what}: expected a tensor of shape {tuple(like.shape)}, got "
                          f"{type(got).__name__}")
    if tuple(got.shape) != tuple(like.shape):
        raise CheckFailed(f"{what}: expected shape {tuple(like.shape)}, got {tuple(got.shape)}")
    if got.dtype != like.dtype:
        raise CheckFailed(f"{what}: expected dtype {like.dtype} (the inputs' dtype), got {got.dtype}")
    if got.device.type != like.device.type:
        raise CheckFailed(f"{what}: expected device {like.device.type}, got {got.device.type}")
    if not got.is_contiguous():
        raise CheckFailed(f"{what}: expected a contiguous tensor, got strides {got.stride()}")
    return got.detach().cpu()


def expect_fused_close(got, x, r, w, eps) -> None:
    """``got`` is ``(normed, new_residual)``: the residual exact, the norm within the bound."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailed(f"expected a tuple (normed, new_residual), got {type(got).__name__}")
    e = 1e-6 if eps is None else eps
    xc, rc, wc = x.cpu(), r.cpu(), w.cpu()
    _, want_res = fused_add_rmsnorm(xc, rc, wc, e)
    res = _expect_tensor(got[1], want_res, "new_residual")
    if not torch.equal(res, want_res):
        bad = (res != want_res).nonzero()
        pos = tuple(bad[0].tolist())
        raise CheckFailed(f"new_residual: {bad.shape[0]} of {res.numel()} elements differ from "
                          f"x + residual (exact, one rounding per element); at {pos}: expected "
                          f"{want_res[pos].item()!r}, got {res[pos].item()!r}")
    exact = rmsnorm(want_res, wc, e, compute_dtype=torch.float64)
    bound = rmsnorm_error_bound(want_res, wc, e)
    normed = _expect_tensor(got[0], want_res, "normed").double()
    diff = (normed - exact).abs()
    bad = ~(diff <= bound)  # NaN is bad
    if not bool(bad.any()):
        return
    idx = bad.nonzero()
    lines = [f"normed: {idx.shape[0]} of {normed.numel()} elements are further from the exact "
             "RMSNorm of x + residual than float32 statistics allow"]
    n_nan, n_inf = int(torch.isnan(normed).sum()), int(torch.isinf(normed).sum())
    if n_nan or n_inf:
        lines.append(f"  the result holds {n_nan} NaN and {n_inf} Inf values")
    for row in idx[:5].tolist():
        pos = tuple(row)
        lines.append(f"  at {pos}: expected {exact[pos].item():.7g}, got {normed[pos].item():.7g} "
                     f"(error {diff[pos].item():.3g}, allowed {bound[pos].item():.3g})")
    if idx.shape[0] > 5:
        lines.append(f"  ... and {idx.shape[0] - 5} more")
    raise CheckFailed("\n".join(lines))


def _run(ctx: Ctx, case, tensors=None) -> None:
    x, r, w = _tensors(case, ctx.device) if tensors is None else tensors
    got = _call(ctx, x, r, w, case["eps"])
    expect_fused_close(got, x, r, w, case["eps"])


@check("matches float64, with the new residual exact", max_examples=10, hint="One program per "
       "row: h = x + residual (store it: that is new_residual), then h * rsqrt(mean(h^2) + eps) * "
       "weight with the mean taken in float32.")
@given(case=rms_cases())
@example(case=_case(1, 64))
def matches_reference(ctx: Ctx, case) -> None:
    _run(ctx, case)


@check("hidden sizes that are not powers of two", max_examples=8, hint="Mask the columns past "
       "hidden (other=0 adds nothing to the sum of squares) and divide by hidden, not by the "
       "block size.")
@given(case=rms_cases(hidden=(3, 7, 100, 257, 1000)))
@example(case=_case(3, 100))
def ragged_hidden(ctx: Ctx, case) -> None:
    _run(ctx, case)


@check("rows longer than one block", max_examples=3, hint="A row of 5120 does not fit a block of "
       "1024: use BLOCK = triton.next_power_of_2(hidden), or loop over the row in chunks "
       "(accumulate the squares first, normalise in a second pass).")
@given(case=rms_cases(hidden=LONG, tokens=(1, 3)))
@example(case=_case(2, 5120))
def long_rows(ctx: Ctx, case) -> None:
    _run(ctx, case)


@check("all-zero rows give zeros, not NaN", max_examples=2, hint="With h = 0 the statistic is "
       "rsqrt(0 + eps), finite; without eps it is rsqrt(0) = inf and 0 * inf = NaN.")
@given(tokens=st.sampled_from([1, 4]), hidden=st.sampled_from([8, 100]), seed=gs.seeds())
@example(tokens=2, hidden=8, seed=0)
def zero_rows(ctx: Ctx, tokens: int, hidden: int, seed: int) -> None:
    """``x = -residual`` on every other row, so those rows of the new residual are exactly 0."""
    note(f"x=residual=({tokens}, {hidden}), rows 0, 2, ... of x + residual are all zero, seed={seed}")
    x, r, w = _tensors(_case(tokens, hidden, seed=seed), ctx.device)
    x = x.clone()
    x[0::2] = -r[0::2]
    got = _call(ctx, x, r, w, None)
    expect_fused_close(got, x, r, w, None)


@check("eps inside the square root, and the eps given", max_examples=6, hint="normed = h / "
       "sqrt(mean(h^2) + eps): eps is added to the mean of squares, inside the root, and the "
       "caller's eps replaces the default 1e-6.")
@given(case=rms_cases(hidden=(7, 64, 257), scale=3e-3, eps=(None, 1e-5, 1e-4)))
@example(case=_case(2, 64, scale=3e-3, eps=1e-5))
def eps_matters(ctx: Ctx, case) -> None:
    """Rows with a root mean square of about 4e-3, so that mean(h^2) is comparable with eps and
    adding eps outside the root, to the sum instead of the mean, or not at all changes the
    result by far more than the bound."""
    _run(ctx, case)


@check("x and residual in their own layouts (row strides)", max_examples=6, hint="Pass "
       "x.stride(0) and residual.stride(0) separately; a row slice of a wider buffer has a row "
       "stride larger than hidden. Write both outputs contiguously.")
@given(case=rms_cases(hidden=(7, 100, 257), layouts=("contiguous", "row slice")))
@example(case=_case(3, 100, x_layout="row slice"))
@example(case=_case(3, 100, r_layout="row slice"))
def strided_rows(ctx: Ctx, case) -> None:
    _run(ctx, case)


def _half_dtypes(ctx: Ctx) -> list[torch.dtype]:
    # Triton's interpreter has no bfloat16 arithmetic; a GPU runs both.
    return [torch.float16, torch.bfloat16] if ctx.device == "cuda" else [torch.float16]


TINY_SCALE = 5e-6
TINY_EPS = 1e-12
"""Float16 rows whose normalisation factor overflows float16 (root mean square about 7e-6)."""


@check("16-bit inputs: results in their dtype, statistics in float32", max_examples=4, hint="Add "
       "in the inputs' dtype (that sum is new_residual), then convert to float32 before squaring: "
       "300^2 is already past float16's 65504.")
@given(case=rms_cases(hidden=(64, 100, 1000), tokens=(1, 4), scale=300.0),
       pick=st.integers(0, 1))
@example(case=_case(1, 100, scale=300.0), pick=0)
def half_precision(ctx: Ctx, case, pick: int) -> None:
    """Values of a few hundred, so that squaring (or summing squares) in float16 overflows, and a
    float16 or bfloat16 result is required. In float16, then rows of about 5e-6 (float16
    subnormals) with ``eps = 1e-12``: the factor ``rsqrt(mean + eps)`` is about 1.4e5, past
    float16's 65504, so it must stay in float32 until it has multiplied ``h``."""
    dtypes = _half_dtypes(ctx)
    case = dict(case, dtype=dtypes[pick % len(dtypes)])
    note(f"as {str(case['dtype']).replace('torch.', '')}")
    _run(ctx, case)
    if case["dtype"] == torch.float16:
        tiny = dict(case, scale=TINY_SCALE, eps=TINY_EPS)
        note(f"then values x{TINY_SCALE:g} with eps={TINY_EPS:g}: rsqrt(mean + eps) is past 65504")
        _run(ctx, tiny)


@check("add and norm fused in one kernel launch", max_examples=2, hint="Do the add, the store of "
       "new_residual, the reduction and the normalisation in one kernel; a second kernel reads "
       "back what the first wrote.")
@given(case=rms_cases(hidden=(100,), tokens=(4,)))
def one_launch(ctx: Ctx, case) -> None:
    """Counted in the second of two calls with the same shapes (the first may autotune) and
    other values (so that nothing computed by the first can serve the second)."""
    _call(ctx, *_tensors(dict(case, seed=case["seed"] + 1), ctx.device), None)  # warm-up
    x, r, w = _tensors(case, ctx.device)
    got = _call(ctx, x, r, w, None)
    launches = int(ctx.sub.last_call_stats().get("triton_launches", 0))
    expect_fused_close(got, x, r, w, None)
    expect(launches == 1, f"the call launched {launches} Triton kernels; the add and the norm "
           "must be fused into one")


@check("float16 and bfloat16 on CUDA, larger shapes", needs_cuda=True, max_examples=8, hint="Load "
       "in the inputs' dtype, add there, reduce and normalise in float32, store in the inputs' dtype.")
@given(case=rms_cases(hidden=(4096, 5120, 8192, 11008), tokens=(1, 129, 1000),
                      layouts=("contiguous", "row slice"), dtypes=(torch.float16, torch.bfloat16)))
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


@check("bandwidth on CUDA (reported)", needs_cuda=True, hint="The kernel is memory-bound: one "
       "read of x, residual and weight and one write of each output; num_warps 4-8 for rows of "
       "4096 and more.")
def bandwidth_cuda(ctx: Ctx) -> str:
    """Correct at a benchmark size (4096 tokens of a 4096-wide bf16 model) and reports the
    submission's effective bandwidth (measured inside the worker, synchronised) beside the torch
    reference (unfused: the add, then RMSNorm in float32)."""
    t, h = 4096, 4096
    case = _case(t, h, dtype=torch.bfloat16, seed=ctx.seed % 1000)
    x, r, w = _tensors(case, ctx.device)
    t_ref = _cuda_time(lambda: fused_add_rmsnorm(x, r, w))
    _call(ctx, x, r, w, None)  # warm-up: compiles the kernel
    got = _call(ctx, x, r, w, None)
    t_sub = float(ctx.sub.last_call_stats()["elapsed_s"])
    expect_fused_close(got, x, r, w, None)
    expect(math.isfinite(t_sub) and t_sub > 0, "timing failed")
    moved = bytes_moved(t, h, 2)
    report = (f"{t} x {h} bf16: yours {moved / t_sub / 1e9:.0f} GB/s ({t_sub * 1e6:.0f} us), "
              f"torch (unfused) {moved / t_ref / 1e9:.0f} GB/s ({t_ref * 1e6:.0f} us)")
    ctx.note(report)
    return report
