"""Checks for ``speculative-verifier``: calibration under a correct step, power against wrong ones.

The submission's ``preserves_distribution(step, target_probs, draft_probs, num_samples, generator)``
gets steps from ``worker_helpers.py``: ``correct_step`` (Leviathan et al. 2023, Algorithm 1) and
nine wrong steps, each with one classic mistake. A good verifier returns p-values that are roughly
uniform under the correct step and tiny under every wrong one.

False-failure rates for a correct verifier: the calibration check fails when 4 or more of 12
p-values under the correct step fall below 0.01, which a valid test does with probability below
``5e-6`` (Binomial(12, 0.01) tail); the second calibration check, under a step that accepts at most
one draft token, fails when 3 or more of 4 do, below ``4e-6``. Each detection check fails when the p-value is not below 0.01;
on these distributions, with ``num_samples = 4000``, per-position chi-square tests with a Bonferroni
correction give p-values below ``1e-12`` for every wrong step (over 30 seeds when the cases were
designed; the test suite re-checks three), so a sound verifier misses one with negligible
probability. The reproducibility check cannot fail a verifier whose every draw comes from
``generator``.
"""

from __future__ import annotations

import math

import torch
from inferview.graders.api import CheckFailed, Ctx, WorkerFunction, check

NUM_SAMPLES = 4000
"""Rows per call of the submission."""

DETECT_BELOW = 0.01
"""A wrong step counts as detected when the returned p-value is below this."""

CALIBRATION_RUNS = 12
"""Runs under the correct step in the calibration check."""

CALIBRATION_MAX_SMALL = 3
"""At most this many of those runs may give p < 0.01 (P(Binomial(12, 0.01) >= 4) < 5e-6)."""

HELPERS = "worker_helpers.py"


def _normalise(rows: list[list[float]]) -> torch.Tensor:
    t = torch.tensor(rows, dtype=torch.float64)
    return (t / t.sum(-1, keepdim=True)).float()


# The main case: G = 3, V = 6, acceptance rates (0.70, 0.60, 0.70), P(all accepted) = 0.294; every
# position differs from the next, and p_3 (the bonus distribution) gives token 0 probability 0
# while p_2 does not, so a bonus token drawn from p_2 soon emits an impossible token.
MAIN = {
    "target": _normalise([[4, 3, 1, 1, 1, 0],
                          [1, 4, 3, 1, 0, 1],
                          [1, 1, 4, 3, 1, 0],
                          [0, 1, 1, 1, 3, 4]]),
    "draft": _normalise([[2, 4, 2, 0, 1, 1],
                         [2, 3, 1, 3, 1, 0],
                         [3, 1, 2, 3, 0, 1]]),
}
# Many exact zeros in both models: a verifier must handle tokens the target never emits.
SPARSE = {
    "target": _normalise([[1, 1, 0, 0, 2, 0],
                          [0, 3, 1, 0, 0, 1],
                          [2, 0, 0, 1, 1, 0],
                          [0, 0, 1, 1, 0, 2]]),
    "draft": _normalise([[1, 0, 1, 0, 1, 1],
                         [0, 1, 1, 1, 0, 1],
                         [1, 1, 0, 1, 1, 0]]),
}
# Draft equal to the target: every draft token is accepted, every row reaches the bonus token.
EQUAL = {"target": MAIN["target"], "draft": MAIN["target"][:3].clone()}

CASES = {"main": MAIN, "sparse (zeros in both models)": SPARSE, "draft equal to target": EQUAL}


def _pvalue(ctx: Ctx, step: str, case: dict, seed: int) -> float:
    """Run the submission once and validate that it returned a p-value."""
    got = ctx.sub.call("preserves_distribution", WorkerFunction(HELPERS, step),
                       case["target"].to(ctx.device), case["draft"].to(ctx.device), NUM_SAMPLES,
                       ctx.generator(seed=seed))
    if isinstance(got, torch.Tensor) and got.numel() == 1 and got.is_floating_point():
        got = float(got.item())
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        raise CheckFailed(f"preserves_distribution must return a float p-value, got {got!r}")
    value = float(got)
    if math.isnan(value):
        raise CheckFailed(f"the p-value is NaN (step {step}, seed {seed}); guard positions that no "
                          f"row reaches and tokens of probability 0")
    if not 0.0 <= value <= 1.0:
        raise CheckFailed(f"the p-value must lie in [0, 1], got {value!r} (step {step}, seed "
                          f"{seed}): return the p-value, not the test statistic")
    return value


def _seed(ctx: Ctx, salt: int) -> int:
    return (ctx.seed * 1_000_003 + 7919 * salt) % (2**62)


@check("returns a p-value in [0, 1]",
       hint="Return a Python float: the p-value of your test (e.g. scipy.stats.chi2.sf(stat, dof)), "
            "never the statistic, and never NaN.")
def returns_pvalue(ctx: Ctx) -> None:
    """One run per case under the correct step; the value must be a float in [0, 1]."""
    for i, case in enumerate(CASES.values()):
        _pvalue(ctx, "correct_step", case, _seed(ctx, i))


@check("a correct step is not rejected more often than chance allows",
       hint="Test the emitted tokens against the target p_j, not the draft q_j; at position j use "
            "only the rows that reach it (num_accepted >= j), and correct for testing several "
            "positions (Bonferroni: multiply the smallest p-value by the number of tests).")
def calibrated_under_correct_step(ctx: Ctx) -> None:
    """12 runs (4 per case) under the correct step; fails when 4 or more give p < 0.01
    (false-failure rate below 5e-6 for a valid test)."""
    names = list(CASES)
    small = []
    for r in range(CALIBRATION_RUNS):
        name = names[r % len(names)]
        seed = _seed(ctx, 100 + r)
        pv = _pvalue(ctx, "correct_step", CASES[name], seed)
        if pv < DETECT_BELOW:
            small.append(f"{name}, seed {seed}: p = {pv:.2e}")
    if len(small) > CALIBRATION_MAX_SMALL:
        raise CheckFailed(
            f"{len(small)} of {CALIBRATION_RUNS} runs under a correct step gave p < {DETECT_BELOW} "
            f"(chance allows about {CALIBRATION_RUNS * DETECT_BELOW:.2f}); your test rejects a "
            f"sampler that preserves the distribution:\n  " + "\n  ".join(small[:6]))


OTHER_RUNS = 4
"""Runs under ``first_draft_only_step``, a second step that preserves the distribution."""

OTHER_MAX_SMALL = 2
"""At most this many of those runs may give p < 0.01 (P(Binomial(4, 0.01) >= 3) < 4e-6)."""


@check("a step that preserves the distribution another way is not rejected",
       hint="The null hypothesis is about the emitted tokens only: do not test how many draft tokens "
            "are accepted (a valid step may accept fewer than the usual rule), and give positions "
            "that no row reaches no weight instead of a NaN.")
def calibrated_under_other_step(ctx: Ctx) -> None:
    """4 runs on the main case under a step that accepts at most the first draft token (valid: each
    emitted token still follows p_j, positions 2..G are never reached); fails when 3 or more give
    p < 0.01 (false-failure rate below 4e-6 for a valid test)."""
    small = []
    for r in range(OTHER_RUNS):
        seed = _seed(ctx, 500 + r)
        pv = _pvalue(ctx, "first_draft_only_step", MAIN, seed)
        if pv < DETECT_BELOW:
            small.append(f"seed {seed}: p = {pv:.2e}")
    if len(small) > OTHER_MAX_SMALL:
        raise CheckFailed(
            f"{len(small)} of {OTHER_RUNS} runs under a step that accepts at most one draft token "
            f"(each emitted token still follows the target) gave p < {DETECT_BELOW}: your test "
            f"rejects something other than the token distribution (the acceptance counts?):\n  "
            + "\n  ".join(small))


WRONG_STEPS = (
    # (check name, hint, step in worker_helpers.py, seed salt)
    ("detects a residual that is not clamped (|p - q|)",
     "Compare the first emitted token with p_0: a residual |p - q| puts mass on tokens the draft "
     "over-weights.",
     "abs_residual_step", 200),
    ("detects a residual that is not renormalised",
     "Tokens of target probability 0 must never appear; an unnormalised inverse CDF piles the "
     "missing mass on the last token.",
     "unnormalised_residual_step", 201),
    ("detects a bonus token drawn from the wrong position",
     "The bonus token (num_accepted == gamma) is position gamma and must follow "
     "target_probs[gamma]: test that position too.",
     "bonus_from_last_draft_position_step", 202),
    ("detects one uniform shared by all draft positions",
     "This bug leaves the first token right. Test every position j over the rows with "
     "num_accepted >= j.",
     "shared_uniform_step", 203),
    ("detects deterministic acceptance (p >= q)",
     "Compare the first emitted token with p_0.",
     "deterministic_accept_step", 204),
    ("detects an acceptance ratio upside down (q / p)",
     "Compare the first emitted token with p_0.",
     "inverted_ratio_step", 205),
    ("detects resampling from p instead of the residual",
     "Compare the first emitted token with p_0.",
     "resample_from_target_step", 206),
    ("detects counting accepted tokens that follow a rejection",
     "The emitted sequence is the draft tokens before num_accepted, then next_token; test each "
     "position against the target.",
     "total_accepted_step", 207),
    ("detects num_accepted = 0 when nothing was rejected",
     "Compare the first emitted token with p_0: all-accepted rows that emit a residual token "
     "skew it.",
     "first_rejection_argmax_step", 208),
)
"""The nine wrong steps (each named in ``worker_helpers.py`` with its one mistake), one detection
check per row, registered below in this order. The salt seeds the check's generator."""


def _detects(ctx: Ctx, step: str, salt: int) -> None:
    """The submission's p-value for ``step`` on the main case must be below ``DETECT_BELOW``."""
    seed = _seed(ctx, salt)
    pv = _pvalue(ctx, step, MAIN, seed)
    if not pv < DETECT_BELOW:
        raise CheckFailed(f"the wrong step {step} got p = {pv:.3g} (seed {seed}, {NUM_SAMPLES} "
                          f"samples); a sound test gives p < 1e-12 here, and the check needs "
                          f"p < {DETECT_BELOW}")


def _detection_check(name: str, hint: str, step: str, salt: int):
    """One registered check for one row of :data:`WRONG_STEPS`."""

    @check(name, hint=hint)
    def detects(ctx: Ctx) -> None:
        _detects(ctx, step, salt)

    detects.__name__ = detects.__qualname__ = f"detects_{step}"
    detects.__doc__ = f"The p-value for ``{step}`` on the main case is below {DETECT_BELOW}."
    return detects


for _row in WRONG_STEPS:  # module-level names: the engine collects checks from the module
    globals()[f"detects_{_row[2]}"] = _detection_check(*_row)
del _row


@check("the same generator state gives the same p-value",
       hint="Sample the draft tokens with generator=generator and pass the same generator to step; "
            "never use the global RNG or a generator of your own.")
def reproducible(ctx: Ctx) -> None:
    """Under the correct step and under a wrong one (whose p-values are tiny and continuous, so
    they do not coincide by chance), two runs from the same generator state must return the same
    p-value, for two states each; and for at least one of the two steps, four different states
    must not all give the same p-value. A verifier whose draws all come from ``generator`` cannot
    fail this check; one that ignores the generator always does."""
    values: dict[str, list[float]] = {}
    for step in ("correct_step", "shared_uniform_step"):
        base = _seed(ctx, 300 if step == "correct_step" else 400)
        values[step] = []
        for k in range(4):
            a = _pvalue(ctx, step, MAIN, base + k)
            if k < 2:
                b = _pvalue(ctx, step, MAIN, base + k)
                if a != b:
                    raise CheckFailed(
                        f"two runs with {step} from the same generator state (seed {base + k}) "
                        f"returned {a!r} and {b!r}: every random draw must come from generator")
            values[step].append(a)
    if all(len(set(v)) == 1 for v in values.values()):
        raise CheckFailed(
            "generators in four different states gave the same p-value for each step ("
            + ", ".join(f"{k}: {v[0]!r}" for k, v in values.items())
            + "): the result does not depend on the generator you were given")
