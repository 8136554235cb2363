"""Bound curves and the step counts they imply (Theorems 4.2-4.4; Appendices B and C of the paper).

TER: for an n-gram over |V| tokens, the chain (C1)-(C4) bounds the per-token KL,
i.e. the log TER gap in nats, by eps_learning + log|V| E[sum_j D_j] / L, with the
exact E[sum_j D_j] of ``bounds.dependencies``.  ``min_steps_ter`` finds the
smallest N whose chain bound meets the Theorem 4.2 target eps_learning + 4 eps log|V|.

SER: for the interval HMM, the exact oracle SER 1 - rho^(L/l), the explicit
Theorem 4.4 lower bound, the Theorem 4.3 upper bound, and the critical constant:
the largest C such that N = C L steps still leave SER > 1/2 (exact, oracle,
linear schedule).
"""

from __future__ import annotations

import math

import numpy as np

from mdmt.constructions.reverse.interval_closed_forms import oracle_ser, ser_lower_bound
from mdmt.constructions.reverse.schedules import WarmStart, p_distinct, reveal_probabilities
from mdmt.constructions.validation import positive_int

from .dependencies import chain_bound
from .statements import theorem_42_steps, theorem_44_constant

TER_SCHEDULES = ("warmstart", "linear", "cosine")


def _pi(schedule: str, N: int, eps: float) -> np.ndarray:
    """The schedule of a TER curve: warmstart reveals the fraction eps of Theorem 4.2 first."""
    return reveal_probabilities(WarmStart(first=eps) if schedule == "warmstart" else schedule, N)


def ter_chain_bound(n: int, L: int, N: int, V: int, eps: float, eps_learning: float = 0.0, schedule: str = "warmstart") -> float:
    """The (C4) chain bound on KL(q||p_N)/L (nats/token) for N steps of a TER-curve schedule."""
    return chain_bound(n, L, _pi(schedule, N, eps), V, eps_learning)


def min_steps_ter(n: int, L: int, V: int, eps: float, eps_learning: float = 0.0, schedule: str = "warmstart",
                  max_steps: int = 1 << 20) -> int | None:
    """Smallest N with chain bound <= eps_learning + 4 eps log|V| (doubling, then bisection; None if > max_steps).

    The chain bound is non-increasing in N for these schedules on every tested grid; the
    search re-checks N-1 at the answer.
    """
    target = eps_learning + 4 * eps * math.log(V)
    ok = lambda N: ter_chain_bound(n, L, N, V, eps, eps_learning, schedule) <= target + 1e-15  # noqa: E731
    hi = 1
    while not ok(hi):
        hi *= 2
        if hi > max_steps:
            return None
    lo = hi // 2  # ok(lo) is False (or lo = 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def ter_curve(n: int, eps: float, lengths, V: int = 8, eps_learning: float = 0.0, schedule: str = "warmstart",
              steps=None) -> dict:
    """Rows (L, N, chain bound, Theorem 4.2 explicit bound) and the minimal N for each L."""
    n = positive_int("n", n, minimum=2)
    if not 0 < eps < 1:
        raise ValueError(f"eps must be in (0, 1), got {eps}")
    steps = steps or [2**k for k in range(1, 13)]
    n42 = theorem_42_steps(n, eps)
    target = eps_learning + 4 * eps * math.log(V)
    rows = []
    for L in lengths:
        for N in steps:
            rows.append({"L": L, "N": N, "chain_bound": ter_chain_bound(n, L, N, V, eps, eps_learning, schedule),
                         "theorem42_bound": target if (N >= n42 and schedule == "warmstart") else math.inf})
    minimal = {int(L): min_steps_ter(n, L, V, eps, eps_learning, schedule) for L in lengths}
    return {"n": n, "eps": eps, "vocab": V, "eps_learning": eps_learning, "schedule": schedule, "target": target,
            "theorem42_steps": n42, "min_steps": minimal, "rows": rows}


def critical_c(l: int, L: int) -> tuple[float, int]:
    """(N*/L, N*) with N* the largest N for which the oracle SER (linear schedule) is > 1/2."""
    ser = lambda N: oracle_ser(l, L, np.full(N, 1.0 / N))  # noqa: E731
    if ser(1) <= 0.5:
        return 0.0, 0
    hi = 1
    while ser(hi) > 0.5:
        hi *= 2
    lo = hi // 2  # ser(lo) > 1/2 >= ser(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ser(mid) > 0.5 else (lo, mid)
    return lo / L, lo


def ser_curve(l: int, L: int, eps_learning: float = 1 / 128, steps=None) -> dict:
    """Rows (N, exact oracle SER, Theorem 4.4 lower bound at eps_learning, Theorem 4.3 upper bound for the oracle)."""
    if L % l:
        raise ValueError(f"sequence length L={L} is not a multiple of the interval length l={l}")
    steps = steps or sorted({max(1, int(L * c)) for c in (0.01, 0.03, 0.1, 0.2, 0.3, 0.5, 1, 2, 4, 10, 100)} | {L * L, 10 * L * L})
    rows = []
    for N in steps:
        pi = np.full(N, 1.0 / N)
        rows.append({"N": N, "C": N / L, "oracle_ser": oracle_ser(l, L, pi),
                     "theorem44_lower": ser_lower_bound(l, L, pi, eps_learning),
                     "theorem43_upper": 1.0 - p_distinct(pi, L)})
    c, n_star = critical_c(l, L)
    return {"interval_length": l, "L": L, "eps_learning": eps_learning, "critical_c": c, "critical_steps": n_star,
            "theorem44_constant": theorem_44_constant(l, eps_learning), "rows": rows}
