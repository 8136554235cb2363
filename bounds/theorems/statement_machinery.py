"""The machinery of :mod:`.statements`: the :class:`Statement` class and the kinds of derivation step
by which the paper's lemmas and theorems (Appendices A-C) are given explicit constants.

A :class:`Statement` carries the paper's form (O-notation and assumptions, as text), mdmt's explicit
form (a sympy expression, ``explicit``), the derivation of that form as a list of steps, and the
expression the derivation arrives at (``derived``).  It evaluates ``explicit`` in float64
(``evaluate``, via sympy.lambdify, using ``stable`` where given), in arb ball arithmetic (``arb``) or
exactly (``exact``); ``check()`` verifies every step and that ``derived`` equals ``explicit``
(:func:`equal`, sympy's proof of an identity).

How a step is known (:mod:`.certify`):

* :class:`Identity` -- proved by sympy (the difference simplifies to 0);
* :class:`Inequality` -- lhs <= rhs proved symbolically, or certified by arb ball arithmetic with
  adaptive bisection over its whole stated domain (monotonicity and limits for the touching
  points and unbounded tails); no grid sampling;
* :class:`OnLaws` -- a statement about distributions (entropies), checked exactly on every law of
  a finite family (all laws with probabilities in (1/k)Z on small alphabets, plus adversarial
  ones); a check, not a proof, and reported as such;
* :class:`Fact` -- a probabilistic argument of the paper stated in words, with the ``mdmt verify``
  family that checks it on exact instances.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

import numpy as np
import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p


# ----------------------------------------------------------------------------- steps

def _linear_sums(e):
    """Split sums of sums and pull factors free of the summation index out of each Sum."""
    e = sp.expand(e)

    def split(s):
        return sp.Add(*[sp.Sum(t, *s.limits) for t in sp.Add.make_args(sp.expand(s.function))])

    def pull(s):
        j = s.limits[0][0]
        inner = sp.Mul(*[f for f in sp.Mul.make_args(s.function) if f.has(j)])
        outer = sp.Mul(*[f for f in sp.Mul.make_args(s.function) if not f.has(j)])
        return outer * (sp.Sum(inner, *s.limits) if inner != 1 else sp.Sum(1, *s.limits).doit())

    e = e.replace(lambda s: isinstance(s, sp.Sum), split)
    e = e.replace(lambda s: isinstance(s, sp.Sum), pull)
    return sp.expand(e)


def _exp_of_logs(e):
    """exp(c log y) -> y**c (for y > 0, as in every statement here)."""
    def fold(t):
        logs = [g for g in sp.Mul.make_args(t.args[0]) if isinstance(g, sp.log)]
        if len(logs) != 1:
            return t
        return logs[0].args[0] ** sp.simplify(t.args[0] / logs[0])

    return e.replace(lambda t: isinstance(t, sp.exp), fold)


def _logs_and_powers(e):
    """log(a b) -> log a + log b, powers combined, exp(c log y) -> y^c: forced, valid for positive symbols."""
    return _exp_of_logs(sp.powsimp(sp.expand_log(e, force=True), force=True))


def equal(a, b) -> bool:
    """a == b proved by sympy (simplification, Sum linearisation, forced log/power rules for positive symbols)."""
    diff = sp.sympify(a) - sp.sympify(b)
    if diff.has(expm1, log1p):
        diff = diff.rewrite(sp.exp).rewrite(sp.log).replace(lambda t: isinstance(t, log1p), lambda t: sp.log(1 + t.args[0]))
    attempts = (  # the expanded normal forms first (cheap), then sympy's simplification of the same forms
        lambda e: sp.expand(e),
        lambda e: sp.expand(_linear_sums(e)),
        lambda e: sp.expand(_logs_and_powers(e)),
        lambda e: sp.simplify(_logs_and_powers(e)),
        lambda e: sp.simplify(e),
        lambda e: sp.simplify(_linear_sums(e)),
    )
    for f in attempts:
        try:
            if f(diff) == 0:
                return True
        except Exception:  # noqa: BLE001 -- a failed simplification proves nothing
            continue
    return False


def _resolve(v):
    """A sympy expression, or a zero-argument function building one (deferred until a check needs it)."""
    return v if isinstance(v, sp.Basic) or not callable(v) else v()


@dataclass
class StepResult:
    description: str
    method: str  # "proved", "certified", "exact", "stated" or "FAILED"
    detail: str
    ok: bool


@dataclass
class Identity:
    """lhs == rhs, proved by sympy."""

    description: str
    lhs: sp.Expr
    rhs: sp.Expr

    def verify(self) -> StepResult:
        lhs, rhs = _resolve(self.lhs), _resolve(self.rhs)
        ok = equal(lhs, rhs)
        return StepResult(self.description, "proved" if ok else "FAILED", "sympy: lhs - rhs simplifies to 0" if ok else
                          f"sympy could not reduce {sp.sympify(lhs) - sp.sympify(rhs)} to 0", ok)


@dataclass
class Inequality:
    """lhs <= rhs on ``domain`` (symbol -> (lo, hi), hi may be sp.oo).

    With one free symbol: proved symbolically or certified in arb (:func:`.certify.certify_nonneg`);
    with several: proved symbolically only.
    """

    description: str
    lhs: sp.Expr
    rhs: sp.Expr
    domain: dict = field(default_factory=dict)

    def verify(self) -> StepResult:
        from .certify import NotCertified, certify_nonneg, prove_nonneg

        gap = sp.sympify(_resolve(self.rhs)) - sp.sympify(_resolve(self.lhs))
        free = sorted(gap.free_symbols, key=str)
        missing = [s for s in free if s not in self.domain]
        if missing:
            return StepResult(self.description, "FAILED", f"no domain for {missing}", False)
        if len(free) <= 1:
            if not free:
                ok = prove_nonneg(gap, {})
                return StepResult(self.description, "proved" if ok else "FAILED", f"{gap} >= 0", ok)
            s = free[0]
            lo, hi = self.domain[s]
            if s.is_integer:
                ok = prove_nonneg(gap, {s: (lo, hi)})
                return StepResult(self.description, "proved" if ok else "FAILED",
                                  f"sympy proves {gap} >= 0 for integers {s} >= {lo}" if ok else "not proved", ok)
            var = sp.Symbol(s.name, real=True)
            try:
                cert = certify_nonneg(gap.subs(s, var), var, lo, hi)
            except NotCertified as exc:
                return StepResult(self.description, "FAILED", str(exc), False)
            return StepResult(self.description, cert.method, cert.detail, True)
        ok = prove_nonneg(gap, {s: self.domain[s] for s in free})
        return StepResult(self.description, "proved" if ok else "FAILED",
                          "sympy proves rhs - lhs >= 0 on the domain" if ok else "not proved", ok)


@dataclass
class OnLaws:
    """A statement about laws, checked exactly on every law that ``laws()`` yields (not a proof)."""

    description: str
    laws: object  # callable () -> iterable of (name, law)
    gap: object  # callable law -> LogSum or list of LogSum, >= 0

    def verify(self) -> StepResult:
        from .certify import NotCertified, check_on_laws

        try:
            res = check_on_laws(self.laws(), self.gap)
        except (AssertionError, NotCertified) as exc:
            return StepResult(self.description, "FAILED", str(exc), False)
        return StepResult(self.description, "exact", f"checked exactly on {res.laws} laws ({res.equalities} with "
                          f"equality; tightest: {res.tightest})", True)


@dataclass
class Fact:
    """A probabilistic argument of the paper, stated; ``checked_by`` names the verify family that checks it."""

    description: str
    checked_by: str

    def verify(self) -> StepResult:
        if not self.checked_by:
            return StepResult(self.description, "stated", "a standard argument, not checked by mdmt", True)
        return StepResult(self.description, "stated", f"checked on exact instances by mdmt verify -k {self.checked_by}", True)


# ----------------------------------------------------------------------------- statements

@dataclass
class Statement:
    name: str
    paper: str
    explicit_text: str
    explicit: sp.Expr
    assumptions: str
    steps: list
    derived: object  # the expression the steps arrive at (or a function building it); must equal ``explicit``
    stable: sp.Expr | None = None  # a form equal to ``explicit`` (proved) for float64 evaluation
    key: str = ""

    def check(self) -> list[StepResult]:
        """Verify every step, that the derivation arrives at ``explicit``, and that ``stable`` equals it."""
        out = [s.verify() for s in self.steps]
        derived = _resolve(self.derived)
        ok = equal(derived, self.explicit)
        out.append(StepResult("the derivation arrives at the explicit form", "proved" if ok else "FAILED",
                              f"derived {derived} == explicit {self.explicit}" if ok else
                              f"derived {sp.simplify(derived)} != explicit {self.explicit}", ok))
        if self.stable is not None:
            ok = equal(self.stable, self.explicit)
            out.append(StepResult("the evaluated form equals the explicit form", "proved" if ok else "FAILED",
                                  f"{self.stable} == {self.explicit}", ok))
        return out

    @cached_property
    def symbols(self) -> list[sp.Symbol]:
        return sorted(self.explicit.free_symbols, key=str)

    @cached_property
    def _numpy(self):
        return sp.lambdify(self.symbols, self.stable if self.stable is not None else self.explicit, "numpy")

    def _args(self, values: dict) -> list:
        missing = [s.name for s in self.symbols if s.name not in values]
        if missing:
            raise ValueError(f"{self.name}: missing values for {', '.join(missing)}")
        return [values[s.name] for s in self.symbols]

    def evaluate(self, **values):
        """float64 value of the explicit form (vectorised over numpy arrays)."""
        with np.errstate(divide="ignore", over="ignore"):
            out = self._numpy(*self._args(values))
        return float(out) if np.ndim(out) == 0 else out

    def arb(self, prec: int = 128, **values):
        """The explicit form in arb ball arithmetic; values may be numbers, Fractions, (lo, hi) pairs or balls."""
        from .certify import arb_eval

        return arb_eval(self.explicit, dict(zip(self.symbols, self._args(values))), prec)

    def exact(self, **values) -> sp.Expr:
        """The explicit form with exact values substituted (floats are taken as the rationals they are)."""
        subs = {}
        for s, v in zip(self.symbols, self._args(values)):
            if isinstance(v, float):
                v = Fraction(v)
            if isinstance(v, Fraction):
                v = sp.Rational(v.numerator, v.denominator)
            subs[s] = sp.sympify(v)
        return _exp_of_logs(self.explicit.subs(subs))

