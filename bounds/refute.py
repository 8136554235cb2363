"""Search for a counterexample to a claim over a family of languages, and certify what it finds.

:func:`search` draws instances -- a random language of the family (Algorithm 1/2 of Feng et al.'s
Appendix, :mod:`mdmt.constructions.languages.random_languages`, with a random temperature, pruning
threshold and seed), a length, a number of steps and a process -- evaluates the claim's margin on
each with mdmt's exact evaluators (:func:`~.quantities.instance_quantities`), and keeps the
tightest.  If no instance violates the claim, the tightest one is refined continuously: its
tables are re-parameterised by softmax logits (zeros kept) and the margin is minimised by
Nelder-Mead (:func:`scipy.optimize.minimize`) within the remaining budget.  A violation is then
re-established exactly (:func:`~.certificate.certify_claim` on the instance's tables rounded to
dyadic rationals): ``certified violation``; ``numeric violation`` where the process cannot be
certified (its rule compares logarithms); and ``no violation found`` where the float margin lies
within ``NUMERIC_TOL`` of 0 (a tight instance) or the exact computation does not confirm it.

Families: ``ngram:n=N,V=V`` and ``hmm:S=S,V=V``.  The search is seeded: the same arguments give
the same instances and the same result.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from mdmt.constructions.languages.random_languages import random_hmm, random_ngram
from mdmt.constructions.validation import as_rng, positive_int

from .claims import Claim, ClaimError, parse_claim

FAMILY_KEYS = {"ngram": ("n", "V"), "hmm": ("S", "V")}
THRESHOLDS = (0.0, 0.05, 0.2)
CERTIFY_BITS = (16, 30)  # dyadic denominators tried for the certificate
NUMERIC_TOL = 1e-9  # a float64 margin above -NUMERIC_TOL is a tight instance, not a violation (rounding of the sides)  # pruning thresholds drawn: dense tables, and sparse ones where extremal cases live


def parse_family(text: str) -> tuple[str, dict]:
    """``ngram:n=3,V=2`` -> ("ngram", {"n": 3, "V": 2}); a ValueError names what is wrong."""
    kind, _, rest = str(text).partition(":")
    if kind not in FAMILY_KEYS:
        raise ValueError(f"family {text!r}: expected ngram:n=N,V=V or hmm:S=S,V=V")
    params = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq or key not in FAMILY_KEYS[kind] or key in params:
            raise ValueError(f"family {text!r}: {part!r} is not one of {', '.join(k + '=...' for k in FAMILY_KEYS[kind])}")
        try:
            params[key] = positive_int(f"family {text!r}: {key}", int(value), minimum=1 if key != "V" else 2)
        except ValueError:
            raise ValueError(f"family {text!r}: {key} must be an integer (>= 2 for V), got {value!r}") from None
    missing = [k for k in FAMILY_KEYS[kind] if k not in params]
    if missing:
        raise ValueError(f"family {text!r}: missing {', '.join(missing)}")
    return kind, params


def _draw_language(kind: str, params: dict, rng: np.random.Generator):
    temperature = float(math.exp(rng.uniform(math.log(0.3), math.log(4.0))))
    threshold = float(rng.choice(THRESHOLDS))
    seed = int(rng.integers(0, 2 ** 31))
    if kind == "ngram":
        return random_ngram(params["n"], params["V"], temperature, threshold, seed=seed)
    return random_hmm(params["S"], params["V"], temperature, threshold, seed=seed)


@dataclass
class Candidate:
    language: object
    L: int
    N: int
    process: str
    margin: float

    def describe(self) -> dict:
        return {"L": self.L, "N": self.N, "process": self.process, "margin": self.margin}


@dataclass
class RefuteResult:
    """What :func:`search` found: ``verdict``, the tightest (or violating) ``candidate`` and its certificate."""

    claim: str
    verdict: str  # "certified violation", "numeric violation", "no violation found"
    candidate: Candidate | None
    certificate: dict | None
    evaluations: int
    seconds: float
    history: list = field(default_factory=list)  # margin of each evaluation, in order


def _margin(claim: Claim, lang, L: int, N: int, process: str) -> float:
    from .quantities import instance_quantities

    try:
        return claim.margin(instance_quantities(lang, L, process, N))
    except ClaimError:
        raise
    except ValueError:  # an instance the process cannot run (N > L for fixed sizes, ...): no verdict
        return math.nan


def _refine(claim: Claim, cand: Candidate, evaluations: int, history: list) -> Candidate:
    """Nelder-Mead on the softmax logits of the candidate's tables (zeros kept), at most ``evaluations`` margins."""
    from scipy.optimize import minimize

    from .certificate import tables_of, with_tables

    tables = tables_of(cand.language)
    masks = [np.asarray(t) > 0 for t in tables]
    x0 = np.concatenate([np.log(np.asarray(t)[m]) for t, m in zip(tables, masks)])
    best = [cand]

    def build(x):
        out, k = [], 0
        for t, m in zip(tables, masks):
            logits = np.full(np.shape(t), -np.inf)
            logits[m] = x[k:k + int(m.sum())]
            k += int(m.sum())
            z = np.exp(logits - logits.max(axis=-1, keepdims=True))
            out.append(z / z.sum(axis=-1, keepdims=True))
        return with_tables(cand.language, out)

    def objective(x):
        lang = build(x)
        m = _margin(claim, lang, cand.L, cand.N, cand.process)
        history.append(m)
        if math.isfinite(m) and m < best[0].margin:
            best[0] = Candidate(lang, cand.L, cand.N, cand.process, m)
        return m if math.isfinite(m) else 1e300

    if evaluations > 0:
        minimize(objective, x0, method="Nelder-Mead", options={"maxfev": evaluations, "xatol": 1e-9, "fatol": 1e-12})
    return best[0]


def search(claim, family: str = "ngram:n=3,V=2", lengths=(5,), steps=(3,), processes=("iid",), budget: int = 200,
           seed=0, refine: bool = True, certify: bool = True) -> RefuteResult:
    """Look for an instance of ``family`` that violates ``claim`` (module docstring); ``budget``: margin evaluations."""
    from .certificate import NotCertifiable, certify_claim, dyadic_language

    claim = claim if isinstance(claim, Claim) else parse_claim(claim)
    kind, params = parse_family(family)
    lengths = [positive_int("length", L) for L in lengths]
    steps = [positive_int("number of steps", N) for N in steps]
    processes = list(processes)
    if not (lengths and steps and processes):
        raise ValueError("search needs at least one length, one number of steps and one process")
    budget = positive_int("budget", budget)
    rng = as_rng(seed)
    t0 = time.perf_counter()
    history: list = []
    best: Candidate | None = None
    draws = budget if not refine else max(1, budget // 2)  # half the budget draws, half refines the tightest
    for _ in range(draws):
        lang = _draw_language(kind, params, rng)
        L, N, process = int(rng.choice(lengths)), int(rng.choice(steps)), str(rng.choice(processes))
        m = _margin(claim, lang, L, N, process)
        history.append(m)
        if math.isfinite(m) and (best is None or m < best.margin):
            best = Candidate(lang, L, N, process, m)
    if refine and best is not None:  # toward a violation, or a larger one (robust to the rounding below)
        best = _refine(claim, best, budget - len(history), history)
    verdict, cert = "no violation found", None
    if best is not None and best.margin < -NUMERIC_TOL:  # within the tolerance: tight, not violated
        verdict = "numeric violation"
        if certify:
            try:
                for bits in CERTIFY_BITS:  # finer rationals keep a small violation
                    rounded = dyadic_language(best.language, bits)
                    cert = certify_claim(claim, rounded, best.L, best.process, best.N)
                    if cert["verdict"] == "certified violation":
                        verdict = "certified violation"
                        best = Candidate(rounded, best.L, best.N, best.process, cert["margin"][1])
                        break
                else:  # the exact computation does not confirm the float one: no violation is claimed
                    verdict = "no violation found"
                    cert = {**cert, "verdict": f"the instance rounded to 2^-{CERTIFY_BITS[-1]} is {cert['verdict']}"}
            except (NotCertifiable, ClaimError) as exc:  # a process or quantity without an exact evaluation
                cert = {"verdict": "not certified", "reason": str(exc)}
    return RefuteResult(claim.text, verdict, best, cert, len(history), time.perf_counter() - t0, history)
