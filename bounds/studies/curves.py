"""Bound curves and the step counts they imply (Theorems 4.2-4.4; Appendices B and C of the paper).

TER: for an n-gram over |V| tokens, the chain (C1)-(C4) bounds the per-token KL,
i.e. the log TER gap in nats, by eps_learning + log|V| E[sum_j D_j] / L (the statement
``CHAIN_BOUND``), with the exact E[sum_j D_j] of ``bounds.theorems.dependencies``.  ``min_steps_ter``
finds the smallest N whose chain bound meets the Theorem 4.2 target eps_learning + 4 eps log|V|
(the statement ``THEOREM_42``).

SER: for the interval HMM and the linear schedule, the exact oracle SER 1 - rho^(L/l), the
explicit Theorem 4.4 lower bound (``THEOREM_44_BOUND``), the Theorem 4.3 upper bound
(``THEOREM_43``), and the critical constant: the largest C such that N = C L steps still leave
SER > 1/2 (exact, oracle, linear schedule).  Every bound is evaluated from its statement in
:mod:`.statements`.  The linear schedule is handled without materialising pi when N is large,
so N = 10 L^2 at L = 10^6 is answered in milliseconds.
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from mdmt.constructions.reverse.interval_closed_forms import (MAX_INTERVAL, check_lengths, learning_error_value,
                                                                log_rho_groups)
from mdmt.constructions.reverse.schedules import WarmStart, log_p_distinct_groups, reveal_probabilities
from mdmt.runtime.validation import positive_int
from mdmt.defaults import TER_SCHEDULES
from mdmt.results import Result

from ..theorems.dependencies import chain_bound, check_dependency_work
from ..theorems.statements import THEOREM_42, THEOREM_43, THEOREM_44_BOUND, theorem_42_steps, theorem_44_constant

ARRAY_MAX_STEPS = 1 << 24  # the linear schedule is built as an array up to here (as mdmt always did)
GROUP_MAX_LENGTH = 1 << 13  # P_distinct by the grouped DP (O(L^2)) up to here; by its product form beyond
MAX_STEPS = 1 << 62


def check_ter_schedule(schedule) -> str:
    """A schedule a TER curve can vary N with: ``warmstart`` (Theorem 4.2's, its first step revealing the fraction
    eps), or any schedule SPEC of a name (``warmstart:FIRST``, ``linear``, ``cosine``, ``loglinear[:EPS]``);
    explicit reveal probabilities fix N and are refused."""
    if schedule in TER_SCHEDULES:
        return schedule
    from mdmt.constructions.reverse.schedules import parse_schedule

    text = str(schedule).strip()
    if "," in text or not text[:1].isalpha():
        raise ValueError(f"schedule {schedule!r}: explicit reveal probabilities fix N; a TER curve varies N "
                         "(use a name: warmstart[:FIRST], linear, cosine, loglinear[:EPS])")
    parse_schedule(text)  # a ValueError names what is wrong
    return text


def _pi(schedule: str, N: int, eps: float) -> np.ndarray:
    """The schedule of a TER curve: warmstart reveals the fraction eps of Theorem 4.2 first."""
    return reveal_probabilities(WarmStart(first=eps) if schedule == "warmstart" else schedule, N)


def ter_chain_bound(n: int, L: int, N: int, V: int, eps: float, eps_learning: float = 0.0, schedule: str = "warmstart") -> float:
    """The (C4) chain bound on KL(q||p_N)/L (nats/token) for N steps of a TER-curve schedule."""
    return chain_bound(n, L, _pi(schedule, N, eps), V, eps_learning)


def ter_target(V: int, eps: float, eps_learning: float = 0.0) -> float:
    """The Theorem 4.2 target eps_learning + 4 eps log|V| (statement ``THEOREM_42``)."""
    return THEOREM_42.evaluate(epsilon_learning=eps_learning, epsilon=eps, V=V)


def min_steps_ter(n: int, L: int, V: int, eps: float, eps_learning: float = 0.0, schedule: str = "warmstart",
                  max_steps: int = 1 << 20) -> int | None:
    """Smallest N with chain bound <= eps_learning + 4 eps log|V| (doubling, then bisection; None if > max_steps).

    The chain bound is non-increasing in N for these schedules on every tested grid; the
    search re-checks N-1 at the answer.
    """
    target = ter_target(V, eps, eps_learning)
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


def lengths_of(lengths, what: str = "length L") -> list[int]:
    """One length or several (any iterable) as a list of positive ints: the ``lengths`` of :func:`ter_curve` and
    :func:`ser_curve`, which both take either; an empty list is refused."""
    if isinstance(lengths, (str, bytes)) or not isinstance(lengths, Iterable):
        lengths = [lengths]
    out = [positive_int(what, L) for L in lengths]
    if not out:
        raise ValueError(f"give at least one {what}")
    return out


def _given_steps(steps) -> list:
    """The steps a caller gave, as a list: an empty one is refused (None, not [], asks for the default grid)."""
    steps = [steps] if isinstance(steps, (int, float)) else list(steps)
    if not steps:
        raise ValueError("steps: expected at least one number of steps N, got an empty list (None gives the "
                         "default grid)")
    return steps


def ter_curve(n: int, eps: float, lengths: int | Iterable[int], V: int = 8, eps_learning: float = 0.0,
              schedule: str = "warmstart", steps: Iterable[int] | None = None) -> Result:
    """Rows (L, N, the (C4) chain bound on KL/L, Theorem 4.2's explicit bound) for an n-gram over V symbols,
    the target eps_learning + 4 eps log V, the smallest N meeting it for each L (``min_steps``, keyed by L) and
    Theorem 4.2's step count; a :class:`mdmt.results.Result` (``.to_frame()``, ``.to_csv()``, ``.plot()``).
    ``lengths``: one length L or several, as for :func:`ser_curve`."""
    n = positive_int("n-gram order n", n, minimum=2)
    V = positive_int("vocabulary size |V|", V, minimum=2)
    try:
        eps = float(eps)
    except (TypeError, ValueError):
        raise ValueError(f"eps must be in (0, 1), got {eps!r}") from None
    if not 0 < eps < 1:
        raise ValueError(f"eps must be in (0, 1), got {eps!r}")
    eps_learning = learning_error_value(eps_learning, "eps_learning")
    schedule = check_ter_schedule(schedule)
    lengths = lengths_of(lengths)
    n42 = theorem_42_steps(n, eps)
    # default grid: N = 2, 4, ..., 4096 and the Theorem 4.2 step count itself (up to 2^20), so its bound shows on a row
    grid = [2 ** k for k in range(1, 13)] + ([n42] if n42 <= 1 << 20 else [])
    steps = sorted({positive_int("number of steps N", N) for N in (grid if steps is None else _given_steps(steps))})
    for L in lengths:  # the whole curve and the step search, before any of it is computed
        check_dependency_work(n, L, sum(steps), what="the TER curve")
    target = ter_target(V, eps, eps_learning)
    rows = []
    for L in lengths:
        for N in steps:
            rows.append({"L": L, "N": N, "chain_bound": ter_chain_bound(n, L, N, V, eps, eps_learning, schedule),
                         "theorem42_bound": target if (N >= n42 and schedule == "warmstart") else math.inf})
    minimal = {int(L): min_steps_ter(n, L, V, eps, eps_learning, schedule) for L in lengths}
    return Result({"n": n, "eps": eps, "vocab": V, "eps_learning": eps_learning, "schedule": schedule,
                   "target": target, "theorem42_steps": n42, "min_steps": minimal, "rows": rows},
                  figure="curve_ter_figure")


def _linear_groups(N: int) -> tuple[list[float], list[int]]:
    """The linear schedule pi_j = 1/N as (distinct values, multiplicities), without building pi.

    Up to ``ARRAY_MAX_STEPS`` the value is that of the validated vector ``np.full(N, 1/N)``: each entry divided
    by the vector's float sum, as :func:`reveal_probabilities` does, so every result equals the one computed from
    that vector bit for bit (an O(N) sum, no vector kept and none sorted); beyond, 1/N itself.
    """
    if N <= ARRAY_MAX_STEPS:
        return [(1.0 / N) / float(np.full(N, 1.0 / N).sum())], [N]
    return [1.0 / N], [N]


def p_distinct_linear(N: int, L: int) -> float:
    """P_distinct(L) of the linear schedule with N steps: the grouped DP of ``p_distinct`` where it is cheap,
    else prod_{k<L} (1 - k/N) summed in log space (O(L), no cancellation)."""
    if N < L:
        return 0.0
    if N <= ARRAY_MAX_STEPS and L <= GROUP_MAX_LENGTH:
        return float(math.exp(log_p_distinct_groups(*_linear_groups(N), L)))
    if L > 1 << 27:
        raise ValueError(f"P_distinct at L = {L} costs O(L) memory and time; mdmt's limit is L <= {1 << 27}")
    k = np.arange(L, dtype=np.float64)
    return float(math.exp(np.sum(np.log1p(-k / N))))


def oracle_ser_lin(l: int, L: int, N: int) -> float:
    """The exact oracle SER 1 - rho^(L/l) of the linear schedule with N steps (any N)."""
    l, L = check_lengths(l, L)
    return float(-math.expm1((L // l) * log_rho_groups(l, *_linear_groups(N))))


def critical_c(l: int, L: int) -> tuple[float, int]:
    """(N*/L, N*) with N* the largest N for which the oracle SER (linear schedule) is > 1/2."""
    ser = lambda N: oracle_ser_lin(l, L, N)  # noqa: E731
    if ser(1) <= 0.5:
        return 0.0, 0
    hi = 1
    while ser(hi) > 0.5:
        hi *= 2
        if hi > MAX_STEPS:
            raise ValueError(f"the oracle SER stays above 1/2 beyond N = {MAX_STEPS} steps at l = {l}, L = {L}")
    lo = hi // 2  # ser(lo) > 1/2 >= ser(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ser(mid) > 0.5 else (lo, mid)
    return lo / L, lo


def ser_curve(l: int, L: int | Iterable[int], eps_learning: float = 1 / 128,
              steps: Iterable[int] | None = None) -> Result:
    """Rows (L, N, C = N/L, exact oracle SER, Theorem 4.4 lower bound at eps_learning, Theorem 4.3 upper bound for
    the oracle) on the interval HMM of interval length l, with, for each L, the critical C (largest N/L with oracle
    SER > 1/2; ``critical_c`` and ``critical_steps``, keyed by L, as ``min_steps`` of :func:`ter_curve`) and
    Theorem 4.4's constant C_0; a :class:`mdmt.results.Result` (``.to_frame()``, ``.plot()``).

    ``L``: one length or several (each a multiple of l), as for :func:`ter_curve`; ``steps``: the N of every
    length (default: N = C L for C = 0.01 ... 100, and L^2, 10 L^2)."""
    l = positive_int("interval length l", l, minimum=2)
    if l > MAX_INTERVAL:
        raise ValueError(f"interval length l = {l}: the exact interval closed forms cost O(l^2 log N) per point; "
                         f"mdmt's limit is l <= {MAX_INTERVAL} (use a shorter interval)")
    lengths = lengths_of(L, "sequence length L")
    eps_learning = learning_error_value(eps_learning, "eps_learning")
    for length in lengths:
        if length % l:
            raise ValueError(f"sequence length L={length} is not a multiple of the interval length l={l}")
    grid = {}
    for length in lengths:  # every step count, before any point is computed
        Ns = _given_steps(steps) if steps is not None else sorted({max(1, int(length * c)) for c in (0.01, 0.03, 0.1, 0.2, 0.3, 0.5, 1, 2, 4, 10, 100)}
                             | {length * length, 10 * length * length})
        grid[length] = Ns = [positive_int("number of steps N", N) for N in Ns]
        if max(Ns) > MAX_STEPS:
            raise ValueError(f"N = {max(Ns)} steps exceeds mdmt's limit of {MAX_STEPS}")
    rows, critical = [], {}
    for length in lengths:
        for N in grid[length]:
            rows.append({"L": length, "N": N, "C": N / length, "oracle_ser": oracle_ser_lin(l, length, N),
                         "theorem44_lower": THEOREM_44_BOUND.evaluate(epsilon_learning=eps_learning,
                                                                      P_distinct_l=p_distinct_linear(N, l), L=length,
                                                                      l=l),
                         "theorem43_upper": THEOREM_43.evaluate(P_distinct=p_distinct_linear(N, length), L=length,
                                                                epsilon_learning=0.0)})
        critical[length] = critical_c(l, length)
    return Result({"interval_length": l, "eps_learning": eps_learning,
                   "critical_c": {length: c for length, (c, _) in critical.items()},
                   "critical_steps": {length: n_star for length, (_, n_star) in critical.items()},
                   "theorem44_constant": theorem_44_constant(l, eps_learning), "rows": rows},
                  figure="curve_ser_figure")
