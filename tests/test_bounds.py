"""Theorem statements, every check family with teeth, bound curves and `mdmt verify` (Appendices A-C)."""

import math

import numpy as np
import pytest
import sympy as sp

from mdmt.bounds import checks
from mdmt.bounds.checks import Instance
from mdmt.bounds.curves import critical_c, min_steps_ter, ter_chain_bound
from mdmt.bounds.statements import ALL, Step, eps, p_e, theorem_42_steps, theorem_44_constant
from mdmt.bounds.verify import verify
from mdmt.constructions.languages import NGram, interval_hmm
from mdmt.constructions.reverse.interval_closed_forms import oracle_ser


def test_every_sympy_derivation_verifies_and_a_wrong_one_does_not():
    for stmt in ALL:
        assert all(ok for _, ok in stmt.check()), stmt.name
    assert not Step("wrong constant", 2 * p_e(eps), p_e(eps)).verify()
    assert not Step("wrong inequality", sp.Integer(2), sp.Integer(1), "<=").verify()
    assert theorem_42_steps(3, 0.05) == 5335  # 1 + 2/(3 * 0.05^3) = 5334.33 (by hand)
    assert theorem_44_constant(5, 1 / 128) == pytest.approx(math.exp(-1 / 64) / 2 / (5 * math.log(2)))


# Tight instances (the bounds hold with equality, derived by hand), so any weakening must fail:
COPY = Instance("copying 2-gram", NGram(2, [0.5, 0.5], [[1.0, 0.0], [0.0, 1.0]]), 2, n=2)
# x_2 = x_1 uniform: revealing both at once gives KL = TC = log 2 = D log|V| and SER = 1/2 per collision.


def _all_hold(rows):
    return all(r.holds for r in rows)


def test_check_families_pass_and_fail_when_weakened():
    one_step = np.array([1.0])
    assert _all_hold(checks.c1_c2_c3_c4(COPY, one_step))
    for w in (0.9, 1.1):
        rows = checks.c1_c2_c3_c4(COPY, one_step, weaken=w)
        failed = {r.check for r in rows if not r.holds}
        assert any(c.startswith("C1") for c in failed) or w > 1
        assert any(c.startswith("C2") for c in failed)
    failed = {r.check.split()[0] for r in checks.c1_c2_c3_c4(COPY, one_step, weaken=0.9) if not r.holds}
    assert {"C1", "C2", "C3", "C4"} <= failed
    two = np.array([0.5, 0.5])  # Thm 4.3: SER = 1/4, bound = 1/2
    assert not _all_hold([r for r in checks.c1_c2_c3_c4(COPY, two, weaken=0.4) if r.check.startswith("Thm 4.3")])
    iv = Instance("interval l=2", interval_hmm(2), 4, interval=2)
    assert _all_hold(checks.theorem_44_exact(iv, two))
    assert not _all_hold(checks.theorem_44_exact(iv, two, weaken=1.01))  # l = 2: the bound is exact
    assert _all_hold(checks.c5_theorem_42(2, 0.2, [512]))
    assert not _all_hold(checks.c5_theorem_42(2, 0.2, [512], weaken=0.01))
    assert _all_hold(checks.theorem_44_large(5, 1 / 128, [1000]))
    assert not _all_hold(checks.theorem_44_large(5, 1 / 128, [1000], weaken=1.9))


def test_ter_curve_and_min_steps():
    n, V, e = 3, 8, 0.1
    N = min_steps_ter(n, 512, V, e)
    target = 4 * e * math.log(V)
    assert ter_chain_bound(n, 512, N, V, e) <= target < ter_chain_bound(n, 512, N - 1, V, e)
    assert N <= theorem_42_steps(n, e)  # the explicit theorem is sufficient, the exact count smaller


def test_critical_constant_is_exact():
    l, L = 5, 1000
    c, N = critical_c(l, L)
    assert oracle_ser(l, L, np.full(N, 1 / N)) > 0.5 >= oracle_ser(l, L, np.full(N + 1, 1 / (N + 1)))
    assert c == N / L
    # for large L the collision analysis gives C -> 1/ln 2 (by hand: 1 - rho ~ C(l,2)/(2N))
    assert abs(c - 1 / math.log(2)) < 0.01


def test_verify_quick_passes():
    out = verify(quick=True)
    assert out["violations"] == 0 and out["checks"] > 300
    assert {r["check"].split()[0] for r in out["table"]} >= {"C1", "C2", "C3", "C4", "C5/Thm", "Thm", "sympy"}
