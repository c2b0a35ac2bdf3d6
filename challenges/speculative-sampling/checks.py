"""Checks for ``speculative-sampling``: exact where the law allows it, statistical elsewhere.

Ground truth: :mod:`inferview.reference.speculative` (exact laws of the verification step for
context-independent distributions) and Leviathan et al. 2023, Appendix A.1 (every emitted token,
given the ones before it, is distributed as the target's).

False-failure rates: the exact checks never fail a correct solution. Each statistical check fails a
correct solution with probability at most ``1e-7`` per run (its tests are Bonferroni-corrected),
``3e-7`` for the three together; the reproducibility check's chance of two different generator
states giving identical results on 512 rows is below ``1e-100``. Every draw is seeded from the
run's seed, so a run replays exactly with ``--seed``.
"""

from __future__ import annotations

import hashlib

import numpy as np
import torch
from hypothesis import given, note
from hypothesis import strategies as st
from inferview.graders import strategies as gs
from inferview.graders.api import CheckFailed, Ctx, check, expect
from inferview.graders.stats import chi_square_gof
from inferview.reference.speculative import (
    emitted_tokens,
    num_accepted_law,
    sample_categorical,
)

ALPHA = 1e-7
"""Per-check false-failure rate of the statistical checks: the classic mistakes give p-values
below 1e-100 on these 20 000 rows, so a strict alpha costs no power where it matters."""

STAT_ROWS = 20_000
"""Rows in the one call each statistical check makes."""


def _normalise(rows: list[list[float]]) -> torch.Tensor:
    t = torch.tensor(rows, dtype=torch.float64)
    return t / t.sum(-1, keepdim=True)


# Fixed distributions for the statistical checks: G = 4, V = 8, zeros in both models, per-position
# acceptance rates beta = (0.708, 0.718, 0.752, 0.800), P(all accepted) = 0.306, and a bonus
# distribution p_4 far from p_3, so a bonus token from the wrong position shows at once.
STAT_P = _normalise([
    [5, 3, 2, 1, 1, 0, 2, 1],
    [1, 5, 3, 2, 0, 1, 1, 2],
    [2, 1, 5, 3, 1, 1, 0, 2],
    [0, 2, 1, 1, 5, 3, 2, 1],
    [1, 0, 0, 2, 1, 2, 5, 4],
])  # p: (G+1, V)
STAT_Q = _normalise([
    [3, 4, 1, 2, 1, 1, 0, 1],
    [2, 3, 3, 1, 1, 0, 2, 1],
    [3, 1, 3, 4, 0, 1, 1, 1],
    [1, 2, 0, 1, 4, 4, 1, 2],
])  # q: (G, V)


# ----------------------------------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn, max_batch: int = 6, max_gamma: int = 5, max_vocab: int = 12) -> dict:
    """A small problem: ``batch``, ``gamma``, ``vocab`` and a ``seed`` that builds the tensors."""
    return {
        "batch": draw(st.integers(1, max_batch)),
        "gamma": draw(st.integers(1, max_gamma)),
        "vocab": draw(st.integers(2, max_vocab)),
        "seed": draw(gs.seeds()),
    }


def _random_probs(shape: tuple[int, ...], g: torch.Generator, zero_frac: float) -> torch.Tensor:
    """Random distributions over the last dimension, a ``zero_frac`` share of entries exactly 0
    (at least one entry per row stays positive)."""
    w = torch.rand(shape, generator=g, dtype=torch.float64) + 0.05
    if zero_frac > 0:
        zero = torch.rand(shape, generator=g, dtype=torch.float64) < zero_frac
        keep = torch.zeros(shape, dtype=torch.bool)
        keep.scatter_(-1, w.argmax(-1, keepdim=True), True)  # one survivor per row
        w = torch.where(zero & ~keep, torch.zeros_like(w), w)
    return w / w.sum(-1, keepdim=True)


def _draft(q: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Draft tokens sampled from ``q`` (B, G, V): (B, G) int64."""
    batch, gamma, vocab = q.shape
    return sample_categorical(q.reshape(-1, vocab), g).reshape(batch, gamma)


def _cpu_generator(ctx: Ctx, salt: int) -> torch.Generator:
    """A CPU generator for building inputs, derived from the run's seed (inputs are built on the
    CPU so CPU and CUDA runs see the same ones)."""
    return torch.Generator().manual_seed((ctx.seed * 1_000_003 + salt) % (2**62))


def _call(ctx: Ctx, x: torch.Tensor, q: torch.Tensor, p: torch.Tensor,
          gen: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Run the submission on ``(x, q, p)`` (sent as float32 on ``ctx.device``) and validate the
    structure of its answer; returns ``(num_accepted, next_token)`` on the CPU."""
    batch, gamma = x.shape
    vocab = q.shape[-1]
    if gen is None:
        # Seeded from the run's seed and the inputs, so Hypothesis replays an example exactly
        # (a counter-based seed would give a shrunk example different random draws).
        digest = hashlib.sha256(x.numpy().tobytes() + q.numpy().tobytes() + p.numpy().tobytes()).digest()
        gen = ctx.generator(seed=(ctx.seed * 1_000_003 + int.from_bytes(digest[:7], "little")) % (2**62))
    got = ctx.sub.call("speculative_verify", x.to(ctx.device), q.float().to(ctx.device),
                       p.float().to(ctx.device), gen)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailed(f"expected a tuple (num_accepted, next_token), got {type(got).__name__}")
    out = []
    for name, t, hi in (("num_accepted", got[0], gamma), ("next_token", got[1], vocab - 1)):
        if not isinstance(t, torch.Tensor):
            raise CheckFailed(f"{name}: expected a tensor, got {type(t).__name__}")
        expect(tuple(t.shape) == (batch,), f"{name}: expected shape ({batch},), got {tuple(t.shape)}")
        expect(t.dtype == torch.int64, f"{name}: expected dtype torch.int64, got {t.dtype}")
        expect(t.device.type == torch.device(ctx.device).type,
               f"{name}: expected a tensor on {ctx.device}, got one on {t.device.type}")
        t = t.cpu()
        bad = ((t < 0) | (t > hi)).nonzero().flatten()
        if bad.numel():
            b = int(bad[0])
            raise CheckFailed(f"{name}: must lie in [0, {hi}] (gamma={gamma}, vocab={vocab}), "
                              f"but row {b} holds {int(t[b])}")
        out.append(t)
    return out[0], out[1]


def _expand(p: torch.Tensor, q: torch.Tensor, rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    return (p.unsqueeze(0).expand(rows, *p.shape).contiguous(),
            q.unsqueeze(0).expand(rows, *q.shape).contiguous())


def _fmt(v: np.ndarray | torch.Tensor) -> str:
    return "[" + ", ".join(f"{float(a):.3f}" for a in v) + "]"


# ----------------------------------------------------------------------------------------------
# Exact checks
# ----------------------------------------------------------------------------------------------


@check("returns two (batch,) int64 tensors in range",
       hint="Return (num_accepted, next_token), both shape (batch,), dtype torch.int64, on the "
            "inputs' device; num_accepted in [0, gamma], next_token in [0, vocab).",
       max_examples=15)
@given(case=cases())
def output_structure(ctx: Ctx, case: dict) -> None:
    g = torch.Generator().manual_seed(case["seed"])
    b, gamma, v = case["batch"], case["gamma"], case["vocab"]
    p = _random_probs((b, gamma + 1, v), g, 0.2)
    q = _random_probs((b, gamma, v), g, 0.2)
    _call(ctx, _draft(q, g), q, p)


@check("a draft equal to the target is always accepted",
       hint="With q == p the ratio p(x)/q(x) is 1, and r < 1 always: every row must report "
            "num_accepted == gamma and draw the bonus token from target_probs[:, gamma].",
       max_examples=20)
@given(case=cases())
def draft_equals_target(ctx: Ctx, case: dict) -> None:
    g = torch.Generator().manual_seed(case["seed"])
    b, gamma, v = case["batch"], case["gamma"], case["vocab"]
    p = _random_probs((b, gamma + 1, v), g, 0.3)  # p: (B, G+1, V)
    q = p[:, :gamma].clone()  # q: (B, G, V), equal to the target
    n, y = _call(ctx, _draft(q, g), q, p)
    wrong = (n != gamma).nonzero().flatten()
    if wrong.numel():
        r = int(wrong[0])
        raise CheckFailed(f"draft_probs == target_probs[:, :gamma], yet row {r} accepted "
                          f"{int(n[r])} of {gamma} draft tokens (every one must be accepted)")
    bonus_p = p[torch.arange(b), gamma, y]  # p_G(next_token): (B,)
    bad = (bonus_p == 0).nonzero().flatten()
    if bad.numel():
        r = int(bad[0])
        raise CheckFailed(f"row {r}: all draft tokens accepted, but the bonus token {int(y[r])} has "
                          f"probability 0 under target_probs[{r}, {gamma}] — it must come from p_G")


@check("a draft disjoint from the target is rejected at once",
       hint="If p(x) = 0 the acceptance probability min(1, p(x)/q(x)) is 0: num_accepted must be "
            "0, and the next token comes from max(0, p_0 - q_0) = p_0.",
       max_examples=20)
@given(case=cases(max_vocab=12))
def disjoint_supports(ctx: Ctx, case: dict) -> None:
    g = torch.Generator().manual_seed(case["seed"])
    b, gamma, v = case["batch"], case["gamma"], max(case["vocab"], 2)
    side = torch.rand(b, 1, v, generator=g) < 0.5  # the target's tokens, per row
    side[..., 0], side[..., 1] = True, False  # both sides non-empty
    w_p = torch.rand(b, gamma + 1, v, generator=g, dtype=torch.float64) + 0.05
    w_q = torch.rand(b, gamma, v, generator=g, dtype=torch.float64) + 0.05
    p = torch.where(side, w_p, torch.zeros_like(w_p))
    p = p / p.sum(-1, keepdim=True)  # p: (B, G+1, V) on one side
    q = torch.where(side, torch.zeros_like(w_q), w_q)
    q = q / q.sum(-1, keepdim=True)  # q: (B, G, V) on the other side
    note(f"target support (row 0): {side[0, 0].nonzero().flatten().tolist()}")
    n, y = _call(ctx, _draft(q, g), q, p)
    wrong = (n != 0).nonzero().flatten()
    if wrong.numel():
        r = int(wrong[0])
        raise CheckFailed(f"row {r}: the draft's support is disjoint from the target's, so no draft "
                          f"token can be accepted, but num_accepted = {int(n[r])}")
    bad = (p[torch.arange(b), 0, y] == 0).nonzero().flatten()
    if bad.numel():
        r = int(bad[0])
        raise CheckFailed(f"row {r}: next_token {int(y[r])} is outside the target's support at "
                          f"position 0 (it must come from max(0, p_0 - q_0) = p_0)")


@check("never emits a token the target gives probability 0",
       hint="Clamp the residual at zero — max(0, p - q), not |p - q| or p - q — and normalise by "
            "its own sum; an accepted draft token needs p(x) > 0.",
       max_examples=25)
@given(case=cases(max_batch=8, max_vocab=10))
def zeros_never_emitted(ctx: Ctx, case: dict) -> None:
    g = torch.Generator().manual_seed(case["seed"])
    b, gamma, v = case["batch"] * 8, case["gamma"], case["vocab"]
    p = _random_probs((b, gamma + 1, v), g, 0.4)
    q = _random_probs((b, gamma, v), g, 0.4)
    x = _draft(q, g)
    n, y = _call(ctx, x, q, p)
    e = emitted_tokens(x, n, y)  # (B, G+1), -1 after the emitted tokens
    for j in range(gamma + 1):
        rows = (e[:, j] >= 0).nonzero().flatten()
        probs = p[rows, j, e[rows, j]]
        bad = (probs == 0).nonzero().flatten()
        if bad.numel():
            r = int(rows[bad[0]])
            what = "the accepted draft token" if j < int(n[r]) else (
                "the bonus token" if j == gamma else "the resampled token")
            raise CheckFailed(
                f"row {r} emits token {int(e[r, j])} at position {j} ({what}), but "
                f"target_probs[{r}, {j}, {int(e[r, j])}] = 0; target row: {_fmt(p[r, j])}, "
                f"draft row: {_fmt(q[r, j]) if j < gamma else '(none: bonus position)'}")


@check("each row is handled on its own",
       hint="Index per row: p[torch.arange(B), n] picks row b's position n[b]. Draw a separate "
            "uniform for every row and position.",
       max_examples=15)
@given(case=cases(max_batch=6))
def rows_independent(ctx: Ctx, case: dict) -> None:
    g = torch.Generator().manual_seed(case["seed"])
    b, gamma, v = case["batch"] * 2, case["gamma"], max(case["vocab"], 2)
    p = _random_probs((b, gamma + 1, v), g, 0.0)
    q = p[:, :gamma].clone()  # even rows: draft == target
    odd = torch.arange(b) % 2 == 1
    half = torch.arange(v) < (v + 1) // 2  # odd rows: target on the first half, draft on the rest
    p[odd] = torch.where(half, p[odd], torch.zeros_like(p[odd]))
    p[odd] = p[odd] / p[odd].sum(-1, keepdim=True)
    q_odd = torch.where(half, torch.zeros_like(q[odd]), torch.rand(q[odd].shape, generator=g,
                                                                   dtype=torch.float64) + 0.05)
    q[odd] = q_odd / q_odd.sum(-1, keepdim=True)
    note("even rows: draft == target (all accepted); odd rows: disjoint supports (none accepted)")
    n, _ = _call(ctx, _draft(q, g), q, p)
    want = torch.where(odd, torch.zeros_like(n), torch.full_like(n, gamma))
    bad = (n != want).nonzero().flatten()
    if bad.numel():
        r = int(bad[0])
        kind = "disjoint supports" if bool(odd[r]) else "draft equal to target"
        raise CheckFailed(f"row {r} ({kind}) reports num_accepted = {int(n[r])}, expected "
                          f"{int(want[r])}; got {n.tolist()} for the batch")


# ----------------------------------------------------------------------------------------------
# Statistical checks (one call of STAT_ROWS rows each)
# ----------------------------------------------------------------------------------------------


def _stat_run(ctx: Ctx) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    p, q = _expand(STAT_P, STAT_Q, STAT_ROWS)  # p: (N, G+1, V), q: (N, G, V)
    x = _draft(q, _cpu_generator(ctx, 1))
    n, y = _call(ctx, x, q, p)
    return x, n, y


def position_pvalue(e: torch.Tensor, j: int, p_j: torch.Tensor) -> tuple[float, int, np.ndarray]:
    """Chi-square p-value of the tokens at position ``j`` of the rows that reach it, against ``p_j``.

    Returns ``(p_value, rows, observed frequencies)``.
    """
    col = e[:, j]
    col = col[col >= 0].numpy()
    counts = np.bincount(col, minlength=p_j.numel()).astype(np.float64)
    res = chi_square_gof(counts, p_j.numpy())
    return res.p_value, int(col.size), counts / max(col.size, 1)


@check("the first emitted token follows the target distribution",
       hint="The first token is either the accepted x_0 (probability min(p_0, q_0)) or a draw from "
            "the residual (mass max(0, p_0 - q_0)); the two add up to p_0 only if the acceptance "
            "is min(1, p/q) and the residual is max(0, p - q), renormalised.")
def first_token_distribution(ctx: Ctx) -> None:
    """Pearson chi-square of the first emitted token against p_0, 20 000 rows; fails when
    p < 1e-7 (the false-failure rate)."""
    x, n, y = _stat_run(ctx)
    e = emitted_tokens(x, n, y)
    pv, rows, freq = position_pvalue(e, 0, STAT_P[0])
    if pv < ALPHA:
        raise CheckFailed(
            f"the first emitted token does not follow p_0 (chi-square p = {pv:.2e} < {ALPHA:g}, "
            f"{rows} rows)\n  observed: {_fmt(freq)}\n  target:   {_fmt(STAT_P[0])}")


@check("tokens at later positions follow the target, given the prefix was accepted",
       hint="Use a fresh uniform at every position, keep only the accepted prefix (cumprod), and "
            "take the bonus token from target_probs[:, gamma], the position after the last draft.")
def later_positions_distribution(ctx: Ctx) -> None:
    """For j = 1..G, chi-square of the token at position j over the rows with num_accepted >= j,
    against p_j (j = G is the bonus token). Bonferroni over the G tests: fails when some
    p < 1e-7 / G, a false-failure rate of at most 1e-7."""
    x, n, y = _stat_run(ctx)
    e = emitted_tokens(x, n, y)
    gamma = STAT_Q.shape[0]
    for j in range(1, gamma + 1):
        pv, rows, freq = position_pvalue(e, j, STAT_P[j])
        if pv < ALPHA / gamma:
            what = "the bonus token (all accepted)" if j == gamma else f"position {j}"
            raise CheckFailed(
                f"{what} does not follow p_{j} over the {rows} rows with num_accepted >= {j} "
                f"(chi-square p = {pv:.2e} < {ALPHA / gamma:.1e})\n  observed: {_fmt(freq)}\n"
                f"  target:   {_fmt(STAT_P[j])}")


@check("the number of accepted tokens follows the theory",
       hint="P(num_accepted >= i) is the product of the acceptance rates beta_j = sum min(p_j, q_j) "
            "for j < i: count the accepted prefix, not every accepted position, and report gamma "
            "when nothing was rejected.")
def acceptance_counts(ctx: Ctx) -> None:
    """Chi-square of the histogram of num_accepted against the exact law
    P(n >= i) = prod_{j<i} beta_j (Leviathan et al. 2023, Section 3.1); fails when p < 1e-7."""
    _, n, _ = _stat_run(ctx)
    gamma = STAT_Q.shape[0]
    law = num_accepted_law(STAT_Q, STAT_P)
    counts = np.bincount(n.numpy(), minlength=gamma + 1).astype(np.float64)
    pv = chi_square_gof(counts, law.numpy()).p_value
    if pv < ALPHA:
        raise CheckFailed(
            f"num_accepted does not follow P(n >= i) = prod beta_j (chi-square p = {pv:.2e} < "
            f"{ALPHA:g}, {STAT_ROWS} rows)\n  observed P(n = 0..{gamma}): "
            f"{_fmt(counts / STAT_ROWS)}\n  theory:{' ' * 15}{_fmt(law)}")


@check("the same generator state gives the same result",
       hint="Pass generator=generator to every torch.rand / torch.multinomial call; never use the "
            "global RNG, and never create your own generator.")
def reproducible(ctx: Ctx) -> None:
    """Two calls with generators in the same state must agree exactly; a third, from another
    seed, and a fourth, from the same seed advanced by one draw, must differ somewhere (512 rows:
    identical results by chance have probability far below 1e-100)."""
    p, q = _expand(STAT_P, STAT_Q, 512)
    x = _draft(q, _cpu_generator(ctx, 2))
    seed = (ctx.seed * 7919 + 17) % (2**62)
    n1, y1 = _call(ctx, x, q, p, ctx.generator(seed=seed))
    n2, y2 = _call(ctx, x, q, p, ctx.generator(seed=seed))
    if not (torch.equal(n1, n2) and torch.equal(y1, y2)):
        rows = ((n1 != n2) | (y1 != y2)).nonzero().flatten()
        raise CheckFailed(
            f"two calls with generators in the same state (seed {seed}) differ in {rows.numel()} "
            f"of 512 rows, first at row {int(rows[0])}: every random draw must come from generator")
    n3, y3 = _call(ctx, x, q, p, ctx.generator(seed=seed + 1))
    if torch.equal(n1, n3) and torch.equal(y1, y3):
        raise CheckFailed("generators in different states gave identical results on 512 rows: "
                          "the random draws do not come from generator")
    # Same seed, but advanced by one draw: the state differs while initial_seed() does not. A
    # solution that builds its own generator from generator.initial_seed() would repeat its
    # random draws at every decoding step.
    advanced = ctx.generator(seed=seed)
    torch.rand(1, generator=advanced, device=advanced.device)
    n4, y4 = _call(ctx, x, q, p, advanced)
    if torch.equal(n1, n4) and torch.equal(y1, y4):
        raise CheckFailed("a generator seeded like the first call's but advanced by one draw gave "
                          "identical results on 512 rows: the draws must continue from the "
                          "generator's current state (not restart from its initial_seed())")
    # the caller's generator advances: a second call with the same generator draws anew (a
    # private copy of its state would repeat the same draws at every decoding step)
    shared = ctx.generator(seed=seed)
    n5, y5 = _call(ctx, x, q, p, shared)
    n6, y6 = _call(ctx, x, q, p, shared)
    if torch.equal(n5, n6) and torch.equal(y5, y6):
        raise CheckFailed("two calls with the same generator gave identical results on 512 rows: "
                          "each call must draw from the generator it is given and so advance it "
                          "(not from a copy of its state)")
