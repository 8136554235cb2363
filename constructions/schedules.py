"""Masking schedules and the reveal-step law they induce (THEORY §2; MDLM's ddpm_cache sampler).

A schedule alpha(t), t in [0, 1], is non-increasing with alpha(0) = 1 and alpha(1) = 0:
each token is still unmasked at time t with probability alpha(t).  With N reverse
steps on a grid 1 = t_N > ... > t_0 = 0, reverse step j = 1..N (in execution
order) goes from t_{N-j+1} to t_{N-j}, and every position's *reveal step* tau_i is
i.i.d. with

    pi_j = P(tau_i = j) = alpha(t_{N-j}) - alpha(t_{N-j+1}).

A position still masked before step j is revealed there with probability
r_j = pi_j / (1 - sum_{k<j} pi_k) = (alpha_s - alpha_t) / (1 - alpha_t).

Schedules: ``linear`` alpha = 1 - t (pi_j = 1/N); ``cosine`` alpha = cos(pi t / 2);
``loglinear``: MDLM's log-linear noise sigma(t) = -log(1 - t), i.e. alpha = 1 - t,
on MDLM's sampling grid t_k = eps + (1 - eps) k / N (k >= 1), t_0 = 0, so the
last step also reveals the eps leftover (eps = 1e-5 by default, MDLM's default);
``warmstart``: the Theorem 4.2 proof schedule, pi_1 = eps and the rest spread
evenly.  Any user time grid (``GridSchedule``) or explicit pi vector is accepted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numba as nb
import numpy as np

from .validation import positive_int

_TOL = 1e-12


class Schedule:
    """Base class: subclasses define ``alpha(t)`` (vectorised) and optionally ``times(N)``."""

    name = "schedule"

    def alpha(self, t):
        raise NotImplementedError

    def times(self, N: int) -> np.ndarray:
        """The grid t_0 = 0 < t_1 < ... < t_N = 1 (default: uniform)."""
        return np.linspace(0.0, 1.0, N + 1)

    def reveal_probs(self, N: int) -> np.ndarray:
        """pi (N,): pi[j-1] = P(tau_i = j), j = 1 the first reverse step (from t = 1)."""
        N = positive_int("number of steps N", N)
        t = self.times(N)
        a = np.asarray(self.alpha(t), dtype=np.float64)
        if abs(a[0] - 1.0) > _TOL:
            raise ValueError(f"schedule {self.name}: alpha(0) = {a[0]:.6g}, must be 1")
        if abs(a[-1]) > _TOL:
            raise ValueError(f"schedule {self.name}: alpha(1) = {a[-1]:.6g}, must be 0")
        d = a[:-1] - a[1:]  # d[k] = alpha(t_k) - alpha(t_{k+1}) >= 0
        if np.any(d < -_TOL):
            k = int(np.flatnonzero(d < -_TOL)[0])
            raise ValueError(
                f"schedule {self.name} is not non-increasing: alpha({t[k]:.6g}) = {a[k]:.6g} < alpha({t[k + 1]:.6g}) = {a[k + 1]:.6g}"
            )
        pi = np.clip(d[::-1], 0.0, None)  # execution order: step j covers [t_{N-j}, t_{N-j+1}]
        return pi / pi.sum()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Linear(Schedule):
    name = "linear"

    def alpha(self, t):
        return 1.0 - np.asarray(t, dtype=np.float64)


class Cosine(Schedule):
    name = "cosine"

    def alpha(self, t):
        return np.cos(0.5 * np.pi * np.asarray(t, dtype=np.float64))


@dataclass
class LogLinear(Schedule):
    """MDLM's log-linear noise (alpha = 1 - t) on MDLM's sampling grid ending at eps."""

    eps: float = 1e-5
    name: str = field(default="loglinear", init=False)

    def __post_init__(self):
        if not 0 <= self.eps < 1:
            raise ValueError(f"loglinear eps must be in [0, 1), got {self.eps}")

    def alpha(self, t):
        return 1.0 - np.asarray(t, dtype=np.float64)

    def times(self, N: int) -> np.ndarray:
        t = self.eps + (1.0 - self.eps) * np.arange(N + 1) / N
        t[0] = 0.0
        return t


@dataclass
class WarmStart(Schedule):
    """Theorem 4.2's schedule: the first step reveals an eps fraction in expectation, the rest evenly."""

    eps: float = 0.05
    name: str = field(default="warmstart", init=False)

    def __post_init__(self):
        if not 0 < self.eps <= 1:
            raise ValueError(f"warmstart eps must be in (0, 1], got {self.eps}")

    def reveal_probs(self, N: int) -> np.ndarray:
        N = positive_int("number of steps N", N)
        if N == 1:
            return np.ones(1)
        return np.concatenate([[self.eps], np.full(N - 1, (1.0 - self.eps) / (N - 1))])

    def alpha(self, t):
        # alpha on the uniform grid: piecewise linear through the points the reveal probabilities define
        raise ValueError("warmstart is defined by its reveal probabilities; use reveal_probs(N)")


class GridSchedule(Schedule):
    """A user time grid 0 = t_0 < ... < t_N = 1 for a base schedule (default linear)."""

    name = "grid"

    def __init__(self, times, base: Schedule | None = None):
        t = np.asarray(times, dtype=np.float64)
        if t.ndim != 1 or len(t) < 2:
            raise ValueError("a time grid needs at least two points t_0 = 0 and t_N = 1")
        if t[0] > t[-1]:
            t = t[::-1]
        if abs(t[0]) > _TOL or abs(t[-1] - 1) > _TOL:
            raise ValueError(f"a time grid must run from 0 to 1, got {t[0]:.6g} .. {t[-1]:.6g}")
        bad = np.flatnonzero(np.diff(t) <= 0)
        if bad.size:
            raise ValueError(f"time grid is not strictly monotone at t[{bad[0]}] = {t[bad[0]]:.6g}, t[{bad[0] + 1}] = {t[bad[0] + 1]:.6g}")
        self._t = t
        self.base = base or Linear()

    def alpha(self, t):
        return self.base.alpha(t)

    def times(self, N: int) -> np.ndarray:
        if N != len(self._t) - 1:
            raise ValueError(f"the time grid has {len(self._t) - 1} steps, not N = {N}")
        return self._t


SCHEDULES = {"linear": Linear, "cosine": Cosine, "loglinear": LogLinear, "warmstart": WarmStart}


def get_schedule(name: str, **params) -> Schedule:
    """A schedule by name: linear, cosine, loglinear (eps), warmstart (eps)."""
    if name not in SCHEDULES:
        raise ValueError(f"unknown schedule {name!r}; valid schedules: {', '.join(SCHEDULES)}")
    cls = SCHEDULES[name]
    if params and cls in (Linear, Cosine):
        raise ValueError(f"schedule {name!r} takes no parameters, got {sorted(params)}")
    return cls(**params)


def validate_pi(pi, atol: float = 1e-9) -> np.ndarray:
    """A reveal-probability vector: finite, >= 0, summing to 1 (errors name the entry)."""
    pi = np.asarray(pi, dtype=np.float64)
    if pi.ndim != 1 or pi.size == 0:
        raise ValueError(f"reveal probabilities pi must be a non-empty vector, got shape {pi.shape}")
    bad = np.flatnonzero(~np.isfinite(pi) | (pi < 0))
    if bad.size:
        raise ValueError(f"reveal probability pi[{bad[0] + 1}] = {float(pi[bad[0]])!r} is not a probability (step {bad[0] + 1})")
    if abs(pi.sum() - 1) > atol:
        raise ValueError(f"reveal probabilities sum to {pi.sum():.10g}, not 1")
    return pi / pi.sum()


def reveal_probabilities(schedule, N: int) -> np.ndarray:
    """pi (N,) from a Schedule, a schedule name, or an explicit vector (validated, length N)."""
    if isinstance(schedule, Schedule):
        return schedule.reveal_probs(N)
    if isinstance(schedule, str):
        return get_schedule(schedule).reveal_probs(N)
    pi = validate_pi(schedule)
    if len(pi) != N:
        raise ValueError(f"pi has {len(pi)} entries but N = {N} steps")
    return pi


def reveal_rates(pi) -> np.ndarray:
    """r_j = pi_j / (1 - sum_{k<j} pi_k): the probability a still-masked position is revealed at step j."""
    pi = validate_pi(pi)
    before = np.concatenate([[0.0], np.cumsum(pi)[:-1]])
    remaining = 1.0 - before
    r = np.where(remaining > 1e-15, pi / np.maximum(remaining, 1e-300), 1.0)
    r[-1] = 1.0
    last = np.flatnonzero(pi > 0)[-1]
    r[last] = 1.0  # everything left is revealed at the last step with positive probability
    return np.clip(r, 0.0, 1.0)


def log_p_distinct(pi, L: int) -> float:
    """log P(all L reveal steps distinct) = log(L! e_L(pi)), by a log-space DP over steps (O(N L))."""
    pi = validate_pi(pi)
    L = positive_int("L", L)
    if np.count_nonzero(pi) < L:
        return -math.inf
    values, counts = np.unique(pi[pi > 0], return_counts=True)
    if len(values) <= 16:
        # prod_j (1 + pi_j x) grouped by value: (1 + p x)^m = sum_k C(m, k) p^k x^k, convolved in log space
        log_e = np.full(L + 1, -np.inf)
        log_e[0] = 0.0
        for p, m in zip(values, counts):
            k = np.arange(min(int(m), L) + 1)
            group = _log_binom(int(m), k) + k * math.log(p)
            log_e = log_convolve(log_e, group, L)
        return float(math.lgamma(L + 1) + log_e[L])
    return float(math.lgamma(L + 1) + _log_elementary_symmetric(np.log(pi[pi > 0]), L))


def _log_binom(m: int, k: np.ndarray) -> np.ndarray:
    return np.array([math.lgamma(m + 1) - math.lgamma(int(i) + 1) - math.lgamma(m - int(i) + 1) for i in k])


def log_convolve(a: np.ndarray, b: np.ndarray, degree: int) -> np.ndarray:
    """log of the coefficients of (sum_k e^a_k x^k)(sum_k e^b_k x^k), truncated at ``degree``."""
    out = np.full(degree + 1, -np.inf)
    for k, bk in enumerate(b[: degree + 1]):
        if bk == -np.inf:
            continue
        seg = a[: degree + 1 - k] + bk
        out[k:] = np.logaddexp(out[k:], seg)
    return out


@nb.njit(cache=True)
def _log_elementary_symmetric(log_p, L):
    """log e_L(p_1..p_M) by e_k <- e_k + p_j e_{k-1}, in log space (no underflow for any L)."""
    log_e = np.full(L + 1, -np.inf)
    log_e[0] = 0.0
    for j in range(log_p.shape[0]):
        lp = log_p[j]
        for k in range(min(j + 1, L), 0, -1):
            a = log_e[k]
            b = lp + log_e[k - 1]
            if b > a:
                a, b = b, a
            if b != -np.inf:
                a = a + math.log1p(math.exp(b - a))
            log_e[k] = a
    return log_e[L]


def p_distinct(pi, L: int) -> float:
    """P_distinct = L! e_L(pi_1..pi_N): the probability that every step reveals at most one token."""
    return float(math.exp(log_p_distinct(pi, L)))


def expected_nfe(pi, L: int) -> float:
    """E[NFE] under ddpm_cache: sum_j 1 - (1 - pi_j)^L (steps that reveal something)."""
    pi = validate_pi(pi)
    L = positive_int("L", L)
    with np.errstate(divide="ignore"):
        return float(-np.expm1(L * np.log1p(-pi)).sum())
