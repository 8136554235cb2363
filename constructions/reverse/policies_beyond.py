"""Reverse processes that claim to escape the linear step count: optimal sizes, bisection, remasking, verified drafting.

The paper's Theorems 4.3/4.4 (SER needs N linear in L) concern the i.i.d. sampler of Section 3.2.
mdmt implements the samplers proposed against it as policies of the same grammar (SPEC):

``optimal`` (:class:`~.policies.OptimalSizes`)
    fixed step sizes with uniformly random positions (as ``uniform``), the sizes chosen by dynamic
    programming over the language's information profile to minimise E_tau KL
    (:mod:`.optimal_schedule`; Lavenant & Zanella, arXiv 2510.25544).  The sizes depend on the
    language and L: the process is bound to them by :func:`resolve` where the language is known.
``bisect[:W]`` (:class:`~.policies.Bisect`)
    a deterministic order: the positions are cut into blocks of W (default 1) and, step after step,
    the middle block of every run of unrevealed blocks is revealed (block (a + b) // 2 of the run
    a..b), its W positions left to right over W consecutive steps.  With W = 1 a run of m positions
    takes ceil(log2(m + 1)) steps, and each step reveals one position of every run; for a first-order
    chain the runs are conditionally independent given the revealed separators, so the oracle
    samples it exactly (the "centroid" argument).  For an order-n chain W = n - 1 makes every
    revealed block a separator: exact in (n - 1) ceil(log2(ceil(L / W) + 1)) steps.
``remdm:SCHEDULE[:ETA]`` (:mod:`.remdm`; ``remdm:conf[:ETA]``: :mod:`.remdm_conf`)
    ReMDM's remasking sampler (Wang et al., arXiv 2503.00307) with the oracle denoiser, SCHEDULE one of
    cap, rescale, loop and conf (the confidence-based schedule).
``verified:B``, ``verified:B1,B2,...``, ``verified:adaptive[:B0]`` (:mod:`.verified`)
    verified drafting: blocks of B positions drafted from the oracle marginals in one call and
    verified left to right by speculative sampling (Leviathan et al., ICML 2023; self-speculative
    masked diffusion, arXiv 2510.03929): the output law is exactly the language's.  The draft
    schedule gives the block of each round: B always; B1, B2, ... (the last repeated); or adaptive,
    from B0 (default 2), + 2 after a fully accepted draft and - 1 after a rejection.

``optimal`` and ``bisect`` are plans of :mod:`.policies` (fixed sizes, fixed order; the classes
``OptimalSizes`` and ``Bisect`` live there, beside the grammar), so their exact law, sampler,
teacher-forced terms and atlas rows are those of every policy.  ``remdm`` and
``verified`` are not: a state of ReMDM may lose revealed tokens, and verified drafting reads the
causal conditionals; each is a :class:`~.process_base.LawProcess` with its own exact law (``exact_law``)
and sampler (``sample``), which :mod:`.policy_exact` and :mod:`.policy_sampler` call.  This module holds
what the grammar needs of them without importing :mod:`.policies` (no import cycle).
"""

from __future__ import annotations

import numpy as np

from mdmt.runtime.validation import positive_int

BEYOND_FORMS = "optimal, bisect[:W], remdm:cap|rescale|loop|conf[:ETA], verified:B|B1,B2,...|adaptive[:B0]"
BEYOND_HEADS = ("optimal", "bisect", "remdm", "verified")


def bisect_order(L: int, width: int = 1) -> np.ndarray:
    """The step (1-based) of every position under ``bisect:width`` (module docstring)."""
    L = positive_int("L", L)
    width = positive_int("bisect block width W", width)
    B = -(-L // width)
    depth = np.zeros(B, dtype=np.int64)
    runs = [(0, B - 1, 1)]
    while runs:
        a, b, d = runs.pop()
        if a > b:
            continue
        mid = (a + b) // 2
        depth[mid] = d
        runs.append((a, mid - 1, d + 1))
        runs.append((mid + 1, b, d + 1))
    pos = np.arange(L)
    return (depth[pos // width] - 1) * width + pos % width + 1


def int_parameter(text: str, what: str) -> int:
    """A positive integer parameter of a SPEC; otherwise a ValueError naming ``what`` and the text."""
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise ValueError(f"{what} must be a positive integer, got {text!r}")
    return v


def parse_law_process(text: str, N: int | None):
    """``remdm:...`` or ``verified:...`` from its SPEC (``text`` already stripped; module docstring)."""
    head, sep, rest = text.partition(":")
    if head == "verified":
        return parse_verified(text)
    from .remdm import ReMDM, parse_remdm
    from .remdm_conf import ReMDMConf

    kind, N, eta = parse_remdm(text, N)
    return ReMDMConf(N, eta) if kind == "conf" else ReMDM(kind, N, eta)


def parse_verified(text: str):
    """``verified:B``, ``verified:B1,B2,...`` or ``verified:adaptive[:B0]`` (:mod:`.verified`)."""
    from .verified import DEFAULT_B0, DraftSchedule, Verified

    head, sep, rest = text.partition(":")
    if not sep:
        raise ValueError(f"policy {text!r}: expected verified:B (B = the block size), verified:B1,B2,... or "
                         "verified:adaptive[:B0]")
    kind, _, b0 = rest.partition(":")
    if kind == "adaptive":
        B0 = int_parameter(b0, f"policy {text!r}: the first block size B0") if b0 else DEFAULT_B0
        return Verified(DraftSchedule((B0,), adaptive=True))
    return Verified(DraftSchedule(int_parameter(b.strip(), f"policy {text!r}: the block size B") for b in rest.split(",")))


def resolve(policy, language, L: int):
    """The process run on ``language`` at length L: ``optimal`` bound to its sizes, every other policy itself."""
    bind = getattr(policy, "bind", None)
    return bind(language, L) if bind is not None else policy
