"""``mdmt verify``: every check family of :mod:`.checks` on embedded instances, summarised per family.

The instances (``INSTANCES``; ``mdmt verify`` prints them as a legend) are small languages where the
exact law, every reveal order and every revealed set can be enumerated, chosen so that every
inequality family has an instance where its bound is attained or within 1 % (the copying chains,
the point mass, the interval HMM with l = 2 and a bit-biased denoiser, the last step of a long
schedule for Lemma B.11, N = floor(C_0 L) at l = 2), plus random n-gram and HMM languages.

The jobs (:func:`jobs`: the family registry) are independent; :func:`run_checks` runs them in one forked process
per usable core, the costliest first, and returns the rows in the order of the jobs: the same rows as in one
process.
"""

from __future__ import annotations

import contextlib
import gc
import math
import re
import sys
import time
from dataclasses import dataclass
from functools import partial
from typing import Callable

from mdmt.results import Result
from mdmt.constructions.languages.interval import interval_hmm
from mdmt.constructions.languages.ngram import NGram
from mdmt.constructions.languages.random_languages import random_hmm, random_ngram

from . import checks
from . import checks_beyond as beyond
from . import checks_refute as refute_checks
from . import proof_cache
from .checks_parallelbench import parallelbench_rows
from .checks import FAMILIES, Instance, Row


def _copy(V: int, start=None) -> NGram:
    """x_1 ~ start (uniform by default), then x_{i+1} = x_i: the copying 2-gram."""
    import numpy as np

    return NGram(2, np.full(V, 1.0 / V) if start is None else start, np.eye(V))


def instances(quick: bool) -> list[Instance]:
    dens = ("oracle", ("mix", 0.1), ("temper", 0.7))
    out = [
        Instance("ng2", "random 2-gram, |V| = 3, L = 5 (seed 1)", random_ngram(2, 3, 2.0, 0.05, seed=1), 5, n=2,
                 denoisers=dens, schedules=(("linear", 3), ("cosine", 4), ("warmstart", 4, 0.2), ("linear", 32))),
        Instance("ng3", "random 3-gram, |V| = 2, L = 6 (seed 1)", random_ngram(3, 2, 2.0, 0.05, seed=1), 6, n=3,
                 denoisers=dens, schedules=(("linear", 3), ("cosine", 4), ("warmstart", 4, 0.2), ("linear", 64))),
        Instance("hmm", "random HMM, 3 states, |V| = 3, L = 5 (seed 3)", random_hmm(3, 3, 3.0, 0.15, seed=3), 5,
                 denoisers=dens if not quick else ("oracle", ("mix", 0.1)),
                 schedules=(("linear", 3), ("cosine", 4), ("linear", 32))),
        Instance("cp2", "copying 2-gram x_(i+1) = x_i, |V| = 2, L = 3: Lemmas A.1, B.8, B.2, B.9 attained", _copy(2), 3,
                 n=2, exact=True, denoisers=("oracle", ("mix", 0.5)), schedules=(("linear", 1), ("linear", 3),
                                                                               ("warmstart", 3, 0.5))),
        Instance("cp101", "copying 2-gram, |V| = 101, L = 2: Theorem 4.3 within 1 % (eps = 0)", _copy(101), 2, n=2,
                 exact=True, schedules=(("linear", 4),)),
        Instance("pm2", "point mass 00, L = 2, uniform mixture 0.6: Theorem 4.3 within 1 % (eps > 0)",
                 _copy(2, [1.0, 0.0]), 2, n=2, exact=True, denoisers=(("mix", 0.6),), schedules=(("linear", 200),)),
        Instance("iv2", "interval HMM, l = 2, L = 4: Theorem 4.4 attained (bit bias 1/4)", interval_hmm(2), 4,
                 interval=2, exact=True, denoisers=("oracle", ("bit", 0.25)),
                 schedules=(("linear", 2), ("warmstart", 3, 0.5), ("cosine", 3))),
        Instance("iv3", "interval HMM, l = 3, L = 6", interval_hmm(3), 6, interval=3,
                 denoisers=("oracle", ("bit", 0.55), ("bit", 0.7)), schedules=(("linear", 3), ("cosine", 4))),
    ]
    if not quick:
        out += [
            Instance("ng3b", "random 3-gram, |V| = 2, L = 8 (seed 3), reveal orders of <= 3 steps",
                     random_ngram(3, 2, 2.0, 0.05, seed=3), 8, n=3, denoisers=dens, max_blocks=3,
                     schedules=(("linear", 3), ("warmstart", 3, 0.3))),
            Instance("ng4", "random 4-gram, |V| = 2, L = 8 (seed 5), reveal orders of <= 3 steps",
                     random_ngram(4, 2, 2.0, 0.05, seed=5), 8, n=4, denoisers=dens, max_blocks=3,
                     schedules=(("linear", 3), ("cosine", 3))),
            Instance("hmm2", "random HMM, 4 states, |V| = 2, L = 8 (seed 6), reveal orders of <= 3 steps",
                     random_hmm(4, 2, 3.0, 0.1, seed=6), 8, denoisers=dens, max_blocks=3, schedules=(("linear", 3),)),
        ]
    return out


COSTS = {"iv3": 1.8, "cp101": 1.3, "ng3": 0.6, "ng3b": 1.2, "ng4": 1.2, "hmm2": 1.4}  # of an instance's reveal orders


@dataclass
class Job:
    families: tuple
    run: Callable[[], list[Row]]
    label: str
    group: str = ""  # the jobs of one group run in one process, in order (they share an instance's cached pieces)
    cost: float = 0.1  # expected seconds (first run included): worker processes take the costliest groups first


# The jobs that run the policies' exact chain (mdmt.constructions.reverse.policy_exact) share one process: on an
# empty numba cache its kernels (seconds to compile) are then compiled once, not once in every worker that
# reaches such a job before the first has written the cache.
POLICY_CHAIN = "policy chain"
FULL_ONLY = frozenset({"OP", "PB", "SP"})  # families that only the full verify runs


def _sampler_rows():
    from .references_samplers import sampler_rows

    return sampler_rows()


def jobs(quick: bool, cache: bool = False) -> list[Job]:
    """The jobs of a run; with ``cache``, the rows of the exact, deterministic families (SD, CE, PB) of an earlier run
    of this source and these library versions (:mod:`.proof_cache`)."""
    # costs: seconds measured on two cores, on a fresh numba cache for the policy laws (their kernels compile)
    derivations = proof_cache.derivation_rows if cache else checks.derivation_rows
    out = [Job(("SD",), partial(derivations, 0), "derivations, part 1", cost=1.2),
           Job(("SD",), partial(derivations, 1), "derivations, part 2", cost=0.9),
           Job(("S",), checks.schedule_rows, "schedules", cost=0.5),
           Job(("D",), lambda: checks.dependency_rows(quick), "dependencies", cost=0.1 if quick else 1.2),
           Job(("B11",), lambda: checks.separator_bound_rows(quick), "Lemma B.11"),
           Job(("C5",), lambda: checks.theorem42_rows(quick), "Theorem 4.2"),
           Job(("T43u",), checks.union_bound_rows, "Lemma C.1"),
           Job(("T44", "T44x", "T44N", "T44C"), lambda: checks.interval_rows(quick), "interval HMM, any L"),
           Job(("CV",), checks.curve_rows, "curves"),
           Job(("AB",), lambda: beyond.atlas_rows(quick), "atlas bounds", POLICY_CHAIN, cost=1.0 if quick else 7.0),
           Job(("AV",), beyond.atlas_value_rows, "atlas constants", POLICY_CHAIN),
           Job(("AX",), beyond.expected_failure_rows, "atlas: documented failures", POLICY_CHAIN),
           Job(("IT",), partial(beyond.information_rows, quick), "information quantities", cost=0.2 if quick else 0.8),
           Job(("PL",), beyond.policy_rows, "policy laws", POLICY_CHAIN, cost=5.0),
           Job(("CE",), partial(proof_cache.certification_rows if cache else beyond.certification_rows, quick),
               "certification", cost=1.0),
           Job(("IA",), beyond.interval_rows, "interval arithmetic"),
           Job(("RF",), refute_checks.refutation_rows, "refutation layer", POLICY_CHAIN)]
    if not quick:  # FULL_ONLY below: its kernels (the languages' own posteriors) cost more to compile than the rest of --quick
        out.append(Job(("OP",), beyond.posterior_rows, "oracle posteriors"))
        out.append(Job(("PB",), proof_cache.parallelbench_rows if cache else parallelbench_rows,
                       "ParallelBench Section 4", cost=20.0))
        out.append(Job(("SP",), _sampler_rows, "samplers beyond the paper", cost=6.0))
    for inst in instances(quick):
        out.append(Job(("C3", "C4"), partial(checks.tc_rows, inst), f"{inst.key}: total correlations", inst.key))
        out.append(Job(("C1", "C2", "C2E", "C4E", "EQ3", "LE", "T43", "T44"),
                       partial(checks.chain_rows, inst, quick), f"{inst.key}: reveal orders", inst.key,
                       cost=COSTS.get(inst.key, 0.3)))
    return out


def select(pattern: str | None) -> set[str]:
    """The families whose key or title matches ``pattern`` (a regular expression, case-insensitive)."""
    if not pattern:
        return set(FAMILIES)
    try:
        rx = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"-k {pattern!r} is not a regular expression ({exc})") from None
    chosen = {k for k, title in FAMILIES.items() if rx.search(k) or rx.search(title)}
    if not chosen:
        raise ValueError(f"-k {pattern!r} matches no check family; families: {', '.join(FAMILIES)}")
    return chosen


@contextlib.contextmanager
def _rare_collections(young: int = 50_000):
    """Run a block that builds many small objects which all stay alive (rows, exact rationals, interval
    arrays) with fewer garbage collections: the objects that exist before it (sympy, numba) are frozen
    out of the collector's scans and the young generation is collected every ``young`` allocations.
    The collector's settings are restored afterwards (cyclic garbage is still collected, later)."""
    old = gc.get_threshold()
    froze = gc.get_freeze_count() == 0
    if froze:
        gc.freeze()
    gc.set_threshold(max(old[0], young), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)
        if froze:
            gc.unfreeze()


def fork_is_safe() -> bool:
    """Whether this process can be forked safely: not once numba's threading layer has started (a child that runs a
    parallel kernel then aborts: OpenMP and numba's workqueue are not fork-safe), nor once torch is loaded (its own
    thread pools).  A notebook that computed before calling :func:`verify` runs the jobs in its own process."""
    if sys.modules.get("torch") is not None:
        return False
    numba = sys.modules.get("numba")
    if numba is None:
        return True
    try:
        numba.threading_layer()
    except ValueError:  # "Threading layer is not initialized": no parallel kernel has run here
        return True
    return False


def workers() -> int:
    """How many processes run the jobs: the usable cores (at most 4), where processes can be forked (Linux, and
    :func:`fork_is_safe`); 1 elsewhere, or with ``MDMT_VERIFY_JOBS=1`` (any positive integer sets the number)."""
    from mdmt.runtime.parallel import env_positive_int, usable_cores

    n = env_positive_int("MDMT_VERIFY_JOBS")
    if n is None:
        n = min(4, usable_cores())
    return n if sys.platform.startswith("linux") and fork_is_safe() else 1


_TODO: list[tuple[Job, set]] = []  # the jobs of the run in progress, read by the forked workers


def _run_group(indices: list[int]) -> list[list[Row]]:
    """The rows of a group of jobs (of :data:`_TODO`), each filtered to the chosen families."""
    out = []
    for i in indices:
        job, chosen = _TODO[i]
        out.append([r for r in job.run() if r.family in chosen])
    return out


def run_checks(quick: bool = False, pattern: str | None = None,
               progress: Callable[[int, int, str], object] | None = None, processes: int | None = None,
               cache: bool = False) -> list[Row]:
    """The rows of the selected families, in the order of :func:`jobs` whatever the number of processes.

    The jobs are independent: with several workers (:func:`workers`, or ``processes``) they run in forked processes,
    a group (an instance's two jobs) in one process, the groups handed out as processes free up; the rows are
    the same, in the same order, as in one process.  ``cache``: the rows of the exact, deterministic families (SD, CE,
    PB) of an earlier run of this source and these library versions (:mod:`.proof_cache`; ``mdmt verify`` uses it)."""
    chosen = select(pattern)
    todo = [j for j in jobs(quick, cache) if chosen & set(j.families)]
    groups: dict[str, list[int]] = {}
    for k, job in enumerate(todo):
        groups.setdefault(job.group or f"#{k}", []).append(k)
    n = min(workers() if processes is None else processes, len(groups))  # workers() also checks MDMT_VERIFY_JOBS
    n = n if fork_is_safe() else 1
    results: dict[int, list[Row]] = {}
    done = 0
    with _rare_collections():
        if n <= 1:
            for k, job in enumerate(todo):
                results[k] = [r for r in job.run() if r.family in chosen]
                if progress:
                    progress(k + 1, len(todo), job.label)
        else:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor, as_completed

            _TODO[:] = [(j, chosen) for j in todo]
            try:
                with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
                    costliest = sorted(groups.values(), key=lambda g: -sum(todo[k].cost for k in g))
                    futures = {pool.submit(_run_group, g): g for g in costliest}
                    for fut in as_completed(futures):
                        for k, rows_k in zip(futures[fut], fut.result()):
                            results[k] = rows_k
                            done += 1
                            if progress:
                                progress(done, len(todo), todo[k].label)
            finally:
                _TODO.clear()
    return [r for k in range(len(todo)) for r in results[k]]


def _methods(rs) -> str:
    order = ["proved", "certified", "exact", "numeric", "stated", "undecided", "FAILED"]
    present = {r.method for r in rs}
    return "+".join(m for m in order if m in present)


def summarize(rows: list[Row]) -> tuple[list[dict], list[dict]]:
    """One line per family, and one per (family, instance): cases, methods, the tightest row, verdict."""
    fam_rows: dict[str, list[Row]] = {}
    grp_rows: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        fam_rows.setdefault(r.family, []).append(r)
        grp_rows.setdefault((r.family, r.instance.split("/")[0]), []).append(r)

    def line(rs, **extra):
        bad = [r for r in rs if not r.holds]
        ineq = [r for r in rs if r.relation in ("<=", ">=")]
        eqs = [r for r in rs if r.relation == "=="]
        tight = min(ineq, key=lambda r: (r.rel_margin if math.isfinite(r.rel_margin) else math.inf)) if ineq else None
        worst = min(rs, key=lambda r: (r.holds, r.margin if math.isfinite(r.margin) else -math.inf))
        out = {**extra, "cases": len(rs), "method": _methods(rs), "violations": len(bad),
               "verdict": "ok" if not bad else "VIOLATED"}
        if tight is not None:
            out.update(min_margin=min(r.margin for r in ineq), tightest_rel=tight.rel_margin, tightest=tight.id,
                       tightest_value=tight.mid, tightest_bound=tight.bound_mid, attained=sum(r.margin == 0 for r in ineq))
        if eqs:
            out["max_difference"] = max((abs(r.value[1] - r.bound[0]) if r.method != "numeric" else
                                         abs(r.value[0] - 0.5 * (r.bound[0] + r.bound[1]))) for r in eqs
                                        if math.isfinite(r.value[0]))
        out["worst"] = worst.id
        return out

    fams = [line(rs, family=f, title=FAMILIES[f]) for f, rs in sorted(fam_rows.items(), key=lambda kv: list(FAMILIES).index(kv[0]))]
    groups = [line(rs, id=f"{f}/{i}", family=f, instance=i) for (f, i), rs in grp_rows.items()]
    return fams, groups


def verify(quick: bool = False, pattern: str | None = None, progress: Callable[[int, int, str], object] | None = None,
           keep_rows: bool = False, cache: bool = False) -> Result:
    """Run the selected families; the summary per family and per (family, instance), the violated rows
    (all rows with ``keep_rows``), and the instances' legend: a :class:`mdmt.results.Result` whose tables are
    ``families``, ``groups``, ``violated`` (and ``rows``).  ``cache``: see :func:`run_checks`."""
    t0 = time.perf_counter()
    rows = run_checks(quick, pattern, progress, cache=cache)
    fams, groups = summarize(rows)
    bad = [r for r in rows if not r.holds]
    out = {"quick": quick, "pattern": pattern, "checks": len(rows), "violations": len(bad),
           "seconds": time.perf_counter() - t0, "families": fams, "groups": groups,
           "violated": [row_dict(r) for r in bad],
           "instances": {i.key: i.description for i in instances(quick)}}
    if keep_rows:
        out["rows"] = [row_dict(r) for r in rows]
    return Result(out, tables=("families", "groups", "violated") + (("rows",) if keep_rows else ()))


def row_dict(r: Row) -> dict:
    return {"id": r.id, "family": r.family, "value": list(r.value), "relation": r.relation, "bound": list(r.bound),
            "method": r.method, "holds": r.holds, "margin": r.margin, "note": r.note}
