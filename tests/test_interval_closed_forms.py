"""The interval counterexample in closed form (Theorem 4.4; Example C.7, Lemmas C.5-C.6): rho, the exact
oracle SER, p_e(eps) and the lower bound, against the generic exact evaluator.  The property test over random schedules is the proof check,
mdmt/proofs/test_interval_theorem44.py."""

import math

import numpy as np
import pytest

from mdmt.constructions.languages import interval_hmm
from mdmt.constructions.reverse.denoisers import BitBiasedInterval
from mdmt.constructions.reverse.exact import exact_output_law
from mdmt.bounds.theorems.interval_bounds import mismatch_probability, ser_lower_bound
from mdmt.constructions.reverse.interval_closed_forms import oracle_ser, rho
from mdmt.constructions.reverse.learning import learning_error


def test_rho_by_hand():
    # N = 2 equal steps, l = 2: the pair collides with probability 1/2, so rho = 1/2 + 1/2 * 1/2 = 3/4 (by hand)
    assert rho(2, [0.5, 0.5]) == pytest.approx(0.75)
    # one step: all C(l, 2) pairs collide, rho = 2^-C(l,2) (by hand)
    assert rho(4, [1.0]) == pytest.approx(2.0 ** -6)
    # l = 3, N = 3 equal steps: E[2^-pairs] over the 27 assignments (by hand: 6 distinct, 18 with one pair, 3 triple)
    assert rho(3, np.full(3, 1 / 3)) == pytest.approx((6 * 1 + 18 * 0.5 + 3 * 0.125) / 27)


def test_bit_biased_denoiser_respects_the_theorem_44_bound():
    h = interval_hmm(3)
    pi = np.array([0.5, 0.3, 0.2])
    for u in (0.55, 0.8):
        den = BitBiasedInterval(h, 3, u)
        eps = learning_error(h, den, 6, method="exact")["max"]
        assert exact_output_law(h, 6, pi, den).ser >= ser_lower_bound(3, 6, pi, eps) - 1e-12
    # p_e(eps) = e^(-2 eps)/2 (the least mismatch under KL(Bern(1/2)||Bern(u)) <= eps, derived in the module)
    assert mismatch_probability(0.0) == 0.5
    assert mismatch_probability(0.25) == pytest.approx(math.exp(-0.5) / 2)
    with pytest.raises(ValueError, match="not a multiple"):
        oracle_ser(3, 7, [1.0])
    with pytest.raises(ValueError, match="learning error eps must be a finite number >= 0"):
        mismatch_probability(-1.0)


def test_linear_closed_form_and_exact_rho():
    from fractions import Fraction

    from mdmt.bounds.verification.references import rho_exact
    from mdmt.constructions.reverse.interval_closed_forms import log_rho_linear

    for l, N in ((2, 1), (3, 7), (5, 1000)):
        pi = np.full(N, 1.0 / N)
        assert math.exp(log_rho_linear(l, N)) == pytest.approx(rho(l, pi), rel=1e-13)
        assert float(rho_exact(l, [Fraction(1, N)] * N)) == pytest.approx(rho(l, pi), rel=1e-12)
    assert rho_exact(3, [Fraction(1, 3)] * 3) == Fraction(6 * 8 + 18 * 4 + 3 * 1, 27 * 8)  # by hand, as above
    with pytest.raises(ValueError, match="l <= 256"):
        oracle_ser(300, 300, [1.0])


def test_theorem44_bound_by_hand_at_l2_L4():
    """l = 2, L = 4, pi = (1/2, 1/2), eps = 0, derived by hand: P_distinct(2) = 2! pi_1 pi_2 = 1/2, p_e(0) = 1/2,
    so the bound is 1 - (1 - (1/2)(1 - 1/2))^(4/2) = 1 - (3/4)^2 = 7/16 (P_distinct of all L = 4 positions would be
    0 with two steps, giving 3/4 instead)."""
    assert ser_lower_bound(2, 4, [0.5, 0.5], 0.0) == pytest.approx(7 / 16, abs=1e-15)
    assert mismatch_probability(0.0) == pytest.approx(0.5, abs=1e-15)
