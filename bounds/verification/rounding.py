"""Derived rounding-error bounds of mdmt's float64 algorithms (for the "numeric" rows of ``mdmt verify``).

A numeric row compares a library value, computed in float64, with an exact or certified value of
the same mathematical quantity, and passes when they differ by at most the bound derived here.
The derivations use the standard model of floating point arithmetic (Higham, *Accuracy and
Stability of Numerical Algorithms*, Chapters 2-4): fl(a op b) = (a op b)(1 + d), |d| <= u = 2^-53,
for +, -, *, /; a sum of n terms is off by at most gamma(n-1) sum |x_i| in any order; a product
of k non-negative factors by a relative gamma(k); and the library functions log, exp, log1p,
expm1, cos, pow, lgamma are taken to be accurate to 4 ulp (glibc documents 1-2 ulp for these on
x86_64).  Every bound below is over-estimated by a factor of a few on purpose; none is tuned to
the observed errors (which are orders of magnitude smaller, see tests/test_verify.py).
"""

from __future__ import annotations

import math

import numpy as np

from ..theorems.intervals import U, gamma

ULP_LIB = 4  # accuracy of log, exp, log1p, expm1, cos, pow, lgamma, in ulps (assumed)


def tol_reveal_probabilities(N: int) -> float:
    """|pi_hat_j - pi_j| for a named schedule: the grid t_k (2 roundings), alpha(t_k) (<= 8u absolute, the
    argument of cos rounded 3 times and cos itself), the differences (<= 17u absolute), then the
    normalisation by their sum (gamma(N) relative plus N times 17u absolute)."""
    return (20 + 20 * N) * U


def tol_reveal_rates(pi_exact, a_exact) -> np.ndarray:
    """|r_hat_j - r_j|: a_j is a cumulative sum (relative gamma(j)), 1 - a_j then carries the absolute error
    gamma(j) a_j + u, and r_j = pi_j / (1 - a_j) one more rounding."""
    pi_exact = np.asarray(pi_exact, dtype=np.float64)
    a = np.asarray(a_exact, dtype=np.float64)
    j = np.arange(1, len(pi_exact) + 1)
    rem = np.maximum(1.0 - a, 1e-300)
    r = pi_exact / rem
    g = np.array([gamma(k + 2) for k in j])
    return 1.01 * r * (2 * U + (g * a + U) / rem) + 4 * U


def tol_log_p_distinct(N: int, L: int, pi) -> float:
    """Absolute error of log P_distinct: with <= 16 distinct values, per group lgamma terms (magnitude up to
    lgamma(m + 1), m the group's size) and (L + 1)^2 log-additions; otherwise a log-space DP of N L
    log-additions; each operation off by 2 ULP_LIB ulps of magnitudes at most
    lgamma(N + 1) + L |log pi_min| + lgamma(L + 1)."""
    pi = np.asarray(pi, dtype=np.float64)
    groups = len(np.unique(pi[pi > 0]))
    ops = groups * (L + 1) ** 2 + 8 if groups <= 16 else N * L + 8
    mag = math.lgamma(N + 1) + L * abs(math.log(float(pi[pi > 0].min()))) + math.lgamma(L + 1) + 1
    return 2 * ULP_LIB * U * ops * mag


def tol_expected_nfe(N: int, value: float) -> float:
    """E[NFE] = sum_j -expm1(L log1p(-pi_j)): each term relative 3 ULP_LIB u, the sum gamma(N)."""
    return (3 * ULP_LIB * U + gamma(N)) * value + U


def rel_tol_exact_law(L: int, pi, a) -> float:
    """Relative error of every p_N(x) from the reverse chain (``exact_output_law``), given float pi.

    Per step the mass of a state is pushed along products of <= L weights (r D or 1 - r, one rounding
    each) and accumulated into at most 2^L successors (gamma(2^L)) plus 4 chunk sums: gamma(2L + 2^L + 6)
    per step, over the N' steps with pi_j > 0.  The rates r_j themselves carry the relative error of
    ``tol_reveal_rates``; a path uses at most L reveal factors and L N' stay factors 1 - r_j, whose relative
    error is |dr| / (1 - r).
    """
    pi = np.asarray(pi, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    live = pi > 0
    Np = int(live.sum())
    rem = np.maximum(1.0 - a, 1e-300)
    r = np.where(live, pi / rem, 0.0)
    dr = tol_reveal_rates(pi, a)
    rel_r = float(np.max(np.where(live, dr / np.maximum(r, 1e-300), 0.0)))
    stay = np.where(live & (r < 1 - 1e-12), dr / np.maximum(1 - r, 1e-300), 0.0)
    rel_stay = float(np.max(stay)) if stay.size else 0.0
    total = gamma(Np * (2 * L + 2 ** L + 6)) + L * rel_r + L * Np * (rel_stay + U)
    return math.expm1(1.01 * total) if total < 1 else math.inf


def tol_kl_from_law(rel_p: float, q: np.ndarray, p: np.ndarray) -> float:
    """|KL_hat - KL| for KL = sum_x q (log q - log p) given p off by a relative rel_p: the logs move by
    -log(1 - rel_p), each log is off by ULP_LIB ulps, and the sum by gamma(M)."""
    m = q > 0
    mag = float(np.sum(q[m] * (np.abs(np.log(q[m])) + np.abs(np.log(p[m])) + 1)))
    return -math.log1p(-rel_p) * 1.01 + (ULP_LIB * U + gamma(int(m.sum()) + 2)) * mag


def tol_ser_from_law(rel_p: float, p: np.ndarray) -> float:
    """|SER_hat - SER| for SER = 1 - sum_{supp} p: rel_p on every term plus gamma(M) for the sum."""
    return (rel_p + gamma(len(p) + 2)) * float(np.sum(p)) + U


def tol_chain(L: int, N: int, V: int, magnitude: float) -> float:
    """|error| of the proof-chain expectations (``chain_quantities``): each is a linear combination of
    subset entropies, expected log-predictions and learning terms (each a sum of at most V^L terms q log(.),
    at most ``magnitude`` in absolute value) with non-negative weights a^u pi^s (1 - a - pi)^r C(., .) summing
    to at most 8 N L 2^L; everything passes through at most V^L + 2^L + 4L + N + 16 roundings."""
    K = V ** L + 2 ** L + 4 * L + N + 16
    return (gamma(K) + ULP_LIB * U) * 8 * N * L * 2 ** L * (magnitude + 1)


def tol_dependencies(L: int, pi, a, exact_values) -> np.ndarray:
    """|E_hat[D_j] - E[D_j]| for the scan: its non-negative chain over L positions (3 roundings per update,
    gamma(4L + 8) relative on the count), inputs a_j (relative gamma(j)) and 1 - a_j - pi_j (absolute
    gamma(j + 2)) moving the count by at most L^2 pi_j times their error, then L pi_j - count."""
    pi = np.asarray(pi, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    ex = np.abs(np.asarray(exact_values, dtype=np.float64))
    count = L * pi - np.asarray(exact_values, dtype=np.float64)
    j = np.arange(1, len(pi) + 1)
    g_in = np.array([gamma(k + 2) for k in j])
    return 1.01 * (gamma(4 * L + 8) * np.abs(count) + float(L) ** 2 * pi * 2 * g_in + U * (L * pi + ex)) + 1e-300


def tol_log_rho(l: int, groups: int, N: int, pi_min: float) -> float:
    """Absolute error of log rho from the log-space DP: (l+1)^2 (2 log2 N + 2) log-additions per group, each
    off by 2 ULP_LIB ulps of magnitudes at most l |log pi_min| + lgamma(l + 1) + C(l, 2) log 2."""
    mag = l * abs(math.log(pi_min)) + math.lgamma(l + 1) + l * (l - 1) / 2 * math.log(2) + 1
    return 2 * ULP_LIB * U * (l + 1) ** 2 * (2 * max(1, N).bit_length() + 2) * max(groups, 1) * mag


def tol_oracle_ser(K: int, ser: float, dlog: float) -> float:
    """|SER_hat - SER| for SER = -expm1(K log rho) with log rho off by dlog."""
    return (1 - ser) * math.expm1(min(K * dlog * 1.01, 700.0)) + 2 * ULP_LIB * U


def tol_learning_max(V: int, magnitude: float) -> float:
    """|max_hat - max| of the per-token KL: a row is a sum of V terms q (log q - log p) with the posterior q
    off by one rounding; the magnitude bounds sum_v q (|log q| + |log p| + 1)."""
    return (gamma(V + 8) + 2 * ULP_LIB * U) * (magnitude + 1)


def tol_ser_lower_bound(K: int, value: float, P: float, dP: float, p_e: float = 0.5) -> float:
    """|error| of -expm1(K log1p(-p_e (1 - P))) when P is off by dP: K p_e dP / (1 - p_e (1 - P)) in the
    exponent (plus the roundings of log1p, expm1 and the products), times 1 - value."""
    x = p_e * (1 - P)
    d_exp = K * (p_e * dP / max(1 - x, 1e-300) + 4 * ULP_LIB * U * abs(math.log1p(-x)) + 4 * U)
    return (1 - value) * math.expm1(min(1.01 * d_exp, 700.0)) + 2 * ULP_LIB * U
