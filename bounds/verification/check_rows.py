"""The rows of ``mdmt verify`` and their verdicts, and the instances the families run on (Appendices A-C).

A :class:`Row` compares a value with a bound (<=, >=) or with a second computation of the same
quantity (==), and says how its verdict is known:

``certified``
    both sides are rigorous enclosures (float intervals rounded outward, arb balls) and the
    enclosure of the slack is >= 0 (for ==: the two enclosures intersect; the row reports how
    wide they are, i.e. the precision to which the two computations agree);
``exact``
    both sides are exact rationals or exact log-sums and the comparison is decided exactly --
    used where a bound is attained, since no enclosure can certify an equality;
``numeric``
    a float64 value of the library against an exact or certified value of the same quantity,
    passing when they differ by at most the rounding-error bound derived in :mod:`.rounding`;
``proved`` / ``stated``
    derivation steps (:mod:`.statements`).

A row whose verdict cannot be established (``undecided``) counts as a violation.  :func:`decide`,
:func:`agree` and :func:`exact_row` make rows; an :class:`Instance` is a small language with its
exact evaluation set-ups (the references of :mod:`.references` and the library's float tables),
and :func:`schedule` a reveal schedule as the library's pi and its exact value.  The families of
checks themselves, one per link of the paper's proofs, are in :mod:`.checks`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import sympy as sp

from mdmt.constructions.reverse.denoisers import BitBiasedInterval, TemperedOracle, UniformMixture
from mdmt.constructions.reverse.schedules import WarmStart, reveal_probabilities
from mdmt.constructions.reverse.tables import build_tables, support_table

from ..theorems.intervals import Iv, LogSum, arb_bounds
from .references import ChainEval, Partitions, Reference, schedule_exact

# ----------------------------------------------------------------------------- rows and verdicts

@dataclass
class Row:
    family: str
    instance: str
    case: str
    value: tuple  # (lo, hi) enclosure of the checked quantity (lo == hi for a float64 value)
    bound: tuple  # (lo, hi)
    relation: str  # "<=", ">=", "==", "step"
    method: str  # "certified", "exact", "numeric", "proved", "stated", "undecided"
    holds: bool
    margin: float  # a lower bound of the slack (<=, >=), or tolerance minus the difference (==)
    rel_margin: float = math.nan  # slack relative to the bound (how tight the row is)
    note: str = ""

    @property
    def id(self) -> str:
        return f"{self.family}/{self.instance}/{self.case}"

    @property
    def mid(self) -> float:
        return 0.5 * (self.value[0] + self.value[1])

    @property
    def bound_mid(self) -> float:
        return 0.5 * (self.bound[0] + self.bound[1])


def _pair(x) -> tuple[float, float]:
    if isinstance(x, Iv):
        return float(x.lo), float(x.hi)
    if type(x).__name__ == "arb":
        return arb_bounds(x)
    if isinstance(x, tuple):
        return float(x[0]), float(x[1])
    if isinstance(x, LogSum):
        return arb_bounds(x.arb(128))
    if isinstance(x, (Fraction, sp.Basic)):
        v = Fraction(str(x)) if isinstance(x, sp.Rational) else x
        if isinstance(v, Fraction):
            iv = Iv.from_fractions(np.array([v], dtype=object))
            return float(iv.lo[0]), float(iv.hi[0])
        return _pair(to_logsum(x))
    f = float(x)
    return f, f


def to_logsum(x) -> LogSum:
    """An exact number (Fraction, LogSum, or a sympy expression built from rationals and logs of rationals)."""
    if isinstance(x, LogSum):
        return x
    if isinstance(x, (int, Fraction)):
        return LogSum(Fraction(x))
    e = sp.sympify(x)
    if e.is_Rational:
        return LogSum(Fraction(int(e.p), int(e.q)))
    if isinstance(e, sp.log) and e.args[0].is_Rational:
        r = e.args[0]
        return LogSum.log(Fraction(int(r.p), int(r.q)))
    if isinstance(e, sp.Add):
        return sum((to_logsum(a) for a in e.args), LogSum())
    if isinstance(e, sp.Mul):
        out = LogSum(1)
        for a in e.args:
            out = out * to_logsum(a)
        return out
    raise ValueError(f"not an exact log-sum: {e}")


def decide(family, instance, case, value, bound, relation, exact_value=None, exact_bound=None, note="") -> Row:
    """A <=, >= or == row from enclosures, with an exact decision where the enclosures cannot decide."""
    v, b = _pair(value), _pair(bound)
    scale = max(abs(b[0]), abs(b[1]), 1e-300)
    if relation == "==":
        agree = max(abs(v[1] - b[0]), abs(b[1] - v[0]))
        overlap = v[0] <= b[1] and b[0] <= v[1]
        if exact_value is not None and exact_bound is not None:
            exact_value = exact_value() if callable(exact_value) else exact_value
            s = (to_logsum(exact_bound) - to_logsum(exact_value)).sign()
            return Row(family, instance, case, v, b, relation, "exact", s == 0, 0.0 if s == 0 else -agree, 0.0, note)
        return Row(family, instance, case, v, b, relation, "certified", overlap, -agree, -agree / scale, note)
    slack_lo = float(np.nextafter(b[0] - v[1], -np.inf)) if relation == "<=" else float(np.nextafter(v[0] - b[1], -np.inf))
    slack_hi = (b[1] - v[0]) if relation == "<=" else (v[1] - b[0])
    if slack_lo >= 0:
        return Row(family, instance, case, v, b, relation, "certified", True, slack_lo, slack_lo / scale, note)
    if exact_value is not None and exact_bound is not None:
        exact_value = exact_value() if callable(exact_value) else exact_value
        diff = to_logsum(exact_bound) - to_logsum(exact_value)
        if relation == ">=":
            diff = -diff
        s = diff.sign()
        if s is not None:
            m = float(diff) if s else 0.0
            return Row(family, instance, case, v, b, relation, "exact", s >= 0, m, m / scale, note)
    if slack_hi < 0:
        return Row(family, instance, case, v, b, relation, "certified", False, slack_hi, slack_hi / scale, note)
    return Row(family, instance, case, v, b, relation, "undecided", False, slack_lo, slack_lo / scale, note)


def agree(family, instance, case, library: float, reference, tol: float, note="") -> Row:
    """A numeric row: the library's float64 value is within ``tol`` (derived) of the reference enclosure."""
    b = _pair(reference)
    lib = float(library)
    dist = 0.0 if b[0] <= lib <= b[1] else min(abs(lib - b[0]), abs(lib - b[1]))
    ok = math.isfinite(lib) and dist <= tol
    scale = max(abs(b[0]), abs(b[1]), 1e-300)
    return Row(family, instance, case, (lib, lib), b, "==", "numeric", ok, tol - dist if math.isfinite(lib) else -math.inf,
               (tol - dist) / scale, note or f"tolerance {tol:.2g}")


def exact_row(family, instance, case, value, bound, relation, note="") -> Row:
    """Both sides exact (Fraction / LogSum / sympy rationals and logs): decided exactly."""
    diff = to_logsum(bound) - to_logsum(value)
    if relation == ">=":
        diff = -diff
    s = diff.sign()
    v, b = _pair(value), _pair(bound)
    scale = max(abs(b[0]), abs(b[1]), 1e-300)
    if relation == "==":
        return Row(family, instance, case, v, b, "==", "exact", s == 0, 0.0 if s == 0 else -abs(float(diff)), 0.0, note)
    if s is None:
        return decide(family, instance, case, value, bound, relation, note=note)
    m = float(diff) if s else 0.0
    return Row(family, instance, case, v, b, relation, "exact", s >= 0, m, m / scale, note)


# ----------------------------------------------------------------------------- instances

@dataclass
class Instance:
    """A small language with exact evaluation set-ups (see bounds/verification/verify.py for the embedded ones)."""

    key: str  # short label, e.g. "ng2"
    description: str
    language: object
    L: int
    n: int | None = None  # n-gram order (separator checks), None for a general HMM
    interval: int | None = None  # interval length of the interval HMM
    exact: bool = False  # rational law with small denominators: attained bounds are decided exactly
    denoisers: tuple = ("oracle",)
    schedules: tuple = ()  # ("linear", N), ("cosine", N), ("warmstart", N, first), ("loglinear", N, eps)
    agreement: bool = True  # compare the library's float values with the references
    max_blocks: int | None = None

    _cache: dict = field(default_factory=dict, repr=False)

    def cached(self, key, build):
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    # --- the pieces
    @property
    def tables(self):
        return self.cached("tables", lambda: build_tables(self.language, self.L))

    @property
    def ref(self) -> Reference:
        return self.cached("ref", lambda: Reference(self.language, self.L))

    @property
    def refx(self) -> Reference:
        return self.cached("refx", lambda: Reference(self.language, self.L, exact=True, law=self.ref.q_frac))

    @property
    def reff(self) -> Reference:
        """The certified reference on the library's float table of q (for the numeric rows)."""
        return self.cached("reff", lambda: Reference(self.language, self.L, q_override=self.tables.q))

    @property
    def parts(self) -> Partitions:
        return self.cached("parts", lambda: Partitions(self.L, self.max_blocks or self.L))

    def denoiser(self, spec):
        if spec == "oracle":
            return None
        kind, x = spec
        if kind == "mix":
            return UniformMixture(self.language, x)
        if kind == "temper":
            return TemperedOracle(self.language, x)
        if kind == "bit":
            return BitBiasedInterval(self.language, self.interval, x)
        raise ValueError(f"unknown denoiser {spec!r}")

    def den_label(self, spec) -> str:
        if spec == "oracle":
            return "or"
        return {"mix": "mix", "temper": "tmp", "bit": "bb"}[spec[0]] + f"{spec[1]:g}"

    def D_float(self, spec):
        """The library's table of a denoiser (None: the oracle)."""
        return self.cached(("D", spec), lambda: None if spec == "oracle" else
                           support_table(self.tables, self.denoiser(spec)))

    def chain(self, spec, which: str = "ref") -> ChainEval:
        def build():
            ref = getattr(self, which)
            Df = self.D_float(spec)
            if which == "reff":  # the library's oracle is its float posterior table
                Df = support_table(self.tables, None) if Df is None else Df
            return ChainEval(ref, None if Df is None else ref.table(Df), self.parts)
        return self.cached(("chain", spec, which), build)

    def eps_max(self, spec, which: str = "ref"):
        """The learning error (max form) of a denoiser: an enclosure (or exact, for ``refx``)."""
        return self.cached(("eps", spec, which), lambda: self.chain(spec, which).max_learning_error)


def schedule(spec):
    """(label, library pi, exact pi (Fractions, or arb balls for cosine)) of ("name", N[, param])."""
    name, N = spec[0], spec[1]
    param = spec[2] if len(spec) > 2 else None
    if name == "warmstart":
        pi = reveal_probabilities(WarmStart(first=param), N)
    elif name == "loglinear":
        pi = reveal_probabilities(f"loglinear:{param!r}", N)
    else:
        pi = reveal_probabilities(name, N)
    label = f"{name[:3]}{N}" + (f"({param:g})" if param is not None else "")
    return label, pi, schedule_exact(name, N, param)
