"""ParallelBench Section 4 (arXiv 2510.04767): closed forms against mdmt's exact task laws, and family PB.

The hand values below are derived independently in the comments (counting), not by the code under test.
"""

import math
from fractions import Fraction

import pytest
import sympy as sp

from mdmt.bounds.theorems import parallelbench as pb
from mdmt.constructions.languages.spec import language_from_spec
from mdmt.constructions.reverse.policies import Balanced, Sizes, Threshold
from mdmt.constructions.reverse.support_exact import support_law


def test_hand_values():
    # Shuffle n = 4 in two steps of 2: the first two draws distinct 12/16 = 3/4, the last two 2/4 = 1/2 -> 3/8
    assert pb.shuffle_accuracy([2, 2]) == Fraction(3, 8)
    # one step: n!/n^n
    assert pb.shuffle_accuracy([5]) == Fraction(120, 5 ** 5)
    # Replace Random one step: n (1/n) ((n-1)/n)^(n-1); n = 3: 4/9
    assert pb.replace_random_accuracy([3]) == Fraction(4, 9)
    # n = 4, steps 2, 2: first step exactly one "replaced": 2 (1/4)(3/4) = 3/8; none: 9/16, then m = 2, s = 2:
    # 2 (1/2)(1/2) = 1/2 -> 3/8 + 9/32 = 21/32
    assert pb.replace_random_accuracy([2, 2]) == Fraction(21, 32)
    assert pb.replace_random_greedy_accuracy([2, 2]) == Fraction(1, 2)
    assert pb.replace_random_greedy_accuracy([3, 3]) == 0 and pb.replace_random_greedy_accuracy([2, 1]) == 1
    # Eq. 3: (n-1) log(n/(n-1)); n = 2: log 2
    assert sp.simplify(pb.replace_random_tc(2) - sp.log(2)) == 0
    # Eq. 4: revealing 2 of 4 shuffle items: 2 log 4 - log 12 = log(4/3)
    assert sp.simplify(pb.shuffle_tc(4, 2) - sp.log(sp.Rational(4, 3))) == 0
    assert pb.k_sizes(7, 3) == [3, 3, 1] and pb.k_sizes(6, 3) == [3, 3]
    # threshold 0.3 on Shuffle n = 4: 1/4 <= 0.3 places one item, then 1/3 > 0.3 places the last 3: 3!/27 = 2/9
    assert pb.shuffle_threshold_accuracy(4, Fraction(3, 10)) == Fraction(2, 9)


@pytest.mark.parametrize("n", [2, 3, 4, 5])
@pytest.mark.parametrize("task", pb.TASKS)
def test_closed_forms_are_the_exact_laws(task, n):
    lang = language_from_spec(pb.task_spec(task, n))
    for k in range(1, n + 1):
        sizes = pb.k_sizes(n, k)
        for decode in ("sample", "greedy"):
            law = support_law(lang, Sizes(sizes), decode=decode)
            assert law.accuracy_exact == pb.accuracy(task, n, sizes, decode), (k, decode)
            if law.accuracy_exact > 0:  # uniform support, random positions: accuracy = 2^(-KL bits)
                assert math.isclose(2 ** -(law.kl_nats / math.log(2)), float(law.accuracy_exact), rel_tol=1e-9)
    for g in (0.0, 0.2, 0.5, 0.8):
        for decode in ("sample", "greedy"):
            law = support_law(lang, Threshold(g), decode=decode)
            assert law.accuracy_exact == pb.threshold_accuracy(task, n, g, decode), (g, decode)


def test_replace_random_statements_of_the_paper():
    for n in range(2, 7):
        lang = language_from_spec(f"task:replace-random:n={n}")
        # one step with temperature 1
        assert support_law(lang, Sizes([n])).accuracy_exact == Fraction(n - 1, n) ** (n - 1)
        for k in range(2, n + 1):
            if n % k == 0:  # greedy: 1/2 for k = 2, 0 for larger k dividing n
                acc = support_law(lang, Sizes(pb.k_sizes(n, k)), decode="greedy").accuracy_exact
                assert acc == (Fraction(1, 2) if k == 2 else 0)
    # k not dividing n: the last step decides (n = 5, k = 2: 2, 2, 1 -> right; remainder first 1, 2, 2 -> 1/2)
    lang = language_from_spec("task:replace-random:n=5")
    assert support_law(lang, Sizes([2, 2, 1]), decode="greedy").accuracy_exact == 1
    assert Balanced(3).sizes_for(5).tolist() == [2, 2, 1] and Balanced(3, "last").sizes_for(5).tolist() == [1, 2, 2]
    assert support_law(lang, Balanced(3), decode="greedy").accuracy_exact == 1
    assert support_law(lang, Balanced(3, "last"), decode="greedy").accuracy_exact == Fraction(1, 2)


def test_shuffle_eq5_and_lt_identity():
    for n in range(2, 7):
        lang = language_from_spec(f"task:shuffle:n={n}")
        for k in range(1, n + 1):
            sizes = pb.k_sizes(n, k)
            law = support_law(lang, Sizes(sizes))
            assert law.accuracy_exact == pb.shuffle_accuracy(sizes)
            # Eq. 4 and Eq. 5: exp(-L_T) = accuracy (the lower bound L_T on KL is attained)
            assert sp.nsimplify(sp.exp(-pb.shuffle_lt(sizes))) == sp.Rational(pb.shuffle_accuracy(sizes).numerator,
                                                                             pb.shuffle_accuracy(sizes).denominator)
            assert math.isclose(law.kl_nats, float(pb.shuffle_lt(sizes)), rel_tol=1e-9, abs_tol=1e-12)


def test_family_pb_catches_a_seeded_mistake(monkeypatch):
    from mdmt.bounds.verification.checks_parallelbench import parallelbench_rows

    real = pb.shuffle_accuracy
    monkeypatch.setattr(pb, "shuffle_accuracy", lambda sizes: real(list(sizes)[::-1]))  # the steps in reverse order
    assert not all(r.holds for r in parallelbench_rows(n_max=3))


@pytest.mark.integration
def test_family_pb_up_to_eight():
    from mdmt.bounds.verification.checks_parallelbench import parallelbench_rows

    rows = parallelbench_rows(n_max=8)
    assert len(rows) > 900 and all(r.holds for r in rows)
    assert {r.case.split()[0] for r in rows} >= {"E3", "E4", "E5", "RR", "TH", "ID", "CP"}
