"""The SER and TER questions for policies beyond i.i.d. reveal steps (Theorems 4.2 and 4.4 of the paper, revisited).

SER on the interval HMM (Theorem 4.4, Example C.7), oracle denoiser, per policy:

* i.i.d. reveal steps (the theorem's setting): the exact closed form 1 - rho^(L/l)
  (:mod:`mdmt.constructions.reverse.interval_closed_forms`) -- the Theorem 4.4 curve;
* fixed orders (stride, blocks): the exact closed form 1 - 2^(-same-step pairs);
* every other policy: :func:`~mdmt.constructions.reverse.interval_policies.pattern_run`, a Monte Carlo
  average over the policy's reveal trajectories of the exact probability that every pair agrees,
  with a Student-t interval (exact when the trajectory is deterministic).

``ser_point`` evaluates one (l, L, policy, N); ``min_steps_ser`` finds the smallest N whose SER
is at most a target (bisection on N: exact for the closed forms; for Monte Carlo points the
decision uses the point estimate, and the interval at the answer is reported).
``ser_point_cost``, ``ser_curve_cost`` and ``min_steps_ser_cost`` estimate the operations and the
peak memory of each before it runs (for the resource guard,
:mod:`mdmt.runtime.resources`): a Monte Carlo point keeps (num, L) arrays and does O(num L)
work per step; an i.i.d. point builds its N-step schedule.

TER on an n-gram (Theorem 4.2): the Monte Carlo upper bound E[log q(x) - log p_traj(x)]/L on the
per-token KL (:func:`~mdmt.constructions.reverse.policy_sampler.teacher_forced_estimate`, x ~ q,
the policy's own choices); ``min_steps_ter`` finds the smallest N on a doubling grid whose
bound (upper end of its interval) meets the target, and for threshold / entropy-sum the smallest
mean NFE over their parameter grids.
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from mdmt.constructions.reverse.confidence import mean_interval
from mdmt.constructions.reverse.interval_closed_forms import oracle_ser, oracle_ser_linear
from mdmt.constructions.reverse.interval_policies import fixed_order_ser, pattern_run
from mdmt.constructions.reverse.policies import IID, EntropySum, FixedOrder, Threshold, parse_policy
from mdmt.constructions.reverse.policy_sampler import teacher_forced_estimate
from mdmt.constructions.reverse.schedules import expected_nfe
from mdmt.runtime.validation import positive_int

from mdmt.defaults import SER_POLICIES, TER_POLICIES  # noqa: F401  (the studies' defaults, defined once)
from mdmt.results import Result

from ..theorems.interval_bounds import ser_lower_bound

THRESHOLD_GRID = (0.5, 0.7, 0.9, 0.95, 0.99)
GAMMA_GRID = (0.05, 0.2, 0.5, 1.0, 2.0, 4.0)


def needs_steps(spec: str) -> bool:
    """Whether a policy SPEC takes the number of steps N (threshold and entropy-sum run until done)."""
    return not spec.startswith(("threshold", "entropy-sum"))


def max_steps(spec: str, L: int) -> int:
    """The largest N a policy accepts at length L (fixed sizes reveal at least one position per step)."""
    return 1 << 40 if spec.startswith("iid") else L


MC_OPS_PER_ENTRY = 16  # array operations per (sequence, position) in one step of a Monte Carlo reveal trajectory
MC_BYTES_PER_ENTRY = 64  # bytes per (sequence, position) of its working arrays (keys, scores, masks, steps)
IID_BYTES_PER_STEP = 64  # bytes per step of an i.i.d. schedule and the tables computed from it
IID_OPS_PER_STEP = 160  # operations per (step, interval position) of the closed-form SER (measured: about 130 ns each)


def _kind(spec: str) -> str:
    """``iid``, ``fixed`` (a closed form over a fixed order) or ``monte carlo``: how ``ser_point`` evaluates a policy."""
    pol = parse_policy(spec, 1 if needs_steps(spec) else None)
    return "iid" if isinstance(pol, IID) else "fixed" if isinstance(pol, FixedOrder) else "monte carlo"


def ser_point_cost(l: int, L: int, spec: str, N: int | None, num: int, kind: str | None = None) -> tuple[int, int]:
    """(operations, peak bytes) of :func:`ser_point` at (l, L, policy, N); N None: the policy runs until done."""
    kind = kind or _kind(spec)
    if kind == "iid":
        n_steps = L if N is None else N  # an i.i.d. policy always has its N; None only in a caller's mistake
        return IID_OPS_PER_STEP * n_steps * l + L, IID_BYTES_PER_STEP * n_steps
    if kind == "fixed":
        return 8 * L * l, 32 * L
    steps = N if N is not None else L  # threshold / entropy-sum: at most L steps
    return MC_OPS_PER_ENTRY * num * L * steps, MC_BYTES_PER_ENTRY * num * L


def ser_curve_cost(l: int, L: int, specs, steps, num: int) -> tuple[int, int]:
    """(operations, peak bytes) of :func:`ser_curve`: the sum of its points' work, the largest point's memory."""
    ops = peak = 0
    for spec in specs:
        kind = _kind(spec)
        grid = [None] if not needs_steps(spec) else [N for N in steps if N <= max_steps(spec, L)]
        for N in grid:
            o, m = ser_point_cost(l, L, spec, N, num, kind)
            ops, peak = ops + o, max(peak, m)
    return ops, peak


def _iid_steps_needed(l: int, L: int, target: float, cap: int) -> int:
    """The N where the doubling of :func:`min_steps_ser` stops for i.i.d. steps (estimated with the linear schedule)."""
    N = 1
    while N < cap and oracle_ser_linear(l, L, N) > target:
        N = min(2 * N, cap)
    return N


def min_steps_ser_cost(l: int, L: int, spec: str, target: float, num: int) -> tuple[int, int]:
    """(operations, peak bytes) of :func:`min_steps_ser`: doubling then bisection, each point bounded by its cost."""
    kind = _kind(spec)
    if not needs_steps(spec):
        return ser_point_cost(l, L, spec, None, num, kind)
    cap = max_steps(spec, L)
    top = _iid_steps_needed(l, L, target, cap) if kind == "iid" else cap
    o, m = ser_point_cost(l, L, spec, top, num, kind)  # work grows with N: the doubling costs at most 2 points at top,
    return (top.bit_length() + 3) * o, m  # the bisection one per halving


def ser_point(l: int, L: int, spec: str, N: int | None = None, num: int = 2000, seed=0) -> dict:
    """SER of one policy on the interval HMM with the oracle: keys ser, ci, nfe, method."""
    pol = parse_policy(spec, N)
    if isinstance(pol, IID):
        pi = pol.pi
        s = oracle_ser(l, L, pi)
        return {"ser": s, "ci": [s, s], "nfe": expected_nfe(pi, L), "method": "closed form",
                "theorem44_lower": ser_lower_bound(l, L, pi, 0.0)}
    if isinstance(pol, FixedOrder):
        s = fixed_order_ser(l, pol.order(L))
        return {"ser": s, "ci": [s, s], "nfe": pol.expected_nfe(L), "method": "closed form"}
    w, nfe = pattern_run(l, L, pol, num, seed)
    m, a, b = mean_interval(w)
    return {"ser": max(0.0, 1.0 - m), "ci": [max(0.0, 1.0 - b), min(1.0, 1.0 - a)], "nfe": float(nfe.mean()),
            "method": f"Monte Carlo over reveal trajectories ({num})" if a < b else "exact (deterministic trajectory)"}


def min_steps_ser(l: int, L: int, spec: str, target: float = 0.1, num: int = 2000, seed=0) -> dict:
    """The smallest N with SER <= target (bisection after doubling); for threshold/entropy-sum the one run's NFE."""
    if not needs_steps(spec):
        p = ser_point(l, L, spec, None, num, seed)
        return {"steps": None, **p, "reached": p["ser"] <= target}
    cap = max_steps(spec, L)
    ok = lambda N: ser_point(l, L, spec, N, num, seed)["ser"] <= target  # noqa: E731
    hi = 1
    while not ok(hi):
        if hi >= cap:
            return {"steps": None, **ser_point(l, L, spec, cap, num, seed), "reached": False}
        hi = min(2 * hi, cap)
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return {"steps": hi, **ser_point(l, L, spec, hi, num, seed), "reached": True}


def ser_curve(l: int, L: int, specs, steps, num: int = 2000, seed=0) -> list[dict]:
    """SER against N at one L for every policy (threshold/entropy-sum: one point at their own NFE)."""
    rows = []
    for spec in specs:
        grid = [None] if not needs_steps(spec) else [N for N in steps if N <= max_steps(spec, L)]
        for N in grid:
            rows.append({"l": l, "L": L, "policy": spec, "N": N, **ser_point(l, L, spec, N, num, seed)})
    return rows


def _ter_point(language, L, pol, num, seed):
    est = teacher_forced_estimate(language, L, pol, num, seed=seed)
    return est["kl_per_token_nats"], est["ci"], est["nfe_mean"]


def min_steps_ter(language, L: int, spec: str, target: float, num: int = 256, seed=0) -> dict:
    """Smallest N = 1, 2, 4, ... whose TER bound's interval lies below ``target`` (nats/token).

    Threshold (entropy-sum): the smallest mean NFE over ``THRESHOLD_GRID`` (``GAMMA_GRID``) that meets it.
    """
    L = positive_int("L", L)
    if not needs_steps(spec):
        kind = spec.split(":")[0]
        best = None
        for v in (THRESHOLD_GRID if kind == "threshold" else GAMMA_GRID):
            pol = Threshold(v) if kind == "threshold" else EntropySum(v)
            m, ci, nfe = _ter_point(language, L, pol, num, seed)
            if ci[1] <= target and (best is None or nfe < best["nfe"]):
                best = {"steps": None, "parameter": v, "kl_per_token": m, "ci": ci, "nfe": nfe}
        return best or {"steps": None, "parameter": None, "kl_per_token": None, "ci": None, "nfe": None}
    N = 1
    while True:
        m, ci, nfe = _ter_point(language, L, parse_policy(spec, N), num, seed)
        if ci[1] <= target:
            return {"steps": N, "parameter": None, "kl_per_token": m, "ci": ci, "nfe": nfe}
        if N >= max_steps(spec, L):
            return {"steps": None, "parameter": None, "kl_per_token": m, "ci": ci, "nfe": nfe}
        N = min(2 * N, max_steps(spec, L))


def study_part(part) -> object:
    """One independent part of the SER and TER studies (a Dask part of :mod:`mdmt.sweep`: a pure function).

    ``("ser curve", l, L, specs, steps, num, seed)``: :func:`ser_curve`;
    ``("ser min", l, L, spec, target, num, seed)``: :func:`min_steps_ser`;
    ``("ter min", language SPEC, L, spec, target, num, seed)``: :func:`min_steps_ter` on that language.
    """
    kind, *args = part
    if kind == "ser curve":
        return ser_curve(*args)
    if kind == "ser min":
        return min_steps_ser(*args)
    if kind == "ter min":
        from mdmt.constructions.languages.spec import language_from_spec

        name, *rest = args
        return min_steps_ter(language_from_spec(name), *rest)
    raise ValueError(f"unknown study part {kind!r}")


def study_part_cost(part) -> float:
    """The expected work of a study part (its operation count; TER searches: L x num x the steps they may try)."""
    kind, *args = part
    if kind == "ser curve":
        l, L, specs, steps, num, _ = args
        return float(ser_curve_cost(l, L, specs, steps, num)[0])
    if kind == "ser min":
        l, L, spec, target, num, _ = args
        return float(min_steps_ser_cost(l, L, spec, target, num)[0])
    _, L, spec, _, num, _ = args
    tries = len(THRESHOLD_GRID if spec.startswith("threshold") else GAMMA_GRID) if not needs_steps(spec) else \
        max(1, max_steps(spec, L)).bit_length()
    return float(L) * L * num * tries


def _study_results(parts, jobs, scheduler, progress, desc) -> list:
    """The parts' results in part order, computed in this process or on Dask (:func:`mdmt.sweep.run_parts`)."""
    from mdmt.sweep import run_parts

    return run_parts(study_part, parts, jobs=jobs, scheduler=scheduler, desc=desc, progress=progress,
                     costs=[study_part_cost(p) for p in parts]).results()


def ser_steps_grid(curve_length: int) -> list[int]:
    """The N of the SER-against-N curves at length L: 1..60 where N <= L, and 2L, 4L, ..., 64L."""
    return sorted({N for N in (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30, 40, 60) if N <= curve_length}
                  | {curve_length * c for c in (2, 4, 8, 16, 32, 64)})


def _target(target, what: str, upper: float) -> float:
    """A study's target: a number in (0, upper) -- NaN, infinities, zero, negatives and text refused, naming it."""
    if isinstance(target, bool) or not isinstance(target, (int, float, np.integer, np.floating)) \
            or not (0 < target <= upper and math.isfinite(target)):
        raise ValueError(f"target must be {what} in (0, {upper:g}{']' if math.isfinite(upper) else ')'}, "
                         f"got {target!r}")
    return float(target)


def ser_study(interval_lengths: Iterable[int], intervals: Iterable[int], policies: Iterable[str], *,
              target: float = 0.1, curve_length: int = 60, num: int = 2000, seed: int = 0, jobs: int = 1,
              scheduler: str | None = None, progress: bool = False) -> Result:
    """The SER study of ``mdmt adaptive ser`` (Theorem 4.4 beyond i.i.d. reveal steps, module docstring).

    For each interval length l: every policy's oracle SER against N at ``curve_length`` (table ``curves``),
    and for each number of intervals K the smallest N whose SER is at most ``target`` at L = K l (table
    ``min_steps``).  Each curve and each search is a part of :func:`mdmt.sweep.run_parts`.  A
    :class:`mdmt.results.Result` (``.to_frame("min_steps")``, ``.plot()``).
    """
    target = _target(target, "an SER", upper=1.0)
    ls = [positive_int("interval length l", l, minimum=2) for l in interval_lengths]
    Ks = [positive_int("number of intervals K", K) for K in intervals]
    specs = [str(p) for p in policies]
    Lc = positive_int("curve length", curve_length)
    bad = [l for l in ls if Lc % l]
    if bad:
        raise ValueError(f"curve length {Lc} is not a multiple of the interval length {bad[0]}")
    steps = ser_steps_grid(Lc)
    curve_parts = [("ser curve", l, Lc, tuple(specs), tuple(steps), num, seed) for l in ls]
    min_parts = [("ser min", l, K * l, spec, target, num, seed) for l in ls for K in Ks for spec in specs]
    results = _study_results(curve_parts + min_parts, jobs, scheduler, progress, "adaptive ser parts")
    curves = [row for r in results[:len(curve_parts)] for row in r]
    mins = [{"l": p[1], "L": p[2], "policy": p[3], **r} for p, r in zip(min_parts, results[len(curve_parts):])]
    return Result({"target": target, "curve_length": Lc, "curves": curves, "min_steps": mins},
                  tables=("curves", "min_steps"), figure="adaptive_ser_figure")


def ter_study(language: str, lengths: Iterable[int], policies: Iterable[str], *, target: float = 0.05,
              num: int = 256, seed: int = 0, jobs: int = 1, scheduler: str | None = None,
              progress: bool = False) -> Result:
    """The TER study of ``mdmt adaptive ter`` on the language SPEC ``language``: for each L and policy the
    smallest N (threshold / entropy-sum: the smallest mean NFE over their parameter grid) whose Monte Carlo
    bound on KL/L meets ``target`` (:func:`min_steps_ter`), one part each; a :class:`mdmt.results.Result` whose
    table ``rows`` has language, L, policy, steps, parameter, kl_per_token, ci, nfe."""
    target = _target(target, "a KL/L in nats per token", upper=math.inf)
    Ls = [positive_int("length L", L) for L in lengths]
    parts = [("ter min", str(language), L, str(p), target, num, seed) for L in Ls for p in policies]
    rows = [{"language": str(language), "L": part[2], "policy": part[3], **r}
            for part, r in zip(parts, _study_results(parts, jobs, scheduler, progress, "adaptive ter parts"))]
    return Result({"language": str(language), "target": target, "rows": rows}, figure="adaptive_ter_figure")
