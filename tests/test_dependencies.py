"""Separators and dependencies (Definitions B.4/B.5, Example B.6) and their exact expectation (C4-C5).
The property tests against the definition are the proof check, mdmt/proofs/test_dependency_counts.py."""

import math

import numpy as np
import pytest

from mdmt.bounds.theorems.dependencies import chain_bound, dependencies_for_assignment, expected_dependencies
from mdmt.constructions.reverse.schedules import reveal_probabilities
from tests.reference import assignments, dependencies_by_definition


def test_dependencies_for_an_assignment_by_hand():
    # n = 3 (separators: runs of >= 2 revealed). tau = [1, 2, 2, 1, 1, 2, 2]:
    # step 2: revealed {0, 3, 4}; {3, 4} is a separator -> segments [0..2], [5..6];
    # new {1, 2} in the first, {5, 6} in the second: D_2 = 4 - 2 = 2. Step 1: one segment, D_1 = 3 - 1 = 2.
    np.testing.assert_array_equal(dependencies_for_assignment(3, [1, 2, 2, 1, 1, 2, 2]), [2, 2])
    # n = 2: every revealed token separates: step 2 segments [1,2], [5,6] -> D_2 = 2
    np.testing.assert_array_equal(dependencies_for_assignment(2, [1, 2, 2, 1, 1, 2, 2]), [2, 2])
    np.testing.assert_array_equal(dependencies_for_assignment(2, [1, 2, 1, 2]), [1, 0])


def test_expected_dependencies_monte_carlo_at_large_L():
    n, L, N = 3, 2000, 16
    pi = reveal_probabilities("cosine", N)
    rng = np.random.default_rng(0)
    draws = [dependencies_for_assignment(n, rng.choice(N, size=L, p=pi) + 1).sum() for _ in range(200)]
    m, s = np.mean(draws), np.std(draws, ddof=1) / np.sqrt(len(draws))
    assert abs(expected_dependencies(n, L, pi) - m) < 4 * s


def test_chain_bound_is_eps_plus_log_v_times_dependencies_per_token():
    pi = reveal_probabilities("linear", 8)
    ed = expected_dependencies(3, 100, pi)
    assert chain_bound(3, 100, pi, 8, 0.01) == pytest.approx(0.01 + math.log(8) * ed / 100, rel=1e-15)
    # one step reveals everything at once: a single segment, D_1 = L - 1 (by hand)
    assert expected_dependencies(2, 10, np.ones(1)) == pytest.approx(9.0)


def test_matrix_power_path_equals_the_scan():
    from mdmt.bounds.theorems.dependencies import _expected_segments, _expected_segments_power
    from mdmt.constructions.reverse.schedules import revealed_before

    for n in (2, 3, 5):
        for spec, N in (("linear", 16), ("cosine", 32), ("warmstart:0.2", 8)):
            pi = reveal_probabilities(spec, N)
            a = revealed_before(pi)
            for L in (1, 7, 300, 4096):
                np.testing.assert_allclose(_expected_segments_power(a, pi, L, n), _expected_segments(a, pi, L, n),
                                           rtol=1e-11, atol=1e-12)


def test_exact_rational_expectation_equals_enumeration():
    from fractions import Fraction

    from mdmt.bounds.verification.references import dependencies_by_segments, expected_dependencies_exact

    pi = [Fraction(1, 2), Fraction(1, 3), Fraction(1, 6)]
    for n, L in ((2, 4), (3, 5)):
        exact = expected_dependencies_exact(n, L, pi)
        total = [Fraction(0)] * 3
        for tau in assignments(3, L):
            w = np.prod([pi[t - 1] for t in tau])
            d = dependencies_by_definition(n, tau)
            for j, dj in enumerate(d):
                total[j] += w * int(dj)
        assert exact == total  # exact rationals, both ways
        taus = np.array(list(assignments(3, L)))
        lib = np.array([np.pad(dependencies_by_definition(n, t), (0, 3 - int(t.max()))) for t in taus])
        np.testing.assert_array_equal(dependencies_by_segments(n, taus), lib)


def test_work_guard_names_the_sizes():
    from mdmt.bounds.theorems.dependencies import check_dependency_work

    with pytest.raises(ValueError, match="n = 3, L = 60000, N = 100000 steps needs about"):
        check_dependency_work(3, 60000, 100000)
    check_dependency_work(3, 10 ** 12, 16)  # the matrix power: cheap at any L
