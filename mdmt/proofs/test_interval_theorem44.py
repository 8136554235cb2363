"""Theorem 4.4 on the interval HMM (Example C.7, Lemmas C.5-C.6): the closed-form oracle SER equals the generic
exact evaluator, and lies above the theorem's lower bound, for random schedules."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mdmt.constructions.languages import interval_hmm
from mdmt.constructions.reverse.exact import exact_output_law
from mdmt.bounds.theorems.interval_bounds import ser_lower_bound
from mdmt.constructions.reverse.interval_closed_forms import oracle_ser


@st.composite
def schedules(draw, max_N=4):
    N = draw(st.integers(1, max_N))
    w = np.array(draw(st.lists(st.floats(0.05, 1.0), min_size=N, max_size=N)))
    return w / w.sum()


@given(schedules())
def test_closed_form_equals_the_generic_evaluator(pi):
    h = interval_hmm(3)
    for L in (3, 6):
        assert exact_output_law(h, L, pi).ser == pytest.approx(oracle_ser(3, L, pi), abs=1e-12)
        assert oracle_ser(3, L, pi) >= ser_lower_bound(3, L, pi, 0.0) - 1e-12
