"""Separators and dependencies (Definitions B.4/B.5) and their exact expectation E[D_j] (Lemma B.7; C4-C5): mdmt's
scan and its exact expectation against the definition, over every reveal assignment."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from mdmt.bounds.theorems.dependencies import dependencies_for_assignment, expected_dependencies_per_step
from mdmt.proofs.reference import assignments, dependencies_by_definition


@given(st.integers(2, 5), st.lists(st.integers(1, 4), min_size=1, max_size=12))
def test_scan_equals_the_definition(n, tau):
    tau = np.array(tau)
    np.testing.assert_array_equal(dependencies_for_assignment(n, tau), dependencies_by_definition(n, tau))


@given(st.integers(2, 4), st.integers(1, 6), st.integers(1, 3), st.integers(0, 2**31))
def test_expected_dependencies_equal_brute_force(n, L, N, seed):
    pi = np.random.default_rng(seed).random(N) + 0.05
    pi /= pi.sum()
    total = np.zeros(N)
    for tau in assignments(N, L):
        d = dependencies_by_definition(n, tau)
        total[: len(d)] += np.prod(pi[tau - 1]) * d
    np.testing.assert_allclose(expected_dependencies_per_step(n, L, pi), total, atol=1e-12)
