"""Checks for the ``prune-2of4`` challenge.

Ground truth: ``inferview.reference.pruning`` (2:4 sparsity, Mishra et al. 2021).
"""

from __future__ import annotations

import torch
from hypothesis import example, given
from hypothesis import strategies as st
from inferview.graders import strategies as gs
from inferview.graders.api import Ctx, check, expect, expect_equal
from inferview.reference import pruning as pr


@st.composite
def weight_cases(draw: st.DrawFn, *, max_rows: int = 8, max_groups: int = 6,
                 rows_multiple_of_4: bool = True) -> dict:
    """Rows, groups of 4 per row and a seed. Rows default to a multiple of 4 so that a solution
    grouping along the wrong dimension gives a wrong answer rather than a shape error."""
    rows = draw(st.integers(1, max_rows // 4)) * 4 if rows_multiple_of_4 else draw(st.integers(1, max_rows))
    return {"rows": rows, "groups": draw(st.integers(1, max_groups)), "seed": draw(gs.seeds())}


def _prune(ctx: Ctx, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    out = ctx.sub.call("prune_2_4", w)
    expect(isinstance(out, (tuple, list)) and len(out) == 2,
           f"prune_2_4 must return (pruned, mask), got {type(out).__name__}")
    pruned, mask = out
    expect(isinstance(pruned, torch.Tensor) and isinstance(mask, torch.Tensor),
           "prune_2_4 must return two tensors")
    return pruned, mask


def _compare(ctx: Ctx, w: torch.Tensor) -> None:
    pruned, mask = _prune(ctx, w)
    want_p, want_m = pr.prune_2_4(w)
    expect_equal(mask, want_m, what="mask")
    expect_equal(pruned, want_p, what="pruned weight")


@check("mask keeps exactly 2 of every 4 and pruned = w * mask", max_examples=10,
       hint="Reshape to (out, in // 4, 4); the mask is bool with exactly two True per group, and the "
            "pruned weight keeps w's values (and dtype) where the mask is True, 0 elsewhere.")
@given(case=weight_cases())
def mask_shape(ctx: Ctx, case: dict) -> None:
    w = gs.tensor((case["rows"], 4 * case["groups"]), case["seed"], device=ctx.device)
    pruned, mask = _prune(ctx, w)
    expect_equal(tuple(mask.shape), tuple(w.shape), what="mask shape")
    expect_equal(mask.dtype, torch.bool, what="mask dtype")
    counts = mask.cpu().reshape(case["rows"], case["groups"], 4).sum(-1)
    bad = (counts != 2).nonzero()
    expect(bad.numel() == 0, f"group {tuple(bad[0].tolist()) if bad.numel() else ''} of the mask "
           f"has {int(counts[tuple(bad[0].tolist())]) if bad.numel() else 0} True entries, not 2")
    expect_equal(pruned, torch.where(mask.to(w.device), w, torch.zeros_like(w)),
                 what="pruned weight versus w * mask")


@check("keeps the two largest magnitudes of each group",
       hint="Rank by |w|, not by w: a weight of -3 outweighs one of 0.5.")
@given(case=weight_cases())
@example(case={"rows": 4, "groups": 1, "seed": 0})
def largest_magnitudes(ctx: Ctx, case: dict) -> None:
    w = gs.tensor((case["rows"], 4 * case["groups"]), case["seed"], device=ctx.device)
    _compare(ctx, w)


@check("groups run along the input dimension",
       hint="Groups are 4 consecutive entries of a row (dim -1, the dimension x @ w.T sums over), "
            "not 4 entries of a column.")
@given(case=weight_cases(max_rows=12, max_groups=3))
@example(case={"rows": 4, "groups": 1, "seed": 1})
def along_inputs(ctx: Ctx, case: dict) -> None:
    w = gs.tensor((case["rows"], 4 * case["groups"]), case["seed"], device=ctx.device)
    if case["rows"] == 4 and case["groups"] == 1:
        w = torch.arange(16.0, device=ctx.device).reshape(4, 4)  # rows grow left to right
    ctx.note(f"w has shape {tuple(w.shape)}")
    _compare(ctx, w)


@check("ties keep the lower index",
       hint="torch.topk returns equal values in no promised order. Sort |w| with "
            "torch.sort(..., descending=True, stable=True) and keep the first two indices.")
@given(case=weight_cases(), zeros=st.booleans())
@example(case={"rows": 4, "groups": 2, "seed": 0}, zeros=True)
def ties(ctx: Ctx, case: dict, zeros: bool) -> None:
    shape = (case["rows"], 4 * case["groups"])
    w = gs.tensor(shape, case["seed"], torch.int64, low=-2, high=3).float().to(ctx.device)
    if zeros:
        w[0, :4] = 0.0
        w[-1, -4:] = torch.tensor([1.0, -1.0, 1.0, 1.0], device=ctx.device)
    ctx.note(f"w = {w.tolist()}" if w.numel() <= 64 else f"w of shape {shape} with values in -2..2")
    _compare(ctx, w)


@check("keeps the dtype of float16 and bfloat16 weights", max_examples=10,
       hint="Return pruned in w's dtype (w * mask or torch.where), and a bool mask.")
@given(case=weight_cases(max_rows=4, max_groups=3),
       dtype=st.sampled_from([torch.float16, torch.bfloat16]))
def low_precision(ctx: Ctx, case: dict, dtype: torch.dtype) -> None:
    w = gs.tensor((case["rows"], 4 * case["groups"]), case["seed"], dtype, ctx.device)
    _compare(ctx, w)


def _sparse_answer(ctx: Ctx, t: torch.Tensor) -> bool:
    got = ctx.sub.call("is_2_4_sparse", t)
    expect(isinstance(got, bool), f"is_2_4_sparse must return a Python bool, got {type(got).__name__}")
    return bool(got)


@check("is_2_4_sparse accepts groups with at most 2 non-zeros",
       hint="The rule is *at most* 2 non-zeros per group: a group with 0 or 1 is valid too.")
@given(case=weight_cases(max_rows=4, rows_multiple_of_4=False), as_bool=st.booleans(),
       lead=st.sampled_from([(), (2,)]))
@example(case={"rows": 1, "groups": 2, "seed": 0}, as_bool=True, lead=())
def sparse_valid(ctx: Ctx, case: dict, as_bool: bool, lead: tuple) -> None:
    shape = (*lead, case["rows"], 4 * case["groups"])
    w = gs.tensor(shape, case["seed"], device=ctx.device)
    _, mask = pr.prune_2_4(w)
    drop = gs.tensor(shape, case["seed"] + 1, torch.bool, ctx.device)  # thin some groups further
    mask = mask & ~drop
    t = mask if as_bool else w * mask
    ctx.note(f"{'mask' if as_bool else 'weight'} of shape {shape}, counts per group "
             f"{(t != 0).reshape(-1, 4).sum(-1).tolist()[:16]}")
    expect(_sparse_answer(ctx, t) is True, "is_2_4_sparse returned False for a valid 2:4 tensor")


@check("is_2_4_sparse rejects a group with 3 or 4 non-zeros",
       hint="Count non-zeros per group of 4 *consecutive* entries along the last dimension; one bad "
            "group makes the whole tensor invalid.")
@given(case=weight_cases(max_rows=4, rows_multiple_of_4=False), extra=st.integers(1, 2),
       as_bool=st.booleans())
def sparse_invalid(ctx: Ctx, case: dict, extra: int, as_bool: bool) -> None:
    rows, cols = case["rows"], 4 * case["groups"]
    w = gs.tensor((rows, cols), case["seed"], device=ctx.device)
    _, mask = pr.prune_2_4(w)
    r, g = case["seed"] % rows, (case["seed"] // 7) % case["groups"]
    off = torch.nonzero(~mask[r, 4 * g : 4 * g + 4]).flatten()[:extra]
    mask[r, 4 * g + off] = True
    t = mask if as_bool else torch.where(mask, w, torch.zeros_like(w))
    ctx.note(f"{'mask' if as_bool else 'weight'} of shape {(rows, cols)}; group {g} of row {r} has "
             f"{2 + extra} non-zeros")
    expect(_sparse_answer(ctx, t) is False, "is_2_4_sparse returned True for a tensor with a group "
           f"of {2 + extra} non-zeros")


@check("is_2_4_sparse takes a 1-D tensor", max_examples=6,
       hint="Any number of dimensions, one included: group the last dimension with "
            "t.reshape(-1, 4) or t.unflatten(-1, (-1, 4)), not with t.shape[0].")
@given(groups=st.integers(1, 6), seed=gs.seeds(), bad=st.booleans())
@example(groups=2, seed=0, bad=False)
def sparse_one_dim(ctx: Ctx, groups: int, seed: int, bad: bool) -> None:
    w = gs.tensor((1, 4 * groups), seed, device=ctx.device)
    _, mask = pr.prune_2_4(w)
    t = mask[0].clone()
    if bad:
        g = seed % groups
        t[4 * g : 4 * g + 4] = True
    ctx.note(f"t = {t.int().tolist()} (1-D, bool)")
    expect(_sparse_answer(ctx, t) is (not bad),
           f"is_2_4_sparse returned {not bad} for a 1-D tensor "
           f"{'with a group of 4 non-zeros' if bad else 'that is 2:4 sparse'}")


@check("is_2_4_sparse is False when the last dimension is not a multiple of 4", max_examples=10,
       hint="Check t.shape[-1] % 4 before reshaping, and return False (do not raise).")
@given(cols=st.sampled_from([1, 2, 3, 5, 6, 7, 10]), rows=st.integers(1, 3))
def sparse_bad_shape(ctx: Ctx, rows: int, cols: int) -> None:
    t = torch.zeros(rows, cols, dtype=torch.bool, device=ctx.device)
    expect(_sparse_answer(ctx, t) is False,
           f"is_2_4_sparse returned True for shape {(rows, cols)}, whose last dimension is not a "
           "multiple of 4")
