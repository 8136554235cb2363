"""Policies on the interval HMM: the closed-form oracle, closed forms for SER and NFE, the trajectory Monte Carlo."""

import itertools
import math

import numpy as np
import pytest

from mdmt.constructions.reverse.confidence import mean_interval
from mdmt.constructions.languages import interval_hmm
from mdmt.constructions.languages.interval import pair_consistent
from mdmt.constructions.reverse.interval_oracle import IntervalOracle
from mdmt.constructions.reverse.interval_policies import (entropy_sum_nfe, first_step_ser_lower_bound, fixed_order_ser,
                                                          log_first_step_success, pattern_run, same_step_pairs,
                                                          stride_pairs, threshold_nfe)
from mdmt.constructions.reverse.policies import EntropySum, FixedOrder, Threshold, fixed_order, parse_policy
from mdmt.constructions.reverse.policy_exact import exact_policy_law
from mdmt.constructions.reverse.policy_sampler import sample_policy

H3 = interval_hmm(3)


@pytest.mark.parametrize("l", [2, 3, 4, 5])
def test_interval_oracle_equals_the_generic_posterior(l):
    h = interval_hmm(l)
    rng = np.random.default_rng(l)
    x = h.sample_sequences(150, 2 * l, rng)
    X = np.where(rng.random(x.shape) < 0.5, x, -1)
    flip = rng.random(150) < 0.3  # some contexts outside the support
    X[flip, 0] = rng.integers(0, 2 ** (l - 1), flip.sum())
    np.testing.assert_array_equal(IntervalOracle(l)(X), h.posterior_marginals(X, off_support="uniform"))


def test_interval_oracle_bad_input():
    with pytest.raises(ValueError, match="not a multiple"):
        IntervalOracle(3)(np.full((1, 4), -1))
    with pytest.raises(ValueError, match="too large"):
        IntervalOracle(9)


def test_first_step_success_equals_enumeration():
    for l, L in [(3, 6), (3, 9), (4, 8), (2, 8)]:
        for s in range(1, L + 1):
            vals = [2.0 ** -sum(a // l == b // l for a, b in itertools.combinations(S, 2))
                    for S in itertools.combinations(range(L), s)]
            assert math.exp(log_first_step_success(l, L, s)) == pytest.approx(np.mean(vals), rel=1e-12)
    # and it tends to 1 for a fixed number of steps
    assert first_step_ser_lower_bound(5, 5000, 1250) > 0.999


# The two fixed orders at L = 6, written out from their definitions (0-based position i): stride at step
# i mod N + 1, blocks at step floor(i N / 6) + 1.
LITERAL_ORDERS = {
    ("stride", 1): [1, 1, 1, 1, 1, 1], ("blocks", 1): [1, 1, 1, 1, 1, 1],
    ("stride", 2): [1, 2, 1, 2, 1, 2], ("blocks", 2): [1, 1, 1, 2, 2, 2],
    ("stride", 3): [1, 2, 3, 1, 2, 3], ("blocks", 3): [1, 1, 2, 2, 3, 3],
    ("stride", 4): [1, 2, 3, 4, 1, 2], ("blocks", 4): [1, 1, 2, 3, 3, 4],
}


@pytest.mark.parametrize("N", [1, 2, 3, 4])
def test_fixed_orders_closed_form_equals_exact_law(N):
    """The exact SER of each order equals 1 - 2^(-same-step pairs) of the order written out by hand."""
    L = 6
    for kind in ("stride", "blocks"):
        pol = FixedOrder(kind, N)
        ser = exact_policy_law(H3, L, pol).result.ser
        assert ser == pytest.approx(fixed_order_ser(3, LITERAL_ORDERS[kind, N]), abs=1e-12)
        assert pol.order(L).tolist() == LITERAL_ORDERS[kind, N]
    assert same_step_pairs(3, fixed_order("stride", L, N)) == stride_pairs(3, L, N)


def test_stride_pairs_for_every_offset():
    """The count sum_{d = N, 2N, ...} (l - d) per interval does not depend on where the interval starts."""
    for l, N in itertools.product([3, 4, 5], [1, 2, 3, 4, 6]):
        L = 7 * l
        assert same_step_pairs(l, fixed_order("stride", L, N)) == stride_pairs(l, L, N)
    assert stride_pairs(5, 500, 5) == 0 and fixed_order_ser(5, fixed_order("stride", 500, 5)) == 0


def test_threshold_and_entropy_sum_closed_forms_on_the_exact_law():
    """tau >= 1/2: SER 0 and NFE = L; 0 < gamma < log 2: SER 0 and NFE = (L/l)(l-1) + 1; outside, SER > 0."""
    for l, L in [(3, 6), (2, 6)]:
        h = interval_hmm(l)
        for tau in (0.5, 0.9):
            law = exact_policy_law(h, L, Threshold(tau), support_only=False)
            assert law.result.ser < 1e-12 and law.expected_nfe == pytest.approx(threshold_nfe(l, L, tau))
        law = exact_policy_law(h, L, EntropySum(0.5), support_only=False)
        assert law.result.ser < 1e-12 and law.expected_nfe == pytest.approx(entropy_sum_nfe(l, L, 0.5))
        assert exact_policy_law(h, L, EntropySum(0.7)).result.ser > 0.1  # gamma >= log 2
    assert exact_policy_law(H3, 6, Threshold(0.3)).result.ser > 0.1  # tau < 1/2
    with pytest.raises(ValueError, match="tau in"):
        threshold_nfe(3, 6, 0.3)
    with pytest.raises(ValueError, match="gamma < log 2"):
        entropy_sum_nfe(3, 6, 1.0)


def test_closed_forms_at_large_length_by_trajectories():
    """The same statements at L = 300 (l = 5): every trajectory succeeds, with the stated NFE."""
    l, L = 5, 300
    w, nfe = pattern_run(l, L, Threshold(0.6), 20, seed=0)
    assert np.all(w == 1.0) and np.all(nfe == L)
    w, nfe = pattern_run(l, L, EntropySum(0.3), 20, seed=0)
    assert np.all(w == 1.0) and np.all(nfe == entropy_sum_nfe(l, L, 0.3))


def test_just_outside_the_safe_ranges_every_interval_collides_once():
    """tau in [1/4, 1/2), gamma in [log 2, 2 log 2): each trajectory has exactly one same-step pair per interval."""
    for l in (3, 4, 5):
        L = 10 * l
        for pol in (Threshold(0.3), Threshold(0.26), EntropySum(0.7), EntropySum(1.3)):
            w, _ = pattern_run(l, L, pol, 50, seed=1)
            np.testing.assert_allclose(w, 2.0 ** -(L // l), rtol=1e-12)
    assert exact_policy_law(H3, 6, Threshold(0.3)).result.ser == pytest.approx(1 - 2.0 ** -2, abs=1e-12)


@pytest.mark.parametrize("spec", ["uniform", "confidence", "margin", "threshold:0.3", "random:dtc", "iid"])
def test_trajectory_monte_carlo_agrees_with_the_exact_law(spec):
    L = 6
    pol = parse_policy(spec, 3)
    exact = exact_policy_law(H3, L, pol).result.ser
    w, _ = pattern_run(3, L, pol, 6000, seed=4)
    m, lo, hi = mean_interval(w, 0.999)
    assert lo <= 1 - exact <= hi


def test_trajectory_monte_carlo_agrees_with_the_token_sampler():
    l, L = 3, 30
    pol = parse_policy("entropy", 10)
    w, nfe = pattern_run(l, L, pol, 3000, seed=1)
    res = sample_policy(interval_hmm(l), L, pol, 1500, denoiser=IntervalOracle(l), seed=2)
    ser_tokens = 1 - pair_consistent(res.samples, l).mean()
    se = math.sqrt(w.var() / len(w) + ser_tokens * (1 - ser_tokens) / 1500)
    assert abs((1 - w.mean()) - ser_tokens) < 4 * se
