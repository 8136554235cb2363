"""The optimal fixed-size schedule of a language beside the schedules it competes with (``mdmt schedule``).

For a language, L and N: the sizes s_1..s_N minimising E_tau KL(q || p_tau) for the oracle with
uniformly random positions (:func:`mdmt.constructions.reverse.optimal_schedule.optimal_sizes`, the
dynamic programme over the information profile of docs/atlas.md; Lavenant & Zanella, arXiv
2510.25544), and beside it, from the same profile:

``uniform``     balanced sizes (Li & Cai, arXiv 2505.21400);
``warmstart``   the paper's i.i.d. process with Theorem 4.2's schedule (Lemma B.12: pi_1 = 0.05, the other
                N - 1 steps share the rest), E KL by the binomial step law (``iid_profile_kl``);
``linear``      the paper's i.i.d. process with the linear schedule;
``random:tc``   mdmt's randomised sizes in the spirit of Zhao & Cai (arXiv 2602.20126), ``random_sizes_kl``.

Every number is a linear functional of the profile: exact for an exact profile, and for a Monte
Carlo profile the mean of the per-sample values with a Student-t interval.  :func:`min_steps` gives,
against L, the smallest N whose optimal (and balanced) schedule reaches a KL target (or a KL/L
target: the TER gap, Theorem 4.2's quantity).
"""

from __future__ import annotations

import numpy as np

from mdmt.constructions.reverse.confidence import mean_interval
from mdmt.constructions.reverse.optimal_schedule import iid_profile_kl, kl_by_steps, optimal_sizes, profile, sizes_kl
from mdmt.constructions.reverse.policies import balanced_sizes
from mdmt.constructions.reverse.schedules import expected_nfe, reveal_probabilities
from mdmt.constructions.types import Language, Seed
from mdmt.runtime.validation import positive_int

from .atlas import random_sizes_kl

WARMSTART_FIRST = 0.05  # Theorem 4.2's pi_1 (mdmt's default of the warmstart schedule)


def _linear_weights(fun, L: int) -> np.ndarray:
    """w with fun(f) = w . f for a functional linear in the profile f (u = 0..L)."""
    eye = np.eye(L + 1)
    return np.array([fun(eye[k]) for k in range(L + 1)])


def _value(prof: dict, fun, level: float) -> tuple[float, list | None]:
    L = len(prof["profile"]) - 1
    if "samples" not in prof:
        return float(fun(prof["profile"])), None
    w = _linear_weights(fun, L)
    m, a, b = mean_interval(prof["samples"] @ w, level)
    return m, [a, b]


def schedule_study(language: Language, L: int, N: int, method: str = "auto", num: int = 2000, seed: Seed = 0,
                   level: float = 0.95,
                   prof: dict | None = None) -> dict:
    """The optimal sizes and KL at (L, N) and the comparisons (module docstring).

    Keys: ``length``, ``steps``, ``profile_method``, ``sizes``, ``kl_nats`` (E_tau KL of the optimal sizes),
    ``kl_ci`` (Monte Carlo profiles only), ``comparisons`` (one row per schedule: ``schedule``, ``sizes`` (fixed
    sizes only), ``kl_nats``, ``kl_ci``, ``expected_nfe``, ``ratio`` = its KL / the optimal KL).
    """
    L = positive_int("L", L)
    N = positive_int("number of steps N", N)
    if N > L:
        raise ValueError(f"N = {N} steps > L = {L}: a fixed-size schedule reveals at least one position per step")
    prof = prof or profile(language, L, method, num=num, seed=seed)
    f = prof["profile"]
    sizes, _ = optimal_sizes(f, N)
    kl, ci = _value(prof, lambda g: sizes_kl(g, sizes), level)
    rows = [{"schedule": "optimal", "sizes": sizes.tolist(), "kl_nats": kl, "kl_ci": ci, "expected_nfe": float(N)}]
    bal = balanced_sizes(L, N)
    k, c = _value(prof, lambda g: sizes_kl(g, bal), level)
    rows.append({"schedule": "uniform", "sizes": bal.tolist(), "kl_nats": k, "kl_ci": c, "expected_nfe": float(N)})
    for name, spec in (("warmstart", f"warmstart:{WARMSTART_FIRST}"), ("linear", "linear")):
        pi = reveal_probabilities(spec, N)
        k, c = _value(prof, lambda g, pi=pi: iid_profile_kl(g, pi), level)
        rows.append({"schedule": f"iid:{spec}", "sizes": None, "kl_nats": k, "kl_ci": c,
                     "expected_nfe": float(expected_nfe(pi, L))})
    k, c = _value(prof, lambda g: random_sizes_kl(g, N, "tc"), level)
    rows.append({"schedule": "random:tc", "sizes": None, "kl_nats": k, "kl_ci": c, "expected_nfe": None})
    for r in rows:
        r["ratio"] = r["kl_nats"] / kl if kl > 0 else None
    return {"length": L, "steps": N, "profile_method": prof["method"], "sizes": sizes.tolist(), "kl_nats": kl,
            "kl_ci": ci, "comparisons": rows}


def min_steps(language, lengths, target: float, per_token: bool = False, method: str = "auto", num: int = 2000,
              seed=0) -> list[dict]:
    """Against L: the smallest N whose optimal schedule, and whose balanced sizes, reach E KL <= target
    (E KL / L <= target with ``per_token``).  With a Monte Carlo profile the point estimates are compared."""
    if not (target > 0 and np.isfinite(target)):
        raise ValueError(f"the KL target must be a positive number, got {target!r}")
    out = []
    for L in lengths:
        L = positive_int("L", L)
        f = profile(language, L, method, num=num, seed=seed)
        goal = target * L if per_token else target
        opt = kl_by_steps(f["profile"], L, stop_at=goal + 1e-12)
        bal = np.array([sizes_kl(f["profile"], balanced_sizes(L, n)) for n in range(1, L + 1)])
        row = {"length": L, "profile_method": f["method"]}
        for name, kls in (("optimal", opt), ("uniform", bal)):
            hit = np.flatnonzero(kls <= goal + 1e-12)
            row[f"{name}_steps"] = int(hit[0]) + 1 if hit.size else None
            row[f"{name}_kl_nats"] = float(kls[hit[0]]) if hit.size else None
        out.append(row)
    return out
