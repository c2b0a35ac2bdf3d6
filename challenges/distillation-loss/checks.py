"""Checks for the ``distillation-loss`` challenge.

Ground truth: ``inferview.reference.distillation`` (Hinton, Vinyals, Dean 2015).
"""

from __future__ import annotations

import torch
from hypothesis import example, given
from hypothesis import strategies as st
from inferview.graders import strategies as gs
from inferview.graders.api import Ctx, check, expect, expect_close
from inferview.reference import distillation as kd

TEMPERATURES = (2.0, 4.0, 0.5, 8.0)
"""Shrinks toward 2: a temperature of 1 would hide a missing T^2 or a one-sided temperature."""


@st.composite
def batches(draw: st.DrawFn, *, max_rows: int = 8, max_vocab: int = 12,
            ignored: bool = False) -> dict:
    """Rows, vocabulary, logit scale, seed and (optionally) how many rows are ignored."""
    rows = draw(st.integers(1, max_rows))
    return {"rows": rows, "vocab": draw(st.integers(2, max_vocab)),
            "scale": draw(st.sampled_from([3.0, 1.0, 10.0])), "seed": draw(gs.seeds()),
            "ignored": draw(st.integers(1, rows)) if ignored else 0}


def _inputs(case: dict, device: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r, v, seed = case["rows"], case["vocab"], case["seed"]
    s = gs.tensor((r, v), seed, device=device, scale=case["scale"])
    t = gs.tensor((r, v), seed + 1, device=device, scale=case["scale"])
    y = gs.tensor((r,), seed + 2, torch.int64, device, low=0, high=v)
    if case["ignored"]:
        drop = torch.randperm(r, generator=torch.Generator().manual_seed(seed))[: case["ignored"]]
        y[drop.to(device)] = -100
    return s, t, y


def _expect_loss(ctx: Ctx, case: dict, temperature: float, alpha: float, what: str) -> None:
    s, t, y = _inputs(case, ctx.device)
    ctx.note(f"temperature={temperature}, alpha={alpha}, labels={y.tolist()}")
    got = ctx.sub.call("distillation_loss", s, t, y, temperature, alpha)
    want = kd.distillation_loss(s, t, y, temperature, alpha)
    expect(isinstance(got, torch.Tensor), f"the loss must be a tensor, got {type(got).__name__}")
    expect(got.dim() == 0, f"the loss must be a 0-dim tensor, got shape {tuple(got.shape)}")
    expect_close(got, want.to(ctx.device), what=what, rtol=1e-4, atol=1e-5)


@check("soft term: T^2 * KL(p_T || q_T), batchmean (alpha = 1)",
       hint="With alpha = 1 only the soft term is left: T**2 * sum over the vocabulary of "
            "p_T * (log p_T - log q_T), averaged over rows. Teacher first (F.kl_div(log_q, p)), "
            "temperature on both sides, and reduction='batchmean', not 'mean'.")
@given(case=batches(), temperature=st.sampled_from(TEMPERATURES))
@example(case={"rows": 2, "vocab": 3, "scale": 3.0, "seed": 0, "ignored": 0}, temperature=2.0)
def soft_term(ctx: Ctx, case: dict, temperature: float) -> None:
    _expect_loss(ctx, case, temperature, 1.0, "loss with alpha = 1")


@check("hard term: cross-entropy at temperature 1 (alpha = 0)", max_examples=10,
       hint="With alpha = 0 the loss is plain cross-entropy of the *unscaled* student logits "
            "against the labels, averaged over rows.")
@given(case=batches(), temperature=st.sampled_from(TEMPERATURES))
def hard_term(ctx: Ctx, case: dict, temperature: float) -> None:
    _expect_loss(ctx, case, temperature, 0.0, "loss with alpha = 0")


@check("temperature scales both teacher and student", max_examples=10,
       hint="p_T = softmax(teacher / T) and q_T = softmax(student / T): dividing only the teacher "
            "compares a soft target with a sharp prediction.")
@given(case=batches(max_rows=4), temperature=st.sampled_from((4.0, 8.0)))
def both_tempered(ctx: Ctx, case: dict, temperature: float) -> None:
    _expect_loss(ctx, case, temperature, 1.0, f"loss at temperature {temperature}")


@check("mixes the terms with alpha",
       hint="loss = alpha * T**2 * KL + (1 - alpha) * CE.")
@given(case=batches(), temperature=st.sampled_from(TEMPERATURES),
       alpha=st.sampled_from([0.5, 0.9, 0.1, 0.25]))
def mixture(ctx: Ctx, case: dict, temperature: float, alpha: float) -> None:
    _expect_loss(ctx, case, temperature, alpha, "loss")


@check("rows labelled -100 are left out of both terms",
       hint="keep = labels != -100; index the student logits, teacher logits and labels with it "
            "before *both* terms, and average over keep.sum() rows.")
@given(case=batches(ignored=True), temperature=st.sampled_from(TEMPERATURES),
       alpha=st.sampled_from([0.5, 1.0, 0.0]))
@example(case={"rows": 3, "vocab": 4, "scale": 3.0, "seed": 0, "ignored": 1}, temperature=2.0,
         alpha=1.0)
def ignored_rows(ctx: Ctx, case: dict, temperature: float, alpha: float) -> None:
    if case["ignored"] == case["rows"]:
        case = {**case, "ignored": case["rows"] - 1} if case["rows"] > 1 else case
    _expect_loss(ctx, case, temperature, alpha, "loss with ignored rows")


@check("every row ignored gives a loss of 0", max_examples=10,
       hint="With no row left there is nothing to average: return a zero tensor rather than 0/0.")
@given(case=batches(max_rows=3), alpha=st.sampled_from([0.5, 1.0, 0.0]))
def all_ignored(ctx: Ctx, case: dict, alpha: float) -> None:
    case = {**case, "ignored": case["rows"]}
    _expect_loss(ctx, case, 2.0, alpha, "loss with every label -100")


@check("stays finite for logits in the thousands", max_examples=10,
       hint="Use log_softmax for both log p_T and log q_T; log(softmax(x)) gives log(0) = -inf "
            "and then 0 * -inf = NaN.")
@given(case=batches(max_rows=4), temperature=st.sampled_from((1.0, 2.0)),
       alpha=st.sampled_from([0.5, 1.0]))
def large_logits(ctx: Ctx, case: dict, temperature: float, alpha: float) -> None:
    case = {**case, "scale": 3000.0}
    _expect_loss(ctx, case, temperature, alpha, "loss with large logits")
