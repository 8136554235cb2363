"""The `mdmt` console script end to end: each subcommand's output, JSON, and one-line errors."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from mdmt.cli import main
from mdmt.commands._common import print_json
from mdmt.constructions.languages.spec import canonical_spec
from mdmt.constructions.languages.tasks import TASKS
from mdmt.constructions.languages import (PRESETS, interval_hmm, load_language, preset, pruned_fraction, random_hmm,
                                          random_ngram)


def run(capsys, argv):
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        status = exc.code
    out = capsys.readouterr()
    return status, out.out, out.err


def run_json(capsys, argv):
    status, out, err = run(capsys, argv + ["--json"])
    assert status == 0, err
    doc = json.loads(out)
    assert doc.pop("provenance")["command"]  # every JSON output carries its provenance; a list comes as "rows"
    return doc["rows"] if set(doc) == {"rows"} else doc


def write_sequences(path, rows):
    path.write_text("".join(" ".join(str(int(t)) for t in r) + "\n" for r in rows))
    return path


def test_counterexample_writes_the_interval_hmm(tmp_path, capsys):
    out = tmp_path / "ce.json"
    status, text, _ = run(capsys, ["counterexample", "--interval-length", "5", "--out", str(out)])
    # 16 = 2^(l-1) symbols; 544 = 16 + 128 + 256 + 128 + 16 states (the open pairs at each position, by hand)
    assert status == 0 and text.count("\n") == 1 and "16 symbols, 544 hidden states" in text
    assert load_language(out) == interval_hmm(5)
    summary = run_json(capsys, ["counterexample", "-l", "3", "--out", str(tmp_path / "ce3.npz")])
    assert summary == {"interval_length": 3, "n_symbols": 4, "n_states": 16, "pairs_per_interval": 3,
                       "spec": "interval:3", "out": str(tmp_path / "ce3.npz")}
    assert load_language(tmp_path / "ce3.npz") == interval_hmm(3)


def test_language_presets_and_custom_generators(tmp_path, capsys):
    out = tmp_path / "l.json"
    summary = run_json(capsys, ["language", "--language", "preset:3gram:4", "--out", str(out)])
    assert load_language(out) == preset("3gram", 4)
    assert summary["pruned_fraction"] == pruned_fraction(preset("3gram", 4))
    doc = json.loads(out.read_text())
    assert doc["name"] == "preset:3gram:4" and doc["metadata"]["seed"] == 4 and doc["metadata"]["threshold"] == 0.008
    assert main(["language", "--language", "interval:3", "--out", str(tmp_path / "i.json")]) == 0
    assert load_language(tmp_path / "i.json") == interval_hmm(3)
    capsys.readouterr()

    out = tmp_path / "g.json"
    assert main(["language", "--kind", "ngram", "--n", "2", "--vocab", "5", "--temperature", "1.5",
                 "--threshold", "0.01", "--seed", "2", "--out", str(out)]) == 0
    assert load_language(out) == random_ngram(2, 5, 1.5, 0.01, 2)
    assert main(["language", "--kind", "hmm", "--states", "6", "--vocab", "3", "--temperature", "3.2",
                 "--threshold", "0.003", "--out", str(tmp_path / "h.npz")]) == 0
    assert load_language(tmp_path / "h.npz") == random_hmm(6, 3, 3.2, 0.003, 0)
    text = capsys.readouterr().out
    assert text.count("\n") == 2 and "pruned fraction" in text


def test_language_list(capsys):
    rows = run_json(capsys, ["language", "--list", "--seed", "1"])
    tasks = [r for r in rows if r["kind"] == "explicit"]  # the task presets follow, one row each with its law
    assert [r["spec"] for r in tasks] == [canonical_spec(f"task:{name}") for name in TASKS]
    assert all(r["law"] == TASKS[r["name"]].law for r in tasks)
    rows = rows[:len(rows) - len(tasks)]
    assert [r["name"] for r in rows] == list(PRESETS)
    assert [r["spec"] for r in rows] == [f"preset:{name}:1" for name in PRESETS]
    for r in rows:
        assert r["pruned_fraction"] == pruned_fraction(preset(r["name"], 1))
        assert r["temperature"] == PRESETS[r["name"]].temperature and r["threshold"] == PRESETS[r["name"]].threshold
    status, text, _ = run(capsys, ["language", "--list"])
    assert status == 0 and all(f"preset:{name}:0" in text for name in PRESETS) and "pruned transition" in text
    assert "task:shuffle:n=4" in text and TASKS["latin"].law in text


def test_score_table_json_and_mixed_lengths(tmp_path, capsys):
    lang = random_ngram(2, 4, 1.0, 0.2, seed=1)
    lang_file = tmp_path / "g.json"
    main(["language", "--kind", "ngram", "--n", "2", "--vocab", "4", "--temperature", "1.0", "--threshold", "0.2",
          "--seed", "1", "--out", str(lang_file)])
    capsys.readouterr()
    good = lang.sample_sequences(3, 7, seed=0)
    X = np.random.default_rng(0).integers(0, 4, size=(40, 5))
    outside = X[~lang.in_support(X)][:2]
    assert len(outside) == 2
    rows = [good[0], outside[0], [int(good[1, 0])], good[2], outside[1]]
    seqs = write_sequences(tmp_path / "s.txt", rows)
    with open(seqs, "a") as fh:
        fh.write("\n   \n")  # blank lines are skipped
    res = run_json(capsys, ["score", "--language", str(lang_file), "--sequences", str(seqs)])
    assert [r["in_support"] for r in res] == [True, False, True, True, False]
    for r, x in zip(res, rows):
        assert set(r) == {"log_likelihood", "in_support"}
        if r["in_support"]:
            assert r["log_likelihood"] == pytest.approx(float(lang.log_likelihood(np.array(x))[0]), rel=1e-12)
        else:
            assert r["log_likelihood"] is None
    status, text, _ = run(capsys, ["score", "--language", str(lang_file), "--sequences", str(seqs)])
    lines = text.strip().splitlines()
    assert status == 0 and len(lines) == 2 + 5 + 1 and "log_likelihood" in lines[0] and "-inf" in lines[3]
    # the summary: 3 of 5 in the support; their mean log-likelihood per sequence and per token (lengths 7, 1, 7)
    inside = [float(lang.log_likelihood(np.array(x))[0]) for x in (rows[0], rows[2], rows[3])]
    assert lines[-1].startswith("5 sequences (L = 1..7): 3 in the support (0.6; error rate 0.4); their mean "
                                f"log-likelihood {np.mean(inside):.6g} nats, {sum(inside) / 15:.6g} nats per token")


def test_score_counterexample_closed_form(tmp_path, capsys):
    ce = tmp_path / "ce.json"
    main(["counterexample", "-l", "4", "--out", str(ce)])
    capsys.readouterr()
    x = interval_hmm(4).sample_sequences(2, 8, seed=3)
    res = run_json(capsys, ["score", "--language", str(ce), "--sequences", str(write_sequences(tmp_path / "s", x))])
    # uniform on 2^(2 * 6) consistent sequences
    assert [r["log_likelihood"] for r in res] == pytest.approx([-12 * math.log(2)] * 2, rel=1e-12)


@pytest.mark.parametrize(
    "content, message",
    [
        ("0 1 2\n0 1 x\n", "line 2: token 'x' is not an integer"),
        ("0 1 2\n\n0 9 1\n", "line 3: token 9 is outside the vocabulary 0..7"),
        ("0 -1 2\n", "line 1: token -1 is outside the vocabulary 0..7"),
        ("0 1.5 2\n", "line 1: token '1.5' is not an integer"),
        ("\n\n", "no sequences"),
    ],
)
def test_score_bad_sequences_give_one_error_line(tmp_path, capsys, content, message):
    seqs = tmp_path / "s.txt"
    seqs.write_text(content)
    status, out, err = run(capsys, ["score", "--language", "preset:2gram", "--sequences", str(seqs)])
    assert status == 2 and out == "" and message in err
    assert err.startswith("mdmt score: error: ") and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["counterexample", "-l", "1", "--out", "x.json"], "interval length l must be >= 2, got 1"),
        (["language", "--kind", "hmm", "--threshold", "2", "--out", "x.json"], "threshold must be in [0, 1), got 2.0"),
        (["language", "--kind", "ngram", "--temperature", "0", "--out", "x.json"], "temperature must be a positive number"),
        (["language", "--language", "preset:hmm", "--kind", "hmm", "--out", "x.json"], "not both"),
        (["language"], "give --language SPEC, --kind ngram|hmm, or --list"),
        (["language", "--language", "preset:5gram", "--out", "x.json"], "unknown preset '5gram'"),
        (["score", "--language", "preset:7gram", "--sequences", "s.txt"], "unknown preset '7gram'; valid presets: 2gram"),
        (["score", "--language", "preset:hmm:abc", "--sequences", "s.txt"], "seed 'abc' is not a non-negative integer"),
        (["score", "--language", "missing.json", "--sequences", "s.txt"], "'missing.json': no such file"),
        (["score", "--language", "3gram", "--sequences", "s.txt"], "did you mean preset:3gram?"),
        (["exact", "--language", "preset:2gram", "-L", "3", "-N", "2", "--schedule", "0.5,0.2"], "sum to 0.7"),
        (["exact", "--language", "interval-3", "-L", "3", "-N", "2"], "did you mean interval:3?"),
        (["curve", "ser", "-l", "5", "--length", "1001"], "L=1001 is not a multiple of the interval length l=5"),
        (["curve", "ser", "--lengths", "100"], "unrecognized arguments: --lengths"),
        (["curve", "ter", "--length", "1024"], "unrecognized arguments: --length"),
        (["language", "--language", "preset:3gram"], "--out FILE is required"),
    ],
)
def test_bad_arguments_give_one_error_line(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.txt").write_text("0 1\n")
    status, _, err = run(capsys, argv)
    assert status == 2 and message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "x.json").exists()


def test_exact_sample_dependencies_curve(tmp_path, capsys):
    ce = tmp_path / "ce.json"
    main(["counterexample", "-l", "3", "--out", str(ce)])
    capsys.readouterr()
    ex = run_json(capsys, ["exact", "--language", str(ce), "--length", "6", "--steps", "3"])
    assert {"kl_nats", "ser"} <= ex.keys() and 0 < ex["ser"] < 1
    sm = run_json(capsys, ["sample", "--language", str(ce), "--length", "6", "--steps", "3", "--num", "3000"])
    assert sm["ser_ci"][0] <= ex["ser"] <= sm["ser_ci"][1]
    assert sm["gen_perplexity"] == "inf" and "infinite" in sm["note"]  # some samples left the support: "inf", not null
    assert run_json(capsys, ["exact", "--language", "interval:3", "-L", "6", "-N", "3"]) == ex  # the same language
    dep = run_json(capsys, ["dependencies", "--n", "3", "--length", "256", "--steps", "16", "--schedule", "linear"])
    assert dep["expected_dependencies"] > 0 and len(dep["per_step"]) == 16
    ser = run_json(capsys, ["curve", "ser", "--interval-length", "5", "--length", "1000"])
    # 1.443 = N*/L with N* = 1443, found by bisection on the closed form and checked exactly against its
    # neighbours in tests/test_bounds.py; the large-L limit is 1/ln 2 = 1.4427 (by hand: 1 - rho ~ C(l,2)/(2N))
    assert ser["critical_c"]["1000"] == pytest.approx(1.443, abs=1e-3)  # keyed by L, as ter's min_steps
    png = tmp_path / "t.png"
    csv = tmp_path / "t.csv"
    assert main(["curve", "ter", "--n", "2", "--eps", "0.2", "--lengths", "128,256", "--plot", str(png), "--csv", str(csv)]) == 0
    assert png.stat().st_size > 1000 and csv.read_text().startswith("L,N,chain_bound")


def test_bare_mdmt_prints_the_usage_and_the_commands(capsys):
    """No arguments: the usage and every command with its help on standard output; one error line, exit 2 (a
    missing command is a usage error, as argparse has it)."""
    from mdmt.cli import COMMANDS

    assert main([]) == 2
    out, err = capsys.readouterr()
    assert out.startswith("usage: mdmt") and all(f"    {name}" in out for name in COMMANDS)
    assert err.count("\n") == 1 and err.startswith("mdmt: error: give a COMMAND")


def test_malformed_language_file_is_one_error_line(tmp_path, capsys):
    lang = tmp_path / "bad.json"
    lang.write_text(json.dumps({"kind": "hmm", "initial": [1.0], "transition": [[0.5]], "emission": [[1.0]]}))
    (tmp_path / "s.txt").write_text("0\n")
    status, _, err = run(capsys, ["score", "--language", str(lang), "--sequences", str(tmp_path / "s.txt")])
    assert status == 2 and "invalid key 'transition': transmat row 0 sums to 0.5" in err and err.count("\n") == 1


def test_print_json_writes_infinities_apart_from_not_applicable(capsys):
    """An infinity is the string "inf" (float() reads it back), NaN -- undefined or not applicable -- is null."""
    print_json({"a": float("inf"), "b": np.float64("nan"), "c": np.arange(2), "d": np.bool_(True), 3: [-np.inf, 1.5],
                "e": None})
    doc = json.loads(capsys.readouterr().out)
    assert doc.pop("provenance")["commit"]
    assert doc == {"a": "inf", "b": None, "c": [0, 1], "d": True, "3": ["-inf", 1.5], "e": None}
    assert float(doc["a"]) == math.inf and float(doc["3"][0]) == -math.inf


@pytest.mark.integration
def test_python_m_mdmt(tmp_path):
    ce = tmp_path / "ce.json"
    p = subprocess.run([sys.executable, "-m", "mdmt", "counterexample", "-l", "3", "--out", str(ce), "--json"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["n_symbols"] == 4
    seqs = write_sequences(tmp_path / "s.txt", [[0, 0, 0], [0, 0, 1], [3, 3, 3]])
    p = subprocess.run([sys.executable, "-m", "mdmt", "score", "--language", str(ce), "--sequences", str(seqs), "--json"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    # l = 3: token bits (c_ab) MSB-first; 000 and 333 are consistent, 001 is not (c_12 = 0 at position 1, 1 at position 2)
    assert [r["in_support"] for r in json.loads(p.stdout)["rows"]] == [True, False, True]


@pytest.mark.integration
def test_the_console_script_ends_verify_without_teardown_but_with_its_output_exit_handlers_and_status(tmp_path):
    """After ``mdmt verify`` the console script skips the interpreter's teardown (mdmt.cli.script): the whole JSON
    document still arrives through a pipe, an exit handler registered during the run still runs, and the status is
    main's (0, or 2 for a usage error)."""
    mark = tmp_path / "handler-ran"
    probe = ("import atexit, sys; from pathlib import Path; "
             f"atexit.register(lambda: Path({str(mark)!r}).write_text('yes')); "
             "import mdmt.cli as c; sys.argv = ['mdmt'] + sys.argv[1:]; c.script()")
    p = subprocess.run([sys.executable, "-c", probe, "verify", "-k", "^IA$", "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["violations"] == 0 and doc["checks"] > 0
    assert mark.read_text() == "yes"
    p = subprocess.run([sys.executable, "-m", "mdmt", "verify", "--format", "nope"], capture_output=True, text=True)
    assert p.returncode == 2 and "invalid choice: 'nope'" in p.stderr


def test_sample_out_is_read_back_by_score(tmp_path, capsys):
    """mdmt sample --out writes a # header line naming the request; mdmt score skips it."""
    out = tmp_path / "s.txt"
    assert main(["sample", "--language", "preset:2gram-ter", "-L", "6", "-N", "3", "--num", "4", "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "# mdmt sample --language preset:2gram-ter --length 6 --steps 3 --num 4 --seed 0 --schedule linear"
    assert np.loadtxt(out, dtype=int).shape == (4, 6)  # NumPy skips the header too
    capsys.readouterr()
    res = run_json(capsys, ["score", "--language", "preset:2gram-ter", "--sequences", str(out)])
    X = np.loadtxt(out, dtype=np.int64)
    assert [r["log_likelihood"] for r in res] == pytest.approx(preset("2gram-ter").log_likelihood(X).tolist(), rel=1e-12)


def test_error_lines_are_one_line():
    from mdmt.cli import error_line

    assert error_line(ValueError("a\nb  c")) == "a b c"
    assert error_line(FileNotFoundError(2, "No such file or directory", "x.json")) == "No such file or directory: x.json"
    assert error_line(OSError(28, "No space left on device")) == "No space left on device"
    assert error_line(MemoryError()).startswith("out of memory (the inputs need more memory")
    assert error_line(RecursionError("maximum recursion depth exceeded")) == \
        "input nested too deeply (maximum recursion depth exceeded)"
    assert error_line(ValueError()) == "ValueError"


def test_debug_mode_shows_the_traceback(monkeypatch, capsys):
    monkeypatch.setenv("MDMT_DEBUG", "1")
    with pytest.raises(ValueError, match="unknown preset"):
        main(["score", "--language", "preset:nope", "--sequences", "s.txt"])


def test_sample_reports_the_entropy_rate_and_the_ter_gap(capsys):
    """Beside the generative perplexity: the language's entropy rate (exact for an n-gram: H(X_1..X_L)/L) and the TER
    gap, generative NLL per token minus it, with its interval."""
    from mdmt.constructions.languages.spec import language_from_spec

    res = run_json(capsys, ["sample", "--language", "preset:3gram-ter", "-L", "32", "-N", "32", "--num", "100"])
    H = float(language_from_spec("preset:3gram-ter").sequence_entropy(32)) / 32
    assert res["entropy_rate"] == pytest.approx(H, rel=1e-12) and res["entropy_rate_method"] == "exact"
    assert res["ter_gap"] == pytest.approx(res["gen_nll_per_token"] - H, abs=1e-12)
    lo, hi = res["ter_gap_ci"]
    assert lo <= res["ter_gap"] <= hi and lo == pytest.approx(res["gen_nll_ci"][0] - H, abs=1e-12)
