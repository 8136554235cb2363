"""Confidence intervals for Monte Carlo estimates: binomial proportions and means.

Every Monte Carlo number mdmt prints comes with one of these intervals: the Wilson score or
the Clopper-Pearson (exact, conservative) interval for a proportion such as the SER, and the
Student-t interval for a mean such as a per-token negative log-likelihood.
"""

from __future__ import annotations

import math

import numpy as np


def _stats():
    """scipy.stats, imported at the first interval (its import is most of what importing this module would cost,
    and many callers -- ``mdmt verify`` among them -- import the module without drawing an interval)."""
    from scipy import stats

    return stats


def _check_level(level: float) -> float:
    if not (isinstance(level, (int, float)) and 0 < level < 1):
        raise ValueError(f"confidence level must be in (0, 1), got {level!r}")
    return float(level)


def wilson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion k/n."""
    level = _check_level(level)
    if n == 0:
        return (0.0, 1.0)
    z = _stats().norm.ppf(0.5 + level / 2)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


def clopper_pearson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson (exact, conservative) interval for a binomial proportion k/n."""
    level = _check_level(level)
    if n == 0:
        return (0.0, 1.0)
    a = 1 - level
    lo = 0.0 if k == 0 else float(_stats().beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(_stats().beta.ppf(1 - a / 2, k + 1, n - k))
    return (lo, hi)


def binomial_interval(k: int, n: int, level: float = 0.95, method: str = "wilson") -> tuple[float, float]:
    """``wilson`` or ``clopper-pearson`` interval for k successes out of n."""
    if method == "wilson":
        return wilson_interval(k, n, level)
    if method in ("clopper-pearson", "exact"):
        return clopper_pearson_interval(k, n, level)
    raise ValueError(f"interval method must be 'wilson' or 'clopper-pearson', got {method!r}")


def mean_interval(x, level: float = 0.95) -> tuple[float, float, float]:
    """Sample mean and its Student-t confidence interval: (mean, low, high).

    An infinite value makes the mean infinite with an infinite interval; fewer than two
    values give (-inf, inf).
    """
    level = _check_level(level)
    x = np.asarray(x, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("mean_interval needs at least one value")
    if not np.all(np.isfinite(x)):
        m = float(np.sum(x))  # +inf, -inf or nan (mixed signs)
        return m, m, m
    m = float(x.mean())
    if len(x) < 2:
        return m, -math.inf, math.inf
    half = float(_stats().t.ppf(0.5 + level / 2, len(x) - 1)) * float(x.std(ddof=1)) / math.sqrt(len(x))
    return m, m - half, m + half
