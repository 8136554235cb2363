"""The statements (bounds/theorems/statements.py): every derivation step verified, the derivations arrive at the
explicit forms, a wrong constant or a false step is caught, and the library evaluates the statements."""

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from mdmt.bounds.theorems import statements as S
from mdmt.bounds.theorems.certify import (NotCertified, adversarial_joint_laws, certify_nonneg, check_on_laws, joint_laws,
                                 lemma_a1_gap, prove_nonneg)
from mdmt.bounds.theorems.intervals import LogSum

x = sp.Symbol("x", real=True)


@pytest.fixture(scope="module")
def results():
    return {st.key: st.check() for st in S.ALL}


def test_every_step_is_verified_and_no_step_rests_on_sampling(results):
    for key, res in results.items():
        bad = [(r.description, r.detail) for r in res if not r.ok]
        assert not bad, (key, bad)
        for r in res:
            assert r.method in ("proved", "certified", "exact", "stated"), (key, r)
            assert "grid" not in r.detail
    methods = {r.method for res in results.values() for r in res}
    assert {"proved", "certified", "exact"} <= methods
    # the derivation of every statement arrives at its explicit form (the last-but-one or last row)
    for key, res in results.items():
        assert any(r.description == "the derivation arrives at the explicit form" and r.ok for r in res), key


@pytest.mark.parametrize("key, wrong", [
    ("pe", sp.exp(-2 * S.eps_l)),  # the factor 2 of p_e lost
    ("T44C", sp.exp(-2 * S.eps_l) / (2 * sp.log(2))),  # C_0 without its 1/l
    ("T43", 1 - S.P * sp.exp(-2 * S.L * S.eps_l)),  # a loosened Theorem 4.3
    ("A1", S.d * sp.log(S.V)),  # Lemma A.1 loosened by log|V|
    ("B9", S.eps_l / S.L + sp.log(S.V) * S.ED / S.L),  # the learning term without its factor L
    ("T42N", 1 + (S.n - 1) / (4 * S.eps ** S.n)),  # a wrong constant in Theorem 4.2
    ("T42D", 3 * S.eps * S.L),
    ("B11", S.L * S.pi_j ** 2 * S.n / S.a_j ** (S.n - 1)),
])
def test_a_changed_constant_breaks_the_derivation(key, wrong):
    st = dataclasses.replace(S.BY_KEY[key], explicit=wrong)
    final = [r for r in st.check() if r.description == "the derivation arrives at the explicit form"]
    assert final and not final[0].ok


def test_false_steps_are_not_verified():
    assert not S.Identity("wrong constant", 2 * S.MISMATCH.explicit, S.MISMATCH.explicit).verify().ok
    assert not S.Inequality("false", sp.Integer(2), sp.Integer(1)).verify().ok
    # false only on a sliver of the domain: (x - 3/10)^2 >= 10^-9 fails near x = 0.3
    assert not S.Inequality("sliver", sp.Rational(1, 10 ** 9), (x - sp.Rational(3, 10)) ** 2, {x: (0, 1)}).verify().ok
    # Chernoff's step with a slightly too large right side
    bad = S.Inequality("too strong", -x + x ** 2 / 2 + x ** 3 / 5, (1 - x) * sp.log(1 - x), {x: (0, 1)})
    assert not bad.verify().ok


@pytest.mark.parametrize("f, lo, hi", [
    ((1 - x) * sp.log(1 - x) + x - x ** 2 / 2, 0, 1),  # touching at 0, an end where f has only a limit
    (sp.exp(-x) - 1 + x, 0, sp.oo),  # unbounded: tail by monotonicity
    (-sp.log(4 * x * (1 - x)) / 2 - 2 * (x - sp.Rational(1, 2)) ** 2, sp.Rational(1, 2), 1),  # order-4 touching
    ((x - sp.Rational(1, 3)) ** 2, 0, 1),
])
def test_certify_covers_touching_points_and_tails(f, lo, hi):
    cert = certify_nonneg(f, x, lo, hi)
    assert cert.method in ("proved", "certified")


@pytest.mark.parametrize("f, lo, hi", [
    (x ** 2 - sp.Rational(1, 100), 0, 1),
    (sp.exp(-x) - 1 + x - sp.Rational(1, 1000), 0, sp.oo),
    ((x - sp.Rational(1, 3)) ** 2 - sp.Rational(1, 10 ** 12), 0, 1),
    # negative on [0, 1/100), just left of an increasing root: from the right end (f(1) = 99/100 > 0) a box is closed
    # only if f' <= 0 there; a closure that asked f' >= 0 (true: f' = 1) would certify it
    (x - sp.Rational(1, 100), 0, 1),
])
def test_certify_refuses_false_claims(f, lo, hi):
    with pytest.raises(NotCertified):
        certify_nonneg(f, x, lo, hi, max_boxes=2000)


def test_integer_domains_are_proved_by_cases():
    m = sp.Symbol("m", integer=True, positive=True)
    assert prove_nonneg(m * (m - 1) / 2 - (m - 1), {m: (1, sp.oo)})
    assert not prove_nonneg(m * (m - 1) / 2 - m, {m: (1, sp.oo)})  # m = 1 gives -1


def test_the_sign_of_a_fraction_needs_both_numerator_and_denominator():
    assert not prove_nonneg(1 / (x - 2), {x: (0, 1)})  # a positive numerator over a negative denominator
    assert not prove_nonneg((x - 2) / (x + 1), {x: (0, 1)})
    assert prove_nonneg(1 / (2 - x), {x: (0, 1)}) and prove_nonneg((2 - x) / (x + 1), {x: (0, 1)})
    assert prove_nonneg((x - 2) / (x - 3), {x: (0, 1)})  # both negative


def test_cauchy_schwarz_is_proved_for_every_n():
    step = S.THEOREM_44_ANY.steps[1]
    res = step.verify()
    assert res.ok and res.method == "proved"
    assert S.N in (step.lhs - step.rhs).free_symbols  # symbolic N, not N = 2


def test_lemma_a1_on_laws_is_exact_and_catches_a_false_claim():
    laws = list(joint_laws(2, 2, 4)) + [(n, law) for n, law in adversarial_joint_laws(2, 2)]
    res = check_on_laws(laws, lemma_a1_gap(2, 2))
    assert res.laws == len(laws) and res.equalities >= 1  # copies attain it
    with pytest.raises(AssertionError, match="copies"):
        check_on_laws([l for l in laws if "copies" in l[0]], lambda law: lemma_a1_gap(2, 2)(law) - LogSum(Fraction(1, 10**9)))


def test_float_arb_and_exact_evaluations_agree():
    rng = np.random.default_rng(0)
    for st in S.ALL:
        for _ in range(3):
            vals = {}
            for s in st.symbols:
                if s.name in ("P_distinct", "P_distinct_l", "a_j", "pi_j", "u", "delta"):
                    vals[s.name] = float(rng.uniform(0.05, 0.95))
                elif s.name in ("L", "N", "V", "E_D", "D_j", "mu", "C"):
                    vals[s.name] = float(rng.integers(2, 50))
                elif s.name in ("n", "l", "d"):
                    vals[s.name] = int(rng.integers(2, 6))
                else:
                    vals[s.name] = float(rng.uniform(0.01, 0.5))
            f = st.evaluate(**vals)
            b = st.arb(**vals)
            assert b.contains(f) or abs(float(b.mid()) - f) <= 1e-13 * max(1.0, abs(f)), (st.key, vals, f, b)
            e = float(st.exact(**{k: Fraction(v) if isinstance(v, float) else v for k, v in vals.items()}).evalf(30))
            assert e == pytest.approx(f, rel=1e-12, abs=1e-300), st.key


def test_evaluated_constants_by_hand():
    assert S.theorem_42_steps(3, 0.05) == 5335  # 1 + 2/(3 * 0.05^3) = 5334.33 (by hand)
    assert S.theorem_42_steps(2, 0.2) == 10  # 1 + 1/(3 * 0.04) = 9.33
    assert S.theorem_44_constant(5, 1 / 128) == pytest.approx(math.exp(-1 / 64) / 2 / (5 * math.log(2)), rel=1e-15)
    assert S.mismatch_probability(0.25) == pytest.approx(math.exp(-0.5) / 2, rel=1e-15)


def test_theorem_44_bound_at_a_positive_error_and_longer_intervals():
    """SER >= 1 - (1 - p_e(eps) (1 - P_distinct(l; pi)))^(L/l) with p_e(eps) = e^(-2 eps)/2 (docs/theorems.md),
    evaluated by hand at l >= 3 and eps > 0, where a learning error rescaled by l or l - 1 changes the value.

    l = 3, L = 6, pi = (1/3, 1/3, 1/3): P_distinct = 3!/27 = 2/9, L/l = 2, eps = 1/4: 1 - (1 - e^(-1/2)/2 * 7/9)^2.
    l = 4, L = 8, pi = (1/4,) * 4: P_distinct = 4!/256 = 3/32, L/l = 2, eps = 1/10: 1 - (1 - e^(-1/5)/2 * 29/32)^2.
    l = 3, L = 9, pi = (1/2, 1/2): P_distinct = 0 (three positions, two steps), L/l = 3, eps = 1/2: 1 - (1 - e^(-1)/2)^3.
    """
    from mdmt.bounds.theorems.interval_bounds import ser_lower_bound

    cases = [(3, 6, np.full(3, 1 / 3), 0.25, 2 / 9, 1 - (1 - math.exp(-0.5) / 2 * 7 / 9) ** 2),
             (4, 8, np.full(4, 1 / 4), 0.1, 3 / 32, 1 - (1 - math.exp(-0.2) / 2 * 29 / 32) ** 2),
             (3, 9, np.array([0.5, 0.5]), 0.5, 0.0, 1 - (1 - math.exp(-1.0) / 2) ** 3)]
    for l, L, pi, eps, P, want in cases:
        assert ser_lower_bound(l, L, pi, eps) == pytest.approx(want, rel=1e-12), (l, L, eps)
        assert S.THEOREM_44_BOUND.evaluate(epsilon_learning=eps, P_distinct_l=P, L=L, l=l) == pytest.approx(
            want, rel=1e-12, abs=1e-15), (l, L, eps)


def test_the_library_evaluates_the_statements(monkeypatch):
    """One source of truth: chain_bound, mismatch_probability and ser_lower_bound go through the statements, and
    with the arguments their definitions call for.

    The expected arguments, by hand: a bigram (n = 2) of length L = 2 revealed over two steps of probability 1/2 has
    one dependency exactly when both tokens share a step, so E[sum_j D_j] = 1/2^2 + 1/2^2 = 1/2; three positions of
    one interval (l = 3) land on distinct steps of pi = (1/3, 1/3, 1/3) with probability 3!/3^3 = 2/9; the learning
    error reaches each statement unchanged (no rescaling by l or l - 1)."""
    from mdmt.bounds.theorems.dependencies import chain_bound
    from mdmt.bounds.theorems.interval_bounds import mismatch_probability, ser_lower_bound

    calls = []
    for st in (S.CHAIN_BOUND, S.MISMATCH, S.THEOREM_44_BOUND):
        real = st.evaluate
        monkeypatch.setattr(st, "evaluate",
                            lambda real=real, key=st.key, **kw: calls.append((key, kw)) or real(**kw))
    chain_bound(2, 2, np.array([0.5, 0.5]), 3, 0.05)
    mismatch_probability(0.1)
    ser_lower_bound(3, 6, np.full(3, 1 / 3), 0.2)
    assert [key for key, _ in calls] == ["B9", "pe", "T44"]
    expected = [{"epsilon_learning": 0.05, "V": 3, "E_D": 0.5, "L": 2},
                {"epsilon_learning": 0.1},
                {"epsilon_learning": 0.2, "P_distinct_l": 2 / 9, "L": 6, "l": 3}]
    for (key, got), want in zip(calls, expected):
        assert set(got) == set(want), key
        for name, value in want.items():
            assert float(got[name]) == pytest.approx(value, rel=1e-12), (key, name)
    # the bounds are built from p_e's expression: with p_e as a symbol they are the forms of the docs
    pe = sp.Symbol("p_e", positive=True)
    to_pe = {sp.exp(-2 * S.eps_l): 2 * pe}
    assert sp.simplify(S.THEOREM_44_BOUND.explicit.subs(to_pe) - (1 - (1 - pe * (1 - S.P_l)) ** (S.L / S.l))) == 0
    assert sp.simplify(S.THEOREM_44.explicit.subs(to_pe) - pe / (S.l * sp.log(2))) == 0
