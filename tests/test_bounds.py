"""Bound curves (Theorems 4.2-4.4): step counts from the statements, exact at any size, and bad input refused."""

import math

import numpy as np
import pytest

from mdmt.bounds.studies.curves import (critical_c, min_steps_ter, oracle_ser_lin, p_distinct_linear, ser_curve,
                                ter_chain_bound, ter_curve, ter_target)
from mdmt.bounds.theorems.statements import theorem_42_steps
from mdmt.cli import main
from mdmt.constructions.reverse.interval_closed_forms import oracle_ser
from mdmt.constructions.reverse.schedules import p_distinct


def test_ter_curve_and_min_steps():
    n, V, e = 3, 8, 0.1
    N = min_steps_ter(n, 512, V, e)
    target = 4 * e * math.log(V)  # eps_learning + 4 eps log|V| at eps_learning = 0 (by hand)
    assert ter_target(V, e) == pytest.approx(target, rel=1e-15)
    assert ter_chain_bound(n, 512, N, V, e) <= target < ter_chain_bound(n, 512, N - 1, V, e)
    assert N <= theorem_42_steps(n, e)  # the explicit theorem is sufficient, the exact count smaller


def test_critical_constant_is_exact():
    l, L = 5, 1000
    c, N = critical_c(l, L)
    assert oracle_ser(l, L, np.full(N, 1 / N)) > 0.5 >= oracle_ser(l, L, np.full(N + 1, 1 / (N + 1)))
    assert c == N / L
    # for large L the collision analysis gives C -> 1/ln 2 (by hand: 1 - rho ~ C(l,2)/(2N))
    assert abs(c - 1 / math.log(2)) < 0.01


def test_linear_schedule_without_an_array_agrees_with_the_array():
    """Equal bit for bit: the float sum of np.full(N, 1/N) is not 1 for most N (N = 7, 13, 14, 19, ...), and the
    validated vector divides by it; the grouped form must do the same division."""
    for N, L in ((7, 3), (13, 6), (14, 2), (19, 6), (1000, 5), (123457, 6), (1 << 20, 40)):
        assert p_distinct_linear(N, L) == p_distinct(np.full(N, 1.0 / N), L)
        assert oracle_ser_lin(5, 5 * L, N) == oracle_ser(5, 5 * L, np.full(N, 1.0 / N))
    # beyond the array: the product form, against prod_{k<L} (1 - k/N) summed exactly (by hand for L = 2)
    N = 10 ** 13
    assert p_distinct_linear(N, 2) == pytest.approx(1 - 1 / N, rel=1e-15)
    assert p_distinct_linear(3, 5) == 0.0


def test_large_requests_answer_fast_or_refuse():
    out = ser_curve(5, 10 ** 6)  # N up to 10 L^2 = 10^13: no array of size N
    assert 1.44 < out["critical_c"][10 ** 6] < 1.45 and all(0 <= r["oracle_ser"] <= 1 for r in out["rows"])
    ter = ter_curve(3, 0.05, [10 ** 9])  # the matrix-power path of E[D_j]
    assert ter["min_steps"][10 ** 9] is not None and all(math.isfinite(r["chain_bound"]) for r in ter["rows"])
    with pytest.raises(ValueError, match="l <= 256"):
        ser_curve(100000, 100000)
    with pytest.raises(ValueError, match="operations, above mdmt's limit"):
        ter_curve(1000, 0.05, [256])


def test_both_curves_take_one_length_or_many():
    """ter_curve and ser_curve agree: one length is the list of that length; several give rows with an L column
    and the per-length summary keyed by L (min_steps; critical_c and critical_steps), each equal to the curve of
    that length alone."""
    one, many = ser_curve(5, 20), ser_curve(5, [20, 100])
    assert one == ser_curve(5, [20]) and one == ser_curve(5, (L for L in [20]))
    assert set(many["critical_c"]) == {20, 100} and many["critical_c"][20] == one["critical_c"][20]
    c, n_star = critical_c(5, 100)
    assert many["critical_c"][100] == c and many["critical_steps"][100] == n_star
    assert [r for r in many["rows"] if r["L"] == 20] == one["rows"]
    assert all(r["C"] == r["N"] / r["L"] for r in many["rows"])
    ter = ter_curve(3, 0.05, 256)
    assert ter == ter_curve(3, 0.05, [256]) and list(ter["min_steps"]) == [256]
    assert ter_curve(3, 0.05, np.int64(256)) == ter
    for call, says in ((lambda: ser_curve(5, []), "give at least one sequence length L"),
                       (lambda: ter_curve(3, 0.05, []), "give at least one length L"),
                       (lambda: ser_curve(5, [20, 21]), "L=21 is not a multiple"),
                       (lambda: ser_curve(5, "20"), "sequence length L")):
        with pytest.raises(ValueError, match=says):
            call()


def test_curve_ser_takes_several_lengths(capsys, tmp_path):
    import json

    png = tmp_path / "ser.png"
    assert main(["curve", "ser", "-l", "5", "-L", "20,100", "--json", "--plot", str(png)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["critical_steps"] == {"20": critical_c(5, 20)[1], "100": critical_c(5, 100)[1]}
    assert {r["L"] for r in out["rows"]} == {20, 100} and png.stat().st_size > 1000
    assert main(["curve", "ser", "-l", "5", "-L", "20"]) == 0
    text = capsys.readouterr().out
    assert text.split()[:6] == ["L", "N", "C", "oracle_ser", "theorem44_lower", "theorem43_upper"]
    assert f"L=20: {critical_c(5, 20)[0]:.6g} (N* = {critical_c(5, 20)[1]})" in text


@pytest.mark.parametrize("argv, message", [
    (["curve", "ser", "-l", "4", "-L", "0"], "--length values must be >= 1, got 0"),
    (["curve", "ser", "-l", "0"], "--interval-length must be an integer >= 2, got 0"),
    (["curve", "ter", "--eps-learning", "-1"], "--eps-learning must be a finite number >= 0, got -1.0"),
    (["curve", "ter", "--eps-learning", "nan"], "--eps-learning must be a finite number >= 0, got nan"),
    (["curve", "ser", "--eps-learning", "nan"], "--eps-learning must be a finite number >= 0, got nan"),
    (["curve", "ter", "--lengths", ""], "--lengths must list at least one integer"),
    (["curve", "ter", "--n", "1000"], "n = 1000"),
    (["curve", "ter", "--eps", "1.5"], "--eps must be a finite number in (0, 1), got 1.5"),
    (["curve", "ser", "-l", "100000", "-L", "100000"], "interval length l = 100000"),
    (["exact", "--language", "preset:2gram", "-L", "1000000000", "-N", "3"], "about 10^954242509 partial assignments"),
    (["exact", "--language", "preset:2gram", "-L", "4500", "-N", "3"], "9^4500 = about 10^4294"),
    (["dependencies", "--n", "3", "-L", "8", "-N", "100000000"], "mdmt's limit is N <= 10000000"),
    (["dependencies", "--n", "1", "-L", "8", "-N", "3"], "--n must be an integer >= 2, got 1"),
])
def test_bad_sizes_and_values_are_one_line_errors(capsys, argv, message):
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse's own errors
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2 and message in err and err.count("\n") == 1 and "Traceback" not in err, err


def test_huge_lengths_answer_fast(capsys):
    assert main(["dependencies", "--n", "3", "-L", "1000000000", "-N", "16", "--json"]) == 0
    assert main(["curve", "ter", "--lengths", "1000000000", "--json"]) == 0
    assert main(["curve", "ser", "-l", "5", "-L", "1000000", "--json"]) == 0
    capsys.readouterr()
