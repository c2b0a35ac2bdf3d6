"""Tests for ``inferview.reference.sampling`` against explicit softmax distributions."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from inferview.reference import sampling as s
from inferview.reference.formulas import QUANTITIES


def _softmax(logits: list[float], t: float) -> list[float]:
    m = max(logits)
    e = [math.exp((x - m) / t) for x in logits]
    z = sum(e)
    return [x / z for x in e]


@given(st.floats(0.0, 6.0), st.integers(0, 50), st.floats(0.1, 4.0))
def test_leader_probability_is_the_softmax(gap, others, t):
    p = _softmax([gap] + [0.0] * others, t)[0]
    assert s.leader_probability(gap, others, t) == pytest.approx(p)


def test_temperature_must_be_positive() -> None:
    with pytest.raises(ValueError):
        s.leader_probability(1.0, 3, 0.0)


def _tail(step: float, t: float, n: int = 4000) -> list[float]:
    return _softmax([-step * k for k in range(n)], t)


@given(st.floats(0.2, 2.0), st.floats(0.3, 2.0), st.floats(0.5, 0.97))
def test_top_p_matches_a_sorted_cumulative_sum(step, t, top_p):
    probs = _tail(step, t)
    total, k = 0.0, 0
    while total < top_p - 1e-12:
        total += probs[k]
        k += 1
    assert s.top_p_kept(step, t, top_p) == k


@given(st.floats(0.2, 2.0), st.floats(0.3, 2.0), st.floats(0.01, 0.5))
def test_min_p_matches_the_relative_threshold(step, t, min_p):
    probs = _tail(step, t)
    kept = sum(p >= min_p * probs[0] - 1e-12 for p in probs)
    assert s.min_p_kept(step, t, min_p) == kept


def test_higher_temperature_keeps_more_tokens() -> None:
    assert s.top_p_kept(1.0, 0.7, 0.9) < s.top_p_kept(1.0, 1.5, 0.9)
    assert s.min_p_kept(1.0, 0.7, 0.1) < s.min_p_kept(1.0, 1.5, 0.1)


def test_openai_penalties() -> None:
    assert s.frequency_presence_shift(0, 0.5, 0.5) == 0.0
    assert s.frequency_presence_shift(3, 0.5, 0.4) == pytest.approx(1.9)
    assert s.frequency_presence_odds(3, 0.5, 0.4) == pytest.approx(math.exp(-1.9))
    # the odds against an unpenalised token change by exactly exp(-shift)
    before = _softmax([2.0, 1.0], 1.0)
    after = _softmax([2.0 - 1.9, 1.0], 1.0)
    assert (after[0] / after[1]) / (before[0] / before[1]) == pytest.approx(math.exp(-1.9))


def test_ctrl_repetition_penalty_lowers_both_signs() -> None:
    assert s.repetition_penalty_logit(3.0, 1.2) == pytest.approx(2.5)
    assert s.repetition_penalty_logit(-3.0, 1.2) == pytest.approx(-3.6)
    assert s.repetition_penalty_odds(3.0, 1.2) == pytest.approx(math.exp(-0.5))
    assert s.repetition_penalty_odds(-3.0, 1.2) < 1


def test_quantities_are_registered() -> None:
    for q in s.QUANTITIES:
        assert QUANTITIES[q.name] is q
    assert QUANTITIES["min_p_kept_tokens"].compute(None, {"step": 1.0, "temperature": 1.0,
                                                          "min_p": 0.1}) == 3
