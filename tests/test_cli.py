"""The `mdmt` console script: each subcommand end to end, JSON output, one-line errors."""

import json
import subprocess
import sys

import numpy as np
import pytest

from constructions import interval_hmm, load_language
from mdmt.cli import main


def run_json(capsys, argv):
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_counterexample_language_and_score(tmp_path, capsys):
    ce = tmp_path / "ce.json"
    out = run_json(capsys, ["counterexample", "--interval-length", "5", "--out", str(ce)])
    assert out["n_symbols"] == 16
    assert load_language(ce) == interval_hmm(5)
    lang = tmp_path / "l.json"
    assert main(["language", "--preset", "3gram", "--seed", "0", "--out", str(lang)]) == 0
    capsys.readouterr()
    seqs = tmp_path / "s.txt"
    x = interval_hmm(5).sample(2, 10, seed=0)
    bad = x[0].copy()
    bad[0] ^= 1
    seqs.write_text("\n".join(" ".join(map(str, r)) for r in [x[0], x[1], bad]) + "\n0 1 2 3 4\n")
    res = run_json(capsys, ["score", "--language", str(ce), "--sequences", str(seqs)])
    assert [r["in_support"] for r in res] == [True, True, False, False]
    assert res[0]["log_likelihood"] == pytest.approx(-20 * np.log(2)) and res[2]["log_likelihood"] is None


def test_exact_sample_dependencies_curve(tmp_path, capsys):
    ce = tmp_path / "ce.json"
    main(["counterexample", "-l", "3", "--out", str(ce)])
    capsys.readouterr()
    ex = run_json(capsys, ["exact", "--language", str(ce), "--length", "6", "--steps", "3"])
    assert {"kl_nats", "ser"} <= ex.keys() and 0 < ex["ser"] < 1
    sm = run_json(capsys, ["sample", "--language", str(ce), "--length", "6", "--steps", "3", "--num", "3000"])
    assert sm["ser_ci"][0] <= ex["ser"] <= sm["ser_ci"][1]
    dep = run_json(capsys, ["dependencies", "--n", "3", "--length", "256", "--steps", "16", "--schedule", "linear"])
    assert dep["expected_dependencies"] > 0 and len(dep["per_step"]) == 16
    ser = run_json(capsys, ["curve", "ser", "--interval-length", "5", "--length", "1000"])
    assert ser["critical_c"] == pytest.approx(1.443, abs=1e-3)
    png = tmp_path / "t.png"
    csv = tmp_path / "t.csv"
    assert main(["curve", "ter", "--n", "2", "--eps", "0.2", "--lengths", "128,256", "--plot", str(png), "--csv", str(csv)]) == 0
    assert png.stat().st_size > 1000 and csv.read_text().startswith("L,N,chain_bound")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["exact", "--language", "missing.json", "-L", "3", "-N", "2"], "No such file or directory"),
        (["exact", "--language", "preset:2gram", "-L", "3", "-N", "2", "--schedule", "0.5,0.2"], "sum to 0.7"),
        (["curve", "ser", "-l", "5", "--length", "1001"], "L=1001 is not a multiple of the interval length l=5"),
        (["language", "--preset", "3gram"], "--out FILE is required"),
    ],
)
def test_errors_are_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_console_script_runs_as_a_module(tmp_path):
    seqs = tmp_path / "s.txt"
    seqs.write_text("0 1 9\n")
    p = subprocess.run([sys.executable, "-m", "mdmt", "score", "--language", "preset:2gram", "--sequences", str(seqs)],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "line 1: token 9 is outside the vocabulary 0..7" in p.stderr
    assert "Traceback" not in p.stderr
