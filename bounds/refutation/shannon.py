"""Proofs of linear information inequalities: the elemental Shannon inequalities, a linear program, its exact check.

A linear inequality over the joint entropies of L random variables, ``sum_A a_A H(X_A) + c >= 0``, holds for every
joint distribution on any alphabets when it is a non-negative combination of the **elemental inequalities**
(Yeung, *Information Theory and Network Coding*, Section 14.1 and Theorem 14.4; the method of his ITIP):

* ``H(X_i | X_{N - i}) >= 0`` for each of the L positions i (N = all positions);
* ``I(X_i; X_j | X_K) >= 0`` for each pair i < j and each K among the other L - 2 positions,

L + C(L, 2) 2^(L-2) inequalities over the 2^L - 1 joint entropies H(X_A), A a non-empty set of positions.  Every
Shannon inequality (the non-negativity of every entropy, conditional entropy, mutual information and conditional
mutual information) is such a combination, so the cone they cut out is the Shannon cone Gamma_L; the entropic vectors
lie inside it.  By Farkas' lemma the inequality ``a . h >= 0`` holds on Gamma_L exactly when ``a = sum_k y_k e_k``
with ``y >= 0`` (``e_k`` the elemental inequalities' coefficient vectors): :func:`prove` finds such ``y`` by a linear
program (HiGHS, through :func:`scipy.optimize.linprog`), then rounds it to rationals and **checks the identity
exactly**, coefficient by coefficient, in python-flint's ``fmpq`` (:func:`verify`) -- the float LP is only a search
for the certificate, never its proof.  Where rounding does not reproduce the identity, the multipliers are solved
exactly on the LP's support (``fmpq_mat``).  The constant c needs ``c >= 0`` (``> 0`` for a strict claim): at the
deterministic distribution every entropy is 0.

An inequality the LP cannot write so is **not Shannon-type**: it may still be true (a non-Shannon inequality such as
Zhang-Yeung's, for L >= 4) or false.  For L <= 3 the closure of the entropic region is the Shannon cone (Zhang and
Yeung 1997), so there "not Shannon-type" means false for some distribution, though perhaps only on large alphabets.

Extra linear facts (lemmas about quantities other than entropies, :mod:`.rules`) enter the same LP as further
non-negative rows; their coefficients may be irrational (``log V``), and the identity is then checked in sympy's
exact arithmetic instead.

The LP has 2^L - 1 unknowns and L + C(L, 2) 2^(L-2) rows: :data:`MAX_LP_LENGTH` bounds L (:func:`check_size` names
the numbers).  Measured on one core for ``DTC <= (L - 1) * TC``: L = 5 (31 entropies, 85 inequalities) in about
0.01 s, L = 8 (255, 1,800) in 0.2 s, L = 9 (511, 4,617) in 1.3 s -- and an infeasible LP at L = 9 in 3.4 s -- while
L = 10 (1,023, 11,530) ran for minutes: L = 9 is the practical limit (docs/claims.md).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import numpy as np

MAX_LP_LENGTH = 9  # L + C(L, 2) 2^(L-2) elemental inequalities: 4,617 at L = 9 (seconds), 11,530 at L = 10 (minutes)
ENTROPIC = ("H", "TC", "DTC", "sum_MI")  # the claim quantities that are linear in the joint entropies
LIMIT_DENOMINATOR = 10 ** 6  # the LP's multipliers are rounded to rationals with denominators up to this


class ProofSizeError(ValueError):
    """An LP too large to set up (:data:`MAX_LP_LENGTH`): the message names L and the number of inequalities."""


def elemental_count(L: int) -> int:
    """L + C(L, 2) 2^(L-2): the number of elemental inequalities of L random variables."""
    return L + math.comb(L, 2) * (1 << max(L - 2, 0)) if L >= 2 else L


def check_size(L: int) -> None:
    """Refuse an L whose LP exceeds :data:`MAX_LP_LENGTH`, naming its unknowns and inequalities."""
    if not isinstance(L, (int, np.integer)) or isinstance(L, bool) or L < 1:
        raise ValueError(f"L must be a positive integer, got {L!r}")
    if L > MAX_LP_LENGTH:
        raise ProofSizeError(f"L = {L}: the LP over {(1 << L) - 1:,} joint entropies and {elemental_count(L):,} "
                             f"elemental inequalities is beyond mdmt's limit of L = {MAX_LP_LENGTH} "
                             f"({elemental_count(MAX_LP_LENGTH):,} inequalities)")


def _names(mask: int) -> str:
    return ",".join(f"X{i + 1}" for i in range(mask.bit_length()) if mask >> i & 1)


@dataclass(frozen=True)
class Elemental:
    """One elemental inequality: ``coeffs`` (subset bitmask -> integer) >= 0, and how it reads."""

    text: str
    coeffs: tuple  # ((mask, coefficient), ...)


@lru_cache(maxsize=16)
def elemental(L: int) -> tuple:
    """The elemental inequalities of L random variables, in a fixed order (module docstring)."""
    check_size(L)
    full = (1 << L) - 1
    out = []
    for i in range(L):
        rest = full ^ (1 << i)
        coeffs = ((full, 1),) + (((rest, -1),) if rest else ())
        out.append(Elemental(f"H(X{i + 1} | {_names(rest)}) >= 0" if rest else f"H(X{i + 1}) >= 0", coeffs))
    for i, j in itertools.combinations(range(L), 2):
        others = [k for k in range(L) if k not in (i, j)]
        for r in range(len(others) + 1):
            for K in itertools.combinations(others, r):
                k = sum(1 << x for x in K)
                terms: dict = {}
                for m, c in ((k | 1 << i, 1), (k | 1 << j, 1), (k | 1 << i | 1 << j, -1), (k, -1)):
                    if m:
                        terms[m] = terms.get(m, 0) + c
                given = f" | {_names(k)}" if k else ""
                out.append(Elemental(f"I(X{i + 1}; X{j + 1}{given}) >= 0",
                                     tuple(sorted((m, c) for m, c in terms.items() if c))))
    return tuple(out)


def entropic_form(name: str, L: int) -> dict:
    """The quantity ``name`` (:data:`ENTROPIC`) as {subset bitmask: coefficient} over the joint entropies at L."""
    full = (1 << L) - 1
    singles = {1 << i: 1 for i in range(L)}
    if name == "H":
        return {full: 1}
    if name == "TC":  # sum_i H(X_i) - H(X)
        return add_forms(singles, {full: -1})
    if name == "DTC":  # H(X) - sum_i H(X_i | X_-i) = sum_i H(X_-i) - (L - 1) H(X)
        return add_forms({full ^ (1 << i): 1 for i in range(L) if full ^ (1 << i)}, {full: -(L - 1)})
    if name == "sum_MI":  # TC + DTC
        return add_forms(entropic_form("TC", L), entropic_form("DTC", L))
    raise ValueError(f"{name!r} is not a quantity linear in the joint entropies ({', '.join(ENTROPIC)})")


def add_forms(a: dict, b: dict, scale=1) -> dict:
    """a + scale * b, two linear forms {variable: coefficient} (zeros dropped)."""
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + scale * v
    return {k: v for k, v in out.items() if v != 0}


def entropy(*sets) -> dict:
    """H(X_A) for A the union of ``sets`` of positions (1-based), as {bitmask: 1}: the joint entropies' basis."""
    mask = 0
    for s in sets:
        for i in (s if isinstance(s, (set, frozenset, list, tuple)) else (s,)):
            if not isinstance(i, (int, np.integer)) or i < 1:
                raise ValueError(f"positions are integers from 1, got {i!r}")
            mask |= 1 << (int(i) - 1)
    return {mask: 1} if mask else {}


def conditional_entropy(A, C=()) -> dict:
    """H(X_A | X_C) = H(X_{A u C}) - H(X_C)."""
    return add_forms(entropy(A, C), entropy(C), -1)


def mutual_information(A, B, C=()) -> dict:
    """I(X_A; X_B | X_C) = H(X_{AC}) + H(X_{BC}) - H(X_{ABC}) - H(X_C)."""
    return add_forms(add_forms(entropy(A, C), entropy(B, C)), add_forms(entropy(A, B, C), entropy(C)), -1)


# ----------------------------------------------------------------------------- the LP and its certificate

@dataclass(frozen=True)
class Fact:
    """A linear fact ``sum coeffs[v] v + constant >= 0`` beyond the elemental inequalities (a lemma of :mod:`.rules`):
    ``coeffs`` maps a subset bitmask (int) or a quantity's name (str) to an exact number (int, Fraction or sympy)."""

    text: str
    coeffs: dict
    constant: object = 0
    lemma: str = ""


@dataclass
class Proof:
    """A verified certificate: ``target`` = sum_k multipliers[k] rows[k] + slack, with multipliers and slack >= 0."""

    L: int
    target: dict  # variable -> exact coefficient (the claim as ``target . x + constant >= 0``)
    constant: object
    strict: bool
    steps: list  # (multiplier: Fraction, text, lemma) of every row used, elemental or fact
    slack: object  # constant - sum_k y_k d_k, exact (>= 0, > 0 for a strict claim)
    exact: str  # "fmpq" or "sympy": how the identity was checked
    lp_seconds: float = 0.0
    verify_seconds: float = 0.0
    inequalities: int = 0  # elemental inequalities in the LP
    kind: str = "Shannon-type"  # or "lemmas" where a fact of :mod:`.rules` is used

    def to_dict(self) -> dict:
        return {"L": self.L, "kind": self.kind, "verified": f"exactly, coefficient by coefficient ({self.exact})",
                "elemental_inequalities": self.inequalities, "joint_entropies": (1 << self.L) - 1,
                "lp_seconds": self.lp_seconds, "verify_seconds": self.verify_seconds,
                "slack": str(self.slack),
                "steps": [{"multiplier": str(y), "inequality": text, **({"lemma": lemma} if lemma else {})}
                          for y, text, lemma in self.steps]}


@dataclass
class NotProved:
    """No certificate: ``reason`` says why (the LP is infeasible, the constant has the wrong sign, ...)."""

    L: int
    reason: str
    seconds: float = 0.0
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"L": self.L, "reason": self.reason, "seconds": self.seconds, **self.details}


def _rational(v) -> bool:
    if isinstance(v, (int, Fraction, np.integer)) and not isinstance(v, bool):
        return True
    import sympy as sp

    return isinstance(v, sp.Basic) and v.is_Rational is True


def _to_fraction(v) -> Fraction:
    if isinstance(v, (int, np.integer)):
        return Fraction(int(v))
    if isinstance(v, Fraction):
        return v
    return Fraction(int(v.p), int(v.q))  # a sympy Rational


def prove(target: dict, L: int, constant=0, strict: bool = False, facts: tuple = ()) -> Proof | NotProved:
    """Prove ``sum target[v] v + constant >= 0`` (``> 0`` if ``strict``) for every joint distribution of L variables.

    ``target`` maps subset bitmasks (joint entropies) and quantity names (with ``facts`` about them) to exact numbers.
    Returns a :class:`Proof` whose identity was checked exactly, or :class:`NotProved` with the reason.
    """
    import time

    check_size(L)
    t0 = time.perf_counter()
    rows = [(1, e.text, "", dict(e.coeffs), 0) for e in elemental(L)]
    rows += [(1, f.text, f.lemma, dict(f.coeffs), f.constant) for f in facts]
    variables = sorted({v for v in target if isinstance(v, int)} | {v for _, _, _, c, _ in rows for v in c
                                                                     if isinstance(v, int)})
    names = sorted({v for v in target if isinstance(v, str)} | {v for _, _, _, c, _ in rows for v in c
                                                                if isinstance(v, str)})
    full = (1 << L) - 1
    bad = [v for v in variables if not 0 < v <= full]
    if bad:
        raise ValueError(f"subset {bad[0]:#b} names a position beyond L = {L}")
    index = {v: k for k, v in enumerate(list(range(1, full + 1)) + names)}
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    r_idx, c_idx, vals = [], [], []
    for k, (_, _, _, coeffs, _) in enumerate(rows):
        for v, c in coeffs.items():
            r_idx.append(index[v])
            c_idx.append(k)
            vals.append(float(c))
    A = coo_matrix((vals, (r_idx, c_idx)), shape=(len(index), len(rows))).tocsr()
    b = np.zeros(len(index))
    for v, c in target.items():
        b[index[v]] = float(c)
    # minimise what the facts' constants take from the claim's (then the number of rows used)
    cost = np.array([float(d) for *_, d in rows]) + 1e-6
    res = linprog(cost, A_eq=A, b_eq=b, bounds=(0, None), method="highs-ds")
    lp_seconds = time.perf_counter() - t0
    if res.status != 0 or res.x is None:
        what = "the LP is infeasible" if res.status == 2 else f"the LP did not solve ({res.message})"
        if facts:
            return NotProved(L, f"not covered by the rules: no non-negative combination of the {elemental_count(L):,} "
                                f"elemental inequalities and the lemmas equals it ({what})", lp_seconds)
        return NotProved(L, f"not Shannon-type: no non-negative combination of the {elemental_count(L):,} elemental "
                            f"inequalities equals it ({what})", lp_seconds)
    t1 = time.perf_counter()
    y = res.x
    support = [k for k in range(len(rows)) if y[k] > 1e-9]
    mult = {k: Fraction(float(y[k])).limit_denominator(LIMIT_DENOMINATOR) for k in support}
    proof = verify(target, constant, strict, [(mult[k], rows[k]) for k in support if mult[k] > 0])
    if proof is None and all(_rational(c) for _, _, _, co, _ in rows for c in co.values()) \
            and all(_rational(c) for c in target.values()):
        exact = _solve_on_support(target, [rows[k] for k in support], index)
        if exact is not None:
            proof = verify(target, constant, strict, [(m, rows[k]) for m, k in zip(exact, support) if m > 0])
    seconds = time.perf_counter() - t1
    if proof is None or isinstance(proof, str):
        reason = proof if isinstance(proof, str) else ("the LP's multipliers could not be made exact (rounded to "
                                                       "rationals they miss the identity)")
        return NotProved(L, reason, lp_seconds + seconds)
    used_facts = any(lemma for _, _, lemma in proof.steps)
    proof.L, proof.lp_seconds, proof.verify_seconds = L, lp_seconds, seconds
    proof.inequalities = elemental_count(L)
    proof.kind = "lemmas" if used_facts else "Shannon-type"
    return proof


def _solve_on_support(target: dict, rows: list, index: dict) -> list | None:
    """The multipliers of ``rows`` that give ``target`` exactly (fmpq_mat), or None (no unique exact solution)."""
    import flint

    n = len(rows)
    if n == 0:
        return None
    M = flint.fmpq_mat(len(index), n + 1)
    for k, (_, _, _, coeffs, _) in enumerate(rows):
        for v, c in coeffs.items():
            f = _to_fraction(c)
            M[index[v], k] = flint.fmpq(f.numerator, f.denominator)
    for v, c in target.items():
        f = _to_fraction(c)
        M[index[v], n] = flint.fmpq(f.numerator, f.denominator)
    R, rank = M.rref()
    if rank != n:  # inconsistent (a pivot in the last column) or not unique
        return None
    out = []
    for k in range(n):
        if R[k, k] != 1:
            return None
        v = R[k, n]
        out.append(Fraction(int(v.p), int(v.q)))
    return out if all(m >= 0 for m in out) else None


def verify(target: dict, constant, strict: bool, combination: list):
    """Check ``target = sum_k y_k coeffs_k`` exactly, every y_k >= 0, and the slack ``constant - sum_k y_k d_k``
    non-negative (positive if ``strict``).  Returns the :class:`Proof`, a reason (str) where the slack fails, or
    None where the identity does not hold.

    ``combination``: (y_k, row) pairs, a row being (1, text, lemma, coeffs, constant) as :func:`prove` builds them.
    Rational coefficients are checked in fmpq; any irrational one (``log V``) in sympy, exactly.
    """
    import flint

    if any(y < 0 for y, _ in combination):
        return None
    values = [c for _, row in combination for c in row[3].values()] + list(target.values())
    values += [row[4] for _, row in combination] + [constant]
    rational = all(_rational(v) for v in values)
    if rational:
        q = lambda v: flint.fmpq(_to_fraction(v).numerator, _to_fraction(v).denominator)  # noqa: E731
        total: dict = {}
        for y, row in combination:
            for v, c in row[3].items():
                total[v] = total.get(v, flint.fmpq(0)) + q(y) * q(c)
        keys = set(total) | set(target)
        if any(total.get(v, flint.fmpq(0)) != q(target.get(v, 0)) for v in keys):
            return None
        slack_q = q(constant) - sum((q(y) * q(row[4]) for y, row in combination), flint.fmpq(0))
        slack = Fraction(int(slack_q.p), int(slack_q.q))
        ok = slack > 0 if strict else slack >= 0
        how = "fmpq"
    else:
        import sympy as sp

        total = {}
        for y, row in combination:
            for v, c in row[3].items():
                total[v] = total.get(v, 0) + sp.Rational(y.numerator, y.denominator) * sp.sympify(c)
        for v in set(total) | set(target):
            diff = sp.expand_log(sp.expand(total.get(v, 0) - sp.sympify(target.get(v, 0))), force=True)
            if sp.simplify(diff) != 0:
                return None
        slack = sp.nsimplify(0) + sp.sympify(constant) - sum(
            (sp.Rational(y.numerator, y.denominator) * sp.sympify(row[4]) for y, row in combination), sp.Integer(0))
        slack = sp.simplify(sp.expand_log(slack, force=True))
        ok = bool(slack.is_positive) if strict else bool(slack.is_zero or slack.is_positive)
        how = "sympy"
    if not ok:
        sign = "positive" if strict else "non-negative"
        if combination and any(row[2] for _, row in combination):
            return (f"not covered by the rules: no non-negative combination of the lemmas and the elemental "
                    f"inequalities reaches it (the best falls short by the constant {-slack})")
        return (f"not Shannon-type: the entropy terms are a Shannon-type combination, but the constant ({slack}) is "
                f"not {sign}: at a deterministic distribution (every entropy 0) the claim fails")
    steps = [(y, row[1], row[2]) for y, row in combination]
    return Proof(0, dict(target), constant, strict, steps, slack, how)
