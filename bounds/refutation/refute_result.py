"""What a counterexample search finds, and the exact certificate of a violation (:func:`~.refute.search`).

:class:`Candidate` is one instance (a language, a length L, a number of steps N, a reverse process) with its float64
margin and relative margin; :class:`RefuteResult` is a search's outcome, its verdict (one of ``VERDICTS``) and its
JSON-ready report.  The verdict of the instance a search ends with (:func:`_verdict`): a violation is re-established
exactly (:func:`~.certificate.certify_claim` on the instance's tables rounded to dyadic rationals, ``CERTIFY_BITS``):
``certified violation``; ``numeric violation`` where the process or a quantity has no exact evaluation (a rule
comparing logarithms, a quantity without a rational form) or the certificate's estimated cost
(:func:`certificate_work`) exceeds ``MDMT_MAX_WORK``; ``no violation found`` where the float margin lies within
``NUMERIC_TOL`` of 0 (a tight instance) or the exact computation does not confirm it.  Before any search, a claim
may be proved (:func:`~.rules.prove_search`): ``proved (Shannon-type)`` or ``proved (lemmas)``, with no instance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from mdmt.runtime.resources import ResourceError
from mdmt.constructions.types import Language

from .claims import Claim, ClaimError, parse_claim
from .families import instance_size

CERTIFY_BITS = (16, 30)  # dyadic denominators tried for the certificate
NUMERIC_TOL = 1e-9  # a float64 margin above -NUMERIC_TOL is a tight instance, not a violation (rounding of the sides)
VERDICTS = ("proved (Shannon-type)", "proved (lemmas)", "certified violation", "numeric violation",
            "no violation found")  # a proof: :mod:`.rules` (and :mod:`.shannon`), before any search
UNCAPPED = ("threshold", "entropy-sum")  # processes whose number of steps N does not bound (they run until done)
CERTIFY_COST = 100_000  # operations per (revealed state, position, step) of the rational certificate (Fractions)


def certificate_work(V: int, L: int, N: int) -> int:
    """Operations of the rational certificate (:func:`~.certificate.certify_claim`): its trajectory enumeration visits
    about (V+2)^L (revealed state, reveal set) pairs per position and step, each in exact fractions."""
    return (V + 2) ** L * L * N * CERTIFY_COST


@dataclass
class Candidate:
    """One instance and its float64 margin."""

    language: Language
    L: int
    N: int
    process: str
    margin: float
    relative: float = math.nan  # margin / (|lhs| + |rhs|): NaN where both sides vanish
    strict: bool = False  # the claim's relation is < or >: a margin of 0 violates it

    def describe(self) -> dict:
        return {"L": self.L, "N": self.N, "process": self.process, "margin": self.margin,
                "relative_margin": self.relative}

    @property
    def objective(self) -> float:
        """What the search lowers: the relative margin (scale-free: 0 where the bound is attained, whatever the
        size of its sides), 1 on an instance where both sides vanish (the claim says nothing there)."""
        if math.isfinite(self.relative):
            return self.relative
        return 1.0 if math.isfinite(self.margin) else math.nan

    @property
    def violates(self) -> bool:
        """A margin below -NUMERIC_TOL (-inf included); for a strict claim (< or >), a margin of 0 as well."""
        return self.margin < -NUMERIC_TOL or (self.strict and self.margin <= 0)

    def size(self) -> tuple:
        """How counterexamples are ordered: shorter, fewer steps, fewer positive table entries, then the larger
        violation (the more negative margin; not the tables' sum of -log p, which drove rows toward 2^-11 entries
        and margins of -5e-8 where margins of -0.69 of the same size existed)."""
        L, N, positive, _ = instance_size(self.L, self.N, self.language)
        return (L, N, positive, self.margin)


@dataclass
class RefuteResult:
    """What :func:`~.refute.search` found: ``verdict``, the tightest (or violating) ``candidate`` and its
    certificate."""

    claim: str
    verdict: str  # one of VERDICTS
    candidate: Candidate | None
    certificate: dict | None
    evaluations: int
    seconds: float
    history: list = field(default_factory=list)  # margin of each evaluation, in order
    family: str = ""
    phases: dict = field(default_factory=dict)  # evaluations per phase: explore, refine, shrink
    settings: dict = field(default_factory=dict)  # lengths, steps, processes, budget, seed
    interval: int | None = None
    certify_seconds: float = 0.0  # of ``seconds``: the exact re-computation of a violation
    first_violation: dict | None = None  # {"evaluations", "seconds"} when the first float violation was found
    proof: dict | None = None  # :func:`~.rules.prove_search`'s answer (None: no proof was attempted)

    @property
    def evaluations_per_second(self) -> float:
        """Margin evaluations per second of search (the certificate's time left out)."""
        searching = self.seconds - self.certify_seconds
        return self.evaluations / searching if searching > 0 else math.inf

    def quantities(self, names=None) -> dict:
        """The instance's quantities (all, or ``names``): the exact ones of the certificate, else the float ones."""
        from .quantities import instance_quantities

        c = self.candidate
        if c is None:
            return {}
        values = (self.certificate or {}).get("values") or instance_quantities(c.language, c.L, c.process, c.N,
                                                                               interval=self.interval)
        return {k: v for k, v in values.items() if names is None or k in names}

    def to_dict(self, reproduce: dict | None = None) -> dict:
        """A JSON-ready report: claim, verdict, instance, the claim's quantities, margin, certificate, search."""
        out: dict[str, Any] = {"claim": self.claim, "verdict": self.verdict, "family": self.family}
        if self.candidate is not None:
            c = self.candidate
            out["instance"] = {"L": c.L, "N": c.N, "process": c.process, "language": describe_language(c.language)}
            out["quantities"] = self.quantities(parse_claim(self.claim).quantities)
            out["margin"] = c.margin
            out["relative_margin"] = c.relative
        out["certificate"] = self.certificate
        if self.proof is not None:
            from .rules import proof_report

            out["proof"] = proof_report(self.proof)
        finite = [m for m in self.history if not math.isnan(m)]  # an infinite margin was evaluated too
        out["search"] = {**self.settings, "evaluations": self.evaluations, "seconds": self.seconds,
                         "certify_seconds": self.certify_seconds,
                         "evaluations_per_second": self.evaluations_per_second, "phases": self.phases,
                         "evaluated": len(finite), "not_applicable": len(self.history) - len(finite),
                         "first_violation": self.first_violation}
        uncapped = [p for p in self.settings.get("processes", ()) if str(p).partition(":")[0] in UNCAPPED]
        if uncapped:
            out["search"]["note"] = (f"N does not limit {', '.join(uncapped)}: these rules reveal until every position "
                                     "is revealed, however many steps that takes (N is recorded, not used)")
        if reproduce:
            out["reproduce"] = reproduce
        return out


def describe_language(language) -> str:
    """``3-gram over 2 tokens, 7 of 10 entries positive`` (how a report names an instance's language)."""
    from mdmt.constructions.languages.ngram import NGram

    from .certificate import tables_of

    if getattr(language, "kind", None) == "explicit":
        return (f"explicit law of {language.n_sequences} sequences of length {language.length} over "
                f"{language.n_symbols} tokens")
    tables = tables_of(language)
    positive, total = sum(int((t > 0).sum()) for t in tables), sum(int(t.size) for t in tables)
    kind = (f"{language.n}-gram" if isinstance(language, NGram) else f"HMM with {language.n_states} states")
    return f"{kind} over {language.n_symbols} tokens, {positive} of {total} table entries positive"


def _announce_certificate(best: Candidate) -> None:
    """A line on standard error before a certificate estimated to take more than a few seconds: what it is doing."""
    import sys

    work = certificate_work(int(best.language.n_symbols), best.L, best.N)
    if work > 5 * 10 ** 9:
        print(f"mdmt refute: a violation found; certifying it in exact arithmetic at L = {best.L}, N = {best.N} "
              f"(about {work / 1e9:.2g} s; MDMT_MAX_WORK bounds it)", file=sys.stderr, flush=True)


def _verdict(claim: Claim, best: Candidate | None, certify: bool, interval: int | None):
    """(verdict, candidate, certificate) of the instance a search ends with: no violation (none, or a margin within
    ``NUMERIC_TOL`` of 0: tight), a numeric violation, or what :func:`_certify` establishes."""
    if best is None or not best.violates:
        return "no violation found", best, None
    if not certify:
        return "numeric violation", best, None
    return _certify(claim, best, interval)


def _certify(claim: Claim, best: Candidate, interval: int | None):
    """(verdict, candidate, certificate) of a float64 violation, re-established on dyadic rationals; a certificate
    estimated above ``MDMT_MAX_WORK`` operations (:func:`certificate_work`) is not attempted: the violation stays
    numeric, and the certificate says why."""
    from mdmt.runtime.resources import check_work

    from .certificate import MAX_CERTIFIED_SEQUENCES, NotCertifiable, certify_claim, dyadic_language

    V = int(best.language.n_symbols)
    try:
        if V ** min(best.L, 64) <= MAX_CERTIFIED_SEQUENCES:  # (larger ones are refused by certify_claim at once)
            check_work(f"the exact certificate at L = {best.L}, N = {best.N} (V = {V})",
                       certificate_work(V, best.L, best.N), "the violation is reported as numeric")
    except ResourceError as exc:
        return "numeric violation", best, {"verdict": "not certified", "reason": str(exc)}
    try:
        cert: dict = {}
        for bits in CERTIFY_BITS:  # finer rationals keep a small violation
            rounded = dyadic_language(best.language, bits)
            cert = certify_claim(claim, rounded, best.L, best.process, best.N, interval=interval)
            if cert["verdict"] == "certified violation":
                relative = claim.relative_margin(cert["values"])
                return ("certified violation", Candidate(rounded, best.L, best.N, best.process, cert["margin"][1],
                                                         relative, claim.strict), {**cert, "bits": bits})
        # the exact computation does not confirm the float one: no violation is claimed
        return "no violation found", best, {**cert, "verdict": f"the instance rounded to 2^-{CERTIFY_BITS[-1]} is "
                                                                f"{cert['verdict']}"}
    except (NotCertifiable, ClaimError) as exc:  # a process or quantity without an exact evaluation
        return "numeric violation", best, {"verdict": "not certified", "reason": str(exc)}
