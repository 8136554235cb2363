"""How each derivation step of :mod:`.statements` is known: proved, certified, or checked exactly on laws.

``arb_eval``
    a sympy expression evaluated in arb ball arithmetic (python-flint): the ball is
    guaranteed to contain the exact value for every point of the argument balls.
``prove_nonneg``
    a symbolic proof that an expression is >= 0 on a domain: sympy's assumption system
    after substitutions that map the domain onto the non-negative reals
    (x = lo + t, or x = lo + (hi - lo) t/(1 + t), t >= 0), with factoring.
``certify_nonneg``
    f(x) >= 0 on an interval [lo, hi] (hi may be infinite; either end may be open where f
    has only a limit there): symbolic first; else arb on [lo, hi] with adaptive bisection.
    Where the enclosure of f on a piece [a, b] still reaches below 0 next to a point
    where f is 0 (a touching point, e.g. f(0) = 0), the piece is closed by a monotonicity
    argument that is itself certified: f(a) >= 0 and f' >= 0 on [a, b] (or f(b) >= 0 and
    f' <= 0), recursively in the order of the derivative.  An unbounded tail [X, oo) is
    closed the same way: f' >= 0 there and f(X) >= 0, or f' <= 0 there and
    lim_{x->oo} f >= 0 (sympy's limit).  No grid sampling: every point of the domain is
    covered by a ball or by a monotonicity argument.
``check_on_laws``
    a statement about distributions (Lemma A.1's entropy argument, the Jensen step of
    Theorem 4.3) checked exhaustively on every joint law with probabilities in (1/k)Z on
    small alphabets and on adversarial laws, each decided exactly (entropies of rational
    laws are exact log-sums, :class:`~.intervals.LogSum`).  This is a check, not a proof.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from fractions import Fraction

import sympy as sp

from .intervals import LogSum, arb_bounds, arb_module, to_arb


# ----------------------------------------------------------------------------- arb evaluation

def arb_eval(expr, env: dict, prec: int = 128):
    """Evaluate the sympy expression ``expr`` in arb; ``env`` maps Symbol (or its name) -> number or ball."""
    arb, ctx = arb_module()
    old = ctx.prec
    ctx.prec = prec
    try:
        named = {(k.name if isinstance(k, sp.Symbol) else str(k)): to_arb(v) for k, v in env.items()}
        return _arb(sp.sympify(expr), named, arb)
    finally:
        ctx.prec = old


def _arb(e, env, arb):
    if e.is_Integer:
        return arb(int(e))
    if e.is_Rational:
        return to_arb(Fraction(int(e.p), int(e.q)))
    if e.is_Float:
        return to_arb(Fraction(float(e)))
    if e.is_Symbol:
        if e.name not in env:
            raise ValueError(f"no value for {e.name}")
        return env[e.name]
    if e is sp.pi:
        return arb.pi()
    if e is sp.E:
        return arb(1).exp()
    args = [_arb(a, env, arb) for a in e.args] if not isinstance(e, sp.binomial) else None
    if isinstance(e, sp.Add):
        s = args[0]
        for a in args[1:]:
            s = s + a
        return s
    if isinstance(e, sp.Mul):
        s = args[0]
        for a in args[1:]:
            s = s * a
        return s
    if isinstance(e, sp.Pow):
        base, ex = e.args
        if ex.is_Integer:
            b = _arb(base, env, arb)
            k = int(ex)
            return b ** k if k >= 0 else 1 / (b ** (-k))
        b, x = args
        return (x * b.log()).exp()  # needs base > 0 (a ball reaching 0 gives nan: not certified)
    if isinstance(e, sp.exp):
        return args[0].exp()
    if isinstance(e, sp.log):
        return args[0].log()
    if isinstance(e, sp.Abs):
        return abs(args[0])
    if isinstance(e, (sp.cos, sp.sin)):
        return args[0].cos() if isinstance(e, sp.cos) else args[0].sin()
    if isinstance(e, sp.binomial):
        n, k = (_arb(a, env, arb) for a in e.args)
        return (n + 1).gamma() / ((k + 1).gamma() * (n - k + 1).gamma())
    if type(e).__name__ == "expm1":
        return args[0].expm1()
    if type(e).__name__ == "log1p":
        return args[0].log1p()
    raise ValueError(f"arb_eval: unsupported expression {type(e).__name__}: {e}")


# ----------------------------------------------------------------------------- symbolic proofs

def _nonneg(e, thorough: bool = True) -> bool:
    """e >= 0 by sympy's assumptions on e, its factored, combined or simplified form, or on the signs of
    the factored numerator and denominator of that form (each factorisation computed once)."""
    done: dict = {}  # (operation, expression) -> result: the forms share their numerators and denominators

    def once(op, x):
        if (op, x) not in done:
            done[op, x] = op(x)
        return done[op, x]

    forms = (lambda: e, lambda: once(sp.factor, e), lambda: once(sp.together, e))
    forms += ((lambda: sp.simplify(e)),) * thorough
    for form in forms:
        g = form()
        if g.is_nonnegative:
            return True
        num, den = sp.fraction(once(sp.together, g))
        fnum = once(sp.factor, num)
        if fnum.is_nonnegative and once(sp.factor, den).is_positive:
            return True
        if fnum.is_nonpositive and once(sp.factor, den).is_negative:
            return True
    return False


def prove_nonneg(f, domain: dict, thorough: bool = True) -> bool:
    """True if sympy proves f >= 0 for every point of ``domain`` (symbol -> (lo, hi), hi may be oo).

    Each symbol is replaced by a map of a positive variable t onto its open interval:
    lo + t (hi = oo), or lo + (hi - lo) t/(1 + t) and hi - (hi - lo) t/(1 + t) (both ends
    finite); the ends, where f is defined, follow by continuity.  An integer symbol is checked
    at lo and lo + 1 and replaced by lo + 2 + t, t a natural number.
    """
    f = sp.sympify(f)
    syms = [s for s in domain if s in f.free_symbols]
    if not syms:
        return bool(_nonneg(f, thorough))
    choices = []
    for s in syms:
        lo, hi = domain[s]
        if s.is_integer:  # integers >= lo: the first two values exactly, then lo + 2 + t with t a natural number
            if not (hi is sp.oo or hi == math.inf):
                return False
            for v in (lo, lo + 1):
                if not prove_nonneg(f.subs(s, v), {k: w for k, w in domain.items() if k != s}, thorough):
                    return False
            choices.append([lo + 2 + sp.Symbol(f"t_{s.name}", integer=True, nonnegative=True)])
            continue
        t = sp.Symbol(f"t_{s.name}", positive=True)  # the open interval; closed ends follow by continuity
        if (lo is -sp.oo or lo == -math.inf) and (hi is sp.oo or hi == math.inf):
            choices.append([s])  # a real symbol: sympy's assumptions on s itself
        elif hi is sp.oo or hi == math.inf:
            choices.append([lo + t])
        else:
            choices.append([lo + (hi - lo) * t / (1 + t), hi - (hi - lo) * t / (1 + t)])
    for combo in itertools.product(*choices):
        if _nonneg(f.subs(dict(zip(syms, combo)), simultaneous=True), thorough):
            return True
    return False


# ----------------------------------------------------------------------------- certification

@dataclass
class Certificate:
    """How a step is known: ``method`` is "proved", "certified" or "exact"; ``detail`` says by what."""

    method: str
    detail: str
    boxes: int = 0


class NotCertified(Exception):
    pass


def compile_arb(expr, x):
    """A Python function of one arb ball evaluating ``expr`` (in x) in arb; built once, called per box."""
    arb, _ = arb_module()
    e = sp.sympify(expr)

    def build(e):
        if e == x:
            return lambda b: b
        if not e.free_symbols:
            const = {}

            def c(b, e=e):
                if "v" not in const:
                    const["v"] = _arb(e, {}, arb)
                return const["v"]
            return c
        kids = [build(a) for a in e.args]
        if isinstance(e, sp.Add):
            def f(b):
                s = kids[0](b)
                for k in kids[1:]:
                    s = s + k(b)
                return s
            return f
        if isinstance(e, sp.Mul):
            def f(b):
                s = kids[0](b)
                for k in kids[1:]:
                    s = s * k(b)
                return s
            return f
        if isinstance(e, sp.Pow):
            base, ex = kids
            if e.args[1].is_Integer:
                k = int(e.args[1])
                return (lambda b: base(b) ** k) if k >= 0 else (lambda b: 1 / base(b) ** (-k))
            return lambda b: (ex(b) * base(b).log()).exp()
        table = {sp.exp: "exp", sp.log: "log", sp.cos: "cos", sp.sin: "sin", sp.Abs: "__abs__"}
        for cls, name in table.items():
            if isinstance(e, cls):
                k = kids[0]
                return lambda b, name=name: getattr(k(b), name)()
        raise ValueError(f"compile_arb: unsupported expression {type(e).__name__}: {e}")

    return build(e)


class _Cover:
    """Certify s * f^(k)(x) >= 0 on boxes (module docstring), with the derivatives compiled once."""

    def __init__(self, f, x, max_order: int, budget: int):
        self.x = x
        self.max_order = max_order
        self.budget = budget
        self.boxes = 0
        self.monotone = 0
        self.derivs = [sp.sympify(f)]
        self.compiled = []
        self._proved = {}

    def deriv(self, k: int):
        while len(self.derivs) <= k + 1:
            self.derivs.append(sp.diff(self.derivs[-1], self.x))
        while len(self.compiled) <= k + 1:
            self.compiled.append(compile_arb(self.derivs[len(self.compiled)], self.x))
        return self.compiled[k], self.compiled[k + 1]

    def enclose(self, k: int, a: Fraction, b: Fraction):
        """Enclosure of f^(k) on [a, b]: the direct ball intersected with the mean value form."""
        fk, fk1 = self.deriv(k)
        box = to_arb((a, b))
        lo, hi = -math.inf, math.inf
        try:
            direct = fk(box)
            if direct.is_finite():
                lo, hi = arb_bounds(direct)
        except (ValueError, ZeroDivisionError):
            pass
        try:
            m = to_arb((a + b) / 2)
            mvf = fk(m) + fk1(box) * (box - m)
            if mvf.is_finite():
                l2, h2 = arb_bounds(mvf)
                lo, hi = max(lo, l2), min(hi, h2)
        except (ValueError, ZeroDivisionError):
            pass
        return lo, hi

    def point_sign(self, k: int, a: Fraction, side: str):
        """+1 / 0 / -1 for f^(k)(a) (its one-sided limit where undefined); None if undecided."""
        fk, _ = self.deriv(k)
        try:
            v = fk(to_arb(a))
            if v.is_finite():
                lo, hi = arb_bounds(v)
                if lo > 0:
                    return 1
                if hi < 0:
                    return -1
        except (ValueError, ZeroDivisionError):
            pass
        g = self.derivs[k].subs(self.x, sp.Rational(a.numerator, a.denominator))
        try:
            g = sp.simplify(g)
            if g.has(sp.nan, sp.zoo) or not g.is_finite:
                g = sp.limit(self.derivs[k], self.x, sp.Rational(a.numerator, a.denominator),
                             dir="+" if side == "left" else "-")
        except Exception:  # noqa: BLE001 -- sympy gave up: undecided
            return None
        if g == 0:
            return 0
        if g is sp.oo:
            return 1
        if g is -sp.oo:
            return -1
        if g.is_positive:
            return 1
        if g.is_negative:
            return -1
        return None

    def symbolic(self, k: int, sign: int, a, b) -> bool:
        key = (k, sign, a, b)
        if key not in self._proved:
            to = lambda v: v if v is sp.oo else sp.Rational(v.numerator, v.denominator)  # noqa: E731
            self._proved[key] = prove_nonneg(sign * self.derivs[k], {self.x: (to(a), to(b))}, thorough=False)
        return self._proved[key]

    def cover(self, k: int, sign: int, a: Fraction, b: Fraction) -> None:
        """Certify sign * f^(k) >= 0 on [a, b] (finite ends)."""
        stack = [(a, b, 0)]
        while stack:
            lo_, hi_, depth = stack.pop()
            self.boxes += 1
            if self.boxes > self.budget:
                raise NotCertified(f"{self.derivs[0]}: box budget of {self.budget} exhausted")
            lo, hi = self.enclose(k, lo_, hi_)
            if (sign > 0 and lo >= 0) or (sign < 0 and hi <= 0):
                continue
            if (sign > 0 and hi < 0) or (sign < 0 and lo > 0):
                raise NotCertified(f"{'-' if sign < 0 else ''}({self.derivs[k]}) < 0 on [{float(lo_)}, {float(hi_)}]")
            singular = not (math.isfinite(lo) and math.isfinite(hi))
            if singular and self.symbolic(k, sign, lo_, hi_):
                continue
            if (singular or depth >= 4) and k < self.max_order and self.try_monotone(k, sign, lo_, hi_):
                continue
            if depth >= 60:
                raise NotCertified(f"{self.derivs[0]} >= 0 not certified near {float(lo_)}")
            mid = (lo_ + hi_) / 2
            stack.append((mid, hi_, depth + 1))
            stack.append((lo_, mid, depth + 1))

    def try_monotone(self, k: int, sign: int, a: Fraction, b: Fraction) -> bool:
        """sign f^(k) >= 0 on [a, b] from its value at one end and the sign of f^(k+1)."""
        self.deriv(k)
        for end, side, dsign in ((a, "left", sign), (b, "right", -sign)):
            s = self.point_sign(k, end, side)
            if s is None or s * sign < 0:
                continue
            try:
                self.cover(k + 1, dsign, a, b)
                self.monotone += 1
                return True
            except NotCertified:
                continue
        return False

    def tail(self, k: int, sign: int, X: Fraction) -> None:
        """Certify sign * f^(k) >= 0 on [X, oo): symbolically, or from its value at X and the sign of
        f^(k+1) on [X, oo), or from its limit at oo and the opposite sign of f^(k+1) (recursively)."""
        self.deriv(k)
        if self.symbolic(k, sign, X, sp.oo):
            return
        if k >= self.max_order:
            raise NotCertified(f"{self.derivs[0]} >= 0 on [{X}, oo) not certified")
        s = self.point_sign(k, X, "left")
        if s is not None and s * sign >= 0:
            try:
                self.tail(k + 1, sign, X)
                self.monotone += 1
                return
            except NotCertified:
                pass
        lim = sp.limit(sign * self.derivs[k], self.x, sp.oo)
        if lim.is_nonnegative or lim is sp.oo:
            self.tail(k + 1, -sign, X)
            self.monotone += 1
            return
        raise NotCertified(f"{self.derivs[0]} >= 0 on [{X}, oo) not certified")


def certify_nonneg(f, x, lo, hi, *, max_order: int = 5, max_boxes: int = 4000) -> Certificate:
    """Certify f(x) >= 0 for every x in [lo, hi] (module docstring); raises NotCertified otherwise."""
    f = sp.sympify(f)
    if prove_nonneg(f, {x: (lo, hi)}, thorough=False):
        return Certificate("proved", f"sympy proves {f} >= 0 on [{lo}, {hi}]")
    cov = _Cover(f, x, max_order, max_boxes)
    tail = ""
    if hi is sp.oo or hi == math.inf:
        X = Fraction(max(math.ceil(float(lo)), 0) + 2)
        cov.tail(0, 1, X)
        tail = f"; [{X}, oo) by monotonicity and limits"
        hi = X
    a, b = Fraction(str(sp.Rational(lo))), Fraction(str(sp.Rational(hi)))
    cov.cover(0, 1, a, b)
    detail = f"arb ball arithmetic on [{lo}, {hi}]: {cov.boxes} boxes, {cov.monotone} closed by monotonicity{tail}"
    return Certificate("certified", detail, cov.boxes)


# ----------------------------------------------------------------------------- facts about laws

def compositions(k: int, m: int):
    """Every tuple of m non-negative integers summing to k (stars and bars)."""
    for cuts in itertools.combinations(range(k + m - 1), m - 1):
        prev = -1
        out = []
        for c in cuts + (k + m - 1,):
            out.append(c - prev - 1)
            prev = c
        yield tuple(out)


def entropy_exact(probs) -> LogSum:
    """H(p) = -sum p log p of a law with rational probabilities, exactly.

    The families of laws of :func:`check_on_laws` repeat the same (marginal) laws many times, so
    each probability vector is evaluated once (the returned LogSum is never modified in place).
    """
    return _entropy(tuple(Fraction(p) for p in probs))


@functools.lru_cache(maxsize=4096)
def _entropy(probs: tuple) -> LogSum:
    h = LogSum()
    for p in probs:
        if p:
            h = h - p * LogSum.log(p)
    return h


@dataclass
class LawCheck:
    """A statement about laws checked exactly on a finite family: how many, and the tightest case."""

    laws: int
    min_gap: float
    tightest: str
    equalities: int


def check_on_laws(laws, gap) -> LawCheck:
    """``gap(law)`` (a LogSum or a list of them) must be >= 0 for every law, decided exactly.

    Raises AssertionError naming the first law that violates it.
    """
    count, eq, best, best_name = 0, 0, math.inf, ""
    for name, law in laws:
        gaps = gap(law)
        for g in gaps if isinstance(gaps, list) else [gaps]:
            s = g.sign()
            if s is None:
                raise NotCertified(f"{name}: sign undecided")
            if s < 0:
                raise AssertionError(f"violated on {name}: gap {float(g):.3g}")
            eq += s == 0
            v = float(g)
            if v < best:
                best, best_name = v, name
        count += 1
    return LawCheck(count, best, best_name, eq)


def joint_laws(V: int, d: int, k: int):
    """Every law on V^d with probabilities in (1/k)Z, as (name, dict x -> Fraction)."""
    cells = list(itertools.product(range(V), repeat=d))
    for comp in compositions(k, len(cells)):
        yield (f"V={V} d={d} {comp}", {x: Fraction(c, k) for x, c in zip(cells, comp) if c})


def adversarial_joint_laws(V: int, d: int):
    """Laws where Lemma A.1 is tight or nearly: copies, parity codes, deterministic functions, products."""
    cells = list(itertools.product(range(V), repeat=d))
    yield "copies (TC = (d-1) log V)", {tuple([v] * d): Fraction(1, V) for v in range(V)}
    yield "parity code", {x: Fraction(1, V ** (d - 1)) for x in cells if sum(x) % V == 0}
    yield "product of uniforms (TC = 0)", {x: Fraction(1, V ** d) for x in cells}
    for eps in (Fraction(1, 100), Fraction(1, 10)):  # copies plus a little noise
        law = {x: eps / len(cells) for x in cells}
        for v in range(V):
            law[tuple([v] * d)] += (1 - eps) / V
        yield f"noisy copies (eps={eps})", law
    yield "point mass", {cells[0]: Fraction(1)}


def marginal(law: dict, i: int) -> dict:
    out: dict = {}
    for x, p in law.items():
        out[x[i]] = out.get(x[i], 0) + p
    return out


def lemma_a1_gap(V: int, d: int):
    """(d-1) log V - TC(X_1..X_d) for a law on V^d: Lemma A.1 says it is >= 0."""
    def gap(law):
        tc = sum((entropy_exact(marginal(law, i).values()) for i in range(d)), LogSum()) - entropy_exact(law.values())
        return (d - 1) * LogSum.log(V) - tc
    return gap


def joint_entropy_gaps(d: int):
    """H(X_1..X_d) - H(X_i) >= 0 for every i (the first step of Lemma A.1's proof)."""
    def gaps(law):
        hj = entropy_exact(law.values())
        return [hj - entropy_exact(marginal(law, i).values()) for i in range(d)]
    return gaps


def marginal_entropy_gaps(V: int, d: int):
    """log V - H(X_i) >= 0 for every i (the last step of Lemma A.1's proof)."""
    def gaps(law):
        return [LogSum.log(V) - entropy_exact(marginal(law, i).values()) for i in range(d)]
    return gaps


def jensen_support_gap(law_pair) -> LogSum:
    """KL(q || p) + log p(supp q) >= 0 (Theorem 4.3's per-token step, Lemma C.2), for rational q, p."""
    q, p = law_pair
    kl = LogSum()
    mass = Fraction(0)
    for x, qx in q.items():
        if qx:
            kl = kl + qx * (LogSum.log(qx) - LogSum.log(p[x]))
            mass += p[x]
    return kl + LogSum.log(mass)


def law_pairs(V: int, k: int):
    """Pairs (q, p) of laws on V symbols, probabilities in (1/k)Z, p > 0 where q > 0; plus tight pairs."""
    cells = list(range(V))
    laws = [dict(zip(cells, (Fraction(c, k) for c in comp))) for comp in compositions(k, V)]
    for qi, q in enumerate(laws):
        for pi_, p in enumerate(laws):
            if all(p[x] > 0 for x in cells if q[x] > 0):
                yield f"V={V} k={k} q#{qi} p#{pi_}", (q, p)
    for lam in (Fraction(1, 3), Fraction(1, 10)):  # p = (1 - lam) q on supp q: equality
        q = {0: Fraction(1, 2), 1: Fraction(1, 2), 2: Fraction(0)}
        p = {0: (1 - lam) / 2, 1: (1 - lam) / 2, 2: lam}
        yield f"p = (1-{lam}) q on supp q (equality)", (q, p)
