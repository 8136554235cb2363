"""Closed forms for the interval counterexample (Theorem 4.4, Example C.7, Lemmas C.5-C.6 of the paper).

Two positions of one interval revealed in the same step draw their shared bit
independently; under the oracle each end is a fair bit, so they disagree with
probability 1/2, independently over pairs.  Positions revealed at different steps
agree (the later one is conditioned on the earlier).  Hence, exactly,

    SER_oracle = 1 - rho^(L/l),   rho = E[2^(-#pairs of an interval revealed in the same step)].

With n_j positions of the interval revealed at step j, #pairs = sum_j C(n_j, 2), and
the n_j are multinomial(l; pi), so rho = l! sum over compositions prod_j pi_j^n_j 2^(-C(n_j,2)) / n_j!,
a DP over steps in O(N l^2).

A reverse model with learning error eps (for every x_U) draws each end of a colliding
pair from bit marginals u_a, u_b with KL(Bern(1/2) || Bern(u)) = -1/2 log(4u(1-u)) <= eps,
i.e. u in [u_min, 1 - u_min] with 4 u_min (1 - u_min) = e^(-2 eps).  The mismatch
probability u_a + u_b - 2 u_a u_b is bilinear, so its minimum is at a corner:
u_a = u_b = u_min, giving p_e(eps) = 2 u_min (1 - u_min) = e^(-2 eps) / 2.  Every interval
with at least one same-step pair then fails with probability >= p_e, given the past, so

    SER >= 1 - (1 - p_e(eps) (1 - P_distinct(l; pi)))^(L/l)    for every schedule.

The two bounds are the statements ``MISMATCH`` and ``THEOREM_44_BOUND`` of
:mod:`mdmt.bounds.theorems.statements` (derived and checked there), evaluated by
:mod:`mdmt.bounds.theorems.interval_bounds`; this module holds the exact oracle values.
"""

from __future__ import annotations

import math

import numpy as np

from mdmt.runtime.validation import positive_int
from .schedules import as_pi, log_convolve, p_distinct
from mdmt.constructions.types import RevealProbabilities


def check_lengths(l: int, L: int) -> tuple[int, int]:
    """(l, L) validated: l an interval length in 2..MAX_INTERVAL, L a positive multiple of l."""
    l = _interval_length(l)
    L = positive_int("L", L)
    if L % l:
        raise ValueError(f"sequence length L={L} is not a multiple of the interval length l={l}")
    return l, L


MAX_INTERVAL = 256  # the DP over an interval costs O(l^2 log N); longer intervals are refused


def _interval_length(l) -> int:
    l = positive_int("interval length l", l, minimum=2)
    if l > MAX_INTERVAL:
        raise ValueError(f"interval length l = {l}: the exact interval closed forms cost O(l^2 log N) per point; "
                         f"mdmt's limit is l <= {MAX_INTERVAL} (use a shorter interval)")
    return l


def log_rho_groups(l: int, values, counts) -> float:
    """log rho for a schedule given as distinct reveal probabilities ``values`` with multiplicities ``counts``."""
    l = _interval_length(l)
    n = np.arange(l + 1)
    log_w = -(n * (n - 1) / 2) * math.log(2) - np.array([math.lgamma(k + 1) for k in n])
    g = np.full(l + 1, -np.inf)
    g[0] = 0.0
    for p, m in zip(values, counts):
        # one step with reveal probability p contributes sum_k p^k 2^(-C(k,2)) / k! x^k; m equal
        # steps contribute its m-th power, by repeated squaring (truncated at degree l)
        base = n * math.log(p) + log_w
        power = np.full(l + 1, -np.inf)
        power[0] = 0.0
        m = int(m)
        while m:
            if m & 1:
                power = log_convolve(power, base, l)
            m >>= 1
            if m:
                base = log_convolve(base, base, l)
        g = log_convolve(g, power, l)
    return float(math.lgamma(l + 1) + g[l])


def log_rho(l: int, pi) -> float:
    """log rho(l, pi) = log E[2^(-same-step pairs)] for one interval (log-space DP over steps)."""
    l = _interval_length(l)
    pi = as_pi(pi)
    values, counts = np.unique(pi[pi > 0], return_counts=True)
    return log_rho_groups(l, values, counts)


def log_rho_linear(l: int, N: int) -> float:
    """log rho for the linear schedule pi_j = 1/N without building pi (the same arithmetic as ``log_rho``)."""
    N = positive_int("number of steps N", N)
    return log_rho_groups(l, [1.0 / N], [N])


def rho(l: int, pi) -> float:
    return math.exp(log_rho(l, pi))


def oracle_ser(l: int, L: int, pi: RevealProbabilities) -> float:
    """Exact SER of the oracle sampler on the interval HMM: 1 - rho^(L/l)."""
    l, L = check_lengths(l, L)
    return float(-math.expm1((L // l) * log_rho(l, pi)))


def oracle_ser_linear(l: int, L: int, N: int) -> float:
    """``oracle_ser`` for the linear schedule with N steps, without building pi (any N)."""
    l, L = check_lengths(l, L)
    return float(-math.expm1((L // l) * log_rho_linear(l, N)))


def learning_error_value(eps, name: str = "learning error eps") -> float:
    """A learning error as a float: finite and >= 0, or a ValueError naming ``name`` and the value."""
    try:
        e = float(eps)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number >= 0, got {eps!r}") from None
    if not (math.isfinite(e) and e >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {eps!r}")
    return e
