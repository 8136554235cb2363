"""Theorem 4.4 on the interval counterexample: the mismatch probability p_e(eps) and the SER lower bound.

Both are evaluated from the statements ``MISMATCH`` and ``THEOREM_44_BOUND`` of
:mod:`mdmt.bounds.theorems.statements`, where they are derived; the exact oracle SER they are compared
with is :func:`mdmt.constructions.reverse.interval_closed_forms.oracle_ser` (see its module
docstring for the argument).
"""

from __future__ import annotations

from mdmt.constructions.reverse.interval_closed_forms import check_lengths, learning_error_value
from mdmt.constructions.reverse.schedules import p_distinct
from mdmt.constructions.types import RevealProbabilities

from .statements import MISMATCH, THEOREM_44_BOUND


def mismatch_probability(eps: float) -> float:
    """p_e(eps) = e^(-2 eps) / 2: least mismatch probability of a colliding pair under learning error eps.

    Evaluated from the statement :data:`mdmt.bounds.theorems.statements.MISMATCH`.
    """
    return MISMATCH.evaluate(epsilon_learning=learning_error_value(eps))


def ser_lower_bound(l: int, L: int, pi: RevealProbabilities, eps: float) -> float:
    """Theorem 4.4 (explicit): SER >= 1 - (1 - p_e(eps) (1 - P_distinct(l; pi)))^(L/l), any schedule.

    Evaluated from the statement :data:`mdmt.bounds.theorems.statements.THEOREM_44_BOUND`.
    """
    l, L = check_lengths(l, L)
    return THEOREM_44_BOUND.evaluate(epsilon_learning=learning_error_value(eps), P_distinct_l=p_distinct(pi, l), L=L, l=l)
