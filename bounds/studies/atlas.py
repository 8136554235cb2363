"""The bound atlas: on one small instance, the exact KL(q || p) of every reverse process beside the published bounds.

For a language, a length L and N steps, each process of :mod:`mdmt.constructions.reverse.policies`
gets one row with, all exact (enumeration over trajectories, docs/atlas.md):

``kl``                the exact KL(q || p) of the output law (nats), ``ser``, ``expected_nfe``;
``assignment_kl``     E_{x~q, traj|x}[log q(x) - log p_traj(x)] >= kl, split into
``total_correlation`` E sum_j TC(X_{S_j} | x_{U_j}) and ``learning`` (C2 of docs/theorems.md);
``chain_bound``       Feng et al.'s chain (C4): log|V| E[sum_j D_j] + learning, n-grams only, evaluated from
                      the statement ``CHAIN_BOUND`` of :mod:`.statements`.  For the paper's i.i.d. reveal
                      steps this is ``mdmt.bounds.theorems.dependencies.chain_bound`` with
                      the exact E[sum_j D_j]; for the other processes the same separator argument is
                      applied to the process's own law of (U_j, S_j) (TC(X_S | x_U) <= D(U, S) log|V|
                      holds for every U, S and x_U);
``li_cai``            (2^ceil(log2 s_max) - 1)/L sum_i I(X_i; X_-i) + learning (Li & Cai, arXiv 2505.21400,
                      as transcribed), for processes with fixed step sizes; its assumption (uniformly
                      random positions) holds only for ``uniform``;
``tc_ratio``, ``dtc_ratio``  kl / (TC/K) and kl / (DTC/K), K = N (E[NFE] for threshold and entropy-sum):
                      Zhao & Cai's rates, whose constants are not known;
``random_sizes_bound`` for ``random:tc`` and ``random:dtc``: mdmt's explicit TC/K and DTC/K rates for its own
                      randomized sizes (:func:`random_sizes_bound`, proved in docs/atlas.md), + learning;
``pb_lower``          ParallelBench's partition lower bound (arXiv 2510.04767): E sum_j TC(X_{S_j} | x_{U_j});
                      its assumption (one fixed partition of the positions into steps) holds for the fixed
                      orders, where it equals kl for the oracle.

On an explicit law with the oracle every column is computed from its support instead of the (V+1)^L partial
assignments (:mod:`.atlas_support`, ``method="support"``; the two agree where both run).

Each bound comes with ``*_holds`` (checked on the exact numbers) and ``*_applies`` (its
assumption holds for this process).  For fixed sizes with uniformly random positions the oracle's
expected KL has the closed form of :func:`uniform_positions_kl` (the information profile), a third
code path tested against the trajectory enumeration.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping

import numpy as np

from mdmt.constructions.languages.ngram import NGram
from mdmt.constructions.reverse.chain import chain_quantities
from mdmt.constructions.reverse.exact import exact_output_law
from mdmt.constructions.reverse.information import information_profile, information_quantities
from mdmt.constructions.reverse.policies import (IID, EntropySum, FixedOrder, RandomSizes, Sizes, Threshold, cut_weights,
                                                  fixed_step_sizes, policy_list)
from mdmt.constructions.reverse.policies_beyond import resolve
from mdmt.constructions.reverse.policy_exact import exact_policy_law, teacher_forced
from mdmt.constructions.reverse.schedules import expected_nfe
from mdmt.constructions.reverse.tables import build_tables, denoiser_table
from mdmt.runtime.validation import positive_int

from mdmt.defaults import ATLAS_PROCESSES
from mdmt.results import Result
from mdmt.constructions.types import Denoiser, Language

from ..theorems.dependencies import dependencies_for_assignment, expected_dependencies
from ..theorems.statements import CHAIN_BOUND

DEFAULT_PROCESSES = ATLAS_PROCESSES  # every family the atlas knows (mdmt.defaults)
COLUMNS = ("process", "expected_nfe", "kl", "kl_bits_per_token", "ser", "assignment_kl", "total_correlation",
           "learning", "chain_bound", "li_cai", "tc_ratio", "dtc_ratio", "pb_lower")
_TOL = 1e-9


def uniform_positions_kl(profile: np.ndarray, sizes) -> float:
    """E_tau KL(q || p_tau) of the oracle with step sizes ``sizes`` and uniformly random positions.

    With f the information profile and u_j = s_1 + ... + s_{j-1}, step j contributes
    s_j (f(u_j + 1) - f(u_j)) - (f(u_j + s_j) - f(u_j)) (the expected TC of a uniformly random
    s_j-subset given a uniformly random u_j-subset; docs/atlas.md).
    """
    f = np.asarray(profile, dtype=np.float64)
    u, total = 0, 0.0
    for s in np.asarray(sizes, dtype=np.int64):
        total += s * (f[u + 1] - f[u]) - (f[u + s] - f[u])
        u += int(s)
    return float(total)


def random_sizes_kl(profile: np.ndarray, N: int, law: str) -> float:
    """E KL of ``RandomSizes(N, law)`` (oracle) in closed form: sum_r delta(r) E[R(r)].

    delta(r) = (f(r+1) - f(r)) - (f(r+2) - f(r+1)) >= 0 and R(r) = the number of slots after slot r
    revealed at the same step; E[R(r)] = sum_{t=r+1}^{L-1} P(no boundary in r+1..t)
    = sum_t (1 - w(r+1..t))^(N-1) (docs/atlas.md).
    """
    f = np.asarray(profile, dtype=np.float64)
    L = len(f) - 1
    if L < 2:
        return 0.0
    d = np.diff(f)  # d[r] = f(r+1) - f(r)
    delta = d[:-1] - d[1:]  # r = 0..L-2
    w = cut_weights(L, law)  # w[u-1] = P(c = u)
    total = 0.0
    for r in range(L - 1):
        acc, er = 0.0, 0.0
        for t in range(r + 1, L):
            acc += w[t - 1]
            er += max(0.0, 1.0 - acc) ** (N - 1)
        total += delta[r] * er
    return float(total)


def iid_positions_kl(profile: np.ndarray, pi) -> float:
    """E KL of the paper's i.i.d. reveal steps (oracle) in closed form, from the information profile.

    Each position's step is drawn i.i.d. from ``pi`` (Section 3.2), so at step j the numbers (u, s) of positions
    revealed before and at the step are multinomial, L!/(u! s! (L-u-s)!) P^u pi_j^s (1 - P - pi_j)^(L-u-s) with
    P = pi_1 + ... + pi_{j-1}, and given them the positions are uniformly random: the step contributes
    E[s (f(u+1) - f(u)) - (f(u+s) - f(u))] (as in :func:`uniform_positions_kl`).
    """
    f = np.asarray(profile, dtype=np.float64)
    L = len(f) - 1
    before, total = 0.0, 0.0
    for pj in np.asarray(pi, dtype=np.float64):
        after = max(0.0, 1.0 - before - pj)
        for u in range(L):
            for s in range(2, L - u + 1):  # s <= 1 contributes nothing
                prob = math.comb(L, u) * math.comb(L - u, s) * before ** u * pj ** s * after ** (L - u - s)
                total += prob * (s * (f[u + 1] - f[u]) - (f[u + s] - f[u]))
        before += pj
    return float(total)


def profile_total_correlation(policy, L: int, profile: np.ndarray) -> float | None:
    """E sum_j TC of the oracle from the information profile for the processes with uniformly random positions:
    i.i.d. steps (:func:`iid_positions_kl`), fixed sizes (:func:`uniform_positions_kl`), random sizes
    (:func:`random_sizes_kl`); None for the others."""
    if isinstance(policy, IID):
        return iid_positions_kl(profile, policy.pi)
    if isinstance(policy, RandomSizes):
        return random_sizes_kl(profile, policy.N, policy.law)
    if isinstance(policy, Sizes):
        return uniform_positions_kl(profile, fixed_step_sizes(policy, L))
    return None


def _harmonic(n: int) -> float:
    return float(np.sum(1.0 / np.arange(1, n + 1))) if n > 0 else 0.0


def random_sizes_bound(L: int, N: int, law: str, tc: float, dtc: float) -> float | None:
    """mdmt's explicit rate for its randomized sizes (oracle; add the learning term otherwise), docs/atlas.md.

    ``tc`` law: E KL <= 2 TC H_{L-1} / (N - 1 + H_{L-1});  ``dtc`` law: E KL <= DTC H_{L-1} / (N - 1 - H_{L-1})
    when N - 1 > H_{L-1} (None otherwise, and for the ``uniform`` law), H_k the k-th harmonic number.
    """
    h = _harmonic(L - 1)
    if law == "tc":
        return 2.0 * tc * h / (N - 1 + h) if h > 0 else 0.0
    if law == "dtc" and N - 1 > h:
        return dtc * h / (N - 1 - h)
    return None


def expected_dependencies_from_patterns(n: int, L: int, pattern_law: np.ndarray) -> float:
    """E sum_j D_j from the law of (U_j, S_j) (base-3 codes of ``teacher_forced``), via ``dependencies_for_assignment``."""
    total = 0.0
    pow3 = 3 ** np.arange(L - 1, -1, -1)
    for code in np.flatnonzero(pattern_law > 0):
        digits = (code // pow3) % 3  # 1 revealed before, 2 revealed now, 0 masked
        if not np.any(digits == 2):
            continue
        tau = np.where(digits == 1, 1, np.where(digits == 2, 2, 3))
        total += pattern_law[code] * dependencies_for_assignment(n, tau)[1]
    return float(total)


def _holds(lhs, rhs) -> bool | None:
    """lhs <= rhs up to rounding (None when either side is undefined)."""
    if lhs is None or rhs is None or (isinstance(rhs, float) and math.isnan(rhs)):
        return None
    return bool(lhs <= rhs + _TOL * (1 + abs(rhs)))


def _ratio(a, b):
    return a / b if b > 0 else math.inf


def _is_oracle_table(tables, table) -> bool:
    return table is not None and np.array_equal(table, denoiser_table(tables, None))


def process_law(language, L: int, policy, tables, table, n: int | None) -> dict:
    """The exact law of one reverse process and its chain expectations (module docstring).

    Keys: ``kl``, ``ser``, ``expected_nfe``, ``assignment_kl``, ``total_correlation`` (E sum_j TC),
    ``learning`` and, for an n-gram (order ``n``), ``E_D`` = E[sum_j D_j].  For the paper's i.i.d. steps
    these come from mdmt's evaluators of Section 3.2 and (C1)-(C4); for the other processes from the
    policy chain and its teacher-forced twin (the process's own law of (U_j, S_j)).
    """
    if hasattr(policy, "exact_law"):  # remasking, verified drafting: no reveal chain, no teacher forcing
        res, nfe = policy.exact_law(language, L, support_only=False, tables=tables,
                                    table=None if table is None or _is_oracle_table(tables, table) else table)
        return {"kl": res.kl_nats, "ser": res.ser, "expected_nfe": nfe, "assignment_kl": None,
                "total_correlation": None, "learning": None, "E_D": None}
    if isinstance(policy, IID):
        law = exact_output_law(language, L, policy.pi, support_only=False, tables=tables, table=table)
        cq = chain_quantities(language, L, policy.pi, tables=tables, table=table)
        return {"kl": law.kl_nats, "ser": law.ser, "expected_nfe": expected_nfe(policy.pi, L),
                "assignment_kl": cq["expected_assignment_kl"], "total_correlation": cq["expected_total_correlation"],
                "learning": cq["expected_learning_term"],
                "E_D": None if n is None else expected_dependencies(n, L, policy.pi)}
    pl = exact_policy_law(language, L, policy, support_only=False, tables=tables, table=table)
    tf = teacher_forced(language, L, policy, tables=tables, table=table, track_patterns=n is not None)
    return {"kl": pl.result.kl_nats, "ser": pl.result.ser, "expected_nfe": pl.expected_nfe,
            "assignment_kl": tf["assignment_kl"], "total_correlation": tf["total_correlation"],
            "learning": tf["learning"],
            "E_D": None if n is None else expected_dependencies_from_patterns(n, L, tf["pattern_law"])}


METHODS = ("auto", "tables", "support")


def _method(language, denoiser, method: str) -> str:
    """``tables`` (the (V+1)^L partial assignments) or ``support`` (an explicit law with the oracle, at the scale of
    its support: :mod:`.atlas_support`); ``auto`` picks the support for an explicit law with the oracle."""
    from mdmt.constructions.languages.explicit import ExplicitLanguage

    if method not in METHODS:
        raise ValueError(f"atlas method must be one of {', '.join(METHODS)}, got {method!r}")
    explicit = isinstance(language, ExplicitLanguage)
    if method == "auto":
        return "support" if explicit and denoiser is None else "tables"
    if method == "support" and not explicit:
        raise ValueError("the atlas on the support needs an explicit law (a language listed on its support)")
    if method == "support" and denoiser is not None:
        raise ValueError("the atlas on the support runs with the oracle denoiser only (use method='tables')")
    return method


def _row(pol, r: dict, L: int, N: int, V: int, info: dict, profile, n: int | None, oracle: bool) -> dict:
    """The atlas row of one process from its exact law and chain expectations ``r`` (module docstring)."""
    TC, DTC, sumI = info["total_correlation"], info["dual_total_correlation"], info["sum_mutual_information"]
    kl, ser, nfe = r["kl"], r["ser"], r["expected_nfe"]
    akl, tc, learn = r["assignment_kl"], r["total_correlation"], r["learning"]
    row = {"process": pol.spec, "adaptive": pol.adaptive, "expected_nfe": nfe, "kl": kl,
           "kl_bits_per_token": None if kl is None else kl / (L * math.log(2)), "ser": ser}
    if akl is None:  # remasking, verified drafting: only the law, its KL, SER and E[NFE]
        return row
    cb = None if n is None or r["E_D"] is None else CHAIN_BOUND.evaluate(epsilon_learning=learn / L, V=V, E_D=r["E_D"], L=L) * L
    sizes = fixed_step_sizes(pol, L)
    lc = None if sizes is None else (2 ** math.ceil(math.log2(int(max(sizes)))) - 1) / L * sumI + learn
    K = nfe if isinstance(pol, (Threshold, EntropySum)) else N
    row.update({"assignment_kl": akl, "total_correlation": tc, "learning": learn, "assignment_kl_holds": _holds(kl, akl),
                "chain_bound": cb, "chain_bound_holds": _holds(kl, cb), "chain_bound_applies": cb is not None,
                "li_cai": lc, "li_cai_holds": _holds(kl, lc), "li_cai_applies": isinstance(pol, Sizes),
                "tc_ratio": _ratio(kl, TC / K), "dtc_ratio": _ratio(kl, DTC / K),
                "pb_lower": tc, "pb_holds": _holds(tc, kl), "pb_applies": isinstance(pol, FixedOrder)})
    if oracle and profile is not None and isinstance(pol, Sizes):
        row["profile_kl"] = uniform_positions_kl(profile, sizes)
    if isinstance(pol, RandomSizes):
        rb = random_sizes_bound(L, pol.N, pol.law, TC, DTC)
        row["random_sizes_bound"] = None if rb is None else rb + learn
        row["random_sizes_bound_holds"] = _holds(akl, row["random_sizes_bound"])
        if oracle and profile is not None:
            row["profile_kl"] = random_sizes_kl(profile, pol.N, pol.law)
    return row


def atlas(language: Language, L: int, N: int, processes: str = DEFAULT_PROCESSES, denoiser: Denoiser | None = None,
          method: str = "auto") -> Result:
    """The atlas of one instance (module docstring): ``instance`` (H, TC, DTC, sum_i I, the profile) and ``rows``
    (one per process); a :class:`mdmt.results.Result` (``.to_frame()``, ``.to_csv()``, ``.plot()``).

    ``method``: ``tables`` (the (V+1)^L partial assignments, any language and denoiser, small L), ``support``
    (an explicit law with the oracle, at the scale of its support, :mod:`.atlas_support`) or ``auto`` (the support
    for an explicit law with the oracle, the tables otherwise).
    """
    L = positive_int("L", L)
    N = positive_int("number of steps N", N)
    policies = policy_list(processes, N)
    if _method(language, denoiser, method) == "support":
        from .atlas_support import explicit_context, support_process_law

        ctx = explicit_context(language, L, profile_total_correlation)
        info, profile, V, n = ctx["info"], ctx["profile"], language.n_symbols, None  # profile(): after a law's checks
        laws = ((pol, support_process_law(language, L, pol, ctx)) for pol in
                (ctx["resolve"](p) for p in policies))
    else:
        tables = build_tables(language, L)
        V = tables.V
        D = denoiser_table(tables, denoiser)
        info = information_quantities(language, L, method="exact")
        tables_profile = information_profile(tables)
        profile = lambda: tables_profile  # noqa: E731 -- the same call as the support's profile()
        n = language.n if isinstance(language, NGram) else None
        laws = ((pol, process_law(language, L, pol, tables, D, n)) for pol in
                (resolve(p, language, L) for p in policies))  # optimal: the DP's sizes for this language and L
    rows = [_row(pol, r, L, N, V, info, profile(), n, denoiser is None) for pol, r in laws]
    instance = {"length": L, "steps": N, "vocab_size": V, "ngram_order": n, "entropy": info["entropy"],
                "total_correlation": info["total_correlation"], "dual_total_correlation": info["dual_total_correlation"],
                "sum_mutual_information": info["sum_mutual_information"], "profile": profile(),
                "oracle": denoiser is None}
    return Result({"instance": instance, "rows": rows}, figure="atlas_figure")


def atlas_part(part) -> dict:
    """One instance of an atlas sweep (a Dask part of :mod:`mdmt.sweep`): ``(language SPEC, L, N, processes)``."""
    from mdmt.constructions.languages.spec import language_from_spec

    spec, L, N, processes = part
    res = atlas(language_from_spec(spec), L, N, processes)
    res["instance"]["language"] = spec
    return res


SWEEP_KEYS = ("language", "L", "N")  # the columns an atlas of several instances puts in front of each row


def sweep_rows(result: Mapping) -> list[dict]:
    """Every row of an atlas sweep (``{"instances": [...]}``) with its language, L and N in front (atlas.csv)."""
    return [{"language": r["instance"]["language"], "L": r["instance"]["length"], "N": r["instance"]["steps"]} | row
            for r in result["instances"] for row in r["rows"]]


def atlas_sweep(languages: Iterable[str], lengths: Iterable[int], steps: Iterable[int],
                processes: str = DEFAULT_PROCESSES, *, jobs: int = 1, scheduler: str | None = None,
                progress: bool = False) -> Result:
    """The atlas of every instance (language SPEC, L, N) of ``languages`` x ``lengths`` x ``steps`` (an explicit law at
    its own length only, which must be one of ``lengths``), each a part of
    :func:`mdmt.sweep.run_parts` (in this process, or on ``jobs`` Dask workers / the cluster at ``scheduler``).

    A :class:`mdmt.results.Result` ``{"instances": [atlas results]}`` in that order; its table ``rows`` is
    every instance's rows with ``language``, ``L`` and ``N`` in front, and ``.plot()`` draws a panel per instance.
    """
    from mdmt.sweep import run_parts

    lengths = [int(L) for L in lengths]
    parts = [(str(spec), L, int(N), processes) for spec in languages for L in _lengths_of(str(spec), lengths)
             for N in steps]
    if not parts:
        raise ValueError("atlas_sweep: give at least one language, length and step count")
    results = run_parts(atlas_part, parts, jobs=jobs, scheduler=scheduler, desc="atlas instances",
                        progress=progress, costs=[atlas_part_cost(p) for p in parts]).results()
    return Result({"instances": results}, figure="atlas_figure", derived={"rows": sweep_rows})


def _lengths_of(spec: str, lengths: list[int]) -> list[int]:
    """The lengths a language of a sweep is evaluated at: all of them, or, for an explicit law, its own length,
    which must be among them."""
    from mdmt.constructions.languages.explicit import ExplicitLanguage
    from mdmt.constructions.languages.spec import language_from_spec

    language = language_from_spec(spec)
    if not isinstance(language, ExplicitLanguage) or not lengths:
        return lengths
    if language.length not in lengths:
        raise ValueError(f"L = {', '.join(map(str, lengths))}: this explicit law holds sequences of length "
                         f"{language.length} only ({spec})")
    return [language.length]


def atlas_part_cost(part) -> float:
    """The expected work of an atlas instance: (V + 1)^L partial assignments for each process, or, on an explicit
    law, 2^L revealed sets per support sequence (:func:`.atlas_support.support_cost`)."""
    from mdmt.constructions.languages.explicit import ExplicitLanguage
    from mdmt.constructions.languages.spec import language_from_spec

    spec, L, N, processes = part
    language = language_from_spec(spec)
    if isinstance(language, ExplicitLanguage):
        from .atlas_support import support_cost

        return support_cost(language, processes)
    return float(language.n_symbols + 1) ** L * len(str(processes).split(","))
