"""Which samplers escape the paper's linear step count: the network calls each needs for a target SER (``mdmt samplers``).

Theorems 4.3/4.4 of the paper say the i.i.d. sampler needs N linear in L for a small SER on the
interval HMM.  For a language, lengths L and a target SER, this study finds for each sampler the
smallest number of network calls that reaches the target, with the oracle denoiser:

``iid``, ``uniform``, ``optimal``, ``confidence``, ``stride``, ``remdm:...`` (``remdm:conf[:ETA]`` included)
    the smallest N (doubling, then bisection on N, decided on the point estimate as in ``mdmt adaptive
    ser``) whose SER is at most the target; calls = E[NFE] at that N (N for fixed sizes);
``bisect``
    its one deterministic run: ceil(log2(L + 1)) calls, reached or not;
``verified``
    verified drafting with one block for the whole rest (``verified:L``; a larger block only removes the
    forced ends of rounds): SER = 0 always, calls = E[rounds];
``verified:B``, ``verified:B1,B2,...``, ``verified:adaptive[:B0]``
    verified drafting with that draft schedule (:mod:`~mdmt.constructions.reverse.verified`), one run each:
    SER = 0, calls = E[rounds] -- the lines that compare draft schedules;
``ar``
    autoregressive sampling: L calls, SER = 0.

Each point is exact (the output law by enumeration: :mod:`mdmt.constructions.reverse.policy_exact`,
:mod:`~mdmt.constructions.reverse.remdm`, :mod:`~mdmt.constructions.reverse.verified`) while its state
space is small, and a Monte Carlo estimate with a Wilson interval beyond (``method`` says which).  Every
(language, L, sampler) is one part of :func:`mdmt.sweep.run_parts`.
"""

from __future__ import annotations

import math
from typing import Iterable

from mdmt.results import Result
from mdmt.runtime.validation import positive_int

SAMPLERS = "iid,uniform,optimal,confidence,stride,bisect,remdm:cap:0.05,remdm:loop:0.1,verified,ar"
EXACT_STATES = 1 << 14  # (V+1)^L partial assignments for an exact reveal-chain point
EXACT_REMDM = 1 << 16  # (2V+1)^L entries of the exact ReMDM step
EXACT_REMDM_CONF = 1 << 7  # (V+1)^L partial assignments under the exact ReMDM-conf chain (its states carry confidences)
EXACT_VERIFIED = 1 << 13  # V^L prefixes of the exact verified-drafting enumeration


def _policy(sampler: str, L: int, N: int | None):
    from mdmt.constructions.reverse.policies import parse_policy

    if sampler == "verified":
        return parse_policy(f"verified:{L}")
    return parse_policy(sampler, N, cap=True)


def _exact_ok(sampler: str, V: int, L: int) -> bool:
    """Whether the exact law of a point is small enough (compared in bits: a huge L builds no huge integer)."""
    if sampler.startswith("remdm:conf"):
        return L * math.log2(V + 1) <= math.log2(EXACT_REMDM_CONF)
    if sampler.startswith("remdm"):
        return L * math.log2(2 * V + 1) <= math.log2(EXACT_REMDM)
    if sampler.startswith("verified"):
        return L * math.log2(V) <= math.log2(EXACT_VERIFIED)
    return L * math.log2(V + 1) <= math.log2(EXACT_STATES)


def sampler_point(language, L: int, sampler: str, N: int | None = None, num: int = 500, seed=0) -> dict:
    """SER (with its interval), mean network calls and the method of one sampler at (L, N)."""
    from mdmt.constructions.reverse.metrics import sample_metrics
    from mdmt.constructions.reverse.policy_exact import exact_policy_law
    from mdmt.constructions.reverse.policy_sampler import sample_policy

    from mdmt.constructions.reverse.remdm_conf import TooManyStates

    pol = _policy(sampler, L, N)
    if _exact_ok(sampler, language.n_symbols, L):
        try:
            law = exact_policy_law(language, L, pol, support_only=False)
        except TooManyStates:  # the confidences of remdm:conf took too many values: Monte Carlo below
            law = None
        if law is not None:
            s = law.result.ser
            return {"ser": s, "ci": [s, s], "calls": float(law.expected_nfe), "method": "exact"}
    res = sample_policy(language, L, pol, num, seed=seed)
    m = sample_metrics(language, res.samples)
    return {"ser": m["ser"], "ci": m["ser_ci"], "calls": float(res.nfe.mean()), "method": f"Monte Carlo ({num})"}


def _one_run(sampler: str) -> bool:
    """Whether a sampler takes no N (one run decides its point): bisection and verified drafting."""
    return sampler == "bisect" or sampler == "verified" or sampler.startswith("verified:")


def _cap(sampler: str, L: int) -> int:
    return 16 * L if sampler.startswith(("iid", "remdm")) else L


def min_calls(language, L: int, sampler: str, target: float, num: int = 500, seed=0) -> dict:
    """The smallest calls reaching SER <= target for one sampler (module docstring); keys steps, calls, ser, ci,
    method, reached."""
    if sampler == "ar":
        return {"steps": L, "calls": float(L), "ser": 0.0, "ci": [0.0, 0.0], "method": "exact", "reached": True}
    if _one_run(sampler):
        p = sampler_point(language, L, sampler, None, num, seed)
        return {"steps": None, **p, "reached": p["ser"] <= target}
    cap = _cap(sampler, L)
    cache: dict = {}

    def point(N):
        if N not in cache:
            cache[N] = sampler_point(language, L, sampler, N, num, seed)
        return cache[N]

    hi = 1
    while point(hi)["ser"] > target and hi < cap:
        hi = min(2 * hi, cap)
    if point(hi)["ser"] > target:
        return {"steps": hi, **point(hi), "reached": False}
    lo = hi // 2  # point(lo) misses the target (or lo = 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if point(mid)["ser"] <= target:
            hi = mid
        else:
            lo = mid
    return {"steps": hi, **point(hi), "reached": True}


def samplers_part(part) -> dict:
    """One (language SPEC, L, sampler, target, num, seed) of the study (a part of :mod:`mdmt.sweep`)."""
    from mdmt.constructions.languages.spec import language_from_spec

    spec, L, sampler, target, num, seed = part
    return min_calls(language_from_spec(spec), L, sampler, target, num, seed)


def samplers_part_cost(part) -> float:
    """Expected seconds of a part: its largest point's work, times the points of the search."""
    _, L, sampler, _, num, _ = part
    if sampler == "ar":
        return 0.001
    points = 1 if _one_run(sampler) else 2 * max(1, _cap(sampler, L).bit_length())
    return 1e-7 * points * num * L * L


def study_lengths(spec: str, lengths: list[int]) -> list[int]:
    """The lengths a language is studied at: ``lengths`` for an n-gram or HMM language; its own length for an
    explicit law (a task such as ``task:shuffle:n=5`` holds sequences of one length only)."""
    from mdmt.constructions.languages.spec import language_from_spec

    lang = language_from_spec(spec)
    return [lang.length] if getattr(lang, "kind", None) == "explicit" else lengths


def _panel(spec: str) -> str:
    """The figure panel of a language: one per task (``task:shuffle`` gathers ``task:shuffle:n=3``, ``n=4``, ... as
    one line against L), one per language otherwise."""
    parts = spec.split(":")
    return ":".join(parts[:2]) if parts[0] == "task" else spec


def samplers_study(languages: Iterable[str], lengths: Iterable[int], samplers: Iterable[str] = SAMPLERS.split(","), *,
                   target: float = 0.1, num: int = 500, seed: int = 0, jobs: int = 1, scheduler: str | None = None,
                   progress: bool = False) -> Result:
    """The study of ``mdmt samplers`` (module docstring): one row per (language, L, sampler) with ``steps``,
    ``calls``, ``ser``, ``ci``, ``method``, ``reached``; a :class:`mdmt.results.Result` (figure: calls against L)."""
    from mdmt.sweep import run_parts

    if isinstance(target, bool) or not isinstance(target, (int, float)) or not (0 < target < 1 and math.isfinite(target)):
        raise ValueError(f"target must be an SER in (0, 1), got {target!r}")
    langs = [str(s).strip() for s in languages]
    Ls = [positive_int("length L", L) for L in lengths]
    names = [str(s).strip() for s in samplers]
    for s in names:  # a SPEC mdmt does not know is named before any part runs
        if s not in ("ar", "verified"):
            _policy(s, 2, 1)
    parts = [(lang, L, s, float(target), positive_int("num", num, minimum=2), seed) for lang in langs
             for L in study_lengths(lang, Ls) for s in names]
    results = run_parts(samplers_part, parts, jobs=jobs, scheduler=scheduler, progress=progress, desc="samplers parts",
                        costs=[samplers_part_cost(p) for p in parts]).results()
    rows = [{"language": p[0], "panel": _panel(p[0]), "L": p[1], "sampler": p[2], **r} for p, r in zip(parts, results)]
    return Result({"target": float(target), "languages": langs, "rows": rows}, figure="samplers_figure")
