"""Certified verdicts: dyadic tables, exact quantities equal to the float ones, and verdicts that can be trusted."""

import math
from fractions import Fraction

import numpy as np
import pytest

from mdmt.bounds.refutation.certificate import NotCertifiable, certify_claim, dyadic_language, dyadic_rows, exact_quantities
from mdmt.bounds.refutation.claims import parse_claim
from mdmt.bounds.refutation.quantities import instance_quantities
from mdmt.constructions.languages import NGram, interval_hmm, random_hmm, random_ngram

LI_CAI = parse_claim("KL <= (2 ** ceil(log2(s_max)) - 1) / L * sum_MI")
CHAIN = parse_claim("KL <= L * eps + log(V) * E_D")  # Lemma B.9, the chain bound in total form


def test_dyadic_rows_sum_to_one_exactly_and_keep_the_support():
    P = np.array([[0.3, 0.7, 0.0], [1e-9, 0.5, 0.5 - 1e-9], [1 / 3, 1 / 3, 1 / 3]])
    R = dyadic_rows(P, 12)
    assert np.all((R * 4096) == np.round(R * 4096))  # multiples of 2^-12
    assert all(math.fsum(r) == 1.0 and sum(r) == 1.0 for r in R)  # exactly, in any order of summation
    assert np.array_equal(R > 0, P > 0) and np.abs(R - P).max() <= 2 / 4096


@pytest.mark.parametrize("make, L, N, process, interval", [
    (lambda: random_ngram(3, 2, 2.0, 0.0, seed=3), 5, 3, "iid", None),
    (lambda: random_ngram(3, 2, 1.0, 0.0, seed=7), 5, 3, "confidence", None),
    (lambda: random_ngram(2, 3, 1.0, 0.0, seed=4), 4, 3, "margin", None),
    (lambda: random_ngram(3, 2, 2.0, 0.0, seed=1), 5, 3, "stride", None),
    (lambda: random_ngram(3, 2, 2.0, 0.0, seed=1), 5, 3, "random:tc", None),
    (lambda: random_hmm(3, 3, 1.5, 0.0, seed=4), 3, 2, "threshold:0.6", None),
    (lambda: interval_hmm(3), 3, 2, "iid", 3),
])
def test_the_exact_quantities_are_the_float_ones(make, L, N, process, interval):
    """Two code paths on one rational instance: rationals, log-sums and trajectory enumeration against mdmt's float
    evaluators (the numba chain, the windowed information quantities, the dependency transfer matrices)."""
    lang = dyadic_language(make(), 16)
    ex = exact_quantities(lang, L, process, N, interval)
    fl = instance_quantities(lang, L, process, N, interval=interval)
    exact_only_for_iid = {"E_D", "E_TC"}  # computed exactly for i.i.d. steps only
    assert set(ex) <= set(fl) and set(fl) - set(ex) <= (exact_only_for_iid if process != "iid" else set())
    for k, v in ex.items():
        assert float(v) == pytest.approx(fl[k], rel=1e-10, abs=1e-13), k


def test_a_false_claim_is_certified_false_and_a_true_one_true():
    lang = dyadic_language(random_ngram(3, 2, 1.0, 0.0, seed=7), 16)
    bad = certify_claim(LI_CAI, lang, 5, "confidence", 3)  # outside Li & Cai's assumption (docs/atlas.md)
    assert bad["verdict"] == "certified violation" and bad["margin"][1] < -0.1
    good = certify_claim(LI_CAI, lang, 5, "uniform", 3)  # inside it
    assert good["verdict"] == "certified" and good["margin"][0] > 0.05
    assert certify_claim(CHAIN, lang, 5, "iid", 3)["verdict"] == "certified"


def test_an_attained_bound_is_decided_exactly_where_the_arithmetic_stays_rational():
    """Theorem 4.4 at l = 2, L = 2, two linear steps: SER = 1/4 = the bound, every quantity rational (exp(0) = 1):
    the margin ball is exactly 0, so '>=' is certified and the strict '>' is certified false."""
    ge = parse_claim("SER >= 1 - (1 - exp(-2 * eps) / 2 * (1 - P_distinct)) ** (L / l)")
    gt = parse_claim("SER > 1 - (1 - exp(-2 * eps) / 2 * (1 - P_distinct)) ** (L / l)")
    res = certify_claim(ge, interval_hmm(2), 2, "iid", 2, interval=2)
    assert res["verdict"] == "certified" and res["margin"][0] <= 0 <= res["margin"][1]
    assert certify_claim(gt, interval_hmm(2), 2, "iid", 2, interval=2)["verdict"] == "certified violation"


def test_a_seeded_wrong_constant_is_certified_false_on_the_tight_instance():
    """The chain bound with its log|V| E[sum D_j] halved fails on a copying chain revealed at once (where the true
    bound is attained: KL = 2 log 2 = log 2 * E[sum D_j])."""
    copy = NGram(2, [0.5, 0.5], np.eye(2))
    halved = parse_claim("KL <= L * eps + log(V) * E_D / 2")
    res = certify_claim(halved, copy, 3, "iid", 1)
    assert res["verdict"] == "certified violation" and res["margin"][1] == pytest.approx(-math.log(2), rel=1e-12)
    assert certify_claim(CHAIN, copy, 3, "iid", 1)["verdict"] in ("certified", "undecided")  # attained: margin 0


def test_what_is_not_certified_says_why():
    lang = random_ngram(3, 2, 1.0, 0.0, seed=7)
    for process in ("entropy", "entropy-sum:0.5"):
        with pytest.raises(NotCertifiable, match="compare logarithms"):
            exact_quantities(lang, 5, process, 3)
    with pytest.raises(NotCertifiable, match="at most 4096 sequences"):
        exact_quantities(lang, 13, "uniform", 3)


@pytest.mark.parametrize("process", ["confidence", "margin", "stride", "blocks", "uniform", "random:tc",
                                     "threshold:0.6"])
def test_the_process_expectations_are_exact_for_every_process(process):
    """E sum_j TC and E[sum_j D_j] of a process's own choices, by enumerating every reachable revealed state with
    exact rationals, equal the float teacher-forced chain (another code path) on a binary 3-gram, L = 5."""
    lang = dyadic_language(random_ngram(3, 2, 1.0, 0.0, seed=7), bits=16)
    exact, floats = exact_quantities(lang, 5, process, 3), instance_quantities(lang, 5, process, 3)
    assert float(exact["E_TC"]) == pytest.approx(floats["E_TC"], rel=1e-12, abs=1e-15)
    assert isinstance(exact["E_D"], Fraction) and float(exact["E_D"]) == pytest.approx(floats["E_D"], rel=1e-12)


def test_the_two_exact_roads_to_the_iid_expectations_agree():
    """For i.i.d. steps, the sum over every ordered partition and the teacher-forced enumeration with the rate rule
    give the same E sum_j TC (to 256-bit balls) and the same E[sum_j D_j] (as rationals)."""
    from mdmt.bounds.verification import brute_force as bf
    from mdmt.bounds.refutation.certificate import _exact_rule
    from mdmt.bounds.verification.references import Reference
    from mdmt.constructions.reverse.policies import parse_policy

    lang, L = dyadic_language(random_ngram(3, 2, 1.0, 0.0, seed=7), bits=16), 5
    q = [Fraction(v) for v in Reference(lang, L, exact=True).q_frac]
    X = bf.all_sequences(2, L)
    (rule, steps, _), = _exact_rule(parse_policy("iid", 3), L)[0]
    road = bf.teacher_forced_by_trajectories(X, q, bf.exact_oracle(X, q), rule, steps, 3)
    partitions = exact_quantities(lang, L, "iid", 3)
    gap = (road["E_TC"] - partitions["E_TC"]).arb(256)
    assert gap.contains(0) and float(gap.rad()) < 1e-60
    assert road["E_D"] == partitions["E_D"]


def test_dyadic_rows_round_to_nearest_by_hand():
    """0.3 * 16 = 4.8 -> 5 and 0.7 * 16 = 11.2 -> 11 (sum 16, nothing to absorb): 5/16, 11/16 exactly (rounding down
    would give 4/16 and 12/16).  0.1, 0.2, 0.7 at 3 bits: 0.8 -> 1, 1.6 -> 2, 5.6 -> 6, sum 9: the largest absorbs -1,
    so 1/8, 2/8, 5/8."""
    assert [Fraction(float(v)) for v in dyadic_rows([[0.3, 0.7]], 4)[0]] == [Fraction(5, 16), Fraction(11, 16)]
    assert [Fraction(float(v)) for v in dyadic_rows([[0.1, 0.2, 0.7]], 3)[0]] == [Fraction(1, 8), Fraction(2, 8),
                                                                                  Fraction(5, 8)]


def test_li_and_cai_certified_where_s_max_is_not_a_power_of_two():
    """The copying chain (x_1 a fair bit, copied twice), L = 3, all revealed in one step: KL = 2 log 2, sum_MI = 3 log 2
    (test_quantities' values by hand), s_max = 3, so ceil(log2 3) = 2 and the bound is (2^2 - 1)/3 * 3 log 2 = 3 log 2:
    certified with margin log 2 = +0.693.  (log2 computed as log / 2 would give ceil(0.55) = 1, a bound of log 2 and a
    'certified violation' of a true bound.)"""
    cert = certify_claim(LI_CAI, NGram(2, [0.5, 0.5], np.eye(2)), 3, "uniform", 1)
    assert cert["verdict"] == "certified"
    lo, hi = cert["margin"]
    assert lo <= math.log(2) <= hi and hi - lo < 1e-12


def test_the_certificate_of_a_rounded_language_by_hand():
    """The copying chain started at (0.3, 0.7), rounded at 4 bits, starts at (5/16, 11/16); revealed in one step,
    p(000) = (5/16)^3 and p(111) = (11/16)^3, so KL = 2 H with H = 5/16 log(16/5) + 11/16 log(16/11) = 0.6211.
    The bound is attained, and both sides are exact: the margin is exactly 0, so ``<=`` is certified and ``<`` is a
    certified violation."""
    lang = dyadic_language(NGram(2, [0.3, 0.7], np.eye(2)), 4)
    cert = certify_claim(parse_claim("KL <= 2 * H"), lang, 3, "uniform", 1)
    H = 5 / 16 * math.log(16 / 5) + 11 / 16 * math.log(16 / 11)
    lo, hi = cert["enclosures"]["KL"]
    assert lo - 1e-15 <= 2 * H <= hi + 1e-15
    assert cert["verdict"] == "certified" and cert["margin"] == (0.0, 0.0)
    strict = certify_claim(parse_claim("KL < 2 * H"), lang, 3, "uniform", 1)
    assert strict["verdict"] == "certified violation" and strict["margin"] == (0.0, 0.0)
