"""Certified verdicts of a claim on one instance: the language's tables as exact rationals, every quantity exact.

A violation found in float64 is only a lead.  :func:`certify_claim` re-establishes it:

1. :func:`dyadic_language` rounds every probability of the language's tables to a multiple of
   2^-bits, each row summing to exactly 1 (zeros stay zeros), so that the float language and the
   rational one are the same object: the instance certified is the one written out;
2. :func:`exact_quantities` recomputes every claim quantity from that language without floats: the
   law q on V^L in rationals (python-flint's fmpq recursion of :mod:`.references`), the subset
   entropies as exact sums of logarithms of rationals (:class:`~.intervals.LogSum`), the output law
   p of the reverse process by enumerating every trajectory (:mod:`.brute_force`) with the exact
   oracle, hence KL = sum q log(q/p) as a LogSum, SER and E[NFE] as rationals, E[sum_j D_j]
   (Lemma B.9) and P_distinct (Theorem 4.4) in rationals for i.i.d. reveal steps, and for those
   (L <= 6) E sum_j TC(X_{S_j} | x_{U_j}) over every ordered partition of the positions; for every
   other process, E sum_j TC and E[sum_j D_j] along x ~ q with the process's own choices, by
   enumerating every reachable revealed state (:func:`.brute_force.teacher_forced_by_trajectories`);
3. the claim's margin is evaluated in arb ball arithmetic from those values
   (:meth:`~.claims.Claim.margin_ball`), at 256 bits and, where the ball still holds 0, at 1024:
   ``certified violation`` when the ball lies below 0 (at or below, for a strict relation),
   ``certified`` when it lies above, ``undecided`` otherwise (an attained bound: the margin is
   exactly 0 and no ball excludes it).

Processes whose rule reads a logarithm (``entropy``, ``entropy-sum``) are refused
(:class:`NotCertifiable`): their reveal decisions compare sums of logarithms, which this
enumeration does not decide exactly.  Only the oracle denoiser is certified (eps = 0).
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from mdmt.constructions.languages.hmm import HMM
from mdmt.constructions.languages.ngram import NGram
from mdmt.constructions.reverse.policies import (IID, EntropySum, FixedOrder, RandomSizes, Sizes, Threshold, TopK,
                                                  fixed_step_sizes, parse_policy)
from mdmt.runtime.validation import positive_int
from mdmt.constructions.types import Language

from ..verification import brute_force as bf
from ..theorems.intervals import LogSum, to_arb

if TYPE_CHECKING:
    from .claims import Claim

MAX_CERTIFIED_SEQUENCES = 4096  # V^L sequences: the trajectory enumeration visits every revealed state
MAX_PARTITION_LENGTH = 6  # E_TC of i.i.d. steps sums over the ordered partitions of L positions (4683 at L = 6)


class NotCertifiable(ValueError):
    """An instance or process outside what :func:`exact_quantities` computes exactly."""


def dyadic_rows(P, bits: int = 20) -> np.ndarray:
    """Each row of P rounded to multiples of 2^-bits summing to exactly 1 (the largest entry absorbs the rest)."""
    P = np.asarray(P, dtype=np.float64)
    scale = float(1 << bits)
    R = np.round(P * scale)
    R[P == 0] = 0
    R = np.where((P > 0) & (R == 0), 1.0, R)  # a possible outcome stays possible
    rows = R.reshape(-1, R.shape[-1])
    for r in rows:
        r[int(np.argmax(r))] += scale - r.sum()
        if r.min() < 0:
            raise NotCertifiable(f"a row cannot be rounded to multiples of 2^-{bits} (too many tiny entries)")
    return (rows / scale).reshape(P.shape)


def tables_of(language) -> list[np.ndarray]:
    """The probability tables of an n-gram (initial law, conditionals), an HMM (start, transition, emission) or an
    explicit law (one table: its weights, in the order of its sorted support)."""
    if getattr(language, "kind", None) == "explicit":
        return [language.weights_]
    if isinstance(language, NGram):
        return [language.initial_, language.transition_]
    if isinstance(language, HMM):
        return [language.startprob_, language.transmat_, language.emissionprob_]
    raise NotCertifiable(f"a {type(language).__name__} has no tables mdmt can round or refine")


def with_tables(language, tables):
    """A language of the same kind (and order) as ``language`` with other tables (in :func:`tables_of`'s order);
    an explicit law keeps the sequences of its support whose new weight is positive."""
    if getattr(language, "kind", None) == "explicit":
        from mdmt.constructions.languages.explicit import ExplicitLanguage

        w = np.asarray(tables[0], dtype=np.float64)
        keep = w > 0
        return ExplicitLanguage(language.support_[keep], w[keep] / w[keep].sum(), n_symbols=language.n_symbols)
    return NGram(language.n, *tables) if isinstance(language, NGram) else HMM(*tables)


def dyadic_language(language, bits: int = 20):
    """The language with every table rounded by :func:`dyadic_rows` (an n-gram or an HMM)."""
    bits = positive_int("bits", bits)
    return with_tables(language, [dyadic_rows(t, bits) for t in tables_of(language)])


def _exact_rule(policy, L: int):
    """(rule, steps, weight) triples of the process: the rules of :mod:`.brute_force` with exact parameters."""
    if isinstance(policy, (EntropySum,)) or (isinstance(policy, TopK) and policy.score == "entropy"):
        raise NotCertifiable(f"process {policy.spec!r}: its reveal decisions compare logarithms; only float64 "
                             "verdicts are available")
    if isinstance(policy, IID):
        pi = [Fraction(float(p)) for p in policy.pi]
        total = sum(pi)
        pi = [p / total for p in pi]
        rates, left = [], Fraction(1)
        for p in pi:
            rates.append(p / left if left > 0 else Fraction(1))
            left -= p
        return [(bf.reference_rule("rate", rates=rates), len(pi), Fraction(1))], pi
    if isinstance(policy, RandomSizes):
        law = (bf.random_size_law(L, policy.N, bf.boundary_weights(L, policy.law)) if L > 1 and policy.N > 1
               else {(L,): 1})
        return [(bf.reference_rule("sizes", sizes=list(s)), len(s), Fraction(p)) for s, p in law.items()], None
    if isinstance(policy, TopK):
        return [(bf.reference_rule("topk", score=policy.score, sizes=list(fixed_step_sizes(policy, L))), policy.N,
                 Fraction(1))], None
    if isinstance(policy, Sizes):  # fixed or balanced sizes
        sizes = list(fixed_step_sizes(policy, L))
        return [(bf.reference_rule("sizes", sizes=sizes), len(sizes), Fraction(1))], None
    if isinstance(policy, Threshold):
        steps = policy.steps or L
        return [(bf.reference_rule("threshold", tau=policy.tau, cap=policy.steps or 10 ** 9), steps,
                 Fraction(1))], None
    if isinstance(policy, FixedOrder):
        order = [int(v) for v in policy.order(L)]
        return [(bf.reference_rule("fixed", order=order), max(order), Fraction(1))], None
    raise NotCertifiable(f"process {policy.spec!r} is not certified")


def exact_quantities(language, L: int, process: str = "iid", N: int | None = None,
                     interval: int | None = None) -> dict:
    """Every claim quantity that applies, exactly: ints, Fractions and LogSums (module docstring).

    ``language`` is taken as the rational numbers its float tables hold (round it first with
    :func:`dyadic_language` for short denominators).
    """
    from ..verification.references import (ChainEval, Partitions, Reference, expected_dependencies_exact, p_distinct_exact,
                              partition_probabilities)

    L = positive_int("L", L)
    V = int(language.n_symbols)
    if V ** L > MAX_CERTIFIED_SEQUENCES:
        raise NotCertifiable(f"exact certificates enumerate V^L = {V}^{L} sequences and every revealed state; at "
                             f"most {MAX_CERTIFIED_SEQUENCES} sequences are supported")
    from mdmt.constructions.reverse.policies_beyond import resolve

    policy = resolve(parse_policy(process, N), language, L)
    if hasattr(policy, "exact_law"):
        raise NotCertifiable(f"process {policy.spec!r} is not a reveal-only process: its law is float64 only")
    ref = Reference(language, L, exact=True)
    q = [Fraction(v) for v in ref.q_frac]
    X = bf.all_sequences(V, L)
    full = (1 << L) - 1
    HW = ref.HW
    H = HW[full]
    Hi = [HW[ref.lay.bit(i)] for i in range(L)]
    Hc = [H - HW[full ^ ref.lay.bit(i)] for i in range(L)]
    TC = sum(Hi, LogSum()) - H
    DTC = H - sum(Hc, LogSum())
    out = {"L": L, "V": V, "eps": 0, "H": H, "TC": TC, "DTC": DTC, "sum_MI": TC + DTC}
    n = language.n if isinstance(language, NGram) else None
    if N is not None:
        out["N"] = positive_int("number of steps N", N)
    if n is not None:
        out["n"] = n
    if interval is not None:
        out["l"] = positive_int("interval length l", interval, minimum=2)
    rules, pi = _exact_rule(policy, L)
    den = bf.exact_oracle(X, q)
    p = np.array([Fraction(0)] * len(X), dtype=object)
    nfe = Fraction(0)
    for rule, steps, weight in rules:
        pr, nr = bf.policy_law_by_trajectories(X, den, rule, steps)
        p = p + weight * pr
        nfe += weight * nr
    support = [r for r in range(len(X)) if q[r] > 0]
    if any(p[r] == 0 for r in support):
        raise NotCertifiable("the process gives probability 0 to a sequence of the support: KL is infinite")
    KL = sum((LogSum.log(q[r] / p[r]) * q[r] for r in support), LogSum())
    out.update(KL=KL, KL_per_token=KL * Fraction(1, L), TER_gap=KL * Fraction(1, L),
               SER=1 - sum((p[r] for r in support), Fraction(0)), NFE=nfe)
    if pi is not None and L <= MAX_PARTITION_LENGTH:  # E sum_j TC over every ordered partition, exactly
        parts = Partitions(L, L)
        chain = ChainEval(ref, None, parts)
        out["E_TC"] = (partition_probabilities(parts, pi, ref.B) * chain.tc).sum()
    if pi is not None and n is not None:
        out["E_D"] = sum(expected_dependencies_exact(n, L, pi), Fraction(0))
    if pi is None:  # the process's own choices: E sum_j TC and E sum_j D_j along x ~ q, by teacher forcing
        tf = [bf.teacher_forced_by_trajectories(X, q, den, rule, steps, n) for rule, steps, _ in rules]
        out["E_TC"] = sum((t["E_TC"] * weight for t, (_, _, weight) in zip(tf, rules)), LogSum())
        if n is not None:
            out["E_D"] = sum((t["E_D"] * weight for t, (_, _, weight) in zip(tf, rules)), Fraction(0))
    if pi is not None and interval is not None:
        out["P_distinct"] = p_distinct_exact(pi, interval)
    sizes = fixed_step_sizes(policy, L)
    if sizes is not None:
        out["s_max"] = int(max(int(s) for s in sizes))
    return out


def _balls(values: dict, prec: int) -> dict:
    return {k: (v.arb(prec) if isinstance(v, LogSum) else to_arb(Fraction(v) if not isinstance(v, float) else v, prec))
            for k, v in values.items()}


def _as_claim(claim) -> Claim:
    """A claim given as text parsed (:func:`~.claims.parse_claim`); a Claim as it is; anything else refused."""
    from .claims import Claim, parse_claim

    if isinstance(claim, Claim):
        return claim
    if isinstance(claim, str):
        return parse_claim(claim)
    raise TypeError(f"claim must be a claim's text (e.g. 'KL <= TC / N') or a Claim, got {type(claim).__name__} "
                    f"{claim!r:.60}")


def certify_claim(claim: str | Claim, language: Language, L: int, process: str = "iid", N: int | None = None,
                  interval: int | None = None) -> dict:
    """The verdict of ``claim`` (a :class:`~.claims.Claim`) on the instance, from :func:`exact_quantities`.

    Returns ``verdict`` ("certified violation", "certified", "undecided"), ``margin`` (the final
    ball's (lower, upper) ends as floats, rounded outward), ``prec`` (bits), ``values`` (floats) and
    ``enclosures`` (each quantity's ball at ``prec``, its ends rounded outward).
    """
    claim = _as_claim(claim)
    values = exact_quantities(language, L, process, N, interval)
    strict = claim.relation in ("<", ">")
    verdict, ball, prec, balls = "undecided", None, 0, {}
    for prec in (256, 1024):
        balls = _balls(values, prec)
        ball = claim.margin_ball(balls, prec=prec, exact=values)
        lower, upper = ball.lower(), ball.upper()  # exact ends: compared with 0 exactly
        if (upper <= 0) if strict else (upper < 0):
            verdict = "certified violation"
            break
        if (lower > 0) if strict else (lower >= 0):
            verdict = "certified"
            break
    return {"verdict": verdict, "margin": _enclosure(ball), "prec": prec,
            "values": {k: float(v) for k, v in values.items()},
            "enclosures": {k: _enclosure(b) for k, b in balls.items()}}


def _enclosure(ball) -> tuple:
    """A ball's ends as floats, each moved one float64 step outward unless the float is the end itself."""
    import flint

    ends = []
    for end, away in ((ball.lower(), -np.inf), (ball.upper(), np.inf)):
        f = float(end)
        ends.append(f if flint.arb(f) == end else float(np.nextafter(f, away)))
    return tuple(ends)
