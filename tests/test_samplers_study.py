"""mdmt samplers: the smallest network calls per sampler for an SER target, tied to the exact laws."""

import json
import math

import pytest

from mdmt.bounds.studies.samplers import min_calls, samplers_study
from mdmt.cli import main
from mdmt.constructions.languages import interval_hmm
from mdmt.constructions.reverse.policies import parse_policy
from mdmt.constructions.reverse.policy_exact import exact_policy_law


@pytest.mark.parametrize("sampler", ["uniform", "stride", "iid", "remdm:loop:0.3"])
def test_min_calls_is_the_smallest_n_reaching_the_target(sampler):
    lang, L, target = interval_hmm(2), 4, 0.2
    r = min_calls(lang, L, sampler, target)
    assert r["method"] == "exact" and r["reached"]
    ser = lambda N: exact_policy_law(lang, L, parse_policy(sampler, N), support_only=False).result.ser  # noqa: E731
    N = r["steps"]
    assert ser(N) == pytest.approx(r["ser"]) and ser(N) <= target
    assert N == 1 or ser(N - 1) > target
    nfe = exact_policy_law(lang, L, parse_policy(sampler, N), support_only=False).expected_nfe
    assert r["calls"] == pytest.approx(nfe)


def test_the_fixed_samplers():
    lang, L = interval_hmm(2), 6
    ar = min_calls(lang, L, "ar", 0.1)
    assert ar["calls"] == L and ar["ser"] == 0
    v = min_calls(lang, L, "verified", 0.1)
    assert v["ser"] == pytest.approx(0.0, abs=1e-12) and 1 <= v["calls"] < L
    assert v["calls"] == pytest.approx(exact_policy_law(lang, L, parse_policy(f"verified:{L}"), support_only=False).expected_nfe)
    b = min_calls(lang, L, "bisect", 0.1)
    assert b["calls"] == math.ceil(math.log2(L + 1))


def test_study_rows_and_command(capsys, tmp_path):
    res = samplers_study(["interval:2"], [2, 4], ["uniform", "verified", "ar"], target=0.2)
    assert [(r["L"], r["sampler"]) for r in res["rows"]] == [(2, "uniform"), (2, "verified"), (2, "ar"), (4, "uniform"),
                                                             (4, "verified"), (4, "ar")]
    assert main(["samplers", "--language", "interval:2", "--lengths", "2,4", "--samplers", "uniform,ar", "--target",
                 "0.2", "--no-progress", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["sampler"] for r in out["rows"]} == {"uniform", "ar"}


@pytest.mark.parametrize("argv, words", [(["--lengths", "3"], "--lengths 3 is not a multiple"),
                                         (["--target", "0"], "--target must be an SER in (0, 1)"),
                                         (["--samplers", "nonsense"], "policy 'nonsense'")])
def test_command_errors(capsys, argv, words):
    assert main(["samplers", "--language", "interval:2", "--no-progress", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mdmt samplers: error:") and words in err


def test_huge_lengths_are_refused_before_any_work(capsys):
    assert main(["samplers", "--language", "interval:2", "--lengths", "1000000000", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mdmt samplers: error: --num 500 samples of --lengths 1000000000 needs") and err.count("\n") == 1
    assert main(["schedule", "--language", "preset:2gram", "-L", "10000000", "-N", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mdmt schedule: error: --length 10000000: the information profile needs")


def test_an_explicit_law_is_studied_at_its_own_length_and_the_sizes_of_a_task_share_one_panel():
    """A task holds sequences of one length: it is studied there whatever --lengths says, and the figure gathers
    its sizes into one panel.  Hand values on even-parity words: any L - 1 positions are independent uniform bits
    and the last is their parity, so the optimal sizes (L - 1, then 1) are exact in 2 calls (one step: SER 1/2),
    and the autoregressive sampler needs L calls."""
    from mdmt.bounds.studies.samplers import samplers_study

    res = samplers_study(["task:parity:n=4", "task:parity:n=6"], [3, 5], ["optimal", "ar"], target=0.1, num=50)
    rows = res["rows"]
    assert sorted({(r["language"], r["L"]) for r in rows}) == [("task:parity:n=4", 4), ("task:parity:n=6", 6)]
    assert {r["panel"] for r in rows} == {"task:parity"}
    for r in rows:
        assert r["reached"]
        assert r["calls"] == (2 if r["sampler"] == "optimal" else r["L"]), r
        assert abs(r["ser"]) < 1e-12, r


def test_draft_schedules_and_the_confidence_schedule_are_lines_of_the_study(capsys):
    """Each draft schedule of verified drafting is one run (SER 0, calls = its exact E[rounds]); remdm:conf takes N
    like the other ReMDM schedules (the smallest N reaching the target, exact at small L)."""
    lang, L = interval_hmm(2), 4
    for spec in ("verified:1,2,4", "verified:adaptive", "verified:adaptive:1"):
        r = min_calls(lang, L, spec, 0.1)
        law = exact_policy_law(lang, L, parse_policy(spec), support_only=False)
        assert r["steps"] is None and r["reached"] and r["method"] == "exact"
        assert r["calls"] == pytest.approx(law.expected_nfe) and r["ser"] == pytest.approx(0.0, abs=1e-12)
    r = min_calls(lang, L, "remdm:conf", 0.3)
    assert r["method"] == "exact" and r["reached"]
    ser = lambda N: exact_policy_law(lang, L, parse_policy("remdm:conf", N), support_only=False).result.ser  # noqa: E731
    assert ser(r["steps"]) <= 0.3 and (r["steps"] == 1 or ser(r["steps"] - 1) > 0.3)
    assert main(["samplers", "--language", "interval:2", "--lengths", "4", "--samplers",
                 "verified:1,2,4,verified:adaptive,remdm:conf,ar", "--target", "0.3", "--no-progress", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["sampler"] for r in out["rows"]] == ["verified:1,2,4", "verified:adaptive", "remdm:conf", "ar"]
