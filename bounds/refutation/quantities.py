"""The value of every claim quantity (:data:`mdmt.bounds.refutation.claims.QUANTITIES`) on one instance, exactly.

An instance is a language, a length L, a reverse process (a policy SPEC of
:mod:`mdmt.constructions.reverse.policies`: ``iid[:SCHEDULE]``, ``uniform``, ``random:LAW``,
``confidence``, ``margin``, ``entropy``, ``threshold:TAU``, ``entropy-sum:GAMMA``, ``stride``,
``blocks``), a number of steps N and a denoiser (the oracle by default).  Every quantity comes
from mdmt's exact evaluators, through the atlas's :func:`~mdmt.bounds.studies.atlas.process_law` (which
``mdmt verify`` checks):

* ``KL``, ``SER``, ``NFE``: the exact output law (Eq. 3 of Feng et al. for ``iid``, the policy
  chain otherwise); ``KL_per_token`` = ``TER_gap`` = KL / L;
* ``H``, ``TC``, ``DTC``, ``sum_MI``: :func:`~mdmt.constructions.reverse.information.information_quantities`;
* ``eps``: the learning error in its max form (0 for the oracle);
* ``E_TC``: E sum_j TC(X_{S_j} | x_{U_j}) along x ~ q (the chain's expectation for ``iid``, the
  teacher-forced chain otherwise);
* ``E_D`` (n-grams): E[sum_j D_j] of Lemma B.9, from the schedule for ``iid``
  (:func:`~mdmt.bounds.theorems.dependencies.expected_dependencies`) and from the process's own law of
  (U_j, S_j) otherwise (:func:`~mdmt.bounds.studies.atlas.expected_dependencies_from_patterns`);
* ``P_distinct`` (the interval HMM, ``iid``): P_distinct(l; pi) of Theorem 4.4;
* ``s_max``: the largest step size of a process with fixed sizes.

A quantity that does not apply to the instance (``n`` of an HMM, ``E_D`` without separators,
``s_max`` of an adaptive rule whose sizes depend on the tokens) is absent from the result; a claim
that names it cannot be evaluated there (:meth:`mdmt.bounds.refutation.claims.Claim.margin` says which).
"""

from __future__ import annotations

import math

from mdmt.constructions.languages.ngram import NGram
from mdmt.constructions.reverse.policies import IID, fixed_step_sizes, parse_policy
from mdmt.runtime.validation import positive_int
from mdmt.constructions.types import Denoiser, Language


def instance_quantities(language: Language, L: int, process: str = "iid", N: int | None = None, denoiser: Denoiser | None = None,
                        interval: int | None = None) -> dict:
    """Every claim quantity that applies to (language, L, process, N, denoiser), as floats (module docstring).

    ``interval``: the interval length l when ``language`` is the interval HMM (for ``l`` and ``P_distinct``).
    """
    from mdmt.constructions.reverse.information import information_quantities
    from mdmt.constructions.reverse.learning import learning_error
    from mdmt.constructions.reverse.schedules import p_distinct
    from mdmt.constructions.reverse.tables import build_tables, denoiser_table

    from ..studies.atlas import process_law

    L = positive_int("L", L)
    from mdmt.constructions.reverse.policies_beyond import resolve

    policy = resolve(parse_policy(process, N), language, L)
    tables = build_tables(language, L)
    D = denoiser_table(tables, denoiser)
    V = tables.V
    n = language.n if isinstance(language, NGram) else None
    out = {"L": float(L), "V": float(V)}
    if N is not None:
        out["N"] = float(positive_int("number of steps N", N))
    if n is not None:
        out["n"] = float(n)
    if interval is not None:
        out["l"] = float(positive_int("interval length l", interval, minimum=2))
    out["eps"] = 0.0 if denoiser is None else float(learning_error(language, denoiser, L, method="exact",
                                                                    tables=tables)["max"])
    info = information_quantities(language, L)
    out.update(H=info["entropy"], TC=info["total_correlation"], DTC=info["dual_total_correlation"],
               sum_MI=info["sum_mutual_information"])
    r = process_law(language, L, policy, tables, D, n)
    kl, ser, nfe = r["kl"], r["ser"], r["expected_nfe"]
    if r["total_correlation"] is not None:  # remasking and verified drafting have no teacher-forced chain
        out["E_TC"] = float(r["total_correlation"])
    if r["E_D"] is not None:
        out["E_D"] = float(r["E_D"])
    if isinstance(policy, IID) and interval is not None:
        out["P_distinct"] = float(p_distinct(policy.pi, interval))
    out.update(KL=float(kl), KL_per_token=float(kl) / L, TER_gap=float(kl) / L, SER=float(ser))
    if nfe is not None:
        out["NFE"] = float(nfe)
    sizes = fixed_step_sizes(policy, L)
    if sizes is not None:
        out["s_max"] = float(max(int(s) for s in sizes))
    return {k: v for k, v in out.items() if v is not None and not (isinstance(v, float) and math.isnan(v))}
