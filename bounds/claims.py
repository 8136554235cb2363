"""Claims about masked diffusion: an inequality between expressions over named quantities, parsed by a whitelist.

A claim is one comparison, ``LHS <= RHS`` (or ``<``, ``>=``, ``>``), for example::

    KL <= (s_max - 1) / L * sum_MI
    SER >= 1 - (1 - exp(-2 * eps) / 2 * (1 - P_distinct)) ** (L / l)
    KL_per_token <= eps + 4 * log(V) * E_D / L

The text is read with Python's :mod:`ast` in ``eval`` mode and every node is checked against a
whitelist before anything is built: numbers, the names of :data:`QUANTITIES`, the operators
``+ - * / **`` and unary minus, and calls of the functions in :data:`FUNCTIONS`.  Anything else
-- an attribute, a subscript, a string, a name that is not a quantity, a call of another function,
a chained or boolean comparison, a lambda -- is refused with :class:`ClaimError` naming the
offending token and its column.  No user text is ever passed to ``eval``, ``sympify`` or
``parse_expr``: the checked tree is evaluated by this module's own recursion, in float64
(:meth:`Claim.margin`) or in arb ball arithmetic (:meth:`Claim.margin_ball`, for certificates), and
converted node by node to sympy for display (:attr:`Claim.sympy`).

Quantities (:data:`QUANTITIES`; nats throughout).  Of the instance: ``L`` length, ``N`` number of
steps, ``n`` n-gram order, ``V`` vocabulary size |V|, ``l`` interval length of the interval HMM,
``eps`` learning error (max form, Section 4.1 of Feng et al.), ``H`` entropy H(X_1..X_L), ``TC``
total correlation sum_i H(X_i) - H(X), ``DTC`` dual total correlation H(X) - sum_i H(X_i | X_-i),
``sum_MI`` sum_i I(X_i; X_-i) (= TC + DTC).  Of the reverse process: ``KL`` the exact
KL(q || p) of its output law, ``KL_per_token`` = KL / L, ``SER`` sequence error rate (mass of p
outside the support of q, Section 4.3), ``TER_gap`` the per-token gap of the TER (= KL_per_token
for the token error rate of Section 4.2), ``E_D`` = E[sum_j D_j] (Lemma B.9: the expected number
of dependencies, the separator argument), ``E_TC`` = E sum_j TC(X_{S_j} | x_{U_j}) along x ~ q (the
correlation part of Lemma B.3; ParallelBench's partition lower bound), ``P_distinct`` the probability that the l positions of
one interval are revealed at l distinct steps (Theorem 4.4), ``NFE`` the expected number of
network evaluations, ``s_max`` the largest step size.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field

import sympy as sp

MAX_CLAIM_CHARS = 2000
MAX_DEPTH = 60  # nesting of the expression tree
SCALE_FLOOR = 1e-4  # sides smaller than this (in sum) vanish: a relative margin there is rounding noise or a limit
MAX_LITERAL = 10 ** 12  # numbers written in a claim (exponents that large would only overflow)
MAX_LOG_SIZE = 10 ** 15  # |ln x| of any value a claim's ball evaluation may build (e^(10^15) has a 15-digit exponent)
HARMONIC_SUM = 10 ** 4  # harmonic(k) summed term by term up to this k; beyond it, digamma (balls) or its expansion
EULER_GAMMA = 0.5772156649015329
EXACT_BITS = 1 << 16  # a power evaluated exactly (as a rational) when its result has at most this many bits

QUANTITIES = {
    "L": "sequence length",
    "N": "number of sampling steps",
    "n": "n-gram order",
    "V": "vocabulary size |V|",
    "l": "interval length of the interval HMM",
    "eps": "learning error (max form), nats",
    "H": "entropy H(X_1..X_L), nats",
    "TC": "total correlation sum_i H(X_i) - H(X), nats",
    "DTC": "dual total correlation H(X) - sum_i H(X_i | X_-i), nats",
    "sum_MI": "sum_i I(X_i; X_-i) (= TC + DTC), nats",
    "KL": "exact KL(q || p) of the reverse process's output law, nats",
    "KL_per_token": "KL / L, nats per token",
    "SER": "sequence error rate: mass of p outside the support of q",
    "TER_gap": "per-token TER gap (KL per token), nats",
    "E_D": "E[sum_j D_j], the expected number of dependencies (Lemma B.9)",
    "E_TC": "E sum_j TC(X_{S_j} | x_{U_j}) along x ~ q (Lemma B.3's correlation part; ParallelBench's lower bound)",
    "P_distinct": "probability that the l positions of one interval are revealed at distinct steps",
    "NFE": "expected number of network evaluations",
    "s_max": "largest step size",
}

RELATIONS = {ast.LtE: "<=", ast.Lt: "<", ast.GtE: ">=", ast.Gt: ">"}
OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


def _harmonic_float(k: float) -> float:
    """H_k in float64: the sum up to :data:`HARMONIC_SUM`, beyond it log k + gamma + 1/(2k) - 1/(12k^2) + 1/(120k^4)
    (the digamma expansion, error below 1/(252 k^6): far under float64's rounding there), so that no k is a hang."""
    if math.isinf(k) or k != int(k) or k < 0:
        raise ValueError(f"harmonic(k) needs an integer k >= 0, got {k!r}")
    if k <= HARMONIC_SUM:
        return math.fsum(1.0 / j for j in range(1, int(k) + 1))
    return math.log(k) + EULER_GAMMA + 1 / (2 * k) - 1 / (12 * k * k) + 1 / (120 * k ** 4)


FUNCTIONS = {  # name: (number of arguments, float function, description)
    "log": (1, math.log, "natural logarithm"),
    "log2": (1, math.log2, "base-2 logarithm"),
    "exp": (1, math.exp, "exponential"),
    "sqrt": (1, math.sqrt, "square root"),
    "abs": (1, abs, "absolute value"),
    "ceil": (1, math.ceil, "least integer >= x"),
    "floor": (1, math.floor, "greatest integer <= x"),
    "harmonic": (1, _harmonic_float, "harmonic number H_k = 1 + 1/2 + ... + 1/k"),
    "min": (2, min, "smaller of two"),
    "max": (2, max, "larger of two"),
}


class ClaimError(ValueError):
    """A claim that is not in the claim language (one line naming the offending token)."""


class UndefinedError(ClaimError):
    """A part of a claim with no real value at a point (the logarithm of 0, a division by 0, ...): ``expression``
    is its text, ``reason`` says why."""

    def __init__(self, expression: str, reason: str):
        super().__init__(f"claim: {expression} is undefined ({reason})")
        self.expression, self.reason = expression, reason


class TooLargeError(ClaimError):
    """A part of a claim whose value lies beyond what its ball evaluation builds (:data:`MAX_LOG_SIZE`)."""


# ----------------------------------------------------------------------------- the checked tree

@dataclass(frozen=True)
class Node:
    kind: str  # "num", "name", "neg", "op", "call"
    value: object = None  # the number (a Fraction-exact int or decimal text), the name, the operator, the function
    args: tuple = ()
    text: str = field(default="", compare=False)  # the source text of this part, for messages


def _token(node: ast.AST, text: str) -> str:
    seg = ast.get_source_segment(text, node)
    return seg if seg is not None else type(node).__name__


def _refuse(node: ast.AST, text: str, what: str) -> ClaimError:
    col = getattr(node, "col_offset", None)
    where = f" at column {col + 1}" if col is not None else ""
    return ClaimError(f"claim: {what} {_token(node, text)!r}{where} is not allowed; a claim uses numbers, the "
                      f"quantities {', '.join(QUANTITIES)}, + - * / ** and {', '.join(FUNCTIONS)}")


def _build(node: ast.AST, text: str, depth: int) -> Node:
    if depth > MAX_DEPTH:
        raise ClaimError(f"claim: the expression is nested more than {MAX_DEPTH} levels deep")
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _refuse(node, text, "the constant")
        if (isinstance(v, float) and not math.isfinite(v)) or abs(v) > MAX_LITERAL:
            token = _token(node, text)
            shown = token if len(token) <= 40 else f"{token[:12]}...{token[-12:]} ({len(token)} characters)"
            raise ClaimError(f"claim: the number {shown!r} is outside [-10**12, 10**12]; write a larger number as a "
                             "power (10**400)")
        return Node("num", _token(node, text) if isinstance(v, float) else int(v), (), _token(node, text))
    if isinstance(node, ast.Name):
        if node.id not in QUANTITIES:
            raise ClaimError(f"claim: unknown quantity {node.id!r} at column {node.col_offset + 1}; the quantities "
                             f"are {', '.join(QUANTITIES)}")
        return Node("name", node.id, (), node.id)
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.USub):
            return Node("neg", None, (_build(node.operand, text, depth + 1),), _token(node, text))
        if isinstance(node.op, ast.UAdd):
            return _build(node.operand, text, depth + 1)
        raise _refuse(node, text, "the operator in")
    if isinstance(node, ast.BinOp):
        op = OPERATORS.get(type(node.op))
        if op is None:
            raise _refuse(node, text, "the operator in")
        return Node("op", op, (_build(node.left, text, depth + 1), _build(node.right, text, depth + 1)),
                    _token(node, text))
    if isinstance(node, ast.Call):
        f = node.func
        if not isinstance(f, ast.Name) or f.id not in FUNCTIONS:
            raise _refuse(f, text, "the function")
        if node.keywords:
            raise _refuse(node.keywords[0], text, "the keyword argument")
        arity = FUNCTIONS[f.id][0]
        if len(node.args) != arity:
            raise ClaimError(f"claim: {f.id} takes {arity} argument{'s' if arity > 1 else ''}, got {len(node.args)} "
                             f"in {_token(node, text)!r}")
        return Node("call", f.id, tuple(_build(a, text, depth + 1) for a in node.args), _token(node, text))
    raise _refuse(node, text, "the expression")


# ----------------------------------------------------------------------------- evaluation

def _float(node: Node, values: dict) -> float:
    """The value in float64: inf where it overflows, NaN where it is undefined (:func:`_ball` says which part)."""
    k = node.kind
    if k == "num":
        return float(node.value)
    if k == "name":
        return float(values[node.value])
    if k == "neg":
        return -_float(node.args[0], values)
    if k == "op":
        a, b = _float(node.args[0], values), _float(node.args[1], values)
        try:
            if node.value == "+":
                return a + b
            if node.value == "-":
                return a - b
            if node.value == "*":
                return a * b
            if node.value == "/":
                return a / b if b != 0 else math.nan  # a division by 0 is undefined
            r = a ** b
            return r if isinstance(r, float) else math.nan  # a complex power: undefined here
        except OverflowError:
            return math.inf
        except ZeroDivisionError:  # 0 to a negative power
            return math.nan
    args = [_float(a, values) for a in node.args]
    if any(math.isnan(x) for x in args):
        return math.nan
    try:
        return float(FUNCTIONS[node.value][1](*args))
    except (ValueError, OverflowError):  # log of a negative number, exp overflow, ceil of inf
        return math.inf if node.value == "exp" else math.nan


def _log_size(x) -> float:
    """An upper bound on ln |y| over the ball x (-inf where x is 0; inf where x is not finite)."""
    hi = x.abs_upper()
    if not hi.is_finite():
        return math.inf
    return -math.inf if hi == 0 else float(hi.log().upper())


def _guard(node: Node, log_size: float) -> None:
    """Refuse a value whose logarithm exceeds :data:`MAX_LOG_SIZE` in size before arb builds it (9**9**9**9 would
    take its exponent's 10^8 digits to write, and a tower beyond it forever)."""
    if not abs(log_size) <= MAX_LOG_SIZE:
        raise TooLargeError(f"claim: {node.text} is too large to evaluate (its logarithm exceeds 10**15 in size)")


def _pow(node: Node, a, b, arb):
    """a ** b in balls: undefined for 0 to a negative power and a negative number to a non-integer power."""
    if a.is_zero():
        if b.is_zero():
            return arb(1)
        if b > 0:
            return arb(0)
        if b < 0:
            raise UndefinedError(node.text, "0 to a negative power")
        raise ClaimError(f"claim: {node.text} is undecided in ball arithmetic (0 to a power around 0)")
    integer = b.is_exact() and b.is_integer()
    if a < 0 and not integer and (b.is_exact() or not b.contains_integer()):
        raise UndefinedError(node.text, "a negative number to a non-integer power")
    lo = a.abs_lower()
    sizes = [_log_size(a), -float(lo.log().lower()) if lo > 0 else math.inf]
    if b.abs_upper() == 0:
        return arb(1)
    size = float(b.abs_upper().upper()) * max((s for s in sizes if s > 0), default=0.0)
    _guard(node, size)
    if integer:
        return a ** int(b.unique_fmpz())
    return a ** b


def _ball(node: Node, values: dict, arb):
    """The value as an arb ball; :class:`UndefinedError` where it has no real value (naming the part),
    :class:`TooLargeError` beyond :data:`MAX_LOG_SIZE`, :class:`ClaimError` where the balls leave it undecided."""
    k = node.kind
    if k == "num":
        v = node.value
        if isinstance(v, int):
            return arb(v)
        num, den = _decimal(v)
        return arb(num) / den
    if k == "name":
        return values[node.value]
    if k == "neg":
        return -_ball(node.args[0], values, arb)
    if k == "op":
        a, b = _ball(node.args[0], values, arb), _ball(node.args[1], values, arb)
        if node.value == "**":
            return _pow(node, a, b, arb)
        if node.value == "/" and b.is_zero():
            raise UndefinedError(node.text, "a division by 0")
        return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b}[node.value]()
    args = [_ball(a, values, arb) for a in node.args]
    name = node.value
    if name in ("log", "log2", "sqrt"):
        x = args[0]
        if (x < 0) if name == "sqrt" else (x <= 0):
            raise UndefinedError(node.text, "the square root of a negative number" if name == "sqrt"
                                 else "the logarithm of a number <= 0")
        if name == "log2":
            if x.is_exact():
                man, exp = x.man_exp()
                if man == 1:  # an exact power of two: log2 is its exponent, exactly (ceil(log2(2)) is 1)
                    return arb(int(exp))
            return x.log() / arb(2).log()
        return getattr(x, name)()
    if name == "exp":
        _guard(node, float(args[0].upper().upper()) if args[0].is_finite() else math.inf)
        return args[0].exp()
    if name == "abs":
        return abs(args[0])
    if name in ("ceil", "floor"):
        x = args[0]
        r = x.ceil() if name == "ceil" else x.floor()
        if not r.is_exact():
            raise ClaimError(f"claim: {name} of a ball that contains an integer boundary ({x}) is undecided")
        return r
    if name == "harmonic":
        x = args[0]
        if x < 0 or (x.is_exact() and not x.is_integer()):
            raise UndefinedError(node.text, "harmonic(k) needs an integer k >= 0")
        if not x.is_exact():
            raise ClaimError(f"claim: harmonic needs an exact integer >= 0, got {x}")
        k = int(x.unique_fmpz())
        if k <= HARMONIC_SUM:
            total = arb(0)
            for j in range(1, k + 1):
                total += arb(1) / j
            return total
        return (x + 1).digamma() + arb.const_euler()  # H_k = psi(k + 1) + gamma
    a, b = args
    if name == "min":
        return a if a < b else b if b < a else _undecided(name, a, b)
    return a if a > b else b if b > a else _undecided(name, a, b)


class _NotExact(Exception):
    pass


def _exact(node: Node, values: dict):
    """The value as an exact number (int, Fraction, LogSum) where + - and rational factors keep it one."""
    from fractions import Fraction

    from .intervals import LogSum

    k = node.kind
    if k == "num":
        return node.value if isinstance(node.value, int) else Fraction(*_decimal(node.value))
    if k == "name":
        v = values[node.value]
        if isinstance(v, (int, Fraction, LogSum)) and not isinstance(v, bool):
            return v
        raise _NotExact
    if k == "neg":
        return -_exact(node.args[0], values)
    if k != "op":
        raise _NotExact
    a, b = _exact(node.args[0], values), _exact(node.args[1], values)
    if node.value == "**":  # a rational to an integer power, while its digits stay few (10**400 exactly)
        if isinstance(a, LogSum) or isinstance(b, LogSum) or Fraction(b).denominator != 1 or (a == 0 and b < 0):
            raise _NotExact
        a = Fraction(a)
        if abs(int(b)) * max(a.numerator.bit_length(), a.denominator.bit_length()) > EXACT_BITS:
            raise _NotExact
        return a ** int(b)
    try:
        if node.value == "+":
            return a + b
        if node.value == "-":
            return a - b
        if node.value == "*":
            return a * b
        if isinstance(b, LogSum) or b == 0:
            raise _NotExact
        return a * (1 / Fraction(b))
    except TypeError:  # a product of two logarithms
        raise _NotExact from None


def _exact_zero(claim: "Claim", values: dict):
    """An exact ball of the margin where it is exactly 0 (decided without balls), else None."""
    from .intervals import LogSum, arb_module

    try:
        m = _exact(claim.rhs, values) - _exact(claim.lhs, values)
    except (_NotExact, KeyError):
        return None
    sign = m.sign() if isinstance(m, LogSum) else (m > 0) - (m < 0)
    return arb_module()[0](0) if sign == 0 else None


def _undecided(name, a, b):
    if a.is_exact() and b.is_exact() and a == b:
        return a
    raise ClaimError(f"claim: {name}({a}, {b}) is undecided in ball arithmetic (the balls overlap)")


def _decimal(text: str) -> tuple[int, int]:
    """A decimal literal as an exact fraction (numerator, denominator): 0.1 is 1/10, not the float nearest it."""
    from fractions import Fraction

    f = Fraction(text.replace("_", ""))
    return f.numerator, f.denominator


def _negated(e):
    """-e without evaluating anything but the sign of a number (a claim's powers may be astronomically large)."""
    return -e if isinstance(e, sp.Number) else sp.Mul(sp.Integer(-1), e, evaluate=False)


def _sympy(node: Node):
    k = node.kind
    if k == "num":
        v = node.value
        if isinstance(v, int):
            return sp.Integer(v)
        num, den = _decimal(v)
        return sp.Rational(num, den)
    if k == "name":
        return SYMBOLS[node.value]
    if k == "neg":
        return _negated(_sympy(node.args[0]))
    if k == "op":
        a, b = _sympy(node.args[0]), _sympy(node.args[1])
        if node.value == "+":
            return sp.Add(a, b, evaluate=False)
        if node.value == "-":
            return sp.Add(a, _negated(b), evaluate=False)
        if node.value == "*":
            return sp.Mul(a, b, evaluate=False)
        if node.value == "/":
            return sp.Mul(a, sp.Pow(b, sp.Integer(-1), evaluate=False), evaluate=False)
        return sp.Pow(a, b, evaluate=False)
    args = [_sympy(a) for a in node.args]
    if node.value == "log2":
        return sp.Mul(sp.log(args[0], evaluate=False), sp.Pow(sp.log(2), -1, evaluate=False), evaluate=False)
    f = {"log": sp.log, "exp": sp.exp, "sqrt": sp.sqrt, "abs": sp.Abs, "ceil": sp.ceiling, "floor": sp.floor,
         "min": sp.Min, "max": sp.Max, "harmonic": sp.harmonic}[node.value]
    return f(*args, evaluate=False)


SYMBOLS = {name: sp.Symbol(name, real=True) for name in QUANTITIES}


def _names(node: Node, out: set) -> set:
    if node.kind == "name":
        out.add(node.value)
    for a in node.args:
        _names(a, out)
    return out


@dataclass(frozen=True)
class Claim:
    """A parsed claim: ``lhs RELATION rhs`` (:func:`parse_claim`)."""

    text: str
    lhs: Node
    relation: str
    rhs: Node
    quantities: tuple = field(default=())

    @property
    def sympy(self):
        """The claim as a sympy relation (built node by node, never by parsing text)."""
        rel = {"<=": sp.Le, "<": sp.Lt, ">=": sp.Ge, ">": sp.Gt}[self.relation]
        return rel(_sympy(self.lhs), _sympy(self.rhs), evaluate=False)

    def _missing(self, values: dict) -> None:
        missing = [q for q in self.quantities if q not in values]
        if missing:
            raise ClaimError(f"claim {self.text!r} needs the quantities {', '.join(missing)}")

    @property
    def strict(self) -> bool:
        """Whether the relation is < or >: a margin of 0 violates it."""
        return self.relation in ("<", ">")

    def margin(self, values: dict) -> float:
        """How far the claim is from failing, in float64: rhs - lhs for <=, <, and lhs - rhs for >=, >.

        A negative margin is a violation (for < and >, a margin of 0 is one too); -inf where a side is
        beyond float64 in the violating direction (``KL >= 10**400``); NaN where a side is undefined
        (the log of a number <= 0, a division by 0: :meth:`undefined` names the part).  Where a side is
        not finite in float64, the margin is re-evaluated in arb balls from the same values, so that
        ``exp(1000) - exp(999)`` is a number and not inf - inf.
        """
        a, b = self.sides(values)
        m = b - a if self.relation in ("<=", "<") else a - b
        if math.isfinite(a) and math.isfinite(b):
            return m
        own = {k: v for k, v in values.items() if k in self.quantities}
        try:  # exactly, where + - * / and integer powers of rationals decide it: 10**400 - 10**400 is 0
            from fractions import Fraction

            exact = _exact(self.rhs, {k: Fraction(v) for k, v in own.items()}) - _exact(self.lhs, {
                k: Fraction(v) for k, v in own.items()})
            exact = exact if self.relation in ("<=", "<") else -exact
            try:
                return float(exact)
            except OverflowError:
                return math.copysign(math.inf, exact)
        except (_NotExact, ValueError, OverflowError, ZeroDivisionError):
            pass
        try:
            ball = self.margin_ball(own, prec=128)
        except UndefinedError:
            return math.nan
        except ValueError:  # too large or undecided in balls, a quantity not finite: the float margin
            return m
        if not ball.is_finite():
            return m
        lo, hi = ball.lower(), ball.upper()
        if lo > 0 or hi < 0 or (lo == 0 and hi == 0):
            return float(ball.mid())  # +-inf beyond float64, with the sign of the exact margin
        return m

    def undefined(self, values: dict) -> UndefinedError | None:
        """Where the claim has no value at ``values``: the :class:`UndefinedError` naming the part and why."""
        try:
            self.margin_ball({k: v for k, v in values.items() if k in self.quantities}, prec=128)
        except UndefinedError as exc:
            return exc
        except ValueError:
            return None
        return None

    def sides(self, values: dict) -> tuple[float, float]:
        """(lhs, rhs) in float64."""
        self._missing(values)
        return _float(self.lhs, values), _float(self.rhs, values)

    def relative_margin(self, values: dict) -> float:
        """The margin over |lhs| + |rhs|, in [-1, 1]: 0 where the two sides are equal, whatever their scale.

        +-1 where the margin is infinite (a side beyond float64); NaN where both sides are below
        :data:`SCALE_FLOOR` (an instance where the claim says nothing, such as independent tokens for
        a bound on KL by a correlation) or a side is undefined.
        """
        m = self.margin(values)
        if math.isinf(m):
            return math.copysign(1.0, m)
        a, b = self.sides(values)
        scale = abs(a) + abs(b)
        if math.isnan(m) or not scale >= SCALE_FLOOR:
            return math.nan
        return m / scale if math.isfinite(scale) else 0.0

    def holds(self, values: dict) -> bool | None:
        """True / False in float64, None where the margin is NaN."""
        m = self.margin(values)
        if math.isnan(m):
            return None
        return m > 0 if self.strict else m >= 0

    def margin_ball(self, values: dict, prec: int = 256, exact: dict | None = None):
        """The margin as an arb ball (python-flint) from balls (or exact numbers) of the quantities.

        ``exact``: the same quantities as exact numbers (ints, Fractions, :class:`~.intervals.LogSum`), where
        known: a margin that these decide exactly (sums, differences, rational multiples) is returned as an exact
        ball, so that ``KL < KL`` has the margin 0 and not a ball around it.
        """
        from .intervals import arb_module, to_arb

        self._missing(values)
        arb, ctx = arb_module()
        old = ctx.prec
        ctx.prec = prec
        try:
            if exact is not None:
                zero = _exact_zero(self, exact)
                if zero is not None:
                    return zero
            balls = {k: to_arb(v, prec) for k, v in values.items()}
            a, b = _ball(self.lhs, balls, arb), _ball(self.rhs, balls, arb)
            return b - a if self.relation in ("<=", "<") else a - b
        finally:
            ctx.prec = old

    def __str__(self) -> str:
        return self.text


def parse_claim(text: str) -> Claim:
    """Parse a claim (module docstring); :class:`ClaimError` names what is not allowed."""
    if not isinstance(text, str):
        raise ClaimError(f"claim: expected text, got {type(text).__name__}")
    if len(text) > MAX_CLAIM_CHARS:
        raise ClaimError(f"claim: {len(text)} characters; at most {MAX_CLAIM_CHARS}")
    src = text.strip()
    if not src:
        raise ClaimError("claim: empty; expected an inequality such as 'KL <= (s_max - 1) / L * sum_MI'")
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError as exc:
        col = f" at column {exc.offset}" if exc.offset else ""
        raise ClaimError(f"claim: not an expression{col} ({exc.msg})") from None
    except (RecursionError, MemoryError, ValueError):
        raise ClaimError(f"claim: the expression is nested more than {MAX_DEPTH} levels deep") from None
    body = tree.body
    if not isinstance(body, ast.Compare):
        raise ClaimError(f"claim: {src!r} is not a comparison; expected LHS <= RHS (or <, >=, >)")
    if len(body.ops) != 1:
        raise ClaimError(f"claim: a chained comparison {src!r} is not allowed; state one inequality")
    rel = RELATIONS.get(type(body.ops[0]))
    if rel is None:
        raise _refuse(body, src, "the comparison")
    try:
        lhs, rhs = _build(body.left, src, 1), _build(body.comparators[0], src, 1)
    except RecursionError:
        raise ClaimError(f"claim: the expression is nested more than {MAX_DEPTH} levels deep") from None
    names = tuple(sorted(_names(lhs, set()) | _names(rhs, set()), key=list(QUANTITIES).index))
    _check_constants(lhs)
    _check_constants(rhs)
    return Claim(src, lhs, rel, rhs, names)


def _check_constants(node: Node) -> None:
    """Evaluate each part without quantities once, in balls: one with no value (``log(-1)``, ``1/0``, ``0 ** -1``)
    or too large to evaluate (``9**9**9**9``) is refused here, naming it, instead of on every instance."""
    if node.kind == "num":
        return
    if _names(node, set()):
        for a in node.args:
            _check_constants(a)
        return
    from .intervals import arb_module

    arb, ctx = arb_module()
    old = ctx.prec
    ctx.prec = 64
    try:
        _ball(node, {}, arb)
    except UndefinedError as exc:
        raise ClaimError(f"{exc}: the claim has no value on any instance") from None
    except TooLargeError:
        raise
    except ClaimError:  # undecided at 64 bits (floor at an integer, ...): left to the evaluation
        pass
    finally:
        ctx.prec = old
