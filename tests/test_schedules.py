"""Schedules and the reveal-step law (Section 3.2): pi, r_j, P_distinct, E[NFE], the SPEC grammar, the one boundary."""

import itertools
import math

import numpy as np
import pytest

from mdmt.constructions.reverse.schedules import (ExplicitSchedule, GridSchedule, Linear, WarmStart, as_pi,
                                                  expected_nfe, get_schedule, p_distinct, parse_schedule,
                                                  reveal_probabilities, reveal_rates)


def test_named_schedules_give_reveal_laws():
    for name in ["linear", "cosine", "loglinear"]:
        pi = reveal_probabilities(name, 7)
        assert pi.shape == (7,) and np.all(pi >= 0) and pi.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(reveal_probabilities("linear", 4), 0.25)
    # cosine: pi_1 = alpha(3/4) - alpha(1) = cos(3 pi / 8) (by hand)
    assert reveal_probabilities("cosine", 4)[0] == pytest.approx(math.cos(3 * math.pi / 8))
    # warm start with first = 0.1, N = 5: (0.1, 0.9/4, ...) (by hand)
    np.testing.assert_allclose(reveal_probabilities("warmstart:0.1", 5), [0.1, 0.225, 0.225, 0.225, 0.225])
    # loglinear with eps: pi_j = (1 - eps)/N for j < N, pi_N = (1 - eps)/N + eps (module docstring, by hand)
    np.testing.assert_allclose(reveal_probabilities("loglinear:0.2", 4), [0.2, 0.2, 0.2, 0.4])
    # r_j = pi_j / (1 - sum_{k<j} pi_k): 1/4, 1/3, 1/2, 1 for the linear schedule (by hand)
    np.testing.assert_allclose(reveal_rates(np.full(4, 0.25)), [1 / 4, 1 / 3, 1 / 2, 1])


def test_spec_grammar_and_the_python_objects_agree():
    assert isinstance(parse_schedule("linear"), Linear)
    ws = parse_schedule("warmstart:0.2")
    assert isinstance(ws, WarmStart) and ws.first == 0.2 and parse_schedule(ws.spec).first == 0.2
    assert get_schedule("warmstart", first=0.2).spec == "warmstart:0.2"
    ex = parse_schedule("0.2,0.3,0.5")
    assert isinstance(ex, ExplicitSchedule) and parse_schedule(ex.spec).pi.tolist() == ex.pi.tolist()
    for bad, message in [("quadratic", "neither a schedule name"), ("linear:0.3", "takes no parameter"),
                         ("warmstart:2", r"first must be in \(0, 1\]"), ("loglinear:x", "eps must be a number"),
                         ("0.5,0.6", "sum to 1.1"), ("", "expected a name")]:
        with pytest.raises(ValueError, match=message):
            parse_schedule(bad)
    with pytest.raises(ValueError, match="unknown schedule 'quadratic'"):
        get_schedule("quadratic")
    with pytest.raises(ValueError, match="takes only first"):
        get_schedule("warmstart", eps=0.1)


def test_reveal_probabilities_is_the_one_boundary():
    pi = reveal_probabilities("cosine", 5)
    assert not pi.flags.writeable  # validated vectors are read-only ...
    assert as_pi(pi) is pi and reveal_probabilities(pi) is pi  # ... and taken as they are below the boundary
    mine = np.full(4, 0.25)
    checked = as_pi(mine)  # a vector built elsewhere is validated once
    assert checked is not mine and not checked.flags.writeable
    with pytest.raises(ValueError, match="not a schedule"):
        as_pi("linear")
    with pytest.raises(ValueError, match="needs the number of steps N"):
        reveal_probabilities("linear")
    with pytest.raises(ValueError, match="pi has 4 entries but N = 3 steps"):
        reveal_probabilities(mine, 3)


def test_bad_schedules_are_rejected():
    with pytest.raises(ValueError, match="not strictly monotone"):
        GridSchedule([0, 0.5, 0.4, 1.0])
    with pytest.raises(ValueError, match="must run from t_0 = 0 to t_N = 1"):
        GridSchedule([0, 0.5, 0.9])
    with pytest.raises(ValueError, match=r"reveal probabilities sum to 0.9, not 1"):
        reveal_probabilities([0.5, 0.4], 2)
    with pytest.raises(ValueError, match=r"pi\[2\] = -0.1 is not a probability"):
        reveal_probabilities([1.1, -0.1], 2)
    with pytest.raises(ValueError, match="number of steps N must be >= 1"):
        reveal_probabilities("linear", 0)

    class Rising(Linear):
        def alpha(self, t):
            return np.where(np.asarray(t) < 0.5, 1.0 - np.asarray(t), np.where(np.asarray(t) < 1, 0.9, 0.0))

    with pytest.raises(ValueError, match="is not non-increasing"):
        Rising().reveal_probabilities(4)


def test_grid_schedule_reproduces_the_uniform_grid():
    np.testing.assert_allclose(GridSchedule(np.linspace(1, 0, 6)).reveal_probabilities(5), 0.2)
    with pytest.raises(ValueError, match="has 5 steps, not N = 4"):
        GridSchedule(np.linspace(0, 1, 6)).reveal_probabilities(4)


def test_p_distinct_and_nfe_closed_forms():
    # linear schedule: P_distinct = N!/((N-L)! N^L) (by hand: L distinct steps out of N)
    for N, L in [(8, 3), (100, 10), (5, 5)]:
        ref = math.exp(math.lgamma(N + 1) - math.lgamma(N - L + 1) - L * math.log(N))
        assert p_distinct(np.full(N, 1 / N), L) == pytest.approx(ref, rel=1e-10)
    assert p_distinct(np.full(3, 1 / 3), 4) == 0.0
    pi = np.array([0.2, 0.5, 0.3])
    brute = sum(np.prod(pi[list(t)]) for t in itertools.permutations(range(3), 2))  # ordered distinct steps
    assert p_distinct(pi, 2) == pytest.approx(brute)
    # many distinct values use the log-space recursion; it must agree with brute force too
    rng = np.random.default_rng(0)
    pi = rng.random(20)
    pi /= pi.sum()
    brute = sum(np.prod(pi[list(t)]) for t in itertools.permutations(range(20), 3))
    assert p_distinct(pi, 3) == pytest.approx(brute, rel=1e-10)
    assert expected_nfe(np.full(4, 0.25), 2) == pytest.approx(4 * (1 - 0.75**2))
    # large N and L: no underflow, value between 0 and 1
    assert 0 < p_distinct(np.full(20000, 1 / 20000), 100) < 1
