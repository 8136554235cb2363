"""Checks of the refutation layer (family ``RF`` of ``mdmt verify``): claims, their quantities, certificates and the
search's families, each against a value derived by hand in the comment next to it.

``claims``
    claims of :mod:`.claims` evaluated three ways -- float64 (:meth:`~.claims.Claim.margin`), arb balls
    (:meth:`~.claims.Claim.margin_ball`, what certificates use) and exactly (the sympy form
    :attr:`~.claims.Claim.sympy`, simplified) -- at literal values of the quantities, against the margin worked
    out by hand (for every function of the claim language that a margin can read: log2 at sizes that are and
    are not powers of two, exp, log, sqrt, abs, ceil, floor, harmonic, min, max);
``quantities``
    :func:`~.quantities.instance_quantities` (float64) and :func:`~.certificate.exact_quantities` on the binary
    copying chain (x_1 uniform, x_(i+1) = x_i) at L = 3, all positions revealed in one step, against their values
    by hand -- eps in its max form (Section 4.1 of Feng et al.) for a uniform mixture;
``certificates``
    :func:`~.certificate.certify_claim` re-checked: a true claim certified with its margin, a false one a
    certified violation, an attained one decided from the exact values (margin exactly 0: ``<=`` certified, ``<`` a
    certified violation), and the certificate
    of a float language rounded by :func:`~.certificate.dyadic_rows` (to nearest) carrying the value of the
    rounded language by hand.  A certifier that decides from float64 margins, or certifies everything, fails;
``families``
    Algorithm 1/2 draws of :mod:`.families` coded and decoded keep the drawn language's support (each row's
    smallest positive entry has code 1, not 0);
``proofs``
    the exact check of a Shannon-type certificate (:func:`~.shannon.verify`, no LP: cheap) on a certificate written
    by hand -- (L - 1) TC - DTC = I(X1; X2) + I(X1; X3) + I(X2; X3) at L = 3 -- accepted, and the same with one
    multiplier halved refused; the number of elemental inequalities L + C(L, 2) 2^(L-2) at L = 3, 4, 5 (9, 28, 85).

Every row is exact (rational or exact log-sums) or certified (arb), except the float64 ones, which are numeric
with a stated tolerance.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import sympy as sp

from mdmt.constructions.languages.ngram import NGram

from .checks import Row, agree, decide, exact_row, to_logsum

F = Fraction
LN2 = sp.log(2)

# (claim, values of its quantities, its margin by hand: rhs - lhs for <=, lhs - rhs for >=)
CLAIMS = (
    # ceil(log2 3) = 2: (2^2 - 1) / 3 * 1 - 1/2 = 1/2 (log2 taken as log / 2 gives ceil(0.55) = 1: -1/6)
    ("KL <= (2 ** ceil(log2(s_max)) - 1) / L * sum_MI", {"KL": F(1, 2), "s_max": 3, "L": 3, "sum_MI": 1},
     sp.Rational(1, 2)),
    # ceil(log2 5) = 3: 7 / 5 * 2 - 1 = 9/5
    ("KL <= (2 ** ceil(log2(s_max)) - 1) / L * sum_MI", {"KL": 1, "s_max": 5, "L": 5, "sum_MI": 2}, sp.Rational(9, 5)),
    # a power of two: ceil(log2 4) = 2, 3 / 4 * 4 - 2 = 1
    ("KL <= (2 ** ceil(log2(s_max)) - 1) / L * sum_MI", {"KL": 2, "s_max": 4, "L": 4, "sum_MI": 4}, sp.Integer(1)),
    # log2(8) = 3 exactly: TC - 3 = 1/2
    ("TC >= log2(V) ", {"TC": F(7, 2), "V": 8}, sp.Rational(1, 2)),
    # Theorem 4.4 at eps = log 2: e^(-2 log 2) / 2 = 1/8; (1 - 1/8 * 1/2)^(4/2) = 225/256; 1/4 - 31/256 = 33/256
    ("SER >= 1 - (1 - exp(-2 * eps) / 2 * (1 - P_distinct)) ** (L / l)",
     {"SER": F(1, 4), "eps": LN2, "P_distinct": F(1, 2), "L": 4, "l": 2}, sp.Rational(33, 256)),
    # the chain bound: 1/2 + 4 log 4 * 3 / 6 - 1 = 4 log 2 - 1/2
    ("KL_per_token <= eps + 4 * log(V) * E_D / L", {"KL_per_token": 1, "eps": F(1, 2), "V": 4, "E_D": 3, "L": 6},
     4 * LN2 - sp.Rational(1, 2)),
    # sqrt(9/4) = 3/2, harmonic(4) = 25/12, floor(7/3) = 2, |3 - 5| = 2: 8 - (3/2 + 25/12 - 2 + 2) = 53/12
    ("H >= sqrt(TC) + harmonic(N) - floor(DTC) + abs(n - 5)", {"H": 8, "TC": F(9, 4), "N": 4, "DTC": F(7, 3), "n": 3},
     sp.Rational(53, 12)),
    # min(1/3, 1/2) = 1/3 and max(2/3, 3/4) = 3/4; 3/4 / log2(4) = 3/8: 3/8 - 1/3 = 1/24
    ("min(KL, TC) <= max(DTC, sum_MI) / log2(V)", {"KL": F(1, 3), "TC": F(1, 2), "DTC": F(2, 3), "sum_MI": F(3, 4),
                                                   "V": 4}, sp.Rational(1, 24)),
    # ceil(5/2) = 3, strict: 3 - 2.5 = 1/2 (a decimal literal is the rational it spells)
    ("s_max < ceil(L / 2) - 2.5 + N", {"s_max": 2, "L": 5, "N": 2}, sp.Rational(1, 2)),
)


def _claim_rows() -> list[Row]:
    from ..refutation.claims import parse_claim

    rows = []
    for k, (text, values, margin) in enumerate(CLAIMS):
        claim = parse_claim(text)
        case = f"claim{k + 1}: {text.strip()}"
        exact = {q: (sp.Rational(F(v).numerator, F(v).denominator) if isinstance(v, (int, F)) else v)
                 for q, v in values.items()}
        floats = {q: float(v) for q, v in exact.items()}
        hand = float(margin)
        rows.append(agree("RF", "claims", f"{case}: float64 margin = {margin}", claim.margin(floats), (hand, hand),
                          1e-12 * (1 + abs(hand))))
        balls = {q: to_logsum(v).arb(256) for q, v in exact.items()}
        rows.append(decide("RF", "claims", f"{case}: ball margin = {margin}", claim.margin_ball(balls),
                           to_logsum(margin), "=="))
        rel = claim.sympy
        sym = {sp.Symbol(q, real=True): v for q, v in exact.items()}
        lhs, rhs = rel.lhs.subs(sym), rel.rhs.subs(sym)
        got = (rhs - lhs) if claim.relation in ("<=", "<") else (lhs - rhs)
        same = sp.simplify(got - margin) == 0
        rows.append(Row("RF", "claims", f"{case}: exact margin = {margin}", (hand, hand), (hand, hand), "==", "exact",
                        bool(same), 0.0 if same else -1.0, 0.0, f"sympy: {sp.simplify(got)}"[:200]))
    return rows


def _copy(start=(0.5, 0.5)) -> NGram:
    """x_1 ~ start, then x_(i+1) = x_i: the binary copying chain."""
    return NGram(2, np.asarray(start, dtype=np.float64), np.eye(2))


def _quantity_rows() -> list[Row]:
    from mdmt.constructions.reverse.denoisers import UniformMixture

    from ..refutation.certificate import exact_quantities
    from ..refutation.quantities import instance_quantities

    lang = _copy()
    # By hand, on 000 and 111 with probability 1/2 each, L = 3, every position revealed at step 1 ("uniform", N = 1):
    # H = log 2; H(X_i) = log 2, H(X_i | X_-i) = 0, so TC = 3 log 2 - log 2 = 2 log 2, DTC = log 2, sum_MI = 3 log 2;
    # the one step draws each position from its marginal (1/2, 1/2), so p = 1/8 on each of the 8 sequences: KL =
    # log(1/2 / (1/8)) = 2 log 2, SER = 1 - 2/8 = 3/4, NFE = 1, s_max = 3.  The uniform mixture 0.2 has the rows
    # 0.8 q + 0.1; its max-form learning error is at a revealed neighbour (q = (1, 0)): -log(0.9) = log(10/9).
    # The mixture's all-masked row is the oracle's (1/2, 1/2), so KL is the same with it.
    hand = {"H": LN2, "TC": 2 * LN2, "DTC": LN2, "sum_MI": 3 * LN2, "KL": 2 * LN2, "SER": sp.Rational(3, 4),
            "NFE": sp.Integer(1), "s_max": sp.Integer(3), "E_TC": 2 * LN2}
    lib = instance_quantities(lang, 3, "uniform", 1, denoiser=UniformMixture(lang, 0.2))
    rows = [agree("RF", "copy2L3", f"instance_quantities {q} = {v}" + (" (max form)" if q == "eps" else ""),
                  lib.get(q, math.nan), to_logsum(v).arb(128), 1e-12 * (1 + abs(float(v))))
            for q, v in {**hand, "eps": sp.log(sp.Rational(10, 9))}.items()]
    ex = exact_quantities(lang, 3, "uniform", 1)
    rows += [exact_row("RF", "copy2L3", f"exact_quantities {q} = {v}", ex[q], v, "==")
             for q, v in {**hand, "eps": sp.Integer(0)}.items()]
    return rows


def _certificate_rows() -> list[Row]:
    from ..refutation.certificate import certify_claim, dyadic_language, dyadic_rows
    from ..refutation.claims import parse_claim

    rows = []
    lang = _copy()
    # (claim, verdict, margin by hand) with the values of _quantity_rows: Li & Cai's constant at s_max = 3 is 3, so the
    # bound is 3/3 * 3 log 2 and the margin 3 log 2 - 2 log 2 = log 2; sum_MI / 2 - KL = -log 2 / 2; TC - KL = 0, a
    # difference of logarithms that the certificate decides from the exact values (attained: margin exactly 0); 3/4 - SER
    # = 0 exactly, a rational: the non-strict claims are certified, the strict ones certified violations
    for text, verdict, margin in (("KL <= (2 ** ceil(log2(s_max)) - 1) / L * sum_MI", "certified", LN2),
                                  ("KL <= sum_MI / 2", "certified violation", -LN2 / 2),
                                  ("KL <= TC", "certified", sp.Integer(0)),
                                  ("KL < TC", "certified violation", sp.Integer(0)),
                                  ("SER < 3/4", "certified violation", sp.Integer(0)),
                                  ("SER <= 3/4", "certified", sp.Integer(0))):
        cert = certify_claim(parse_claim(text), lang, 3, "uniform", 1)
        ok = cert["verdict"] == verdict
        rows.append(Row("RF", "copy2L3", f"certify {text}: {verdict}", (0.0, 0.0), (0.0, 0.0), "step",
                        "exact" if ok else "FAILED", ok, 0.0, math.nan, f"certify_claim: {cert['verdict']}"))
        rows.append(decide("RF", "copy2L3", f"certify {text}: margin = {margin}", tuple(cert["margin"]),
                           to_logsum(margin), "=="))
    # dyadic rounding to nearest: 0.3 * 16 = 4.8 -> 5, 0.7 * 16 = 11.2 -> 11 (sum 16): 5/16, 11/16 (floor: 4/16, 12/16)
    got = [[F(float(v)) for v in r] for r in dyadic_rows([[0.3, 0.7]], 4)]
    ok = got == [[F(5, 16), F(11, 16)]]
    rows.append(Row("RF", "dyadic", "[[0.3, 0.7]] at 4 bits = [[5/16, 11/16]]", (0.0, 0.0), (0.0, 0.0), "==",
                    "exact", ok, 0.0 if ok else -1.0, 0.0, f"library: {got}"))
    # the certificate of a rounded language: the copying chain started at (0.3, 0.7), rounded at 4 bits, is started at
    # (5/16, 11/16); revealed in one step, p(000) = (5/16)^3 and p(111) = (11/16)^3, so KL = -2 (5/16 log 5/16 +
    # 11/16 log 11/16) = 2 H, and H = 5/16 log(16/5) + 11/16 log(16/11)
    H = sp.Rational(5, 16) * sp.log(sp.Rational(16, 5)) + sp.Rational(11, 16) * sp.log(sp.Rational(16, 11))
    cert = certify_claim(parse_claim("KL <= 2 * H"), dyadic_language(_copy((0.3, 0.7)), 4), 3, "uniform", 1)
    rows.append(decide("RF", "dyadic", "certificate of the rounded chain: KL = 2 H(5/16)", cert["enclosures"]["KL"],
                       to_logsum(2 * H), "=="))
    ok = cert["verdict"] == "certified" and tuple(cert["margin"]) == (0.0, 0.0)  # KL = 2 H exactly: attained
    rows.append(Row("RF", "dyadic", "certify KL <= 2 * H on the rounded chain: certified, margin 0 (attained)", (0.0, 0.0),
                    (0.0, 0.0), "step", "exact" if ok else "FAILED", ok, 0.0, math.nan, f"certify_claim: {cert['verdict']}"))
    return rows


def _family_rows() -> list[Row]:
    from mdmt.constructions.languages.random_languages import random_hmm, random_ngram

    from ..refutation.certificate import tables_of
    from ..refutation.families import family

    rows = []
    for spec, draw in (("ngram:n=2,V=3", lambda t, c, s: random_ngram(2, 3, t, c, seed=s)),
                       ("ngram:n=3,V=2", lambda t, c, s: random_ngram(3, 2, t, c, seed=s)),
                       ("hmm:S=2,V=3", lambda t, c, s: random_hmm(2, 3, t, c, seed=s))):
        fam = family(spec)
        bad = 0
        for t, c, s in ((0.3, 0.2, 1), (1.0, 0.05, 2), (4.0, 0.0, 3)):
            drawn = [np.asarray(x) > 0 for x in tables_of(draw(t, c, s))]
            coded = [np.asarray(x) > 0 for x in tables_of(fam.language(fam.drawn_codes(t, c, s)))]
            bad += not all(np.array_equal(a, b) for a, b in zip(drawn, coded))
        rows.append(Row("RF", "families", f"{spec}: Algorithm 1/2 draws keep their support when coded (3 draws)",
                        (float(bad), float(bad)), (0.0, 0.0), "==", "exact", bad == 0, -float(bad), 0.0, ""))
    return rows


def _proof_rows() -> list[Row]:
    from ..refutation.shannon import add_forms, elemental, elemental_count, entropic_form, verify

    rows = []
    # by hand: 2 TC - DTC = 2 (h1 + h2 + h3 - h123) - (h12 + h13 + h23 - 2 h123) = 2 (h1 + h2 + h3) - (h12 + h13 + h23),
    # and I(Xi; Xj) = hi + hj - hij summed over the three pairs is the same form
    target = add_forms({k: 2 * v for k, v in entropic_form("TC", 3).items()}, entropic_form("DTC", 3), -1)
    rows_by_text = {e.text: (1, e.text, "", dict(e.coeffs), 0) for e in elemental(3)}
    pairs = [rows_by_text[f"I(X{i}; X{j}) >= 0"] for i, j in ((1, 2), (1, 3), (2, 3))]
    for case, ys, want in (("accepted", (1, 1, 1), True), ("with one multiplier halved, refused", (F(1, 2), 1, 1),
                                                           False)):
        got = verify(target, 0, False, [(F(y), row) for y, row in zip(ys, pairs)]) is not None
        ok = got == want
        rows.append(Row("RF", "proofs", f"certificate of DTC <= 2 TC at L = 3, by hand: {case}", (float(got),) * 2,
                        (float(want),) * 2, "==", "exact", ok, 0.0 if ok else -1.0, 0.0, "shannon.verify (fmpq)"))
    counts = [elemental_count(L) for L in (3, 4, 5)] + [len(elemental(L)) for L in (3, 4, 5)]
    ok = counts == [9, 28, 85] * 2  # 3 + 3*2, 4 + 6*4, 5 + 10*8
    rows.append(Row("RF", "proofs", "elemental inequalities at L = 3, 4, 5: 9, 28, 85 (counted and listed)",
                    (0.0, 0.0), (0.0, 0.0), "==", "exact", ok, 0.0 if ok else -1.0, 0.0, f"library: {counts}"))
    return rows


def refutation_rows() -> list[Row]:
    """Family RF (module docstring)."""
    return _claim_rows() + _quantity_rows() + _certificate_rows() + _family_rows() + _proof_rows()
