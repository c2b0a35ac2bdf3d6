"""Statistical tests for checks of samplers (SciPy).

- :func:`chi_square_gof`: Pearson's chi-square goodness of fit, pooling categories whose expected
  count is below ``min_expected`` (Cochran's rule of thumb: every expected count at least 5) into
  one bin, so the chi-square approximation holds.
- :func:`binomial_test`: the exact two-sided binomial test (``scipy.stats.binomtest``).
- :func:`ks_uniform`: Kolmogorov-Smirnov test of samples (e.g. p-values) against U(0, 1).

Each returns a p-value. A check fails when ``p < alpha``; with a fixed ``alpha`` the false-failure
rate of a correct submission is ``alpha`` per test, which each check states in its docstring.
Impossible outcomes (an observation in a category of probability 0) give ``p = 0`` exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps


@dataclass(frozen=True)
class GofResult:
    """A goodness-of-fit outcome: statistic, degrees of freedom, p-value and bins used."""

    statistic: float
    dof: int
    p_value: float
    bins: int
    impossible: int
    """Observations that fell in categories of expected probability 0."""


def _as_counts(observed: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(observed, dtype=np.float64).ravel()
    if np.any(arr < 0):
        raise ValueError("observed counts must be non-negative")
    return arr


def chi_square_gof(
    observed: Sequence[float] | np.ndarray,
    probs: Sequence[float] | np.ndarray,
    *,
    min_expected: float = 5.0,
) -> GofResult:
    """Chi-square goodness of fit of ``observed`` counts to probabilities ``probs``.

    Categories with expected count ``< min_expected`` are pooled (smallest first) until the pool
    reaches it; a leftover small pool is merged into the smallest regular bin. Observations in
    zero-probability categories make the result impossible (``p_value = 0``).
    """
    obs = _as_counts(observed)
    p = np.asarray(probs, dtype=np.float64).ravel()
    if obs.shape != p.shape:
        raise ValueError(f"observed has {obs.size} categories but probs has {p.size}")
    if np.any(p < 0):
        raise ValueError("probabilities must be non-negative")
    total_p = p.sum()
    if total_p <= 0:
        raise ValueError("probabilities sum to zero")
    p = p / total_p
    n = obs.sum()
    zero = p == 0
    impossible = int(obs[zero].sum())
    if impossible:
        return GofResult(float("inf"), 0, 0.0, 0, impossible)
    if n == 0:
        return GofResult(0.0, 0, 1.0, 0, 0)
    obs, p = obs[~zero], p[~zero]
    exp = p * n
    order = np.argsort(exp, kind="stable")
    bins_obs: list[float] = []
    bins_exp: list[float] = []
    pool_o = pool_e = 0.0
    for i in order:
        if exp[i] >= min_expected and pool_e == 0.0:
            bins_obs.append(obs[i])
            bins_exp.append(exp[i])
            continue
        pool_o += obs[i]
        pool_e += exp[i]
        if pool_e >= min_expected:
            bins_obs.append(pool_o)
            bins_exp.append(pool_e)
            pool_o = pool_e = 0.0
    if pool_e > 0.0:
        if bins_exp:
            j = int(np.argmin(bins_exp))
            bins_obs[j] += pool_o
            bins_exp[j] += pool_e
        else:
            bins_obs.append(pool_o)
            bins_exp.append(pool_e)
    o = np.asarray(bins_obs)
    e = np.asarray(bins_exp)
    if o.size < 2:
        return GofResult(0.0, 0, 1.0, int(o.size), 0)
    stat = float(((o - e) ** 2 / e).sum())
    dof = int(o.size - 1)
    return GofResult(stat, dof, float(sps.chi2.sf(stat, dof)), int(o.size), 0)


def binomial_test(successes: int, trials: int, p: float) -> float:
    """Exact two-sided binomial test p-value for ``successes`` out of ``trials`` at rate ``p``."""
    if trials == 0:
        return 1.0
    if p <= 0.0:
        return 1.0 if successes == 0 else 0.0
    if p >= 1.0:
        return 1.0 if successes == trials else 0.0
    return float(sps.binomtest(int(successes), int(trials), float(p)).pvalue)


def ks_uniform(samples: Sequence[float] | np.ndarray) -> float:
    """Kolmogorov-Smirnov p-value of ``samples`` against the uniform distribution on [0, 1]."""
    x = np.asarray(samples, dtype=np.float64).ravel()
    if x.size == 0:
        return 1.0
    return float(sps.kstest(x, "uniform").pvalue)


def counts(values: Sequence[int] | np.ndarray, num_categories: int) -> np.ndarray:
    """Histogram of integer ``values`` in ``[0, num_categories)`` (out-of-range values raise)."""
    v = np.asarray(values, dtype=np.int64).ravel()
    if v.size and (v.min() < 0 or v.max() >= num_categories):
        raise ValueError(f"values outside [0, {num_categories})")
    return np.bincount(v, minlength=num_categories).astype(np.float64)
