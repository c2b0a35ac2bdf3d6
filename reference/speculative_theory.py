"""Closed-form theory of speculative decoding (pure Python, no torch).

Source: Leviathan, Kalman & Matias, "Fast Inference from Transformers via Speculative Decoding",
ICML 2023 (arXiv:2211.17192). Notation follows the paper:

- ``alpha``: the expected acceptance rate, ``alpha = E[beta]`` where ``beta = sum_x min(p(x), q(x))``
  is the probability that one draft token is accepted (Definition 3.1, Corollary 3.7). The paper
  assumes the per-token acceptances are i.i.d. with rate ``alpha``.
- ``gamma``: the number of tokens the draft model proposes per step.
- ``c`` (``cost_ratio``): the time of one draft-model run divided by the time of one target-model
  run (Section 3.4).
- ``c_hat`` (``ops_ratio``): the arithmetic operations per token of the draft model divided by
  those of the target model (Section 3.4, Theorem 3.11).

Every function validates its inputs and raises ``ValueError`` for values outside their domain.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "acceptance_rate",
    "best_improvement_lower_bound",
    "expected_cost_factor",
    "expected_tokens_per_step",
    "expected_tokens_per_step_positional",
    "num_accepted_distribution",
    "optimal_gamma",
    "total_variation",
    "walltime_improvement",
]


def _check_alpha(alpha: float) -> None:
    if not (0.0 <= alpha <= 1.0) or math.isnan(alpha):
        raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")


def _check_gamma(gamma: int) -> None:
    if isinstance(gamma, bool) or not isinstance(gamma, int) or gamma < 0:
        raise ValueError(f"gamma must be a non-negative integer, got {gamma!r}")


def _check_cost(cost_ratio: float, name: str = "cost_ratio") -> None:
    if not (cost_ratio >= 0.0) or math.isinf(cost_ratio):
        raise ValueError(f"{name} must be a finite number >= 0, got {cost_ratio!r}")


def _geometric_sum(alpha: float, gamma: int) -> float:
    """``1 + alpha + ... + alpha^gamma`` = ``(1 - alpha^(gamma+1)) / (1 - alpha)``."""
    if alpha == 1.0:
        return float(gamma + 1)  # limit of the closed form as alpha -> 1
    return (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)


def expected_tokens_per_step(alpha: float, gamma: int) -> float:
    """Expected number of tokens one speculative step emits (Leviathan et al. 2023, Eq. 1).

    ``E[tokens] = (1 - alpha^(gamma+1)) / (1 - alpha)``: the accepted prefix (a capped geometric
    variable) plus the one token the target always contributes (the resampled token at the first
    rejection, or the bonus token when all ``gamma`` are accepted). At ``alpha = 1`` the limit is
    ``gamma + 1``; at ``alpha = 0`` it is 1 (plain decoding).

    >>> expected_tokens_per_step(0.5, 2)
    1.75
    """
    _check_alpha(alpha)
    _check_gamma(gamma)
    return _geometric_sum(alpha, gamma)


def walltime_improvement(alpha: float, gamma: int, cost_ratio: float) -> float:
    """Expected walltime improvement factor over plain decoding (Theorem 3.8).

    ``(1 - alpha^(gamma+1)) / ((1 - alpha) (gamma c + 1))``: one step costs ``gamma`` draft runs
    plus one target run (time ``gamma c + 1`` in target-run units, assuming enough parallel
    compute that verifying ``gamma + 1`` positions costs one target run) and yields
    :func:`expected_tokens_per_step` tokens. Values below 1 mean speculation is slower.

    >>> round(walltime_improvement(0.8, 4, 0.05), 4)
    2.8013
    """
    _check_alpha(alpha)
    _check_gamma(gamma)
    _check_cost(cost_ratio)
    return _geometric_sum(alpha, gamma) / (gamma * cost_ratio + 1.0)


def expected_cost_factor(alpha: float, gamma: int, ops_ratio: float) -> float:
    """Expected factor of increase in arithmetic operations (Theorem 3.11).

    ``(1 - alpha)(gamma c_hat + gamma + 1) / (1 - alpha^(gamma+1))``: each step runs the draft
    ``gamma`` times (``gamma c_hat`` target-equivalents) and the target on ``gamma + 1`` positions,
    and emits :func:`expected_tokens_per_step` tokens, against one target run per token for plain
    decoding. Speculation trades this extra arithmetic for lower latency.

    >>> round(expected_cost_factor(0.5, 1, 0.0), 4)
    1.3333
    """
    _check_alpha(alpha)
    _check_gamma(gamma)
    _check_cost(ops_ratio, "ops_ratio")
    return (gamma * ops_ratio + gamma + 1.0) / _geometric_sum(alpha, gamma)


def optimal_gamma(alpha: float, cost_ratio: float, max_gamma: int = 64) -> int:
    """The ``gamma`` in ``[0, max_gamma]`` that maximises :func:`walltime_improvement` (Section 3.5).

    Returns 0 when no ``gamma >= 1`` beats plain decoding (the improvement at ``gamma = 0`` is
    exactly 1). By Corollary 3.9, whenever ``alpha > c`` some ``gamma >= 1`` gives an improvement
    of at least ``(1 + alpha) / (1 + c)``, so the result is then at least 1. A larger ``gamma``
    must beat the best so far by a relative ``1e-12``: ties, and gains lost in rounding, go to
    the smaller ``gamma`` (fewer wasted draft runs).

    >>> optimal_gamma(0.8, 0.05)
    8
    """
    _check_alpha(alpha)
    _check_cost(cost_ratio)
    _check_gamma(max_gamma)
    best_gamma, best = 0, 1.0
    for gamma in range(1, max_gamma + 1):
        value = walltime_improvement(alpha, gamma, cost_ratio)
        if value > best * (1.0 + 1e-12):
            best_gamma, best = gamma, value
    return best_gamma


def best_improvement_lower_bound(alpha: float, cost_ratio: float) -> float | None:
    """Corollary 3.9: if ``alpha > c``, the best ``gamma`` improves walltime by ``>= (1+alpha)/(1+c)``.

    Returns that bound, or ``None`` when ``alpha <= c`` (the corollary promises nothing). The bound
    is met by ``gamma = 1``: ``(1 + alpha) / (1 + c)``.
    """
    _check_alpha(alpha)
    _check_cost(cost_ratio)
    if alpha <= cost_ratio:
        return None
    return (1.0 + alpha) / (1.0 + cost_ratio)


def _check_distribution(p: Sequence[float], name: str) -> None:
    if len(p) == 0:
        raise ValueError(f"{name} is empty")
    if any(math.isnan(x) or x < 0.0 for x in p):
        raise ValueError(f"{name} has a negative or NaN entry")
    total = math.fsum(p)
    if abs(total - 1.0) > 1e-6:
        raise ValueError(f"{name} sums to {total}, not 1")


def acceptance_rate(p: Sequence[float], q: Sequence[float]) -> float:
    """Probability ``beta`` that a draft token ``x ~ q`` is accepted by target ``p`` (Corollary 3.7).

    ``beta = sum_x min(p(x), q(x)) = 1 - D_LK(p, q)``, where ``D_LK`` is the total variation
    distance (Definition 3.5, Lemma 3.6). ``p`` is the target's distribution, ``q`` the draft's,
    both over the same vocabulary.

    >>> acceptance_rate([0.5, 0.5, 0.0], [0.0, 0.5, 0.5])
    0.5
    """
    _check_distribution(p, "p")
    _check_distribution(q, "q")
    if len(p) != len(q):
        raise ValueError(f"p and q differ in length: {len(p)} != {len(q)}")
    return math.fsum(min(a, b) for a, b in zip(p, q, strict=True))


def total_variation(p: Sequence[float], q: Sequence[float]) -> float:
    """Total variation distance ``sum_x |p(x) - q(x)| / 2`` = ``1 - acceptance_rate(p, q)``."""
    _check_distribution(p, "p")
    _check_distribution(q, "q")
    if len(p) != len(q):
        raise ValueError(f"p and q differ in length: {len(p)} != {len(q)}")
    return 0.5 * math.fsum(abs(a - b) for a, b in zip(p, q, strict=True))


def num_accepted_distribution(alphas: Sequence[float]) -> list[float]:
    """Exact law of ``num_accepted`` when draft position ``j`` is accepted with probability ``alphas[j]``.

    For context-independent draft and target distributions the acceptances are independent, so
    ``P(num_accepted >= i) = alphas[0] * ... * alphas[i-1]`` and
    ``P(num_accepted = i) = P(>= i) (1 - alphas[i])`` for ``i < gamma``. Returns a list of
    ``gamma + 1`` probabilities for ``num_accepted = 0 .. gamma`` (``gamma = len(alphas)``).

    >>> num_accepted_distribution([0.5, 0.5])
    [0.5, 0.25, 0.25]
    """
    for a in alphas:
        _check_alpha(a)
    out: list[float] = []
    survive = 1.0  # P(num_accepted >= i)
    for a in alphas:
        out.append(survive * (1.0 - a))
        survive *= a
    out.append(survive)
    return out


def expected_tokens_per_step_positional(alphas: Sequence[float]) -> float:
    """Expected tokens per step with a different acceptance rate at each draft position.

    ``E[tokens] = 1 + sum_i prod_{j<=i} alphas[j]`` (the accepted prefix plus the one token from
    the target). Equals :func:`expected_tokens_per_step` when all ``alphas`` are equal.
    """
    for a in alphas:
        _check_alpha(a)
    total, survive = 1.0, 1.0
    for a in alphas:
        survive *= a
        total += survive
    return total
