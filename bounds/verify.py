"""``mdmt verify``: every check of bounds.checks on embedded default instances."""

from __future__ import annotations

import time

import numpy as np

from mdmt.constructions.languages.interval import interval_hmm
from mdmt.constructions.languages.random_languages import random_hmm, random_ngram
from mdmt.constructions.reverse.denoisers import BitBiasedInterval, TemperedOracle, UniformMixture
from mdmt.constructions.reverse.schedules import WarmStart, reveal_probabilities

from . import checks
from .checks import Instance, Row


def default_instances(quick: bool) -> list[Instance]:
    insts = [
        Instance("2gram V=3", random_ngram(2, 3, 2.0, 0.05, seed=1), 5, n=2),
        Instance("3gram V=2", random_ngram(3, 2, 2.0, 0.05, seed=1), 6, n=3),
        Instance("hmm S=3 V=3", random_hmm(3, 3, 3.0, 0.15, seed=3), 5),
    ]
    if not quick:
        insts += [
            Instance("3gram V=2", random_ngram(3, 2, 2.0, 0.05, seed=4), 9, n=3),
            Instance("4gram V=2", random_ngram(4, 2, 2.0, 0.05, seed=5), 8, n=4),
            Instance("hmm S=4 V=2", random_hmm(4, 2, 3.0, 0.1, seed=6), 8),
        ]
    return insts


def run_checks(quick: bool = True, progress=None) -> list[Row]:
    rows: list[Row] = []
    schedules = [("linear", reveal_probabilities("linear", 3)), ("cosine", reveal_probabilities("cosine", 4)),
                 ("warmstart(0.2)", reveal_probabilities(WarmStart(first=0.2), 4))]
    if not quick:
        schedules.append(("linear", reveal_probabilities("linear", 8)))
    insts = default_instances(quick)
    jobs = []
    for inst in insts:
        dens = [("oracle", None), ("mixture(0.1)", UniformMixture(inst.language, 0.1)),
                ("tempered(0.7)", TemperedOracle(inst.language, 0.7))]
        for sname, pi in schedules:
            for dname, den in dens:
                jobs.append(lambda inst=inst, pi=pi, den=den, dname=dname, sname=sname:
                            checks.c1_c2_c3_c4(inst, pi, den, dname, sname, n_assignments=2))
    # Theorem 4.3 is informative only when P_distinct > 0, i.e. with many more steps than positions
    for inst in insts[:2]:
        for N in (32, 256):
            pi = reveal_probabilities("linear", N)
            for dname, den in [("oracle", None), ("mixture(0.01)", UniformMixture(inst.language, 0.01))]:
                jobs.append(lambda inst=inst, pi=pi, den=den, dname=dname:
                            checks.c1_c2_c3_c4(inst, pi, den, dname, "linear", n_assignments=0))
    iv = Instance("interval l=3", interval_hmm(3), 6, interval=3)
    for pi in [reveal_probabilities(np.full(3, 1 / 3)), reveal_probabilities("cosine", 5)]:
        jobs.append(lambda pi=pi: checks.theorem_44_exact(iv, pi))
        for u in (0.55, 0.7):
            jobs.append(lambda pi=pi, u=u: checks.theorem_44_exact(iv, pi, BitBiasedInterval(iv.language, 3, u), f"bit-biased(u={u})"))
    lengths = [256, 1024, 4096] if quick else [256, 1024, 4096, 16384]
    jobs.append(lambda: checks.c5_theorem_42(2, 0.1, lengths))
    jobs.append(lambda: checks.c5_theorem_42(3, 0.3, lengths))
    if not quick:
        jobs.append(lambda: checks.c5_theorem_42(4, 0.4, lengths))
    big = [1000, 10_000, 100_000] if quick else [1000, 10_000, 100_000, 1_000_000]
    jobs.append(lambda: checks.theorem_44_large(5, 1 / 128, big))
    jobs.append(lambda: checks.theorem_44_large(3, 0.0, [999, 9999]))
    jobs.append(checks.sympy_derivations)
    for k, job in enumerate(jobs):
        rows.extend(job())
        if progress:
            progress(k + 1, len(jobs))
    return rows


def summarize(rows: list[Row]) -> list[dict]:
    """One line per (check, instance family): the row with the smallest margin, and how many rows it stands for."""
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        family = r.instance.split(" tau=")[0]
        groups.setdefault((r.check, family), []).append(r)
    out = []
    for (check, family), rs in groups.items():
        worst = min(rs, key=lambda r: (r.holds, r.margin))
        out.append({"check": check, "instance": family, "value": worst.value, "bound": worst.bound,
                    "relation": worst.relation, "margin": worst.margin, "cases": len(rs),
                    "verdict": "ok" if all(r.holds for r in rs) else "VIOLATED"})
    return out


def verify(quick: bool = True, progress=None) -> dict:
    t0 = time.perf_counter()
    rows = run_checks(quick, progress)
    table = summarize(rows)
    return {"quick": quick, "checks": len(rows), "violations": sum(not r.holds for r in rows),
            "seconds": time.perf_counter() - t0, "table": table}
