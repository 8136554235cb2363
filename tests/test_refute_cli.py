"""`mdmt refute` end to end: a certified counterexample written as a language file and a JSON certificate that
reproduce it, the tightest instance of a true bound, the folder rule, budgets and one-line errors."""

import json

import numpy as np
import pytest

from mdmt.bounds.refutation.refute import MAX_EVALUATIONS, Budget, search, shard_seeds
from mdmt.cli import main

LI_CAI = "KL <= (2 ** ceil(log2(s_max)) - 1) / L * sum_MI"


def _run(capsys, *argv):
    rc = main(["refute", *argv, "--no-progress"])
    out, err = capsys.readouterr()
    return rc, out, err


def test_a_certified_counterexample_is_written_and_reproduced_from_its_files(tmp_path, capsys):
    out = tmp_path / "li-cai"
    rc, text, err = _run(capsys, "--claim", LI_CAI, "--family", "ngram:n=3,V=2", "--lengths", "5", "--steps", "3",
                         "--process", "confidence", "--budget", "40", "--out", str(out))
    assert rc == 0, err
    assert "verdict: certified violation" in text and "counterexample: L = 5, N = 3, process confidence" in text
    report = json.loads((out / "refute.json").read_text())
    assert report["verdict"] == "certified violation" and {"command", "commit", "machine"} <= set(report["provenance"])
    cert = report["certificate"]
    assert cert["margin"][1] < 0 and cert["bits"] in (16, 30)
    for name, (lo, hi) in cert["enclosures"].items():  # every exact quantity lies in its enclosure
        assert lo <= cert["values"][name] <= hi, name
    assert set(report["quantities"]) == {"KL", "s_max", "L", "sum_MI"}
    assert report["quantities"]["KL"] > report["quantities"]["sum_MI"] / 5  # (2 - 1) / L sum_MI with s_max = 2
    # the language file holds the instance certified: its rows are dyadic rationals summing to exactly 1
    lang_doc = json.loads((out / "instance.json").read_text())
    assert lang_doc["name"] == "refute instance" and lang_doc["metadata"]["verdict"] == "certified violation"
    table = np.array(lang_doc["transition"], dtype=float)
    assert np.all(table * 2 ** cert["bits"] == np.round(table * 2 ** cert["bits"])) and np.all(table.sum(1) == 1)
    # the command it prints re-establishes the same verdict and margin from the file alone
    command = report["reproduce"]["instance"]
    assert "--budget 1" in command and str(out / "instance.json") in command
    rc, again, err = _run(capsys, "--claim", LI_CAI, "--family", str(out / "instance.json"), "--lengths", "5",
                          "--steps", "3", "--processes", "confidence", "--budget", "1", "--json")
    assert rc == 0, err
    rerun = json.loads(again)
    assert rerun["verdict"] == "certified violation" and rerun["search"]["evaluations"] == 1
    assert rerun["certificate"]["margin"] == cert["margin"]
    # the same request into the same folder is allowed; a file mdmt did not write is refused, nothing written
    assert _run(capsys, "--claim", LI_CAI, "--lengths", "5", "--steps", "3", "--process", "confidence", "--budget",
                "4", "--out", str(out))[0] == 0
    (out / "refute.json").write_text("my notes\n")
    rc, _, err = _run(capsys, "--claim", LI_CAI, "--budget", "4", "--out", str(out))
    assert rc == 2 and "was not written by mdmt" in err and err.count("\n") == 1
    assert (out / "refute.json").read_text() == "my notes\n"


def test_a_true_bound_reports_its_tightest_instance_attained(capsys):
    """The chain bound of Lemma B.9 in total form is attained by a copying 2-gram revealed at once (KL = (L - 1)
    log 2 = log|V| E[sum_j D_j]): the search reports a relative margin of 0 and no violation."""
    rc, text, err = _run(capsys, "--claim", "KL <= L * eps + log(V) * E_D", "--family", "ngram:n=2,V=2",
                         "--lengths", "3,4", "--steps", "1,2", "--budget", "120", "--json", "--no-proof")
    assert rc == 0, err
    r = json.loads(text)
    assert r["verdict"] == "no violation found" and r["certificate"] is None and "proof" not in r
    assert abs(r["relative_margin"]) < 1e-9 and r["margin"] >= -1e-9
    assert r["quantities"]["KL"] == pytest.approx(np.log(2) * r["quantities"]["E_D"], abs=1e-9)
    assert r["search"]["evaluations"] == 120 and sum(r["search"]["phases"].values()) == 120


def test_the_smallest_violating_instance_is_reported():
    """Halving the chain bound is false already at L = 2 (a copying chain: I(X1; X2) = log 2 > log 2 / 2): among
    lengths 2..4 the search reports L = 2, N = 1 and a sparse (deterministic) transition table."""
    res = search("KL <= L * eps + log(V) * E_D / 2", "ngram:n=2,V=2", (4, 3, 2), (2, 1), ("iid",), budget=120,
                 seed=0)
    assert res.verdict == "certified violation"
    assert (res.candidate.L, res.candidate.N) == (2, 1)
    assert np.count_nonzero(res.candidate.language.transition_) <= 3


def test_perturbations_of_a_language_start_from_the_language_itself():
    """A family given as a language searches around it; its first instance is the language (all codes 0), so
    a budget of 1 evaluates exactly it. Theorem 4.4's bound holds on the interval HMM and fails on a perturbation."""
    claim = "SER >= 1 - (1 - exp(-2 * eps) / 2 * (1 - P_distinct)) ** (L / l)"
    one = search(claim, "interval:3", (3,), (2,), ("iid",), budget=1, seed=0)
    assert one.evaluations == 1 and one.candidate.margin == pytest.approx(0.09375, abs=1e-12)  # 19/32 - 1/2, by hand
    found = search(claim, "interval:3", (3,), (2,), ("iid",), budget=200, seed=0)
    assert found.verdict == "certified violation" and found.certificate["values"]["P_distinct"] == 0


def test_a_time_budget_stops_on_time():
    """A true bound searched for 0.4 s: the search runs until the time is used (not less), then stops within the
    evaluation in progress (generous bounds: a shared CI machine is slow)."""
    res = search("KL <= TC", "ngram:n=2,V=2", (3,), (2,), ("iid",), budget="0.4s", seed=0, prove=False)
    assert res.evaluations >= 1 and 0.4 <= res.seconds < 10 and res.settings["budget"] == "0.4 s"


@pytest.mark.integration
def test_shards_give_the_same_result_in_this_process_and_on_a_dask_cluster():
    """A sharded search is a pure function of (seed, shards): the serial run and two LocalCluster workers return the
    same margins in the same order, the same instance and the same certificate; the budget is divided exactly."""
    args = ("KL <= L * eps + 0.9 * log(V) * E_D", "ngram:n=2,V=2", (3, 4), (1, 2), ("iid",))
    serial = search(*args, budget=90, seed=5, shards=3, jobs=1)
    cluster = search(*args, budget=90, seed=5, shards=3, jobs=2)
    assert serial.evaluations == cluster.evaluations == 90 and serial.settings["shards"] == 3
    assert serial.history == cluster.history and serial.verdict == cluster.verdict == "certified violation"
    assert serial.certificate == cluster.certificate
    assert serial.first_violation["evaluations"] == cluster.first_violation["evaluations"]
    assert serial.candidate.describe() == cluster.candidate.describe()
    one = search(*args, budget=30, seed=shard_seeds(5, 3)[1])  # a shard is an ordinary search with its own seed
    assert one.history == serial.history[30:60]


@pytest.mark.parametrize("value, evaluations, seconds", [(200, 200, None), ("200", 200, None), ("30s", None, 30.0),
                                                         ("1.5m", None, 90.0), (" 2h ", None, 7200.0)])
def test_budgets_are_read(value, evaluations, seconds):
    b = Budget.parse(value)
    assert (b.evaluations, b.seconds) == (evaluations, seconds)


@pytest.mark.parametrize("argv, says", [
    (["--budget", "0"], "--budget 0: budget (evaluations) must be >= 1"),
    (["--budget", "1.5"], "--budget 1.5: expected a number of evaluations"),
    (["--budget", "0s"], "--budget 0s: the time must be positive"),
    (["--budget", "9d"], "--budget 9d: expected a number"),
    (["--budget", str(MAX_EVALUATIONS + 1)], f"exceed mdmt's limit of {MAX_EVALUATIONS}"),
    (["--claim", "KL <= foo"], "unknown quantity 'foo' at column 7"),
    (["--claim", "__import__('os')"], "not a comparison"),
    (["--family", "ngram:n=1,V=2"], "n must be at least 2"),
    (["--family", "tree:3"], "expected preset:NAME"),
    (["--family", "missing.json"], "no such file"),
    (["--process", "bogus"], "--processes bogus: policy 'bogus'"),
    (["--lengths", "0"], "--lengths"),
    (["--lengths", "40"], "(V+1)^L = 3^40"),
    (["--steps", "x"], "--steps"),
    (["--jobs", "2"], "give --shards K"),
    (["--shards", "0"], "--shards"),
    (["--shards", "5"], "cannot be split into 5 shards"),
    (["--shards", "2", "--scheduler", "8786"], "--scheduler '8786': expected an address"),
])
def test_bad_input_is_one_line_naming_the_value(capsys, argv, says):
    base = {"--claim": "KL <= TC", "--budget": "4"}
    for flag, value in zip(argv[::2], argv[1::2]):
        base[flag] = value
    rc, out, err = _run(capsys, *[x for kv in base.items() for x in kv])
    assert rc == 2 and out == "" and err.startswith("mdmt refute: error: ") and err.count("\n") == 1
    assert says in err, err
