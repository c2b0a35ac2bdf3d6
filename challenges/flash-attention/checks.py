"""Checks for the flash-attention challenge.

Every output is compared with a float64 reference under the flash-attention test suite's rule
(``expect_attention_close``): the submission's error must be within twice the error of a
same-precision PyTorch baseline (plus the rule's one slack). On a CPU the kernel runs in Triton's interpreter, so shapes stay small and fp32.
"""

from __future__ import annotations

import math

import torch
from hypothesis import example, given, note
from hypothesis import strategies as st
from inferview.graders import attention_checks
from inferview.graders import strategies as gs
from inferview.graders.api import Ctx, check, expect, expect_attention_close
from inferview.reference.attention import attention_flops

HEAD_DIMS = (16, 32, 64, 128)


@st.composite
def flash_cases(draw, *, causal=None, lengths=(1, 8, 16, 17, 31, 32, 33, 47, 64), dims=(16, 32),
                strided=(False,), scale=1.0, max_bh=2, dtype=torch.float32):
    """One attention problem, described by sizes and a seed (the tensors are rebuilt from them)."""
    c = draw(st.booleans()) if causal is None else causal
    tk = draw(st.sampled_from(lengths))
    tq = draw(st.sampled_from([t for t in lengths if t <= tk])) if c else draw(st.sampled_from(lengths))
    case = {"batch": draw(st.integers(1, max_bh)), "heads": draw(st.integers(1, max_bh)), "seq_q": tq,
            "seq_k": tk, "head_dim": draw(st.sampled_from(dims)), "causal": c,
            "strided": draw(st.sampled_from(strided)), "scale": scale,
            "dtype": draw(dtype) if isinstance(dtype, st.SearchStrategy) else dtype,
            "seed": draw(gs.seeds())}
    note(_describe(case))
    return case


def _describe(c) -> str:
    layout = "transposed views of (B, T, H, D)" if c["strided"] else "contiguous"
    dt = str(c["dtype"]).replace("torch.", "")
    return (f"q=({c['batch']}, {c['heads']}, {c['seq_q']}, {c['head_dim']}), "
            f"k=v=({c['batch']}, {c['heads']}, {c['seq_k']}, {c['head_dim']}), causal={c['causal']}, "
            f"{layout}, {dt}, values x{c['scale']:g}, seed={c['seed']}")


def _tensors(c, device):
    b, h, d = c["batch"], c["heads"], c["head_dim"]

    def make(t, seed, scale):
        if c["strided"]:
            return gs.tensor((b, t, h, d), seed, c["dtype"], device, scale=scale).transpose(1, 2)
        return gs.tensor((b, h, t, d), seed, c["dtype"], device, scale=scale)

    s = c["seed"]
    return make(c["seq_q"], s, c["scale"]), make(c["seq_k"], s + 1, c["scale"]), make(c["seq_k"], s + 2, 1.0)


MAX_SCALAR_READS = 32
"""Scalars a call may read out of tensors (``float(t[i])``, ``.item()``): reading q, k and v one
number at a time is computing the attention in Python beside a token Triton launch."""


def _expect_kernel_did_the_work(ctx: Ctx) -> None:
    """The engine grades a call that launches no Triton kernel as forbidden; this catches a call
    that launches one but reads its inputs into Python numbers and does the attention there."""
    ops = ctx.sub.last_call_stats().get("torch_ops", {})
    reads = int(ops.get("_local_scalar_dense", 0)) + int(ops.get("is_nonzero", 0))
    expect(reads <= MAX_SCALAR_READS,
           f"the call read {reads} numbers out of tensors into Python (float(), .item(), int()); "
           "the attention must be computed inside the Triton kernel, not in Python")


ENTRY = attention_checks.AttentionEntry(
    "flash_attention", inputs=lambda ctx, case: _tensors(case, ctx.device),
    after_call=_expect_kernel_did_the_work)


def _run(ctx: Ctx, case, **kwargs) -> None:
    attention_checks.run(ctx, ENTRY, case, **kwargs)


@check("matches float64 (non-causal)", max_examples=10, hint="One program per query "
       "block and (batch, head); loop over key blocks; divide by the running sum at the end.")
@given(case=flash_cases(causal=False, lengths=(16, 32, 64)))
def non_causal(ctx: Ctx, case) -> None:
    _run(ctx, case)


@check("causal mask is aligned bottom-right", max_examples=10, hint="Query i sees key j iff j <= i + seq_k - seq_q. "
       "With seq_q < seq_k (a decode step or a chunk after a prefix) a top-left tril hides keys the "
       "query must see.")
@given(case=flash_cases(causal=True, lengths=(1, 16, 32, 33, 64)))
@example(case={"batch": 1, "heads": 1, "seq_q": 1, "seq_k": 33, "head_dim": 16, "causal": True,
               "strided": False, "scale": 1.0, "dtype": torch.float32, "seed": 0})
def causal_bottom_right(ctx: Ctx, case) -> None:
    _run(ctx, case)


@check("lengths that are not multiples of the block size", max_examples=10, hint="Mask loads past seq_q / seq_k and "
       "set the scores of keys past seq_k to -inf before the max and the exp: a zero-filled key still "
       "scores 0 and steals probability.")
@given(case=flash_cases(lengths=(1, 3, 15, 17, 31, 33, 47)))
@example(case={"batch": 1, "heads": 1, "seq_q": 17, "seq_k": 17, "head_dim": 16, "causal": False,
               "strided": False, "scale": 1.0, "dtype": torch.float32, "seed": 0})
def ragged_lengths(ctx: Ctx, case) -> None:
    _run(ctx, case)


@check("long sequences: many key blocks and query blocks", max_examples=5, hint="When a later block raises the "
       "row maximum from m to m', multiply both the running sum and the accumulator by exp(m - m') "
       "before adding the new block; launch cdiv(seq_q, BLOCK_M) query blocks.")
@given(case=flash_cases(lengths=(96, 130), dims=(16,), max_bh=1))
@example(case={"batch": 1, "heads": 1, "seq_q": 130, "seq_k": 96, "head_dim": 16, "causal": False,
               "strided": False, "scale": 1.0, "dtype": torch.float32, "seed": 3})
def many_key_blocks(ctx: Ctx, case) -> None:
    _run(ctx, case)


@check("every head_dim from 16 to 128", max_examples=10, hint="HEAD_DIM is a tl.constexpr; tl.arange(0, HEAD_DIM) "
       "covers the full width for 16, 32, 64 and 128.")
@given(case=flash_cases(lengths=(5, 33), dims=HEAD_DIMS, max_bh=1))
def head_dims(ctx: Ctx, case) -> None:
    _run(ctx, case)


@check("non-contiguous inputs (transposed views)", max_examples=10, hint="Pass q.stride(0..3), k.stride(...), "
       "v.stride(...) to the kernel and index with them; do not assume a contiguous layout.")
@given(case=flash_cases(lengths=(7, 32, 40), strided=(True,)))
def strided_inputs(ctx: Ctx, case) -> None:
    _run(ctx, case)


LAYOUTS = ("contiguous", "transposed", "packed")


def _in_layout(shape, seed: int, layout: str, device, scale: float) -> torch.Tensor:
    """A ``(B, H, T, D)`` tensor stored contiguously, as a transposed view of ``(B, T, H, D)``, or
    as one slice of a packed ``(B, T, 3, H, D)`` buffer (a fused QKV projection's output)."""
    b, h, t, d = shape
    if layout == "transposed":
        return gs.tensor((b, t, h, d), seed, device=device, scale=scale).transpose(1, 2)
    if layout == "packed":
        return gs.tensor((b, t, 3, h, d), seed, device=device, scale=scale)[:, :, 1].transpose(1, 2)
    return gs.tensor((b, h, t, d), seed, device=device, scale=scale)


@check("q, k and v each in its own layout", max_examples=4, hint="Pass every tensor's own strides "
       "(q.stride(), k.stride(), v.stride(), out.stride()): k and v need not share a layout, and "
       "neither needs q's.")
@given(case=flash_cases(lengths=(7, 32, 40)), layouts=st.permutations(LAYOUTS))
def mixed_layouts(ctx: Ctx, case, layouts) -> None:
    note(f"layouts: q {layouts[0]}, k {layouts[1]}, v {layouts[2]} "
         "(packed = a slice of a (B, T, 3, H, D) buffer)")
    b, h, d, s = case["batch"], case["heads"], case["head_dim"], case["seed"]
    q = _in_layout((b, h, case["seq_q"], d), s, layouts[0], ctx.device, 1.0)
    k = _in_layout((b, h, case["seq_k"], d), s + 1, layouts[1], ctx.device, 1.0)
    v = _in_layout((b, h, case["seq_k"], d), s + 2, layouts[2], ctx.device, 1.0)
    got = attention_checks.call(ctx, ENTRY, q, k, v, case)
    expect_attention_close(got, q, k, v, causal=case["causal"], what="flash_attention output")


@check("masked keys get no weight, however large their scores", max_examples=2, hint="Set the scores "
       "of masked keys to -inf with tl.where before the row maximum; adding a finite penalty such "
       "as -1e4 leaves weight on a masked key whose score is larger than the penalty.")
@given(case=flash_cases(causal=True, lengths=(16, 33), dims=(16,)))
@example(case={"batch": 1, "heads": 1, "seq_q": 16, "seq_k": 33, "head_dim": 16, "causal": True,
               "strided": False, "scale": 1.0, "dtype": torch.float32, "seed": 5})
def masked_keys_huge_scores(ctx: Ctx, case) -> None:
    attention_checks.masked_keys_huge_scores(ctx, ENTRY, case)


@check("an explicit sm_scale is used", max_examples=10, hint="The output is softmax(q k^T * sm_scale) v; only when "
       "sm_scale is None does it default to 1/sqrt(head_dim) (an explicit 0.0 is a scale too).")
@given(case=flash_cases(lengths=(8, 33)), sm_scale=st.sampled_from([0.05, 0.5, 2.0]))
@example(case={"batch": 1, "heads": 1, "seq_q": 8, "seq_k": 33, "head_dim": 16, "causal": True,
               "strided": False, "scale": 1.0, "dtype": torch.float32, "seed": 2}, sm_scale=0.0)
def custom_scale(ctx: Ctx, case, sm_scale: float) -> None:
    attention_checks.custom_scale(ctx, ENTRY, case, sm_scale)


@check("stable for large logits", max_examples=10, hint="Subtract the running maximum before exponentiating; exp of "
       "a score of a few hundred is inf in float32.")
@given(case=flash_cases(lengths=(16, 40), scale=20.0))
def large_logits(ctx: Ctx, case) -> None:
    _run(ctx, case)


@check("float16 and bfloat16 on CUDA, larger shapes", needs_cuda=True, max_examples=8, hint="Load "
       "tiles in the input dtype, accumulate in float32, cast p to v's dtype for the second dot, and "
       "store in q's dtype.")
@given(case=flash_cases(lengths=(1, 129, 512, 1000), dims=(64, 128), strided=(False, True),
                        max_bh=4, dtype=st.sampled_from([torch.float16, torch.bfloat16])))
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


@check("throughput on CUDA (reported)", needs_cuda=True, hint="Larger tiles (BLOCK_M 128, BLOCK_N "
       "64), num_warps 4-8 and num_stages 2-3 keep the tensor cores busy; skip key blocks above the "
       "diagonal when causal.")
def throughput_cuda(ctx: Ctx) -> str:
    """Correct at a benchmark size and reports TFLOP/s of the reference kernel and SDPA beside the
    submission's end-to-end call (which includes moving the tensors to the worker and back)."""
    from inferview.reference.flash_attention import flash_attention as ref_kernel

    b, h, t, d = 4, 16, 2048, 64
    case = {"batch": b, "heads": h, "seq_q": t, "seq_k": t, "head_dim": d, "causal": True,
            "strided": False, "scale": 1.0, "dtype": torch.float16, "seed": ctx.seed % 1000}
    q, k, v = _tensors(case, ctx.device)
    flops = attention_flops(b, h, t, t, d, causal=True)
    t_ref = _cuda_time(lambda: ref_kernel(q, k, v, causal=True))
    t_sdpa = _cuda_time(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True))
    ctx.sub.call("flash_attention", q, k, v, causal=True)  # warm-up: compiles the kernel
    got = ctx.sub.call("flash_attention", q, k, v, causal=True)
    _expect_kernel_did_the_work(ctx)
    t_sub = float(ctx.sub.last_call_stats()["elapsed_s"])  # timed inside the worker, synchronised
    expect_attention_close(got, q, k, v, causal=True, what="flash_attention output")
    expect(math.isfinite(t_sub) and t_sub > 0, "timing failed")
    report = (f"B={b} H={h} T={t} D={d} fp16 causal: yours {flops / t_sub / 1e12:.1f} TFLOP/s, "
              f"reference kernel {flops / t_ref / 1e12:.1f}, SDPA {flops / t_sdpa / 1e12:.1f}")
    ctx.note(report)
    return report
