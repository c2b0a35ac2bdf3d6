"""Checks for the ``moe-router`` challenge.

Ground truth: ``inferview.reference.moe`` (Mixtral gate, Jiang et al. 2024; Switch Transformer
capacity and load-balancing loss, Fedus et al. 2021).
"""

from __future__ import annotations

import torch
from hypothesis import example, given
from hypothesis import strategies as st
from inferview.graders import strategies as gs
from inferview.graders.api import Ctx, check, expect, expect_close, expect_equal
from inferview.reference import moe


@st.composite
def routings(draw: st.DrawFn, *, max_tokens: int = 12, max_experts: int = 8) -> dict:
    """Tokens, experts, k and a seed for the logits."""
    e = draw(st.integers(1, max_experts))
    return {"tokens": draw(st.integers(1, max_tokens)), "experts": e,
            "k": draw(st.integers(1, min(e, 4))), "seed": draw(gs.seeds())}


def _logits(case: dict, device: str, *, spread: float = 2.0, ties: bool = False) -> torch.Tensor:
    """Logits on a 1/64 grid (equal logits give exactly equal probabilities); with ``ties`` only a
    few distinct values, so most rows tie."""
    shape = (case["tokens"], case["experts"])
    if ties:
        return gs.tensor(shape, case["seed"], torch.int64, low=0, high=3).float().to(device)
    x = gs.tensor(shape, case["seed"], scale=spread)
    return (torch.round(x * 64) / 64).to(device)


def _route(ctx: Ctx, logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    out = ctx.sub.call("route", logits, k)
    expect(isinstance(out, (tuple, list)) and len(out) == 2,
           f"route must return (weights, experts), got {type(out).__name__}")
    w, e = out
    expect(isinstance(w, torch.Tensor) and isinstance(e, torch.Tensor),
           "route must return two tensors")
    return w, e


@check("route picks the k most probable experts, largest first",
       hint="Sort the probabilities (or logits) in descending order and keep the first k columns; "
            "slot 0 is the most probable expert.")
@given(case=routings())
@example(case={"tokens": 2, "experts": 4, "k": 2, "seed": 0})
def route_experts(ctx: Ctx, case: dict) -> None:
    x = _logits(case, ctx.device)
    _, experts = _route(ctx, x, case["k"])
    _, want = moe.route(x, case["k"])
    expect_equal(experts, want.to(experts.device), what="experts")


@check("route renormalises the kept probabilities",
       hint="weights = p_topk / p_topk.sum(-1, keepdim=True) with p = softmax over *all* experts: "
            "each row of weights sums to 1. (Softmax over the k kept logits gives the same numbers.)")
@given(case=routings())
def route_weights(ctx: Ctx, case: dict) -> None:
    x = _logits(case, ctx.device)
    weights, _ = _route(ctx, x, case["k"])
    want, _ = moe.route(x, case["k"])
    expect_close(weights, want, what="weights", rtol=1e-5, atol=1e-6)


@check("route breaks ties toward the lower expert index",
       hint="torch.topk returns equal values in no promised order. Use "
            "torch.sort(p, dim=-1, descending=True, stable=True) and take the first k indices.")
@given(case=routings(max_experts=8))
@example(case={"tokens": 1, "experts": 4, "k": 2, "seed": 3})
def route_ties(ctx: Ctx, case: dict) -> None:
    x = _logits(case, ctx.device, ties=True)
    ctx.note(f"logits = {x.tolist()}")
    weights, experts = _route(ctx, x, case["k"])
    want_w, want_e = moe.route(x, case["k"])
    expect_equal(experts, want_e.to(experts.device), what="experts")
    expect_close(weights, want_w, what="weights", rtol=1e-5, atol=1e-6)


@check("route computes in float32 from float16 logits", max_examples=10,
       hint="Convert the logits to float32 before the softmax and return float32 weights.")
@given(case=routings(max_tokens=4))
def route_half(ctx: Ctx, case: dict) -> None:
    x = _logits(case, ctx.device).half()
    weights, experts = _route(ctx, x, case["k"])
    want_w, want_e = moe.route(x, case["k"])
    expect_equal(experts, want_e.to(experts.device), what="experts")
    expect_close(weights, want_w, what="weights", rtol=1e-5, atol=1e-6)


@check("load-balancing loss matches num_experts * sum f_i * P_i",
       hint="f_i: fraction of the tokens * k assignments sent to expert i (bincount / (tokens * k)); "
            "P_i: softmax probability of expert i averaged over tokens; multiply the sum by "
            "num_experts.")
@given(case=routings(), spread=st.sampled_from([0.5, 2.0, 6.0]), dtype=st.sampled_from([torch.float32, torch.float16]))
def lb_loss(ctx: Ctx, case: dict, spread: float, dtype: torch.dtype) -> None:
    x = _logits(case, ctx.device, spread=spread).to(dtype)  # on the 1/64 grid: exact in float16 too
    _, idx = moe.route(x, case["k"])
    got = ctx.sub.call("load_balancing_loss", x, idx, case["experts"])
    want = moe.load_balancing_loss(x, idx, case["experts"])
    expect_close(got, want, what="load-balancing loss", rtol=1e-5, atol=1e-6)


@check("load-balancing loss is 1 for perfectly uniform routing and num_experts when collapsed", max_examples=10,
       hint="Uniform: f_i = P_i = 1/E, so E * sum_i (1/E)(1/E) = 1. If you get 1/E you dropped the "
            "num_experts factor; if you get k, f counts tokens instead of assignments.")
@given(per_expert=st.integers(1, 3), experts=st.integers(2, 8), k=st.integers(1, 3))
def lb_loss_extremes(ctx: Ctx, per_expert: int, experts: int, k: int) -> None:
    k = min(k, experts)
    tokens = per_expert * experts
    uniform = torch.zeros(tokens, experts, device=ctx.device)
    idx = (torch.arange(tokens * k, device=ctx.device) % experts).reshape(tokens, k)
    ctx.note(f"uniform: logits all 0, every expert gets {tokens * k // experts} assignments")
    got = ctx.sub.call("load_balancing_loss", uniform, idx, experts)
    expect_close(got, torch.tensor(1.0, device=ctx.device), what="loss for uniform routing",
                 rtol=1e-5, atol=1e-6)
    collapsed = torch.full((tokens, experts), -40.0, device=ctx.device)
    collapsed[:, 0] = 40.0
    idx0 = torch.zeros(tokens, 1, dtype=torch.int64, device=ctx.device)
    ctx.note("collapsed: every token sends all its probability and its k=1 assignment to expert 0")
    got = ctx.sub.call("load_balancing_loss", collapsed, idx0, experts)
    expect_close(got, torch.tensor(float(experts), device=ctx.device),
                 what="loss for collapsed routing", rtol=1e-5, atol=1e-5)


@check("expert_capacity is ceil(capacity_factor * tokens * k / num_experts)", max_examples=10,
       hint="Every token brings k assignments; round *up* so that capacity_factor = 1 fits a "
            "perfectly balanced batch.")
@given(tokens=st.integers(1, 4096), experts=st.integers(1, 64), k=st.integers(1, 4),
       cf=st.sampled_from([0.5, 1.0, 1.25, 1.5, 2.0]))
@example(tokens=10, experts=4, k=2, cf=1.0)
@example(tokens=4, experts=5, k=3, cf=1.25)  # exactly 3; tokens / experts * k * cf rounds to 3.0000000000000004
@example(tokens=170, experts=17, k=3, cf=0.5)  # exactly 15; cf * k / experts * tokens rounds above 15
def capacity_formula(ctx: Ctx, tokens: int, experts: int, k: int, cf: float) -> None:
    got = ctx.sub.call("expert_capacity", tokens, experts, k, cf)
    want = moe.expert_capacity(tokens, experts, k, cf)
    expect(isinstance(got, int) and not isinstance(got, bool),
           f"expert_capacity must return an int, got {type(got).__name__}")
    expect_equal(got, want, what="capacity")


@check("apply_capacity serves assignments first come, first served in token order",
       hint="Walk the assignments row-major over (tokens, k): token 0 slot 0, token 0 slot 1, "
            "token 1 slot 0, ... Each expert keeps its first `capacity` and drops the rest. Serving "
            "all slot-0 choices before any slot-1 choice is a different (GShard) policy.")
@given(case=routings(max_tokens=16, max_experts=5), capacity=st.integers(0, 6))
@example(case={"tokens": 3, "experts": 2, "k": 2, "seed": 0}, capacity=2)
def capacity_mask(ctx: Ctx, case: dict, capacity: int) -> None:
    g = torch.Generator().manual_seed(case["seed"])
    idx = torch.stack([torch.randperm(case["experts"], generator=g)[: case["k"]]
                       for _ in range(case["tokens"])]).to(ctx.device)  # (tokens, k) distinct per row
    ctx.note(f"expert_indices = {idx.tolist()}")
    got = ctx.sub.call("apply_capacity", idx, case["experts"], capacity)
    want = moe.apply_capacity(idx.cpu(), case["experts"], capacity)
    expect_equal(got, want.to(ctx.device), what="keep mask")
