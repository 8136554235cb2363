"""The arithmetic of the claim language (:mod:`.claims`): its functions, the checked tree, its errors, and evaluation.

:data:`FUNCTIONS` are the functions a claim may call; :class:`Node` is one part of the checked tree that
:func:`~.claims.parse_claim` builds; :class:`ClaimError` (and its kinds :class:`UndefinedError`, a part with no
real value, and :class:`TooLargeError`) is the one error of the language.  A tree is evaluated by recursion over
its nodes, never by ``eval``: in float64 (:func:`_float`), in arb ball arithmetic (:func:`_ball`, with the
guards that refuse a value whose logarithm exceeds :data:`MAX_LOG_SIZE` in size before arb builds it) and
exactly where + - * / and integer powers of rationals decide it (:func:`_exact`).  :class:`~.claims.Claim`
reads its margins through these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


MAX_LOG_SIZE = 10 ** 15  # |ln x| of any value a claim's ball evaluation may build (e^(10^15) has a 15-digit exponent)
HARMONIC_SUM = 10 ** 4  # harmonic(k) summed term by term up to this k; beyond it, digamma (balls) or its expansion
EULER_GAMMA = 0.5772156649015329
EXACT_BITS = 1 << 16  # a power evaluated exactly (as a rational) when its result has at most this many bits


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

    from ..theorems.intervals import LogSum

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


def _undecided(name, a, b):
    if a.is_exact() and b.is_exact() and a == b:
        return a
    raise ClaimError(f"claim: {name}({a}, {b}) is undecided in ball arithmetic (the balls overlap)")


def _decimal(text: str) -> tuple[int, int]:
    """A decimal literal as an exact fraction (numerator, denominator): 0.1 is 1/10, not the float nearest it."""
    from fractions import Fraction

    f = Fraction(text.replace("_", ""))
    return f.numerator, f.denominator
