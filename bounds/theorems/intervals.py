"""Rigorous number types for mdmt's verdicts: float64 interval arrays and exact log-sums.

``Iv``
    An array of closed intervals [lo, hi] of float64 numbers.  Every operation rounds
    outward: the result of +, -, *, / on floats is correctly rounded (IEEE 754), so the
    neighbouring floats (``np.nextafter``) of the computed endpoints enclose the exact
    result; a sum of n terms is widened by gamma(n) times the sum of magnitudes (the
    standard bound |fl(sum x) - sum x| <= gamma(n-1) sum |x| for any summation order,
    Higham, *Accuracy and Stability of Numerical Algorithms*, Section 4.2).  Logarithms
    and exponentials are taken in arb ball arithmetic (python-flint), never from the
    platform's libm.  So every Iv computed from exact inputs encloses the exact value:
    a verdict read off it is *certified*.
``LogSum``
    An exact number a + sum_k c_k log r_k with rational a, c_k and rational r_k > 0 (entropies,
    KL divergences and total correlations of laws with rational probabilities are of this
    form).  Its sign is decidable: the log part is log of the algebraic number
    prod r_k^c_k, which is zero exactly when prod r_k^(c_k M) = 1 for the common
    denominator M of the c_k (an integer comparison); otherwise a + log(...) != 0
    (Lindemann-Weierstrass) and arb at increasing precision settles the sign.

``gamma(k)`` = k u / (1 - k u) with the unit roundoff u = 2^-53.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

U = 2.0 ** -53  # unit roundoff of float64


def gamma(k) -> float:
    """gamma_k = k u / (1 - k u): the relative error bound of k successive roundings."""
    ku = float(k) * U
    if ku >= 0.5:
        return math.inf
    return ku / (1.0 - ku) * (1.0 + 4 * U)  # the division rounds too: a slightly larger number


def _down(x):
    """The next float below every entry of x; x is a temporary of the caller (overwritten when an array)."""
    if isinstance(x, np.ndarray) and x.ndim:
        return np.nextafter(x, -np.inf, out=x)
    return np.nextafter(x, -np.inf)


def _up(x):
    """The next float above every entry of x; x is a temporary of the caller (overwritten when an array)."""
    if isinstance(x, np.ndarray) and x.ndim:
        return np.nextafter(x, np.inf, out=x)
    return np.nextafter(x, np.inf)


# ----------------------------------------------------------------------------- arb helpers

def arb_module():
    """python-flint's arb type and context (imported on first use)."""
    import flint

    return flint.arb, flint.ctx


def to_arb(x, prec: int = 128):
    """An arb ball holding x: a float, int, Fraction, an (lo, hi) pair, or an arb."""
    arb, ctx = arb_module()
    if isinstance(x, arb):
        return x
    if isinstance(x, tuple):
        lo, hi = x
        return to_arb(lo).union(to_arb(hi))
    if isinstance(x, Fraction):
        import flint

        return arb(flint.fmpq(x.numerator, x.denominator))
    if isinstance(x, (int, np.integer)):
        return arb(int(x))
    f = float(x)
    if not math.isfinite(f):
        raise ValueError(f"cannot enclose the non-finite number {x!r}")
    return arb(f)  # a float is an exact dyadic number


def arb_bounds(b) -> tuple[float, float]:
    """Floats lo <= hi with [lo, hi] containing the ball b (outward by a few ulps)."""
    m = float(b.mid())
    r = float(b.rad())
    if not (math.isfinite(m) and math.isfinite(r)):
        return -math.inf, math.inf
    slack = 4 * U * (abs(m) + r) + 5e-324
    return m - r - slack, m + r + slack


def _arb_bounds_many(balls) -> tuple[np.ndarray, np.ndarray]:
    """:func:`arb_bounds` of every ball of a list, the float arithmetic done elementwise by numpy
    (the same IEEE operations in the same order, so the same floats)."""
    m = np.array([float(b.mid()) for b in balls], dtype=np.float64)
    r = np.array([float(b.rad()) for b in balls], dtype=np.float64)
    finite = np.isfinite(m) & np.isfinite(r)
    with np.errstate(invalid="ignore", over="ignore"):
        slack = 4 * U * (np.abs(m) + r) + 5e-324
        lo = np.where(finite, m - r - slack, -math.inf)
        hi = np.where(finite, m + r + slack, math.inf)
    return lo, hi


def _arb_map_ends(lo_values, hi_values, fn, prec: int) -> tuple[np.ndarray, np.ndarray]:
    """(lower ends of the enclosures of fn at ``lo_values``, upper ends at ``hi_values``): one arb
    evaluation per distinct float of both arrays together (point intervals evaluate each value once)."""
    arb, ctx = arb_module()
    lo_flat = np.asarray(lo_values, dtype=np.float64).reshape(-1)
    hi_flat = np.asarray(hi_values, dtype=np.float64).reshape(-1)
    same = lo_flat is hi_flat or np.array_equal(lo_flat, hi_flat)
    uniq, inv = np.unique(lo_flat if same else np.concatenate([lo_flat, hi_flat]), return_inverse=True)
    old = ctx.prec
    ctx.prec = prec
    try:
        balls = [fn(arb(v)) for v in uniq.tolist()]
    finally:
        ctx.prec = old
    lo, hi = _arb_bounds_many(balls)
    inv_lo, inv_hi = (inv, inv) if same else (inv[: lo_flat.size], inv[lo_flat.size:])
    return lo[inv_lo].reshape(np.shape(lo_values)), hi[inv_hi].reshape(np.shape(hi_values))


# ----------------------------------------------------------------------------- interval arrays

class Iv:
    """Arrays of closed intervals [lo, hi] of float64 with outward rounding (module docstring)."""

    __array_priority__ = 1000
    __slots__ = ("lo", "hi")

    def __init__(self, lo, hi=None):
        lo = np.asarray(lo, dtype=np.float64)
        hi = lo if hi is None else np.asarray(hi, dtype=np.float64)
        if lo.shape != hi.shape:
            lo, hi = np.broadcast_arrays(lo, hi)
        if hi is lo or np.shares_memory(lo, hi):
            hi = hi.copy()  # the two ends are written separately by __setitem__
        self.lo, self.hi = lo, hi

    # --- construction
    @classmethod
    def exact(cls, x) -> "Iv":
        """Point intervals of float numbers (each float is taken as the exact value it represents)."""
        x = np.asarray(x, dtype=np.float64)
        return cls(x, x)

    @classmethod
    def from_fractions(cls, values) -> "Iv":
        """The tightest float enclosure of an array of Fractions (or ints)."""
        arr = np.asarray(values, dtype=object)
        flat = arr.reshape(-1)
        lo = np.empty(len(flat))
        hi = np.empty(len(flat))
        for k, v in enumerate(flat):
            if isinstance(v, (Fraction, int)):
                n, d = v.numerator, v.denominator
                f = n / d  # correctly rounded
                a, b = f.as_integer_ratio()
                side = a * d - n * b  # the sign of f - v
            else:
                f = float(v)  # correctly rounded
                back = Fraction(f)
                side = (back > v) - (back < v)
            if side == 0:
                lo[k] = hi[k] = f
            elif side < 0:
                lo[k], hi[k] = f, math.nextafter(f, math.inf)
            else:
                lo[k], hi[k] = math.nextafter(f, -math.inf), f
        return cls(lo.reshape(arr.shape), hi.reshape(arr.shape))

    @classmethod
    def from_arb(cls, balls) -> "Iv":
        arr = np.asarray(balls, dtype=object)
        pairs = [arb_bounds(b) for b in arr.reshape(-1)]
        lo = np.array([p[0] for p in pairs]).reshape(arr.shape)
        hi = np.array([p[1] for p in pairs]).reshape(arr.shape)
        return cls(lo, hi)

    # --- views
    @property
    def shape(self):
        return self.lo.shape

    def __len__(self):
        return len(self.lo)

    def __getitem__(self, idx) -> "Iv":
        return Iv(self.lo[idx], self.hi[idx])

    def __setitem__(self, idx, value) -> None:
        v = _iv(value)
        if not (self.lo.flags.writeable and self.hi.flags.writeable):
            self.lo, self.hi = self.lo.copy(), self.hi.copy()
        self.lo[idx] = v.lo
        self.hi[idx] = v.hi

    def copy(self) -> "Iv":
        return Iv(self.lo.copy(), self.hi.copy())

    def reshape(self, *shape) -> "Iv":
        return Iv(self.lo.reshape(*shape), self.hi.reshape(*shape))

    @property
    def mid(self) -> np.ndarray:
        return 0.5 * self.lo + 0.5 * self.hi

    @property
    def width(self) -> np.ndarray:
        return self.hi - self.lo

    def item(self) -> tuple[float, float]:
        return float(self.lo), float(self.hi)

    def contains(self, x) -> np.ndarray:
        return (self.lo <= x) & (x <= self.hi)

    def __repr__(self) -> str:
        if self.lo.ndim == 0:
            return f"Iv[{float(self.lo)!r}, {float(self.hi)!r}]"
        return f"Iv(shape={self.shape})"

    # --- arithmetic
    def __neg__(self) -> "Iv":
        return Iv(-self.hi, -self.lo)

    def __add__(self, other) -> "Iv":
        o = _iv(other)
        return Iv(_down(self.lo + o.lo), _up(self.hi + o.hi))

    __radd__ = __add__

    def __sub__(self, other) -> "Iv":
        o = _iv(other)
        return Iv(_down(self.lo - o.hi), _up(self.hi - o.lo))

    def __rsub__(self, other) -> "Iv":
        return _iv(other) - self

    def __mul__(self, other) -> "Iv":
        o = _iv(other)
        if _nonneg(self.lo) and _nonneg(o.lo):
            # both factors >= 0 (probabilities): the extreme products are lo*lo and hi*hi (rounding is
            # monotone), the same floats the four-product form selects
            with np.errstate(invalid="ignore"):
                return Iv(_down(self.lo * o.lo), _up(self.hi * o.hi))
        with np.errstate(invalid="ignore"):
            c = np.stack(np.broadcast_arrays(self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi))
        # 0 * inf does not occur: enclosures of finite data are finite
        return Iv(_down(c.min(axis=0)), _up(c.max(axis=0)))

    __rmul__ = __mul__

    def __truediv__(self, other) -> "Iv":
        o = _iv(other)
        if np.any((o.lo <= 0) & (o.hi >= 0)):
            raise ZeroDivisionError("interval division by an interval containing 0")
        c = np.stack(np.broadcast_arrays(self.lo / o.lo, self.lo / o.hi, self.hi / o.lo, self.hi / o.hi))
        return Iv(_down(c.min(axis=0)), _up(c.max(axis=0)))

    def __rtruediv__(self, other) -> "Iv":
        return _iv(other) / self

    def __pow__(self, k: int) -> "Iv":
        """Non-negative integer powers by repeated multiplication (each product rounded outward)."""
        k = int(k)
        if k < 0:
            raise ValueError("Iv ** k needs k >= 0")
        out, base = Iv(np.ones(self.shape)), self
        while k:
            if k & 1:
                out = out * base
            k >>= 1
            if k:
                base = base * base
        return out

    def sum(self, axis=None) -> "Iv":
        """Enclosure of the sum (widened by gamma(n) * sum of magnitudes, any summation order)."""
        n = self.lo.size if axis is None else self.lo.shape[axis]
        g = gamma(n + 2)
        s_lo = self.lo.sum(axis=axis)
        s_hi = self.hi.sum(axis=axis)
        e_lo = g * np.abs(self.lo).sum(axis=axis)
        e_hi = g * np.abs(self.hi).sum(axis=axis)
        return Iv(_down(s_lo - _up(e_lo)), _up(s_hi + _up(e_hi)))

    def prod(self, axis: int) -> "Iv":
        """Enclosure of the product along ``axis`` (successive interval products)."""
        lo = np.moveaxis(self.lo, axis, 0)
        hi = np.moveaxis(self.hi, axis, 0)
        out = Iv(np.ones(lo.shape[1:]))
        for k in range(lo.shape[0]):
            out = out * Iv(lo[k], hi[k])
        return out

    def log(self, prec: int = 64) -> "Iv":
        """Enclosure of log (arb at ``prec`` bits; every lower endpoint must be > 0)."""
        if np.any(self.lo <= 0):
            raise ValueError("log of an interval reaching 0 or below")
        return Iv(*_arb_map_ends(self.lo, self.hi, lambda b: b.log(), prec))

    def exp(self, prec: int = 64) -> "Iv":
        return Iv(*_arb_map_ends(self.lo, self.hi, lambda b: b.exp(), prec))

    def max(self) -> "Iv":
        return Iv(self.lo.max(), self.hi.max())

    def min(self) -> "Iv":
        return Iv(self.lo.min(), self.hi.min())


def _nonneg(a: np.ndarray) -> bool:
    """Every entry >= 0 (no NaN)."""
    return a.size > 0 and bool(a.min() >= 0)


def _iv(x) -> Iv:
    if isinstance(x, Iv):
        return x
    return Iv.exact(x)


# ----------------------------------------------------------------------------- exact log-sums

class LogSum:
    """An exact real number a + sum_k c_k log r_k (rational a, c_k; rational r_k > 0)."""

    __slots__ = ("a", "terms")

    def __init__(self, a=0, terms=None):
        self.a = Fraction(a)
        self.terms: dict[Fraction, Fraction] = {}
        for r, c in (terms or {}).items():
            self._add(Fraction(r), Fraction(c))

    def _add(self, r: Fraction, c: Fraction) -> None:
        if r <= 0:
            raise ValueError(f"log of the non-positive number {r}")
        if r < 1:  # one canonical key per pair r, 1/r
            r, c = 1 / r, -c
        if r == 1 or c == 0:
            return
        c = self.terms.get(r, Fraction(0)) + c
        if c == 0:
            self.terms.pop(r, None)
        else:
            self.terms[r] = c

    @classmethod
    def _canonical(cls, a: Fraction, terms: dict) -> "LogSum":
        """A LogSum from a Fraction and terms already in canonical form (keys r > 1, coefficients != 0)."""
        out = cls.__new__(cls)
        out.a = a
        out.terms = terms
        return out

    @classmethod
    def log(cls, r) -> "LogSum":
        return cls(0, {Fraction(r): 1})

    @classmethod
    def of(cls, x) -> "LogSum":
        return x if isinstance(x, LogSum) else cls(Fraction(x))

    def __add__(self, other) -> "LogSum":
        o = LogSum.of(other)
        terms = dict(self.terms)
        for r, c in o.terms.items():  # both canonical: coefficients of the same r add, a zero sum drops r
            s = terms.get(r)
            if s is None:
                terms[r] = c
            elif s + c:
                terms[r] = s + c
            else:
                del terms[r]
        return LogSum._canonical(self.a + o.a, terms)

    __radd__ = __add__

    def __neg__(self) -> "LogSum":
        return LogSum._canonical(-self.a, {r: -c for r, c in self.terms.items()})

    def __sub__(self, other) -> "LogSum":
        return self + (-LogSum.of(other))

    def __rsub__(self, other) -> "LogSum":
        return LogSum.of(other) - self

    def __mul__(self, k) -> "LogSum":
        if isinstance(k, LogSum):
            if k.terms and self.terms:
                raise TypeError("a product of two logarithms is not a LogSum")
            if not k.terms:
                k = k.a
            else:
                return k * self.a
        k = Fraction(k)
        return LogSum._canonical(self.a * k, {r: c * k for r, c in self.terms.items()} if k else {})

    __rmul__ = __mul__

    def is_rational(self) -> bool:
        return not self.terms

    def arb(self, prec: int = 128):
        arb, ctx = arb_module()
        old = ctx.prec
        ctx.prec = prec
        try:
            s = to_arb(self.a)
            for r, c in self.terms.items():
                s += to_arb(c) * to_arb(r).log()
            return s
        finally:
            ctx.prec = old

    def log_part_is_zero(self, max_bits: int = 1 << 22) -> bool | None:
        """Whether sum c_k log r_k = 0 exactly (None if the integer powers would be too large)."""
        if not self.terms:
            return True
        M = 1
        for c in self.terms.values():
            M = M * c.denominator // math.gcd(M, c.denominator)
        num, den = 1, 1
        bits = 0
        for r, c in self.terms.items():
            e = int(c * M)
            bits += abs(e) * (r.numerator.bit_length() + r.denominator.bit_length())
            if bits > max_bits:
                return None
            if e > 0:
                num *= r.numerator ** e
                den *= r.denominator ** e
            else:
                num *= r.denominator ** -e
                den *= r.numerator ** -e
        return num == den

    def sign(self, max_prec: int = 4096) -> int | None:
        """-1, 0 or 1 exactly (None only if the integer powers are too large to compare)."""
        zero_log = self.log_part_is_zero()
        if zero_log is True:
            return (self.a > 0) - (self.a < 0)
        if zero_log is None and self.a == 0:
            return None
        prec = 128
        while prec <= max_prec:
            b = self.arb(prec)
            if b > 0:
                return 1
            if b < 0:
                return -1
            prec *= 2
        return None

    def __float__(self) -> float:
        return float(self.arb(64).mid())

    def __repr__(self) -> str:
        parts = [str(self.a)] if self.a else []
        parts += [f"{c}*log({r})" for r, c in self.terms.items()]
        return "LogSum(" + (" + ".join(parts) or "0") + ")"


def exact_log(x):
    """log of an exact positive rational as a LogSum (elementwise on object arrays)."""
    if isinstance(x, np.ndarray):
        return np.vectorize(LogSum.log, otypes=[object])(x)
    return LogSum.log(x)
