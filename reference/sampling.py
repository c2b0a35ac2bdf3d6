"""Decoding arithmetic: what temperature, top-p and min-p keep on a simple logit profile, and what
repetition penalties do to a token's odds.

Sources:

- Softmax with temperature ``T``: ``p_i = exp(z_i / T) / sum_j exp(z_j / T)`` (Hugging Face
  transformers ``TemperatureLogitsWarper`` divides the logits by ``T``).
- Holtzman et al. 2020, *The Curious Case of Neural Text Degeneration*: top-p keeps the smallest set
  of most probable tokens whose probabilities add up to ``p`` or more.
- Nguyen et al. 2024, *Min-p Sampling*: keep the tokens with ``p_i >= min_p * p_max``.
- OpenAI API reference, frequency and presence penalties: ``mu_j <- mu_j - c_j * alpha_frequency -
  [c_j > 0] * alpha_presence`` for a token already generated ``c_j`` times.
- Keskar et al. 2019, CTRL, Sec. 4.1, as implemented by transformers'
  ``RepetitionPenaltyLogitsProcessor``: a seen token's logit is divided by the penalty when positive
  and multiplied by it when negative, so it always goes down.

The logit profile for top-p and min-p is a geometric tail: token ``k = 0, 1, 2, ...`` has logit
``-step * k``, so at temperature ``T`` its probability is ``(1 - r) r^k`` with ``r = exp(-step / T)``.

Pure Python; no torch.
"""

from __future__ import annotations

import math

from inferview.reference.quantity import Quantity

__all__ = [
    "QUANTITIES",
    "frequency_presence_odds",
    "frequency_presence_shift",
    "leader_probability",
    "min_p_kept",
    "repetition_penalty_logit",
    "repetition_penalty_odds",
    "top_p_kept",
]

_EPS = 1e-12
"""Slack on the cumulative and relative thresholds, so a boundary hit exactly in real arithmetic is
decided as in real arithmetic."""


def _ratio(step: float, temperature: float) -> float:
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    if step <= 0:
        raise ValueError(f"step must be positive, got {step}")
    return math.exp(-step / temperature)


def leader_probability(gap: float, others: int, temperature: float) -> float:
    """Probability of a token whose logit is ``gap`` above ``others`` tokens that all share one
    logit: ``1 / (1 + others * exp(-gap / T))``."""
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    return 1.0 / (1.0 + others * math.exp(-gap / temperature))


def top_p_kept(step: float, temperature: float, top_p: float) -> int:
    """Tokens top-p keeps on the geometric tail: the smallest ``k`` with ``1 - r^k >= top_p``."""
    if not 0 < top_p < 1:
        raise ValueError(f"top_p must be in (0, 1), got {top_p}")
    r = _ratio(step, temperature)
    total, k = 0.0, 0
    while total < top_p - _EPS:
        total += (1 - r) * r**k
        k += 1
    return k


def min_p_kept(step: float, temperature: float, min_p: float) -> int:
    """Tokens min-p keeps on the geometric tail: the ``k`` with ``r^k >= min_p``."""
    if not 0 < min_p <= 1:
        raise ValueError(f"min_p must be in (0, 1], got {min_p}")
    r = _ratio(step, temperature)
    k = 0
    while r ** (k + 1) >= min_p - _EPS:
        k += 1
    return k + 1


def frequency_presence_shift(count: int, frequency_penalty: float, presence_penalty: float) -> float:
    """How far the OpenAI penalties lower a logit: ``count * frequency + [count > 0] * presence``."""
    if count < 0:
        raise ValueError("count must be non-negative")
    return count * frequency_penalty + (presence_penalty if count > 0 else 0.0)


def frequency_presence_odds(count: int, frequency_penalty: float, presence_penalty: float) -> float:
    """Factor on the token's odds against any unpenalised token: ``exp(-shift)``."""
    return math.exp(-frequency_presence_shift(count, frequency_penalty, presence_penalty))


def repetition_penalty_logit(logit: float, penalty: float) -> float:
    """CTRL's penalty on a seen token: ``logit / penalty`` if positive, else ``logit * penalty``."""
    if penalty <= 0:
        raise ValueError(f"penalty must be positive, got {penalty}")
    return logit / penalty if logit > 0 else logit * penalty


def repetition_penalty_odds(logit: float, penalty: float) -> float:
    """Factor on the token's odds against any unpenalised token: ``exp(new_logit - logit)``."""
    return math.exp(repetition_penalty_logit(logit, penalty) - logit)


QUANTITIES: list[Quantity] = [
    Quantity(
        "leader_probability", "ratio",
        "1 / (1 + n exp(-gap / T)): a token gap logits above n equal others, at temperature T",
        lambda c, p: leader_probability(float(p["gap"]), int(p["others"]), float(p["temperature"])),
        needs_model=False, required=("gap", "others", "temperature"),
    ),
    Quantity(
        "top_p_kept_tokens", "count",
        "smallest k with 1 - r^k >= top_p, r = exp(-step / T), for logits -step x k "
        "(Holtzman et al. 2020, nucleus sampling)",
        lambda c, p: float(top_p_kept(float(p["step"]), float(p["temperature"]), float(p["top_p"]))),
        needs_model=False, required=("step", "temperature", "top_p"),
    ),
    Quantity(
        "min_p_kept_tokens", "count",
        "number of k with r^k >= min_p, r = exp(-step / T), for logits -step x k (Nguyen et al. "
        "2024, min-p sampling)",
        lambda c, p: float(min_p_kept(float(p["step"]), float(p["temperature"]), float(p["min_p"]))),
        needs_model=False, required=("step", "temperature", "min_p"),
    ),
    Quantity(
        "frequency_presence_odds", "ratio",
        "exp(-(count x frequency_penalty + [count > 0] x presence_penalty)) (OpenAI API penalties)",
        lambda c, p: frequency_presence_odds(int(p["count"]), float(p["frequency_penalty"]),
                                             float(p["presence_penalty"])),
        needs_model=False, required=("count", "frequency_penalty", "presence_penalty"),
    ),
    Quantity(
        "repetition_penalty_odds", "ratio",
        "exp(z / penalty - z) for z > 0, exp(z x penalty - z) otherwise (Keskar et al. 2019, CTRL)",
        lambda c, p: repetition_penalty_odds(float(p["logit"]), float(p["penalty"])),
        needs_model=False, required=("logit", "penalty"),
    ),
]
"""The decoding quantities numeric drills ask for."""
