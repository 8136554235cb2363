"""The bound atlas on an explicit law, at the scale of its support (docs/atlas.md, "Explicit laws").

On an explicit law (:class:`~mdmt.constructions.languages.explicit.ExplicitLanguage`, M sequences of length L)
with the oracle denoiser the atlas (:func:`.atlas.atlas`) never builds the (V+1)^L partial assignments of
:mod:`~mdmt.constructions.reverse.tables`.  Every column comes from the support:

``kl``, ``ser``         the exact output law on the support (:func:`~mdmt.constructions.reverse.support_exact.support_law`;
                        for i.i.d. steps and random sizes the same law in one chain,
                        :func:`~mdmt.constructions.reverse.support_mixtures.mixture_law`): SER = 1 - sum_{x in supp} p(x)
                        and KL(q || p) (the paper's Eqs. 4-5), one representative per orbit of the support's symmetries;
``expected_nfe``        fixed by the policy, or, for the rules whose step count depends on the tokens (threshold,
                        entropy-sum, top-k), the process's own chain on the support with the oracle continued by the
                        uniform law off it (:func:`~mdmt.constructions.reverse.support_forced.support_expected_nfe`);
``total_correlation``   E sum_j TC(X_{S_j} | X_{U_j}) (= ``assignment_kl`` = ``pb_lower``: the learning term of the
                        oracle is 0): for uniformly random positions (i.i.d. steps, fixed and random sizes) the
                        information profile identity (:func:`.atlas.profile_total_correlation`) with the profile of
                        the support; for the other policies, or
                        when the profile is refused, the teacher-forced chain on the support
                        (:func:`~mdmt.constructions.reverse.support_forced.support_teacher_forced`);
instance                H, TC, DTC and sum_i I(X_i; X_-i) from the support (O(M L^2)) and the profile (O(M 2^L); None
                        when it exceeds the work or memory limit).

``remdm`` and ``verified`` bring their own exact laws, which read the tables: their rows are computed when
(V+1)^L fits the tables and have no values otherwise.  ``optimal`` is bound to the sizes the dynamic
programme gives on the support's exact profile.
"""

from __future__ import annotations

import functools

import numpy as np

from mdmt.constructions.reverse.information import information_quantities
from mdmt.constructions.reverse.information_explicit import information_profile_explicit
from mdmt.constructions.reverse.policies import IID, OptimalSizes, RandomSizes, Sizes, fixed_step_sizes
from mdmt.constructions.reverse.support_exact import MAX_LENGTH, support_law
from mdmt.constructions.reverse.support_mixtures import mixture_law, size_chain_nfe
from mdmt.constructions.reverse.support_forced import support_expected_nfe, support_teacher_forced
from mdmt.constructions.reverse.support_symmetry import symmetry_generators
from mdmt.runtime.resources import ResourceError


def explicit_context(language, L: int, closed_form) -> dict:
    """What every row of one explicit instance shares: ``info`` (H, TC, DTC, sum_i I), ``profile()`` (the
    information profile, or None when refused; computed when a row first needs it, after that row's law has
    passed its size checks, so that a law that does not fit is refused at once), ``generators`` (the support's
    symmetries, found once), ``resolve`` (binds ``optimal``) and ``closed_form(policy, L, profile)``: E sum_j TC
    from the profile for uniformly random positions, else None (:func:`.atlas.profile_total_correlation`, passed
    in: the atlas imports this module)."""
    if int(L) != language.length:
        raise ValueError(f"L = {L}: this explicit law holds sequences of length {language.length} only")
    if L > MAX_LENGTH:
        raise ValueError(f"the atlas on the support tracks 2^L revealed sets per sequence; L = {L} exceeds mdmt's "
                         f"limit of {MAX_LENGTH}")
    info = information_quantities(language, L, method="exact")
    @functools.cache
    def profile():
        try:
            return information_profile_explicit(language)
        except ResourceError:
            return None  # the columns that need it come from the chains on the support instead

    ctx = {"info": info, "profile": profile, "generators": symmetry_generators(language), "tables": None,
           "closed_form": closed_form}

    def resolve(policy):
        if isinstance(policy, OptimalSizes) and profile() is not None:
            from mdmt.constructions.reverse.optimal_schedule import optimal_sizes

            return Sizes(optimal_sizes(profile(), policy.N)[0], spec="optimal")
        if isinstance(policy, OptimalSizes):
            raise ValueError(f"policy 'optimal' needs the information profile of the support, refused at "
                             f"M = {language.n_sequences} sequences of length L = {L}")
        return policy

    ctx["resolve"] = resolve
    return ctx


def _law_only_row(language, L: int, policy, ctx: dict) -> dict:
    """remdm, verified: their exact laws through the tables when (V+1)^L fits, else no values."""
    from mdmt.constructions.reverse.tables import build_tables, check_exact_size

    none = {"kl": None, "ser": None, "expected_nfe": None, "assignment_kl": None, "total_correlation": None,
            "learning": None, "E_D": None}
    try:
        check_exact_size(language.n_symbols, L, language)
    except ValueError:
        return none
    if ctx["tables"] is None:
        ctx["tables"] = build_tables(language, L)
    res, nfe = policy.exact_law(language, L, support_only=False, tables=ctx["tables"])
    return none | {"kl": res.kl_nats, "ser": res.ser, "expected_nfe": nfe}


def support_process_law(language, L: int, policy, ctx: dict) -> dict:
    """The keys of :func:`.atlas.process_law` for one process on the support (module docstring); ``E_D`` is None
    (the chain bound is stated for n-grams)."""
    if hasattr(policy, "exact_law"):
        return _law_only_row(language, L, policy, ctx)
    gens = ctx["generators"]
    if isinstance(policy, (IID, RandomSizes)):  # one chain over (size state, U) instead of one per plan
        law = mixture_law(language, policy, gens)
    else:
        law = support_law(language, policy, symmetries=gens, rationals=False)
    sizes = fixed_step_sizes(policy, L)
    # random sizes: the size chain instead of the sum over every step-size vector (2^(L-1) of them at large N)
    nfe = size_chain_nfe(policy, L) if isinstance(policy, RandomSizes) else policy.expected_nfe(L)
    if nfe is None and sizes is not None:  # top-k: every step reveals its size, whatever the tokens
        nfe = float(np.count_nonzero(sizes))
    if nfe is None:
        nfe = support_expected_nfe(language, policy, gens)
    tc = None if ctx["profile"]() is None else ctx["closed_form"](policy, L, ctx["profile"]())
    if tc is None:
        tc = support_teacher_forced(language, policy, gens)["total_correlation"]
    return {"kl": law.kl_nats, "ser": law.ser, "expected_nfe": nfe, "assignment_kl": tc, "total_correlation": tc,
            "learning": 0.0, "E_D": None}


def support_cost(language, processes) -> float:
    """The expected work of an atlas instance on the support: 2^L revealed sets per sequence for each process."""
    return float(language.n_sequences) * 2.0 ** language.length * len(str(processes).split(","))
