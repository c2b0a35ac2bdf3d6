"""Checks for the split-k-decode challenge (Flash-Decoding).

Three entry points are graded on their own: the per-split partial outputs and log-sum-exps, the
merge (on partials the grader makes, including empty splits and log-sum-exps of +-3e4), and the
whole decode. Attention outputs (each split's, and the merged one per sequence) are held to the
shared attention rule (``expect_attention_close``); the log-sum-exps and the merge to the bounds
argued at :func:`expect_lse_close` and :func:`expect_merge_close`. On a CPU the kernels run in
Triton's interpreter, so the shapes stay small and fp32.
"""

from __future__ import annotations

import math

import torch
from hypothesis import example, given, note
from hypothesis import strategies as st
from inferview.graders import strategies as gs
from inferview.graders import tolerances
from inferview.graders.api import CheckFailed, Ctx, check, expect, expect_attention_close
from inferview.reference import decode_attention as ref
from inferview.reference.attention import repeat_kv

EPS32 = torch.finfo(torch.float32).eps
STALE_VALUE = 50.0
"""Keys and values at positions ``>= seq_len`` of the cache are this (plus noise): a kernel that
reads them is far off, whatever the seed."""


@st.composite
def decode_cases(draw, *, ragged=True, hkv=(1, 2), groups=(1, 2), dims=(16, 32), capacity=(1, 24),
                 splits=(1, 5), batch=(1, 2), strided=(False,), scale=1.0, dtype=torch.float32):
    """A decode batch over a dense cache of capacity ``T``: sizes, lengths and a seed."""
    t = draw(st.integers(*capacity))
    b = draw(st.integers(*batch))
    lens = draw(st.lists(st.integers(1, t), min_size=b, max_size=b)) if ragged else [t] * b
    kv = draw(st.sampled_from(hkv))
    case = {"batch": b, "num_kv_heads": kv, "num_heads": kv * draw(st.sampled_from(groups)),
            "head_dim": draw(st.sampled_from(dims)), "capacity": t, "seq_lens": lens,
            "num_splits": draw(st.integers(*splits)), "strided": draw(st.sampled_from(strided)),
            "scale": scale, "dtype": draw(dtype) if isinstance(dtype, st.SearchStrategy) else dtype,
            "seed": draw(gs.seeds())}
    return case


def describe(c) -> str:
    dt = str(c["dtype"]).replace("torch.", "")
    chunk = ref.split_chunk(c["capacity"], c["num_splits"])
    layout = ("q a slice, k a transposed view of (B, T, Hkv, D), v a slice of (B, Hkv, T, 2D)"
              if c["strided"] else "contiguous")
    return (f"q=({c['batch']}, {c['num_heads']}, {c['head_dim']}), k=v=({c['batch']}, "
            f"{c['num_kv_heads']}, {c['capacity']}, {c['head_dim']}), seq_lens={c['seq_lens']}, "
            f"num_splits={c['num_splits']} (chunk {chunk}), {layout}, values x{c['scale']:g}, "
            f"{dt}, seed={c['seed']}")


def case_of(**kw):
    base = {"batch": 1, "num_heads": 1, "num_kv_heads": 1, "head_dim": 16, "capacity": 8,
            "seq_lens": [8], "num_splits": 2, "strided": False, "scale": 1.0,
            "dtype": torch.float32, "seed": 0}
    return {**base, **kw}


def build(c, device):
    """``(q, k, v, seq_lens)``: the cache past each sequence's length holds stale rows."""
    b, hq, hkv, d, t, s = (c["batch"], c["num_heads"], c["num_kv_heads"], c["head_dim"],
                           c["capacity"], c["seed"])
    q = gs.tensor((b, hq, d), s, scale=c["scale"])
    k = gs.tensor((b, t, hkv, d), s + 1, scale=c["scale"])
    v = gs.tensor((b, t, hkv, d), s + 2)
    for i, n in enumerate(c["seq_lens"]):
        k[i, n:] = STALE_VALUE + gs.tensor(k[i, n:].shape, s + 3)
        v[i, n:] = STALE_VALUE
    q, k, v = (x.to(device=device, dtype=c["dtype"]) for x in (q, k, v))
    if c["strided"]:  # q a slice, k a transposed view, v the first half of each row of a wider buffer
        buf = torch.zeros((b, hq + 2 * hkv, d), dtype=c["dtype"], device=device)
        buf[:, :hq] = q
        wide = torch.zeros((b, hkv, t, 2 * d), dtype=c["dtype"], device=device)
        wide[..., :d] = v.transpose(1, 2)
        q, k, v = buf[:, :hq], k.transpose(1, 2), wide[..., :d]
    else:
        k, v = k.transpose(1, 2).contiguous(), v.transpose(1, 2).contiguous()
    return q, k, v, torch.tensor(c["seq_lens"], dtype=torch.int32, device=device)


def _expect_tensor(got, shape, dtype, device, what) -> None:
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(f"{what}: expected a tensor, got {type(got).__name__}")
    expect(tuple(got.shape) == tuple(shape), f"{what}: expected shape {tuple(shape)}, got {tuple(got.shape)}")
    expect(got.dtype == dtype, f"{what}: expected dtype {dtype}, got {got.dtype}")
    expect(got.device.type == torch.device(device).type,
           f"{what}: expected device {torch.device(device).type}, got {got.device.type}")


def _pair(got, what):
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailed(f"{what} must return a pair (out, lse), got {type(got).__name__}")
    return got


def expect_lse_close(got: torch.Tensor, exact: torch.Tensor, base: torch.Tensor,
                     abs_scores: torch.Tensor, what: str) -> None:
    """A log-sum-exp within twice a same-precision PyTorch baseline's largest error, plus a slack.

    ``exact``, ``base``: the float64 reference and the baseline, same shape as ``got``;
    ``abs_scores``: per row, the largest ``sum_d |q_d k_d| * |sm_scale|`` over the keys it sees.
    A logit error ``delta`` moves a log-sum-exp by at most ``max |delta|``, and rounding a dot
    product of D terms in float32 errs by a few ``eps * sum_d |q_d k_d|`` in practice; rounding
    the result costs ``eps * |lse|``. The slack is that, times
    :data:`~inferview.graders.tolerances.SCORE_ROUNDING_FACTOR` (8), the margin of the attention
    rule: any summation order passes, while a base-2 log, a forgotten maximum or a wrong key range
    is off by far more. An empty split must be exactly ``-inf``, a non-empty one finite.
    """
    e, g = exact.detach().cpu().double(), got.detach().cpu().double()
    empty = torch.isneginf(e)
    wrong_empty = empty & ~torch.isneginf(g)
    if bool(wrong_empty.any()):
        idx = tuple(wrong_empty.nonzero()[0].tolist())
        raise CheckFailed(f"{what}: split {idx} has no keys, so its log-sum-exp must be -inf; got "
                          f"{g[idx].item():.6g}")
    finite_e = e.masked_fill(empty, 0.0)
    err_base = float((base.detach().cpu().double().masked_fill(empty, 0.0) - finite_e).abs().max()) \
        if e.numel() else 0.0
    slack = tolerances.SCORE_ROUNDING_FACTOR * EPS32 * (abs_scores + finite_e.abs()) + 1e-6
    bound = tolerances.ATTENTION_FACTOR * err_base + slack
    bad = ~empty & ~((g - finite_e).abs() <= bound)  # NaN is bad
    if bool(bad.any()):
        idx = bad.nonzero()
        pos = tuple(idx[0].tolist())
        raise CheckFailed(f"{what}: {idx.shape[0]} of {g.numel()} values are off; at {pos}: "
                          f"expected {e[pos].item():.7g}, got {g[pos].item():.7g} (allowed error "
                          f"{bound[pos].item():.3g}). The log-sum-exp is the natural log "
                          "log(sum_j exp(s_j)) of the split's scaled scores s_j")


def _abs_scores(q: torch.Tensor, k: torch.Tensor, scale: float) -> torch.Tensor:
    """``(B, Hq, T)``: ``sum_d |q_d k_d| * |scale|`` for every key (query head h on kv head h // G)."""
    kd = repeat_kv(k.detach().cpu().double().abs(), q.shape[1] // k.shape[1])
    return torch.einsum("bhd,bhtd->bht", q.detach().cpu().double().abs(), kd) * abs(scale)


def check_partials(ctx: Ctx, c, sm_scale: float | None = None) -> None:
    """Each split's output under the attention rule, its lse under :func:`expect_lse_close`,
    empty splits exactly zero and -inf."""
    note(describe(c))
    q, k, v, lens = build(c, ctx.device)
    s_count = c["num_splits"]
    kwargs = {} if sm_scale is None else {"sm_scale": sm_scale}
    o, lse = _pair(ctx.sub.call("split_k_partials", q, k, v, lens, s_count, **kwargs), "split_k_partials")
    b, hq, d = q.shape
    _expect_tensor(o, (b, hq, s_count, d), torch.float32, ctx.device, "partial outputs")
    _expect_tensor(lse, (b, hq, s_count), torch.float32, ctx.device, "partial log-sum-exps")
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    exact = ref.split_k_partials(q, k, v, lens, s_count, sm_scale, compute_dtype=torch.float64)
    base = ref.split_k_partials(q, k, v, lens, s_count, sm_scale,
                                compute_dtype=torch.float32 if q.dtype == torch.float32 else q.dtype)
    chunk = ref.split_chunk(k.shape[2], s_count)
    abs_s = _abs_scores(q, k, scale)
    row_max = torch.zeros((b, hq, s_count), dtype=torch.float64)
    for i in range(b):
        n = int(lens[i])
        for s in range(s_count):
            lo, hi = ref.split_range(s, chunk, n)
            what = f"partial output of sequence {i} (seq_len {n}), split {s} (keys {lo}..{hi - 1})"
            if lo == hi:
                zero = o[i, :, s].detach().cpu()
                expect(bool((zero == 0).all()), f"{what.split(' (keys')[0]} has no keys: its "
                       f"output must be exactly 0, got max |x| = {zero.abs().max().item():.3g}")
                continue
            row_max[i, :, s] = abs_s[i, :, lo:hi].amax(dim=-1)
            expect_attention_close(o[i, :, s][None, :, None].to(q.dtype), q[i][None, :, None],
                                   k[i:i + 1, :, lo:hi], v[i:i + 1, :, lo:hi], sm_scale=sm_scale,
                                   what=what)
    expect_lse_close(lse, exact.lse, base.lse, row_max, "partial log-sum-exps")


def check_decode(ctx: Ctx, c, sm_scale: float | None = None) -> None:
    """The whole call: each sequence's output under the attention rule over its own keys, and the
    call launched the partials and the merge (two kernels) and held ``num_splits`` partials."""
    note(describe(c))
    q, k, v, lens = build(c, ctx.device)
    kwargs = {} if sm_scale is None else {"sm_scale": sm_scale}
    got = ctx.sub.call("split_k_decode", q, k, v, lens, c["num_splits"], **kwargs)
    stats = ctx.sub.last_call_stats()
    b, hq, d = q.shape
    launches = int(stats.get("triton_launches", 0))
    expect(launches >= 2, f"split_k_decode launched {launches} Triton kernel(s); it must launch the "
           "partial kernel and then the merge kernel")
    need = b * hq * c["num_splits"] * d
    expect(int(stats.get("max_numel", 0)) >= need, "split_k_decode never allocated the partial "
           f"outputs: with num_splits={c['num_splits']} they hold B * Hq * num_splits * D = {need} "
           "values (split the keys as split_k_partials does)")
    _expect_tensor(got, (b, hq, d), q.dtype, ctx.device, "split_k_decode output")
    for i in range(b):
        n = int(lens[i])
        expect_attention_close(got[i][None, :, None], q[i][None, :, None], k[i:i + 1, :, :n],
                               v[i:i + 1, :, :n], sm_scale=sm_scale,
                               what=f"split_k_decode output of sequence {i} (seq_len {n})")


@st.composite
def merge_cases(draw, *, offset=(0.0,), spread=3.0):
    """Partials made by the grader: sizes, where the empty splits are, the lse offset, a seed."""
    s = draw(st.integers(1, 6))
    b, hq = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    empty = draw(st.lists(st.booleans(), min_size=b * hq * s, max_size=b * hq * s))
    case = {"batch": b, "num_heads": hq, "num_splits": s, "head_dim": draw(st.sampled_from([16, 32])),
            "empty": empty, "offset": draw(st.sampled_from(offset)), "spread": spread,
            "seed": draw(gs.seeds())}
    return case


def describe_merge(c) -> str:
    return (f"o=({c['batch']}, {c['num_heads']}, {c['num_splits']}, {c['head_dim']}), lse = "
            f"{c['offset']:g} + {c['spread']:g} * N(0, 1), empty splits (lse -inf, o 0) at flat "
            f"indices {[i for i, e in enumerate(c['empty']) if e]} (a row keeps its last split "
            f"if all were empty), seed={c['seed']}")


def build_merge(c, device):
    b, hq, s, d = c["batch"], c["num_heads"], c["num_splits"], c["head_dim"]
    o = gs.tensor((b, hq, s, d), c["seed"])
    lse = (gs.tensor((b, hq, s), c["seed"] + 1) * c["spread"] + c["offset"]).to(torch.float32)
    empty = torch.tensor(c["empty"], dtype=torch.bool).view(b, hq, s)
    empty[..., -1] &= ~empty[..., :-1].all(dim=-1)  # every row keeps one split with keys
    lse = lse.masked_fill(empty, float("-inf"))
    o = o.masked_fill(empty[..., None], 0.0)
    return o.to(device), lse.to(device)


def expect_merge_close(ctx: Ctx, c) -> None:
    """The merged output and lse against a float64 merge of the same float32 partials.

    An error ``delta`` in an exponent ``lse_s - L`` moves the weighted average by at most
    ``2 * delta * max|o|``; in float32 the exponent is known to ``eps * (|lse_s| + |L|)`` at best
    (``L`` itself rounds to ``eps * |L|``), so the allowance is
    ``SCORE_ROUNDING_FACTOR * eps * (max|lse| + log S + 1) * max|o|`` plus float32's rounding
    allowance at the output's scale; ``L`` gets ``SCORE_ROUNDING_FACTOR * eps * (max|lse| + log S
    + 1)`` plus float32's ``atol``. With ``|lse|`` near 3e4 that is a few hundredths of
    ``max|o|``: an overflow (inf, NaN) or an unweighted average is off by far more.
    """
    note(describe_merge(c))
    o, lse = build_merge(c, ctx.device)
    got_o, got_l = _pair(ctx.sub.call("merge_partials", o, lse), "merge_partials")
    b, hq, s, d = o.shape
    _expect_tensor(got_o, (b, hq, d), torch.float32, ctx.device, "merged output")
    _expect_tensor(got_l, (b, hq), torch.float32, ctx.device, "merged log-sum-exp")
    want = ref.merge_partials(o.double().cpu(), lse.double().cpu())
    finite = lse.detach().cpu().double()
    finite = finite[torch.isfinite(finite)]
    reach = float(finite.abs().max()) + math.log(s) + 1.0
    rtol, atol = tolerances.for_dtype(torch.float32)
    max_o = float(o.abs().max()) if o.numel() else 0.0
    tol_o = tolerances.SCORE_ROUNDING_FACTOR * EPS32 * reach * max_o + atol + rtol * float(want.out.abs().max())
    tol_l = tolerances.SCORE_ROUNDING_FACTOR * EPS32 * reach + atol
    for got, exact, tol, what in ((got_o, want.out, tol_o, "merged output"),
                                  (got_l, want.lse, tol_l, "merged log-sum-exp")):
        err = (got.detach().cpu().double() - exact).abs()
        bad = ~(err <= tol)
        if bool(bad.any()):
            pos = tuple(bad.nonzero()[0].tolist())
            raise CheckFailed(f"{what}: {int(bad.sum())} of {err.numel()} values are off; at {pos}: "
                              f"expected {exact[pos].item():.7g}, got {got.detach().cpu()[pos].item():.7g}"
                              f" (allowed error {tol:.3g})")


@check("partials: each split's output and log-sum-exp", max_examples=4, hint="Split s holds keys "
       "[s * chunk, (s + 1) * chunk) with chunk = ceil(T / num_splits). Its output is the softmax "
       "over those keys alone; its lse is m + log(l) in natural log, m the split's maximum score.")
@given(case=decode_cases(ragged=False))
@example(case=case_of(batch=1, num_heads=4, num_kv_heads=2, capacity=10, seq_lens=[10],
                      num_splits=3, seed=1))
def partials(ctx: Ctx, case) -> None:
    check_partials(ctx, case)


@check("partials: ragged lengths, splits cut by the capacity", max_examples=4, hint="The split "
       "boundaries come from the cache capacity T = k.shape[2], not from each sequence's length; "
       "cut them at seq_len (hi = min((s + 1) * chunk, seq_len)), and never read past it.")
@given(case=decode_cases(batch=(2, 2), capacity=(6, 24), splits=(2, 4)))
@example(case=case_of(batch=2, capacity=12, seq_lens=[12, 7], num_splits=3, seed=2))
def ragged_partials(ctx: Ctx, case) -> None:
    check_partials(ctx, case)


@check("partials: a split with no keys is exactly 0 and -inf", max_examples=3, hint="When a split "
       "has no keys (a short sequence, or more splits than keys) its running sum stays 0: write "
       "an output of 0 and an lse of -inf, not 0/0 = NaN and not an lse of 0.")
@given(case=decode_cases(capacity=(1, 6), splits=(4, 8)))
@example(case=case_of(batch=2, capacity=5, seq_lens=[5, 1], num_splits=4, seed=3))
def empty_splits(ctx: Ctx, case) -> None:
    check_partials(ctx, case)


@check("merge: weights exp(lse_s - L), L = log sum_s exp(lse_s)", max_examples=5, hint="out = "
       "sum_s exp(lse_s - L) o_s. Subtract the largest lse before exponentiating; an empty split "
       "(lse -inf) gets weight 0, and it may come first.")
@given(case=merge_cases())
@example(case={"batch": 1, "num_heads": 1, "num_splits": 3, "head_dim": 16,
               "empty": [True, False, False], "offset": 0.0, "spread": 3.0, "seed": 4})
def merge(ctx: Ctx, case) -> None:
    expect_merge_close(ctx, case)


@check("merge: stable for huge and tiny log-sum-exps", max_examples=4, hint="exp(30000) is inf "
       "and exp(-30000) is 0 in float32: exponentiate lse_s - max_s lse_s, never lse_s itself, "
       "and start the running maximum at -inf, not 0.")
@given(case=merge_cases(offset=(3.0e4, -3.0e4, 500.0)))
@example(case={"batch": 1, "num_heads": 2, "num_splits": 2, "head_dim": 16,
               "empty": [False, False, True, False], "offset": -3.0e4, "spread": 3.0, "seed": 5})
@example(case={"batch": 1, "num_heads": 1, "num_splits": 3, "head_dim": 16,
               "empty": [False, False, False], "offset": 3.0e4, "spread": 3.0, "seed": 6})
def merge_huge(ctx: Ctx, case) -> None:
    expect_merge_close(ctx, case)


@check("split_k_decode: partials merged, matches float64", max_examples=5, hint="split_k_decode is "
       "split_k_partials followed by merge_partials (two kernels), its output cast to q's dtype.")
@given(case=decode_cases())
@example(case=case_of(batch=2, num_heads=2, num_kv_heads=1, capacity=9, seq_lens=[9, 4],
                      num_splits=3, seed=7))
def decode(ctx: Ctx, case) -> None:
    check_decode(ctx, case)


@check("stable for large logits", max_examples=4, hint="Subtract the running maximum before "
       "exponentiating in the partial kernel, and the largest lse in the merge: scores of a few "
       "hundred overflow exp in float32.")
@given(case=decode_cases(scale=20.0, splits=(2, 4)))
def large_logits(ctx: Ctx, case) -> None:
    check_decode(ctx, case)
    check_partials(ctx, case)


@check("q, k and v as strided views, each its own", max_examples=3, hint="Pass q.stride(), "
       "k.stride() and v.stride() to the kernel: k may be a transposed view of (B, T, Hkv, D) and "
       "v a slice of a wider buffer, each with its own strides.")
@given(case=decode_cases(strided=(True,)))
def strided(ctx: Ctx, case) -> None:
    check_decode(ctx, case)


@check("an explicit sm_scale is used", max_examples=3, hint="Only sm_scale=None means "
       "1/sqrt(head_dim); an explicit 0.0 is a scale too (each split's lse is then log of its "
       "number of keys).")
@given(case=decode_cases(), sm_scale=st.sampled_from([0.05, 0.5, 2.0]))
@example(case=case_of(capacity=7, seq_lens=[7], num_splits=2, seed=8), sm_scale=0.0)
def custom_scale(ctx: Ctx, case, sm_scale: float) -> None:
    note(f"sm_scale={sm_scale}")
    check_partials(ctx, case, sm_scale)
    check_decode(ctx, case, sm_scale)


@check("float16 and bfloat16 on CUDA, larger shapes", needs_cuda=True, max_examples=8, hint="Load "
       "the cache in its dtype, accumulate in float32; partials and lse stay float32, the output "
       "is cast to q's dtype.")
@given(case=decode_cases(hkv=(1, 8), groups=(1, 4), dims=(64, 128), capacity=(1, 4096),
                         splits=(1, 16), batch=(1, 4), strided=(False, True),
                         dtype=st.sampled_from([torch.float16, torch.bfloat16])))
def half_precision_cuda(ctx: Ctx, case) -> None:
    check_decode(ctx, case)
    check_partials(ctx, case)


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


@check("memory bandwidth on CUDA, one long sequence (reported)", needs_cuda=True, hint="At batch 1 "
       "only the splits give the GPU enough programs: try num_splits near the number of SMs "
       "divided by Hkv, and serve a GQA group per program.")
def bandwidth_cuda(ctx: Ctx) -> str:
    """Correct at the size Flash-Decoding targets (batch 1, a 32768-token cache, the attention
    heads of Llama-3-8B: Hq 32, Hkv 8, D 128 per its config.json; fp16, 32 splits) and reports GB/s of K/V read for the submission's call (timed inside
    the worker), the torch reference (partials and merge in torch) and SDPA on the same cache."""
    t = 32768
    case = case_of(batch=1, num_heads=32, num_kv_heads=8, head_dim=128, capacity=t, seq_lens=[t],
                   num_splits=32, dtype=torch.float16, seed=ctx.seed % 1000)
    q, k, v, lens = build(case, ctx.device)
    nbytes = ref.decode_bytes(lens, 8, 128, 2)
    t_ref = _cuda_time(lambda: ref.split_k_decode(q, k, v, lens, 32), reps=3)
    t_sdpa = _cuda_time(lambda: torch.nn.functional.scaled_dot_product_attention(
        q[:, :, None], k, v, enable_gqa=True))
    ctx.sub.call("split_k_decode", q, k, v, lens, 32)  # warm-up: compiles the kernels
    got = ctx.sub.call("split_k_decode", q, k, v, lens, 32)
    t_sub = float(ctx.sub.last_call_stats()["elapsed_s"])
    expect_attention_close(got[:, :, None], q[:, :, None], k, v, what="split_k_decode output")
    expect(math.isfinite(t_sub) and t_sub > 0, "timing failed")
    report = (f"B=1, T={t}, Hq=32 Hkv=8 D=128 fp16, 32 splits: yours {nbytes / t_sub / 1e9:.0f} GB/s, "
              f"torch reference {nbytes / t_ref / 1e9:.0f}, SDPA {nbytes / t_sdpa / 1e9:.0f}")
    ctx.note(report)
    return report
