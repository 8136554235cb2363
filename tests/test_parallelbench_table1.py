"""ParallelBench's printed Table 1 and Section 4 statements (arXiv 2510.04767) against mdmt's exact laws.

The printed entries are transcribed once in mdmt.bounds.theorems.parallelbench (printed_*, stated_*); these tests
check the transcription against values worked by hand (in the comments) and against mdmt's exact laws, and
check that family PB (rows T1, S4) fails when a printed formula is transcribed wrongly.
"""

import math
from fractions import Fraction

import pytest
import sympy as sp

from mdmt.bounds.theorems import parallelbench as pb
from mdmt.constructions.languages.spec import language_from_spec
from mdmt.constructions.reverse.policies import FixedOrder, Sizes, Threshold, TopK
from mdmt.constructions.reverse.support_exact import support_law


def _bits(x) -> float:
    return float(x)


def test_printed_entries_by_hand():
    # Eq. (3): n = 2: 1 * (1 - 0) = 1 bit; n = 4: 3 (2 - log2 3) bits
    assert sp.simplify(pb.printed_replace_random_c(2) - 1) == 0
    assert math.isclose(_bits(pb.printed_replace_random_c(4)), 3 * (2 - math.log2(3)))
    assert math.isclose(_bits(pb.PRINTED_REPLACE_RANDOM_C_LIMIT), 1 / math.log(2))  # log2(e) = 1.4427 bits
    # Eq. (4): n = 3: 3 log2 3 - log2 6 = log2(27/6) bits
    assert math.isclose(_bits(pb.printed_shuffle_c(3)), math.log2(27 / 6))
    # L_T for sizes 2, 2 (n = 4): 2 log2 4 + 2 log2 2 - log2 24 = log2(64/24) = log2(8/3) = L_(n/2) = log2(4!!/3!!)
    assert math.isclose(_bits(pb.printed_shuffle_lt([2, 2])), math.log2(8 / 3))
    assert math.isclose(_bits(pb.printed_shuffle_l_half(4)), math.log2(8 / 3))
    # Eq. (5): n = 6, k = 3: (6*5*4/6^3) (3*2*1/3^3) = (5/9)(2/9) = 10/81; n = 4, k = 2: (12/16)(2/4) = 3/8 = 3!!/4!!
    assert pb.printed_shuffle_accuracy(6, 3) == Fraction(10, 81)
    assert pb.printed_shuffle_accuracy(4, 2) == Fraction(3, 8) == pb.printed_shuffle_accuracy_case(4, 2)
    assert pb.printed_shuffle_accuracy(7, 2) is None  # a product over n/k steps: not stated for k not dividing n
    assert pb.printed_shuffle_accuracy_case(3, 3) == Fraction(6, 27)
    assert pb.double_factorial(7) == 105 and pb.double_factorial(8) == 384 and pb.double_factorial(0) == 1
    # Replace Random: one step ((n-1)/n)^(n-1): n = 3: 4/9; greedy 1/2 for k = 2, 0 for k > 2
    assert pb.printed_replace_random_one_step(3) == Fraction(4, 9)
    assert pb.printed_replace_random_greedy(6, 2) == Fraction(1, 2) and pb.printed_replace_random_greedy(6, 3) == 0
    # thresholds: Shuffle 1 for gamma > 0.5 (nothing stated at 0.5); Replace Random 1 iff gamma >= (n-1)/n
    assert pb.printed_shuffle_threshold(Fraction(1, 2)) is None and pb.printed_shuffle_threshold(0.6) == 1
    assert pb.printed_replace_random_threshold(4, Fraction(3, 4)) == 1
    assert pb.printed_replace_random_threshold(4, Fraction(3, 4) - Fraction(1, 1024)) == 0
    assert not pb.stated_replace_random_threshold(2) and pb.stated_replace_random_threshold(3)


def test_replace_random_lt_by_hand_and_theorem1():
    # n = 3, steps 2, 1: before the first step the replaced item is masked (m = 3); the block of 2 has marginals
    # Bernoulli(1/3) each, joint: 1/3, 1/3, 1/3 ("none"): C = 2 h(1/3) - log 3 = log 3 - (4/3) log 2
    want = sp.log(3) - sp.Rational(4, 3) * sp.log(2)
    assert sp.simplify(pb.replace_random_lt([2, 1]) - want) == 0
    lang = language_from_spec("task:replace-random:n=3")
    fixed = support_law(lang, FixedOrder("order", order=[1, 1, 2]))
    assert math.isclose(fixed.kl_nats, float(want), rel_tol=1e-12)  # Eq. (2) attained by a fixed partition
    rnd = support_law(lang, Sizes([2, 1]))
    # random positions: exactly one "replaced" in the first step 2 (1/3)(2/3) = 4/9, none (2/3)^2 = 4/9 then right:
    # 8/9 on the 3 outputs alike, so KL = log(9/8) < L_T = 0.174
    assert rnd.accuracy_exact == Fraction(8, 9) and fixed.accuracy_exact == Fraction(8, 9)
    assert math.isclose(rnd.kl_nats, math.log(9 / 8), rel_tol=1e-12) and rnd.kl_nats < float(want) - 0.05
    for n in range(2, 7):  # Remark 1
        assert sp.simplify(pb.replace_random_lt([n]) - pb.replace_random_tc(n)) == 0
        assert pb.replace_random_lt([1] * n) == 0


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_table1_cells_against_exact_laws(n):
    """Every printed cell of Table 1 against mdmt's exact law, with the paper's conditions."""
    from mdmt.constructions.reverse.information import information_quantities

    rr = language_from_spec(f"task:replace-random:n={n}")
    sh = language_from_spec(f"task:shuffle:n={n}")
    ri = language_from_spec(f"task:replace-index:n={n}")
    # C(Y|X) = total correlation of the listed law (mdmt's information quantities, floats), printed in bits
    for lang, printed in ((rr, pb.printed_replace_random_c(n)), (sh, pb.printed_shuffle_c(n)), (ri, pb.PRINTED_COPY_C)):
        tc = information_quantities(lang, n)["total_correlation"]
        assert math.isclose(tc / math.log(2), float(printed), rel_tol=1e-9, abs_tol=1e-12)
    for k in range(1, n + 1):
        sizes = pb.k_sizes(n, k)
        sh_acc = support_law(sh, Sizes(sizes), decode="greedy").accuracy_exact
        rr_acc = support_law(rr, Sizes(sizes), decode="greedy").accuracy_exact
        assert support_law(ri, Sizes(sizes), decode="greedy").accuracy_exact == pb.PRINTED_COPY_ACCURACY
        if pb.stated_shuffle_accuracy(n, k):
            assert sh_acc == pb.printed_shuffle_accuracy(n, k)
        if k in (1, 2, n):
            assert sh_acc == pb.printed_shuffle_accuracy_case(n, k)  # k = 2, n odd: the last step has one item
        if pb.stated_replace_random_greedy(n, k):
            assert rr_acc == pb.printed_replace_random_greedy(n, k)
        elif k >= 2:  # k does not divide n: the last step's n mod k positions decide (1 for one, 1/2 for two)
            assert rr_acc == {1: 1, 2: Fraction(1, 2)}.get(n % k, 0)
            assert (rr_acc == pb.printed_replace_random_greedy(n, k)) == (n % k >= 3)
    assert support_law(rr, Sizes([n])).accuracy_exact == pb.printed_replace_random_one_step(n)
    for g in (0.0, 0.25, 0.5, 0.5 + 2 ** -10, 0.75 - 2 ** -10, 0.75, 0.9, 0.99):
        sh_acc = support_law(sh, Threshold(g), decode="greedy").accuracy_exact
        rr_acc = support_law(rr, Threshold(g), decode="greedy").accuracy_exact
        if pb.printed_shuffle_threshold(g) is not None:
            assert sh_acc == pb.printed_shuffle_threshold(g)
        if pb.stated_replace_random_threshold(n):
            assert rr_acc == pb.printed_replace_random_threshold(n, g), g
        else:  # n = 2: keep and replace tie at 1/2 each: greedy is right with probability 1/2 in one step
            assert rr_acc == (Fraction(1, 2) if g < 0.5 else 1)
    # Shuffle at gamma = 1/2 exactly (not covered by "gamma > 0.5"): one item at a time under mdmt's strict rule
    assert support_law(sh, Threshold(0.5), decode="greedy").accuracy_exact == 1
    # top-k by confidence is top-k at random positions on both tasks (every masked confidence is equal, or 1)
    for k in range(2, n + 1):
        if n % k == 0:
            for lang in (sh, rr):
                a = support_law(lang, TopK("confidence", sizes=pb.k_sizes(n, k)), decode="greedy").accuracy_exact
                assert a == support_law(lang, Sizes(pb.k_sizes(n, k)), decode="greedy").accuracy_exact


def test_theorem2_over_ordered_set_partitions():
    """L*_T minimised over every ordered set partition of the listed law (n = 5: 541 partitions) equals the
    minimum over step sizes, and decreases with T (Theorem 2); L*_1 = C, L*_n = 0 (Remark 1)."""
    from mdmt.bounds.verification import checks_parallelbench as c

    n = 5
    for task, lt in (("shuffle", pb.shuffle_lt), ("replace-random", pb.replace_random_lt)):
        X = language_from_spec(f"task:{task}:n={n}").support_
        memo, by_T = {}, {}
        for blocks in c._ordered_partitions(tuple(range(n))):
            by_T.setdefault(len(blocks), []).append(c._lt_of_law(X, blocks, memo))
        assert sum(len(v) for v in by_T.values()) == 541  # the ordered Bell (Fubini) number of 5
        star = {T: c._exact_min(v) for T, v in by_T.items()}
        for T in range(1, n + 1):
            sizes_min = c._exact_min([c._ls(lt(s)) for s in c._compositions(n) if len(s) == T])
            assert (star[T] - sizes_min).sign() == 0
            if T < n:
                assert (star[T] - star[T + 1]).sign() >= 0
        assert (star[n]).sign() == 0
        assert (star[1] - c._ls(lt([n]))).sign() == 0


def test_figure2e_replace_random_n10():
    """Figure 2(e) at n = 10: Replace Random greedy is 0 below gamma = 9/10 and 1 from it; sampling is the
    closed form; mdmt's law at n = 10 (a 10-sequence support) agrees."""
    lang = language_from_spec("task:replace-random:n=10")
    for g in (0.5, 0.6, 0.8, 0.875, 0.9 - 2 ** -20, 0.95):
        acc = {decode: support_law(lang, Threshold(g), decode=decode).accuracy_exact for decode in ("greedy", "sample")}
        for decode in ("greedy", "sample"):
            assert acc[decode] == pb.replace_random_threshold_accuracy(10, Fraction(g), decode)
        assert acc["greedy"] == pb.printed_replace_random_threshold(10, Fraction(g)) == (1 if g >= 0.9 else 0)


def _rows(n_max=4):
    from mdmt.bounds.verification.checks_parallelbench import parallelbench_rows

    return parallelbench_rows(n_max=n_max)


def test_family_pb_has_the_table1_rows():
    rows = _rows(4)
    assert all(r.holds for r in rows), [r.id for r in rows if not r.holds][:3]
    cases = {r.case for r in rows}
    for cell in ("T1 Copy & Replace Index: C(Y|X)", "T1 Replace Random: C(Y|X)", "T1 Shuffle: C(Y|X)",
                 "T1 Replace Random: Acc. (Greedy, Top-k)", "T1 Replace Random: Acc. (Greedy, Threshold)",
                 "T1 Shuffle: Acc. (Greedy, Top-k)", "T1 Shuffle: Acc. (Greedy, Threshold)",
                 "S4 L_(n/2)", "S4 Theorem 2", "S4 Remark 1", "S4 Eq. (2) attained", "S4 Eq. (3) lim C"):
        assert any(c.startswith(cell) for c in cases), cell


SEEDED = {
    # Eq. (3) with ln instead of log2
    "eq3 ln": ("printed_replace_random_c", lambda n: (n - 1) * (sp.log(n) - sp.log(n - 1))),
    # Eq. (5), k = 2 case inverted: n!!/(n-1)!!
    "eq5 inverted": ("printed_shuffle_accuracy_case", None),  # set in the test (wraps the real one)
    # L_(n/2) = log2((n-1)!!/n!!)
    "l_half inverted": ("printed_shuffle_l_half",
                        lambda n: pb.log2(sp.Rational(pb.double_factorial(n - 1), pb.double_factorial(n)))),
    # Eq. (4)'s L_T with log2(k_(t+1)) (the items left after the step) instead of log2(k_t)
    "l_t shifted": ("printed_shuffle_lt",
                    lambda sizes: sum((s * pb.log2(max(m - s, 1)) for m, s in pb._remaining(sizes)), sp.Integer(0))
                    - pb.log2(sp.factorial(sum(sizes)))),
    # "1 if gamma > (n-1)/n" instead of ">="
    "threshold strict": ("printed_replace_random_threshold",
                         lambda n, g: Fraction(1) if Fraction(g) > Fraction(n - 1, n) else Fraction(0)),
    # "0.5 if k > 2; 0 if k = 2" (swapped)
    "greedy swapped": ("printed_replace_random_greedy",
                       lambda n, k: None if k < 2 else (Fraction(0) if k == 2 else Fraction(1, 2))),
    # lim C = ln 2 (that is, log2(2) = 1 bit) instead of log2(e)
    "limit": ("PRINTED_REPLACE_RANDOM_C_LIMIT", sp.Integer(1)),
    # ((n-1)/n)^n instead of ((n-1)/n)^(n-1)
    "one step": ("printed_replace_random_one_step", lambda n: Fraction(n - 1, n) ** n),
}


@pytest.mark.parametrize("name", sorted(SEEDED))
def test_family_pb_catches_a_mistranscribed_entry(monkeypatch, name):
    attr, wrong = SEEDED[name]
    if name == "eq5 inverted":
        real = pb.printed_shuffle_accuracy_case
        wrong = (lambda n, k: Fraction(pb.double_factorial(n), pb.double_factorial(n - 1)) if k == 2 else real(n, k))
    monkeypatch.setattr(pb, attr, wrong)
    bad = [r for r in _rows(4) if not r.holds]
    assert bad, name
    assert all(r.case.startswith(("T1", "S4", "RR")) for r in bad), [r.id for r in bad][:3]


def test_table1_values_and_figure2_curves():
    """The docs tables (bounds/studies/parallelbench_table1.py): inside the paper's conditions every printed entry
    equals the exact law; outside, the documented partings (hand values in docs/tasks.md)."""
    from mdmt.bounds.studies.parallelbench_table1 import figure2_curves, table1_values, values_markdown

    rows = table1_values(ns=[2, 3, 4], gammas=(Fraction(0), Fraction(1, 2), Fraction(7, 10)))
    assert all(r["agree"] for r in rows if r["stated"] and r["printed"] is not None)

    def one(cell, n, arg):
        return next(r for r in rows if r["cell"] == cell and r["n"] == n and r["arg"] == arg)

    r = one("Replace Random / Acc. (Greedy, Top-k)", 3, 2)  # steps 2, 1: the last position alone is right
    assert (r["exact"], r["printed"], r["stated"], r["agree"]) == (1, Fraction(1, 2), False, False)
    r = one("Replace Random / Acc. (Greedy, Threshold)", 2, Fraction(0))  # n = 2: a tie, right half the time
    assert (r["exact"], r["printed"], r["agree"]) == (Fraction(1, 2), 0, False)
    r = one("Shuffle / Acc. (Greedy, Top-k)", 3, 2)  # (n-1)!!/n!! = 2/3 with the remainder last
    assert (r["exact"], r["stated"], r["agree"]) == (Fraction(2, 3), False, True)
    assert "1 (printed 1/2) *" in values_markdown(rows, "Replace Random / Acc. (Greedy, Top-k)", [2, 3, 4])
    curves = figure2_curves(ns=(6,), n_threshold=4, gammas=(Fraction(1, 2), Fraction(3, 4)),
                            law_up_to={"shuffle": 6, "replace-random": 6}, shuffle_law_gammas=(Fraction(1, 2),))
    got = {(r["panel"], r["curve"], r["x"]): r["accuracy"] for r in curves}
    assert got["a", "k=2", 6] == Fraction(5, 16) and got["d", "k=n", 6] == 0
    assert got["c", "k=n", 6] == Fraction(5, 6) ** 5
    assert got["e", "replace-random, greedy", Fraction(3, 4)] == 1
    assert got["e", "replace-random, greedy", Fraction(1, 2)] == 0
    assert all(r["source"] == "law" for r in curves if r["panel"] != "e" or r["task"] == "replace-random")


@pytest.mark.parametrize("n", [3, 5, 6, 7])
def test_threshold_at_the_float_nearest_a_confidence_acts_as_that_confidence(n):
    # (n-1)/n is no binary fraction for these n: the float nearest it is within 1e-16 of the exact confidence
    # (n-1)/n of Replace Random's first step.  A confidence within TIE_TOL of the threshold is equal to it, not
    # above it, in the float chain and in the rationals alike: greedy decoding goes one position at a time and
    # succeeds (Table 1: 1 if gamma >= (n-1)/n); just below the boundary every position is kept in one step: 0.
    lang = language_from_spec(f"task:replace-random:n={n}")
    at = support_law(lang, Threshold(float(Fraction(n - 1, n))), decode="greedy", rationals=True)
    assert at.accuracy_exact == 1
    below = support_law(lang, Threshold(float(Fraction(n - 1, n)) - 1e-6), decode="greedy", rationals=True)
    assert below.accuracy_exact == 0
