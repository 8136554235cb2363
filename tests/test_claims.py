"""The claim language: a whitelist of numbers, quantities, operators and functions; margins in float64 and in balls."""

import builtins
import math
from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from mdmt.bounds.claims import QUANTITIES, ClaimError, parse_claim


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


@settings(max_examples=150, deadline=None)
@given(lhs=expressions(), rhs=expressions(), values=st.fixed_dictionaries(
    {q: st.integers(1, 12) for q in QUANTITIES}), rel=st.sampled_from(["<=", "<", ">=", ">"]))
def test_the_float_margin_lies_in_the_ball_margin(lhs, rhs, values, rel):
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


def test_the_relative_margin_is_scale_free_and_undefined_where_both_sides_vanish():
    """By hand: KL = 1, TC = 3 gives (3 - 1) / (1 + 3) = 1/2 for 'KL <= TC', and -1/2 for 'KL >= TC'; scaling both
    sides changes nothing; sides summing below SCALE_FLOOR give NaN."""
    from mdmt.bounds.claims import SCALE_FLOOR

    le, ge = parse_claim("KL <= TC"), parse_claim("KL >= TC")
    assert le.relative_margin({"KL": 1.0, "TC": 3.0}) == 0.5 and ge.relative_margin({"KL": 1.0, "TC": 3.0}) == -0.5
    assert le.relative_margin({"KL": 1e-3, "TC": 3e-3}) == pytest.approx(0.5, rel=1e-12)
    assert math.isnan(le.relative_margin({"KL": SCALE_FLOOR / 4, "TC": SCALE_FLOOR / 2}))
    assert le.relative_margin({"KL": 2.0, "TC": 2.0}) == 0.0 and le.relative_margin({"KL": -1.0, "TC": 1.0}) == 1.0
