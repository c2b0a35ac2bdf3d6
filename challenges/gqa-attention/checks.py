"""Checks for the gqa-attention challenge: MHA, GQA and MQA head layouts, the bottom-right causal
mask, the scale, half precision and large logits, each against a float64 reference."""

from __future__ import annotations

import torch
from hypothesis import example, given, note
from hypothesis import strategies as st
from inferview.graders import attention_checks
from inferview.graders import strategies as gs
from inferview.graders.api import Ctx, check


@st.composite
def gqa_cases(draw, *, layout="any", causal=None, decode=False, dtype=torch.float32, scale=1.0):
    """Sizes and a seed; ``layout`` is ``mha``, ``gqa``, ``mqa`` or ``any``."""
    if layout == "mha":
        hkv = draw(st.integers(1, 4))
        hq = hkv
    elif layout == "mqa":
        hkv, hq = 1, draw(st.integers(2, 8))
    elif layout == "gqa":
        hkv = draw(st.integers(2, 4))
        hq = hkv * draw(st.integers(2, 4))
    else:
        hkv = draw(st.integers(1, 3))
        hq = hkv * draw(st.integers(1, 3))
    c = draw(st.booleans()) if causal is None else causal
    tk = draw(st.integers(2 if decode else 1, 20))
    if c:
        tq = draw(st.integers(1, tk - 1)) if decode else draw(st.integers(1, tk))
    else:
        tq = draw(st.integers(1, 20))
    case = {"batch": draw(st.integers(1, 2)), "num_heads": hq, "num_kv_heads": hkv, "seq_q": tq,
            "seq_k": tk, "head_dim": draw(st.sampled_from([4, 8, 16, 32])), "causal": c,
            "dtype": draw(dtype) if isinstance(dtype, st.SearchStrategy) else dtype, "scale": scale,
            "seed": draw(gs.seeds())}
    note(_describe(case))
    return case


def _describe(c) -> str:
    dt = str(c["dtype"]).replace("torch.", "")
    return (f"q=({c['batch']}, {c['num_heads']}, {c['seq_q']}, {c['head_dim']}), "
            f"k=v=({c['batch']}, {c['num_kv_heads']}, {c['seq_k']}, {c['head_dim']}), "
            f"causal={c['causal']}, {dt}, values x{c['scale']:g}, seed={c['seed']}")


def _inputs(ctx: Ctx, c):
    b, d, s = c["batch"], c["head_dim"], c["seed"]
    q = gs.tensor((b, c["num_heads"], c["seq_q"], d), s, c["dtype"], ctx.device, scale=c["scale"])
    k = gs.tensor((b, c["num_kv_heads"], c["seq_k"], d), s + 1, c["dtype"], ctx.device, scale=c["scale"])
    v = gs.tensor((b, c["num_kv_heads"], c["seq_k"], d), s + 2, c["dtype"], ctx.device)
    return q, k, v


ENTRY = attention_checks.AttentionEntry("gqa_attention", inputs=_inputs)


@check("MHA (num_kv_heads == num_heads) matches float64", max_examples=10, hint="Scores q k^T * (1/sqrt(head_dim)), "
       "softmax over the keys, then weight the values.")
@given(case=gqa_cases(layout="mha", causal=False))
def mha(ctx: Ctx, case) -> None:
    attention_checks.run(ctx, ENTRY, case)


@check("grouped heads: query head h reads kv head h // group", max_examples=10, hint="Heads 0..G-1 share kv head 0. "
       "repeat_interleave(G, dim=1) gives that layout; repeat(1, G, 1, 1) gives h % num_kv_heads.")
@given(case=gqa_cases(layout="gqa", causal=False))
@example(case={"batch": 1, "num_heads": 4, "num_kv_heads": 2, "seq_q": 1, "seq_k": 1, "head_dim": 4,
               "causal": False, "dtype": torch.float32, "scale": 1.0, "seed": 0})
def gqa(ctx: Ctx, case) -> None:
    attention_checks.run(ctx, ENTRY, case)


@check("MQA: one kv head shared by every query head", max_examples=10, hint="With num_kv_heads == 1 every query head "
       "reads the same keys and values.")
@given(case=gqa_cases(layout="mqa", causal=False))
def mqa(ctx: Ctx, case) -> None:
    attention_checks.run(ctx, ENTRY, case)


@check("causal mask is aligned bottom-right (prefill, decode, chunks)", max_examples=10, hint="The queries are the last seq_q "
       "positions: key j is visible to query i iff j <= i + seq_k - seq_q.")
@given(case=gqa_cases(causal=True, decode=True))
@example(case={"batch": 1, "num_heads": 1, "num_kv_heads": 1, "seq_q": 1, "seq_k": 2, "head_dim": 4,
               "causal": True, "dtype": torch.float32, "scale": 1.0, "seed": 0})
@example(case={"batch": 1, "num_heads": 2, "num_kv_heads": 1, "seq_q": 5, "seq_k": 5, "head_dim": 8,
               "causal": True, "dtype": torch.float32, "scale": 1.0, "seed": 1})
def causal_offsets(ctx: Ctx, case) -> None:
    attention_checks.run(ctx, ENTRY, case)


@check("masked keys get no weight, however large their scores", max_examples=5, hint="Replace "
       "masked scores with -inf (masked_fill or torch.where). Adding a finite penalty such as -1e4 "
       "leaves weight on a masked key whose score is larger than the penalty.")
@given(case=gqa_cases(causal=True, decode=True))
def masked_keys_huge_scores(ctx: Ctx, case) -> None:
    attention_checks.masked_keys_huge_scores(ctx, ENTRY, case)


@check("a second call with new values of the same shape gets a new answer", max_examples=3,
       hint="Nothing may be cached between calls: compute every result from the tensors given.")
@given(case=gqa_cases())
def no_stale_results(ctx: Ctx, case) -> None:
    attention_checks.no_stale_results(ctx, ENTRY, case)


@check("an explicit sm_scale is used", max_examples=10, hint="Only sm_scale=None means 1/sqrt(head_dim); "
       "an explicit 0.0 is a scale too (uniform weights over the visible keys).")
@given(case=gqa_cases(), sm_scale=st.sampled_from([0.1, 0.7, 3.0]))
@example(case={"batch": 1, "num_heads": 2, "num_kv_heads": 1, "seq_q": 3, "seq_k": 5, "head_dim": 8,
               "causal": True, "dtype": torch.float32, "scale": 1.0, "seed": 2}, sm_scale=0.0)
def custom_scale(ctx: Ctx, case, sm_scale: float) -> None:
    attention_checks.custom_scale(ctx, ENTRY, case, sm_scale)


@check("float16 and bfloat16 inputs give a result in the same dtype", max_examples=10, hint="Compute in float32 and "
       "cast the output back with .to(q.dtype).")
@given(case=gqa_cases(dtype=st.sampled_from([torch.bfloat16, torch.float16])))
def half_precision(ctx: Ctx, case) -> None:
    attention_checks.run(ctx, ENTRY, case)


@check("stays finite for large scores", max_examples=10, hint="Subtract each row's maximum before exp (torch.softmax "
       "does): exp of a score above ~89 is inf in float32.")
@given(case=gqa_cases(scale=30.0))
def large_logits(ctx: Ctx, case) -> None:
    attention_checks.run(ctx, ENTRY, case)
