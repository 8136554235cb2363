"""optimal, bisect, remdm and verified are policies wherever policies are taken: atlas, adaptive, refute, the API."""

import json

import numpy as np
import pytest

import mdmt
from mdmt.bounds.studies.atlas import atlas
from mdmt.cli import main
from mdmt.constructions.languages import interval_hmm, random_ngram
from mdmt.constructions.reverse.policies import parse_policy, policy_list
from mdmt.constructions.reverse.policy_exact import exact_policy_law

NEW = "optimal,bisect,bisect:2,remdm:cap:0.3,remdm:loop,verified:2"


def test_atlas_rows_of_the_new_processes():
    lang, L, N = random_ngram(3, 2, 2.0, 0.0, seed=3), 5, 2
    res = atlas(lang, L, N, "uniform," + NEW)
    rows = {r["process"]: r for r in res["rows"]}
    assert set(rows) == {"uniform", "optimal", "bisect", "bisect:2", "remdm:cap:0.3", "remdm:loop:0.02", "verified:2"}
    for spec in NEW.split(","):
        law = exact_policy_law(lang, L, parse_policy(spec, N), support_only=False)
        name = law_name = parse_policy(spec, N).spec
        assert rows[name]["kl"] == pytest.approx(law.result.kl_nats, abs=1e-12), law_name
        assert rows[name]["expected_nfe"] == pytest.approx(law.expected_nfe)
    assert rows["optimal"]["assignment_kl"] <= rows["uniform"]["assignment_kl"] + 1e-12  # the DP's optimum
    assert rows["bisect:2"]["kl"] == pytest.approx(0.0, abs=1e-12)  # a 3-gram: blocks of n - 1 = 2 separate
    assert rows["verified:2"]["kl"] == pytest.approx(0.0, abs=1e-12)


def test_atlas_command_prints_the_new_processes(capsys):
    assert main(["atlas", "--language", "interval:2", "--length", "4", "--steps", "2", "--processes", NEW]) == 0
    out = capsys.readouterr().out
    assert "verified:2" in out and "remdm:cap:0.3" in out


@pytest.mark.parametrize("spec", NEW.split(","))
def test_adaptive_sample_runs_every_new_process(capsys, spec):
    assert main(["adaptive", "sample", "--language", "interval:3", "-L", "12", "-N", "4", "--policy", spec, "--num", "50",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["nfe_mean"] > 0
    if spec.startswith("verified"):
        assert out["ser"] == 0.0


def test_adaptive_exact_json_keys(capsys):
    for spec in NEW.split(","):
        assert main(["adaptive", "exact", "--language", "interval:2", "-L", "4", "-N", "2", "--policy", spec, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert {"kl_nats", "ser", "expected_nfe"} <= set(out) and out["expected_nfe"] is not None, spec


def test_refute_quantities_and_certificates():
    from mdmt.bounds.refutation.certificate import NotCertifiable, exact_quantities
    from mdmt.bounds.refutation.quantities import instance_quantities

    lang = random_ngram(2, 2, 1.0, 0.0, seed=1)
    q = instance_quantities(lang, 4, "bisect", 2)
    assert q["KL"] == pytest.approx(0.0, abs=1e-12) and q["NFE"] == 3
    assert instance_quantities(lang, 4, "verified:2", 2)["KL"] == pytest.approx(0.0, abs=1e-12)
    assert "E_TC" not in instance_quantities(lang, 4, "remdm:cap:0.2", 2)
    with pytest.raises(NotCertifiable):
        exact_quantities(lang, 3, "verified:2", 2)
    kl = exact_quantities(lang, 3, "bisect", 2)["KL"]
    assert kl.sign() == 0  # exactly 0 in exact arithmetic


@pytest.mark.parametrize("spec, words", [("bisect:0", "block width W must be a positive integer"),
                                         ("verified", "expected verified:B"), ("verified:x", "block size B"),
                                         ("optimal:3", "expected one of")])
def test_bad_specs_are_named(spec, words):
    with pytest.raises(ValueError, match=words):
        parse_policy(spec, 3)


def test_python_api_and_lists():
    assert [p.spec for p in policy_list("uniform,bisect,verified:3", 2)] == ["uniform", "bisect", "verified:3"]
    f = np.array([0.0, 1.0, 1.5, 1.75])
    sizes, kl = mdmt.optimal_sizes(f, 2)
    assert sizes.sum() == 3 and kl >= 0
    assert mdmt.schedule_study(interval_hmm(2), 4, 2)["sizes"]
