"""The claim language: a whitelist of numbers, quantities, operators and functions; margins in float64 and in balls."""

import builtins
import math
from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import strategies as st

from mdmt.bounds.refutation.claims import QUANTITIES, ClaimError, parse_claim
from tests.tiers import in_both_tiers


def test_the_atlas_bounds_parse_and_evaluate_to_values_by_hand():
    # Li & Cai on a binary copying chain, L = 3, one step (s_max = 3): (2^ceil(log2 3) - 1)/3 * 3 log 2 = 3 log 2;
    # the oracle's KL there is TC of three copies = 2 log 2, so the margin is 3 log 2 - 2 log 2 = log 2
    c = parse_claim("KL <= (2 ** ceil(log2(s_max)) - 1) / L * sum_MI")
    assert c.relation == "<=" and set(c.quantities) == {"KL", "s_max", "L", "sum_MI"}
    v = {"KL": 2 * math.log(2), "s_max": 3, "L": 3, "sum_MI": 3 * math.log(2)}
    assert c.margin(v) == pytest.approx(math.log(2), rel=1e-15) and c.holds(v)
    # mdmt's random-size TC rate at L = 4, N = 3, TC = 3/2: 2 TC H_3 / (N - 1 + H_3) = 33/23 (H_3 = 11/6)
    c = parse_claim("KL <= 2 * TC * harmonic(L - 1) / (N - 1 + harmonic(L - 1))")
    ball = c.margin_ball({"KL": 0, "TC": Fraction(3, 2), "L": 4, "N": 3})
    import flint

    old, flint.ctx.prec = flint.ctx.prec, 256
    try:  # at the ball's own precision (at 53 bits, 33/23 becomes a ball wider than this one)
        assert ball.contains(flint.arb(flint.fmpq(33, 23))) and float(ball.rad()) < 1e-60
    finally:
        flint.ctx.prec = old
    # Theorem 4.4 as a >= claim: the margin is lhs - rhs
    c = parse_claim("SER >= 1 - (1 - exp(-2 * eps) / 2 * (1 - P_distinct)) ** (L / l)")
    v = {"SER": 0.5, "eps": 0.0, "P_distinct": 0.0, "L": 2, "l": 2}  # 1 - (1 - 1/2) = 1/2: attained
    assert c.margin(v) == 0 and c.holds(v) is True
    assert c.margin({**v, "SER": 0.75}) == 0.25 and c.holds({**v, "SER": 0.25}) is False
    assert parse_claim("SER > 1 - (1 - exp(-2 * eps) / 2 * (1 - P_distinct)) ** (L / l)").holds(v) is False


def test_decimals_are_the_rationals_written():
    c = parse_claim("KL <= 0.1")
    ball = c.margin_ball({"KL": Fraction(1, 10)})
    assert ball.contains(0) and float(ball.rad()) < 1e-70  # 0.1 is 1/10 ...
    ball = c.margin_ball({"KL": 0.1})  # ... not the float nearest it, which is 1/10 + 5.55e-18
    assert ball < 0 and abs(float(ball.mid()) + 5.551115123125783e-18) < 1e-30
    assert c.margin({"KL": 0.1}) == 0.0


def test_undefined_sides_give_nan_and_no_verdict():
    c = parse_claim("KL <= log(TC - 1)")
    assert math.isnan(c.margin({"KL": 0.0, "TC": 0.5})) and c.holds({"KL": 0.0, "TC": 0.5}) is None
    assert parse_claim("KL <= exp(TC)").margin({"KL": 0.0, "TC": 1e6}) == math.inf
    with pytest.raises(ClaimError, match="needs the quantities TC"):
        parse_claim("KL <= TC").margin({"KL": 1.0})


@pytest.mark.parametrize("text, says", [
    ("__import__('os').system('true') <= 1", "the function \"__import__('os').system\" at column 1 is not allowed"),
    ("KL.real <= 1", "'KL.real' at column 1 is not allowed"),
    ("KL[0] <= 1", "'KL[0]'"),
    ("'x' <= KL", "the constant \"'x'\""),
    ("KL <= True", "the constant 'True'"),
    ("foo <= 1", "unknown quantity 'foo' at column 1"),
    ("KL <= open(1)", "the function 'open' at column 7"),
    ("KL <= log(x=1)", "the keyword argument 'x=1'"),
    ("KL <= log(1, 2)", "log takes 1 argument, got 2"),
    ("KL <= 1 <= 2", "a chained comparison"),
    ("KL == 1", "the comparison 'KL == 1'"),
    ("KL <= 1 and SER <= 1", "is not a comparison"),
    ("KL", "is not a comparison"),
    ("KL <= 1e400", "is outside"),
    ("KL <= 10000000000000", "is outside"),
    ("KL <= 1 // 2", "the operator in '1 // 2'"),
    ("KL <= ~1", "the operator in '~1'"),
    ("KL <= (lambda: 1)()", "the function 'lambda: 1'"),
    ("KL <= [1][0]", "'[1][0]'"),
    ("KL <=", "not an expression"),
    ("", "empty"),
    ("KL <= " + "-(" * 100 + "1" + ")" * 100, "nested more than 60 levels"),
    ("KL <= " + "1 + " * 2000 + "1", "characters; at most 2000"),
])
def test_anything_outside_the_language_is_refused_naming_the_token(text, says):
    with pytest.raises(ClaimError) as exc:
        parse_claim(text)
    assert says in str(exc.value) and "\n" not in str(exc.value)


def test_no_user_text_reaches_eval_or_sympify(monkeypatch):
    def forbidden(*a, **k):
        raise AssertionError("user text was evaluated")
    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(sp, "sympify", forbidden)
    monkeypatch.setattr(sp, "parse_expr", forbidden, raising=False)
    c = parse_claim("KL <= (s_max - 1) / L * sum_MI + min(eps, 1) * 10 ** 10 ** 10")
    assert c.margin({"KL": 0, "s_max": 2, "L": 4, "sum_MI": 1, "eps": 1}) == math.inf
    with pytest.raises(ClaimError):
        parse_claim("__import__('os') <= 1")


def test_the_sympy_form_is_built_without_evaluating_huge_numbers():
    c = parse_claim("KL <= 10 ** 10 ** 10 - 1")
    assert str(c.sympy) == "KL <= -1 + 10**(10**10)"
    assert str(parse_claim("KL_per_token >= -TC + 2").sympy) == "KL_per_token >= 2 - TC"


@pytest.mark.parametrize("text, says", [
    ("KL <= log(-1)", "log(-1) is undefined (the logarithm of a number <= 0)"),
    ("KL <= 1/0", "1/0 is undefined (a division by 0)"),
    ("KL <= 0 ** -1", "0 ** -1 is undefined (0 to a negative power)"),
    ("KL <= sqrt(-2) + TC", "sqrt(-2) is undefined"),
    ("KL <= (-8) ** (1/3)", "(-8) ** (1/3) is undefined (a negative number to a non-integer power)"),
    ("KL <= harmonic(1/2)", "harmonic(1/2) is undefined"),
    ("KL >= 9**9**9**9", "9**9**9**9 is too large to evaluate"),
    ("KL <= exp(exp(exp(100)))", "exp(exp(100)) is too large to evaluate"),
    ("KL <= " + "1" * 1900, "'111111111111...111111111111 (1900 characters)' is outside"),
])
def test_a_part_without_a_value_is_refused_when_parsed_naming_it(text, says):
    """Constant parts are evaluated once when the claim is read: no value, or too large to evaluate, is one line."""
    with pytest.raises(ClaimError) as exc:
        parse_claim(text)
    assert says in str(exc.value) and "\n" not in str(exc.value), str(exc.value)


def test_huge_and_infinite_sides_have_the_sign_of_the_exact_margin():
    """KL >= 10**400 fails at every KL (margin -inf, relative -1); exp(1000) - exp(999) is a number, not inf - inf
    (e^999 (e - 1) > 0, by hand); 10**400 - 10**400 is exactly 0 (integer powers of rationals are exact)."""
    v = {"KL": 0.5, "TC": 1.0}
    for text, sign in [("KL >= 10**400", -1), ("KL >= exp(1000)", -1), ("KL <= -10**400", -1), ("KL <= exp(1000)", 1),
                       ("KL >= 9 ** 9 ** 5", -1), ("-(10**400) <= KL", 1)]:
        c = parse_claim(text)
        assert c.margin(v) == sign * math.inf and c.relative_margin(v) == sign and c.holds(v) is (sign > 0), text
    assert parse_claim("exp(1000) - exp(999) >= KL").margin(v) == math.inf
    assert parse_claim("KL <= 10**400 - 10**400 + TC").margin(v) == 0.5


def test_strict_claims_fail_at_a_margin_of_zero_in_floats_and_in_exact_arithmetic():
    """L < L and KL < KL are false everywhere: holds() is False, and the exact margin (KL a LogSum) is exactly 0."""
    from mdmt.bounds.theorems.intervals import LogSum

    for text in ("L < L", "KL < KL", "KL > KL", "KL + TC < TC + KL"):
        c = parse_claim(text)
        assert c.strict and c.holds({"L": 4, "KL": 0.3, "TC": 0.1}) is False
        kl = LogSum(Fraction(1, 3), {Fraction(3, 2): 2})
        ball = c.margin_ball({"L": 4, "KL": kl.arb(256), "TC": Fraction(1, 7)}, exact={"L": 4, "KL": kl,
                                                                                     "TC": Fraction(1, 7)})
        assert ball.is_exact() and ball == 0, (text, ball)


def test_undefined_parts_are_named_where_they_have_no_value():
    c = parse_claim("KL <= log(TC - 1) + 1 / (SER - SER)")
    err = c.undefined({"KL": 0.0, "TC": 0.5, "SER": 0.1})
    assert math.isnan(c.margin({"KL": 0.0, "TC": 0.5, "SER": 0.1}))
    assert err.expression == "log(TC - 1)" and err.reason == "the logarithm of a number <= 0"
    err = c.undefined({"KL": 0.0, "TC": 3.0, "SER": 0.1})
    assert err.expression == "1 / (SER - SER)" and err.reason == "a division by 0"
    assert parse_claim("KL <= TC").undefined({"KL": 0.0, "TC": 1.0}) is None


def test_harmonic_numbers_of_any_size_take_no_time():
    """H_k = psi(k + 1) + gamma (digamma) in balls beyond 10^4 terms, log k + gamma + 1/(2k) - 1/(12k^2) + 1/(120k^4)
    in floats; the reference values are mpmath's harmonic (H_3 = 11/6 by hand).  Each evaluation is instantaneous
    (it was a loop of k terms: harmonic(10**12) never ended, harmonic(10**8) took seconds)."""
    import time

    import flint
    import mpmath

    for text, k in (("3", 3), ("10**4 + 1", 10 ** 4 + 1), ("10**8", 10 ** 8), ("10**12", 10 ** 12), ("exp(40)", None)):
        c = parse_claim(f"KL <= harmonic({text})")
        t = time.perf_counter()
        m = c.margin({"KL": 0.0})
        with mpmath.workdps(60):
            want = mpmath.harmonic(mpmath.exp(40) if k is None else k)
            assert m == pytest.approx(float(want), rel=1e-14), text
            if k is not None:  # exp(40) is not an exact integer: undecided in balls
                old, flint.ctx.prec = flint.ctx.prec, 256
                try:
                    ball = c.margin_ball({"KL": 0})
                    assert ball.overlaps(flint.arb(mpmath.nstr(want, 55), "1e-50")), (text, ball)
                    assert float(ball.rad()) < 1e-40
                finally:
                    flint.ctx.prec = old
        assert time.perf_counter() - t < 2.0, text


names = st.sampled_from(sorted(QUANTITIES))


@st.composite
def expressions(draw, depth=0):
    if depth > 3 or draw(st.integers(0, 2)) == 0:
        return draw(st.one_of(names, st.integers(1, 9).map(str), st.sampled_from(["0.5", "2.25", "1e-3"])))
    kind = draw(st.sampled_from(["+", "-", "*", "/", "log", "exp", "sqrt", "max", "neg"]))
    a = draw(expressions(depth + 1))
    if kind in ("log", "sqrt"):
        return f"{kind}(1 + abs({a}))"
    if kind == "exp":
        return f"exp(min({a}, 5))"
    if kind == "neg":
        return f"-({a})"
    b = draw(expressions(depth + 1))
    if kind == "max":
        return f"max({a}, {b})"
    if kind == "/":
        return f"({a}) / (1 + abs({b}))"
    return f"({a}) {kind} ({b})"


def _float_margin_in_ball_margin(lhs, rhs, values, rel):
    """Two evaluations of one tree: float64 and 256-bit balls agree (the ball holds the float up to its rounding)."""
    c = parse_claim(f"{lhs} {rel} {rhs}")
    m = c.margin(values)
    try:
        ball = c.margin_ball(values)
    except ClaimError:  # min/max of overlapping balls: undecided in ball arithmetic
        return
    assert math.isfinite(m)
    assert abs(m - float(ball.mid())) <= 1e-9 * (1 + abs(m)), (c.text, m, ball)
    assert float(ball.rad()) < 1e-30 * (1 + abs(m))


test_the_float_margin_lies_in_the_ball_margin, test_the_float_margin_lies_in_the_ball_margin_thoroughly = in_both_tiers(
    _float_margin_in_ball_margin, 40, 300, lhs=expressions(), rhs=expressions(),
    values=st.fixed_dictionaries({q: st.integers(1, 12) for q in QUANTITIES}),
    rel=st.sampled_from(["<=", "<", ">=", ">"]))


def test_the_relative_margin_is_scale_free_and_undefined_where_both_sides_vanish():
    """By hand: KL = 1, TC = 3 gives (3 - 1) / (1 + 3) = 1/2 for 'KL <= TC', and -1/2 for 'KL >= TC'; scaling both
    sides changes nothing; sides summing below SCALE_FLOOR give NaN."""
    from mdmt.bounds.refutation.claims import SCALE_FLOOR

    le, ge = parse_claim("KL <= TC"), parse_claim("KL >= TC")
    assert le.relative_margin({"KL": 1.0, "TC": 3.0}) == 0.5 and ge.relative_margin({"KL": 1.0, "TC": 3.0}) == -0.5
    assert le.relative_margin({"KL": 1e-3, "TC": 3e-3}) == pytest.approx(0.5, rel=1e-12)
    assert math.isnan(le.relative_margin({"KL": SCALE_FLOOR / 4, "TC": SCALE_FLOOR / 2}))
    assert le.relative_margin({"KL": 2.0, "TC": 2.0}) == 0.0 and le.relative_margin({"KL": -1.0, "TC": 1.0}) == 1.0


HUGE = ["10**400", "-(10**400)", "exp(1000)", "exp(-1000)", "9 ** 9 ** 5", "10 ** 10 ** 10", "harmonic(10**12)",
        "harmonic(exp(40))", "2 ** -1100", "0", "1e-300"]
DEGENERATE = ["log(({a}) - ({a}))", "1 / (({a}) - ({a}))", "0 ** -1 * ({a})", "({a}) - ({a})", "sqrt(-1 - abs({a}))",
              "({a}) * 0", "0 ** ({a})", "(-2) ** (({a}) / 3)", "log(0 * ({a}))", "9**9**9**9 * ({a})",
              "exp(exp(({a}) + 100))", "harmonic(abs(floor({a})))", "max({a}, {a})"]


@st.composite
def hostile_expressions(draw, depth=0):
    """The claim strategy grown with huge (10**400, exp(1000), towers), infinite, undefined (log 0, 1/0, 0 ** -1) and
    degenerate (a - a, a * 0) parts."""
    pick = draw(st.integers(0, 3))
    if depth > 2 or pick == 0:
        return draw(st.one_of(expressions(3), st.sampled_from(HUGE)))
    a = draw(hostile_expressions(depth + 1))
    if pick == 1:
        return draw(st.sampled_from(DEGENERATE)).format(a=a)
    b = draw(hostile_expressions(depth + 1))
    return f"({a}) {draw(st.sampled_from(['+', '-', '*', '/']))} ({b})"


def _hostile_claim(lhs, rhs, rel, same, values):
    """Every claim is refused when read (one line) or evaluated in float64 at once, without an exception; where the
    ball margin (512 bits) has a sign, the float margin has it too (never NaN, inf where beyond float64); NaN only
    where a part is undefined or the balls cannot decide; a strict claim with equal sides never holds."""
    import time

    from mdmt.bounds.refutation.claims import UndefinedError

    text = f"{lhs} {rel} {lhs if same else rhs}"
    try:
        c = parse_claim(text)
    except ClaimError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 4000
        return
    t = time.perf_counter()
    m = c.margin(values)
    assert time.perf_counter() - t < 2.0, text
    if same and c.strict:
        assert c.holds(values) is not True, (text, m)
    try:
        ball = c.margin_ball(values, prec=512)
    except UndefinedError:
        assert math.isnan(m), (text, m)
        return
    except ClaimError:  # too large, or undecided in balls
        return
    if ball > 0:
        assert m > -1e-6 * (1 + abs(float(ball.mid()))), (text, m, ball)
    elif ball < 0:
        assert m < 1e-6 * (1 + abs(float(ball.mid()))), (text, m, ball)
    if ball.is_finite() and (ball > 0 or ball < 0):
        assert not math.isnan(m), (text, m, ball)
    if math.isinf(m):
        assert abs(c.relative_margin(values)) == 1.0


(test_hostile_claims_are_refused_in_one_line_or_evaluated_with_the_sign_of_the_exact_margin,
 test_hostile_claims_are_refused_in_one_line_or_evaluated_with_the_sign_of_the_exact_margin_thoroughly) = in_both_tiers(
    _hostile_claim, 40, 400, lhs=hostile_expressions(), rhs=hostile_expressions(),
    rel=st.sampled_from(["<=", "<", ">=", ">"]), same=st.booleans(),
    values=st.fixed_dictionaries({q: st.sampled_from([0, 1, 3, 1e-300, 1e300, 0.5]) for q in QUANTITIES}))
