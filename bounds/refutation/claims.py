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
``parse_expr``: the checked tree is evaluated by the recursion of :mod:`.claim_arithmetic` (which also holds
the functions, the tree's nodes and the errors of the language), in float64 (:meth:`Claim.margin`) or in arb
ball arithmetic (:meth:`Claim.margin_ball`, for certificates), and converted node by node to sympy for display
(:attr:`Claim.sympy`).

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

# the arithmetic of the language, re-exported on purpose: mdmt.bounds.refutation.claims keeps every name it had
from .claim_arithmetic import EULER_GAMMA as EULER_GAMMA
from .claim_arithmetic import EXACT_BITS as EXACT_BITS
from .claim_arithmetic import FUNCTIONS as FUNCTIONS
from .claim_arithmetic import HARMONIC_SUM as HARMONIC_SUM
from .claim_arithmetic import MAX_LOG_SIZE as MAX_LOG_SIZE
from .claim_arithmetic import ClaimError as ClaimError
from .claim_arithmetic import Node as Node
from .claim_arithmetic import TooLargeError as TooLargeError
from .claim_arithmetic import UndefinedError as UndefinedError
from .claim_arithmetic import _ball as _ball
from .claim_arithmetic import _decimal as _decimal
from .claim_arithmetic import _exact as _exact
from .claim_arithmetic import _float as _float
from .claim_arithmetic import _guard as _guard
from .claim_arithmetic import _harmonic_float as _harmonic_float
from .claim_arithmetic import _log_size as _log_size
from .claim_arithmetic import _NotExact as _NotExact
from .claim_arithmetic import _pow as _pow
from .claim_arithmetic import _undecided as _undecided

MAX_CLAIM_CHARS = 2000
MAX_DEPTH = 60  # nesting of the expression tree
SCALE_FLOOR = 1e-4  # sides smaller than this (in sum) vanish: a relative margin there is rounding noise or a limit
MAX_LITERAL = 10 ** 12  # numbers written in a claim (exponents that large would only overflow)

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


# ----------------------------------------------------------------------------- the parser

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


# ----------------------------------------------------------------------------- margins and the sympy form

def _exact_zero(claim: "Claim", values: dict):
    """An exact ball of the margin where it is exactly 0 (decided without balls), else None."""
    from ..theorems.intervals import LogSum, arb_module

    try:
        m = _exact(claim.rhs, values) - _exact(claim.lhs, values)
    except (_NotExact, KeyError):
        return None
    sign = m.sign() if isinstance(m, LogSum) else (m > 0) - (m < 0)
    return arb_module()[0](0) if sign == 0 else None


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
        from ..theorems.intervals import arb_module, to_arb

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
    from ..theorems.intervals import arb_module

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
