"""Rigorous number types (bounds/theorems/intervals.py): interval arrays enclose the exact results; exact log-sums decide signs."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mdmt.bounds.theorems.intervals import Iv, LogSum, arb_bounds, gamma, to_arb

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
positive = st.floats(1e-300, 1e6, allow_nan=False, allow_infinity=False)


def _encloses(iv: Iv, exact) -> bool:
    lo, hi = iv.item()
    return Fraction(lo) <= exact <= Fraction(hi)


@given(finite, finite)
def test_arithmetic_encloses_the_exact_result(a, b):
    A, B = Iv.exact(a), Iv.exact(b)
    fa, fb = Fraction(a), Fraction(b)
    assert _encloses(A + B, fa + fb)
    assert _encloses(A - B, fa - fb)
    assert _encloses(A * B, fa * fb)
    if b != 0:
        assert _encloses(A / B, fa / fb)
    assert _encloses((A * A) ** 3, fa ** 6)


@given(st.lists(finite, min_size=1, max_size=200))
def test_sums_enclose_the_exact_sum(xs):
    assert _encloses(Iv.exact(xs).sum(), sum(Fraction(v) for v in xs))


@given(positive)
def test_log_and_exp_are_enclosed_by_arb(v):
    lo, hi = Iv.exact(v).log().item()
    b = to_arb(v).log()
    assert lo <= float(b.mid()) <= hi and hi - lo <= 1e-12 * max(1.0, abs(math.log(v)))
    e = Iv.exact(min(v, 700.0)).exp()
    assert e.lo <= math.exp(min(v, 700.0)) * (1 + 1e-15) and e.hi >= math.exp(min(v, 700.0)) * (1 - 1e-15)


def test_from_fractions_is_the_tightest_enclosure_and_setitem_keeps_ends_apart():
    iv = Iv.from_fractions(np.array([Fraction(1, 3), Fraction(1, 2)], dtype=object))
    assert iv.lo[0] < 1 / 3 < iv.hi[0] or iv.lo[0] <= Fraction(1, 3) <= iv.hi[0]
    assert iv.lo[1] == iv.hi[1] == 0.5
    z = Iv(np.zeros(3))
    z[1] = Iv(-1.0, 2.0)
    assert z.lo.tolist() == [0, -1, 0] and z.hi.tolist() == [0, 2, 0]  # lo and hi are separate arrays


def test_division_by_an_interval_reaching_zero_is_refused():
    with pytest.raises(ZeroDivisionError):
        Iv.exact(1.0) / Iv(-1.0, 1.0)
    with pytest.raises(ValueError):
        Iv(0.0, 1.0).log()


def test_logsum_signs_are_exact():
    half = Fraction(1, 2)
    assert (LogSum.log(2) + LogSum.log(3) - LogSum.log(6)).sign() == 0
    assert (half * LogSum.log(4) - LogSum.log(2)).sign() == 0
    assert (LogSum(Fraction(1, 10)) - LogSum.log(Fraction(11, 10))).sign() == 1  # x > log(1 + x)
    assert (LogSum.log(Fraction(7, 5)) * 3 - LogSum.log(Fraction(343, 126))).sign() == 1
    # copies of a fair bit: TC = (d - 1) log 2 exactly, for d = 3
    tc = 3 * LogSum.log(2) - LogSum.log(2)
    assert (tc - 2 * LogSum.log(2)).sign() == 0
    assert float(LogSum.log(2)) == pytest.approx(math.log(2), rel=1e-15)


def test_arb_bounds_and_gamma():
    lo, hi = arb_bounds(to_arb(Fraction(1, 3)))
    assert lo <= 1 / 3 <= hi
    assert gamma(1) > 2.0 ** -53 and gamma(10 ** 20) == math.inf
