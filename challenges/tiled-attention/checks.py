"""Checks for the tiled-attention challenge: exactness against float64 for any block size, the
bottom-right causal mask, large logits, and a working set that grows with the block rather than
with seq_q x seq_k (measured by the worker as the largest tensor produced during the call)."""

from __future__ import annotations

from hypothesis import example, given, note
from hypothesis import strategies as st
from inferview.graders import attention_checks
from inferview.graders import strategies as gs
from inferview.graders.api import Ctx, check, expect


@st.composite
def tiled_cases(draw, *, causal=None, max_len=40, scale=1.0):
    c = draw(st.booleans()) if causal is None else causal
    tk = draw(st.integers(1, max_len))
    tq = draw(st.integers(1, tk)) if c else draw(st.integers(1, max_len))
    case = {"batch": draw(st.integers(1, 2)), "heads": draw(st.integers(1, 2)), "seq_q": tq, "seq_k": tk,
            "head_dim": draw(st.sampled_from([4, 8, 16])), "causal": c,
            "block_size": draw(st.sampled_from([1, 3, 8, 16, 64])), "scale": scale,
            "seed": draw(gs.seeds())}
    note(_describe(case))
    return case


def _describe(c) -> str:
    return (f"q=({c['batch']}, {c['heads']}, {c['seq_q']}, {c['head_dim']}), k=v=({c['batch']}, "
            f"{c['heads']}, {c['seq_k']}, {c['head_dim']}), causal={c['causal']}, "
            f"block_size={c['block_size']}, values x{c['scale']:g}, seed={c['seed']}")


def _inputs(ctx: Ctx, c):
    b, h, d, s = c["batch"], c["heads"], c["head_dim"], c["seed"]
    q = gs.tensor((b, h, c["seq_q"], d), s, device=ctx.device, scale=c["scale"])
    k = gs.tensor((b, h, c["seq_k"], d), s + 1, device=ctx.device, scale=c["scale"])
    v = gs.tensor((b, h, c["seq_k"], d), s + 2, device=ctx.device)
    return q, k, v


ENTRY = attention_checks.AttentionEntry("tiled_attention", inputs=_inputs,
                                        kwargs=lambda c: {"block_size": c["block_size"]})


@check("matches float64 (non-causal)", max_examples=10, hint="Running max m, sum l and accumulator acc per query row; "
       "o = acc / l at the end.")
@given(case=tiled_cases(causal=False))
def non_causal(ctx: Ctx, case) -> None:
    attention_checks.run(ctx, ENTRY, case)


@check("any block size, including 1 and a partial last block", max_examples=10, hint="Slice k[:, :, j0:j0 + block_size] "
       "for j0 in range(0, seq_k, block_size): the last slice is simply shorter.")
@given(case=tiled_cases(causal=False, max_len=23))
@example(case={"batch": 1, "heads": 1, "seq_q": 2, "seq_k": 5, "head_dim": 4, "causal": False,
               "block_size": 3, "scale": 1.0, "seed": 0})
def block_sizes(ctx: Ctx, case) -> None:
    attention_checks.run(ctx, ENTRY, case)


@check("rescales the running sums when the maximum grows", max_examples=10, hint="Multiply l and acc by "
       "exp(m - m_new) before adding a block whose scores exceed everything seen so far.")
@given(case=tiled_cases(causal=False, max_len=40), grow=st.booleans())
def rescaling(ctx: Ctx, case, grow: bool) -> None:
    """Small blocks over at least 9 keys: the row maximum changes from block to block."""
    case = dict(case, block_size=min(case["block_size"], 4) if grow else case["block_size"])
    case["seq_k"] = max(case["seq_k"], 9)
    note(f"seq_k raised to {case['seq_k']}, block_size {case['block_size']}")
    attention_checks.run(ctx, ENTRY, case)


@check("causal mask is aligned bottom-right", max_examples=10, hint="Query i is at absolute position i + seq_k - seq_q "
       "and sees key j iff j <= that position.")
@given(case=tiled_cases(causal=True))
@example(case={"batch": 1, "heads": 1, "seq_q": 1, "seq_k": 4, "head_dim": 4, "causal": True,
               "block_size": 3, "scale": 1.0, "seed": 0})
def causal_bottom_right(ctx: Ctx, case) -> None:
    attention_checks.run(ctx, ENTRY, case)


@check("masked keys get no weight, however large their scores", max_examples=5, hint="Mask with "
       "-inf (masked_fill or torch.where) before the block maximum; a finite penalty such as -1e4 "
       "leaves weight on a masked key whose score is larger than the penalty.")
@given(case=tiled_cases(causal=True))
def masked_keys_huge_scores(ctx: Ctx, case) -> None:
    attention_checks.masked_keys_huge_scores(ctx, ENTRY, case)


@check("a second call with new values of the same shape gets a new answer", max_examples=3,
       hint="Nothing may be cached between calls: compute every result from the tensors given.")
@given(case=tiled_cases())
def no_stale_results(ctx: Ctx, case) -> None:
    attention_checks.no_stale_results(ctx, ENTRY, case)


@check("an explicit sm_scale is used", max_examples=10, hint="Only sm_scale=None means 1/sqrt(head_dim); "
       "an explicit 0.0 is a scale too (uniform weights over the visible keys).")
@given(case=tiled_cases(), sm_scale=st.sampled_from([0.1, 2.0]))
@example(case={"batch": 1, "heads": 2, "seq_q": 3, "seq_k": 7, "head_dim": 4, "causal": True,
               "block_size": 3, "scale": 1.0, "seed": 2}, sm_scale=0.0)
def custom_scale(ctx: Ctx, case, sm_scale: float) -> None:
    attention_checks.custom_scale(ctx, ENTRY, case, sm_scale)


@check("stays finite for large scores", max_examples=10, hint="exp of a score in the hundreds is inf in float32: "
       "subtract the running maximum inside every exp.")
@given(case=tiled_cases(scale=30.0))
def large_logits(ctx: Ctx, case) -> None:
    attention_checks.run(ctx, ENTRY, case)


MEMORY_CASES = (
    # (seq_q, seq_k, head_dim, block_size): the scores are several times the bound in each
    (64, 384, 8, (4, 8, 16)),  # long keys, small blocks
    (256, 64, 8, (8, 16)),  # many queries: a block larger than block_size breaks the bound
    (16, 512, 4, (16,)),  # few queries, long keys: a block of queries against every key breaks it
)
MAX_SCALAR_READS = 512
"""Numbers the memory check's call may read into Python (``float()``, ``.item()``): enough for a
per-block test, far fewer than the 4096+ elements of k, so the scores cannot be built out of the
grader's sight in Python numbers."""


@check("memory grows with the block, not with seq_q x seq_k", max_examples=4, hint="Never build the "
       "(seq_q, seq_k) scores, nor a block of queries against every key: compute q @ k_block^T for "
       "block_size keys at a time, and use the block_size you are given.")
@given(layout=st.sampled_from(range(len(MEMORY_CASES))), pick=st.integers(0, 2), seed=gs.seeds(),
       causal=st.booleans())
@example(layout=1, pick=0, seed=0, causal=False)
@example(layout=2, pick=0, seed=0, causal=True)
def memory_bound(ctx: Ctx, layout: int, pick: int, seed: int, causal: bool) -> None:
    tq, tk, d, blocks = MEMORY_CASES[layout]
    b, h, block_size = 1, 2, blocks[pick % len(blocks)]
    causal = causal and tq <= tk
    case = {"batch": b, "heads": h, "seq_q": tq, "seq_k": tk, "head_dim": d, "causal": causal,
            "block_size": block_size, "scale": 1.0, "seed": seed}
    note(_describe(case))
    attention_checks.run(ctx, ENTRY, case)
    stats = ctx.sub.last_call_stats()
    largest = int(stats.get("max_numel", -1))
    expect(largest >= 0, "the grader could not measure the memory of the call")
    reads = int(stats.get("torch_ops", {}).get("_local_scalar_dense", 0))
    expect(reads <= MAX_SCALAR_READS,
           f"the call read {reads} numbers out of tensors into Python (float(), .item()); the "
           "grader measures memory through torch, so the attention must be computed with torch")
    bound = 2 * b * h * max(tq * max(block_size, d), tk * d)
    scores = b * h * tq * tk
    expect(largest < bound, f"the largest tensor created during the call has {largest} elements; the "
           f"bound is {bound} (the full score matrix would be {scores})")
