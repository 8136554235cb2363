"""Trained networks from the command line: mdmt train -> sample --checkpoint -> evaluate; mdmt speed's statistics."""

from __future__ import annotations

import json
import math

import pytest

from mdmt.cli import main
from mdmt.commands.speed import median_interval


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("nets")
    for name, extra in (("mdm", []), ("ar", ["--ar"])):
        assert main(["train", "--language", "preset:2gram", "-L", "12", "--train-steps", "8", "--batch", "8",
                     "--num-val", "16", "--out", str(root / name), "--no-progress", *extra]) == 0
    return root


def _json(capsys, argv):
    assert main(argv + ["--json"]) == 0, capsys.readouterr().err
    doc = json.loads(capsys.readouterr().out)
    assert doc.pop("provenance")["commit"]
    return doc


@pytest.mark.integration
@pytest.mark.torch
def test_sample_from_a_checkpoint(runs, capsys):
    ck = str(runs / "mdm" / "ckpt.pt")
    a = _json(capsys, ["sample", "--checkpoint", ck, "-N", "4", "--num", "30", "--seed", "2"])
    assert a["model"] == "mdm" and a["length"] == 12 and a["num"] == 30 and 1 <= a["nfe_mean"] <= 4
    assert 0 <= a["ser"] <= 1 and a["ser_ci"][0] <= a["ser"] <= a["ser_ci"][1] + 1e-12
    assert _json(capsys, ["sample", "--checkpoint", ck, "-N", "4", "--num", "30", "--seed", "2"])["ser"] == a["ser"]
    short = _json(capsys, ["sample", "--checkpoint", ck, "-N", "4", "-L", "6", "--num", "20", "--kl"])
    assert short["length"] == 6 and short["assignment_kl_per_token_nats"] > 0  # the first 6 tokens; tail masked
    ar = _json(capsys, ["sample", "--checkpoint", str(runs / "ar" / "ckpt.pt"), "--num", "20"])
    assert ar["model"] == "ar" and ar["nfe_mean"] == 12 and ar["steps"] == 12
    for argv, msg in ((["-N", "4", "-L", "40"], "exceeds the network's seq_len = 12"),
                      ([], "needs --steps"), (["-N", "4", "--language", "interval:5"], "16 tokens")):
        assert main(["sample", "--checkpoint", ck, *argv]) == 2
        assert msg in capsys.readouterr().err
    assert main(["sample", "--checkpoint", str(runs / "ar" / "ckpt.pt"), "-N", "4"]) == 2
    assert "drop --steps" in capsys.readouterr().err
    assert main(["sample", "--language", "preset:2gram", "-N", "4"]) == 2  # the oracle needs a length
    assert "--length" in capsys.readouterr().err


@pytest.mark.integration
@pytest.mark.torch
def test_evaluate_a_checkpoint(runs, capsys):
    r = _json(capsys, ["evaluate", "--checkpoint", str(runs / "mdm" / "ckpt.pt"), "--steps", "1,12", "--num", "40",
                       "--num-val", "40", "--learning-error-num", "16"])
    assert r["kind"] == "mdm" and r["language"] == "preset:2gram:0" and [p["N"] for p in r["points"]] == [1, 12]
    g = r["val_gap"]
    assert g["ci"][0] <= g["gap"] <= g["ci"][1] and g["num"] == 40
    assert r["learning_error"]["mean"] > 0 and r["learning_error"]["num_sequences"] == 16
    assert r["points"][0]["nfe_mean"] == 1 and all(0 <= p["ser"] <= 1 for p in r["points"])
    a = _json(capsys, ["evaluate", "--checkpoint", str(runs / "ar" / "ckpt.pt"), "--num", "20", "--num-val", "20"])
    assert a["kind"] == "ar" and "learning_error" not in a and [p["N"] for p in a["points"]] == [12]
    assert main(["evaluate", "--checkpoint", str(runs / "nothing.pt")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_median_interval_uses_order_statistics():
    # n = 7: (min, max) covers the median with probability 1 - 2 / 2^7; n = 20: (x_(6), x_(15)) with
    # 1 - 2 (C(20,0) + ... + C(20,5)) / 2^20 = 1 - 2 * 21700 / 1048576 (hand computed)
    assert median_interval([5, 1, 7, 3, 2, 6, 4]) == (4, 1, 7, pytest.approx(1 - 2 / 128))
    med, lo, hi, cov = median_interval(list(range(20)))
    assert (med, lo, hi) == (9.5, 5, 14) and cov == pytest.approx(1 - 2 * 21700 / 2**20)


@pytest.mark.torch
def test_speed_reports_medians_spread_and_the_ratio_interval(capsys):
    doc = _json(capsys, ["speed", "--lengths", "8", "--steps", "2", "--repeats", "3", "--batch", "2"])
    assert doc["repeats"] == 3 and doc["warmup"] == 1
    ar, mdm = doc["rows"]
    assert len(ar["times"]) == len(mdm["times"]) == 3 and ar["seconds_min"] <= ar["seconds"] <= ar["seconds_max"]
    ratios = sorted(a / m for a, m in zip(ar["times"], mdm["times"]))
    assert mdm["ar_over_mdm"] == pytest.approx(ratios[1]) and mdm["ratio_lo"] == pytest.approx(ratios[0])
    assert math.isclose(mdm["ratio_coverage"], 1 - 2 / 8)


@pytest.mark.torch
def test_train_layer_flags_reach_the_checkpoint_and_bad_values_are_named(tmp_path, capsys):
    assert main(["train", "--language", "preset:2gram", "-L", "10", "--train-steps", "3", "--batch", "4",
                 "--num-val", "8", "--hmm-states", "3", "--recurrent", "0", "--ngram", "3", "--table-lr", "5",
                 "--out", str(tmp_path / "h"), "--no-progress"]) == 0
    summary = json.loads((tmp_path / "h" / "summary.json").read_text())
    model = summary["config"]["model"]
    assert model["hmm_states"] == 3 and model["recurrent"] == 0 and model["ngram"] == 3
    assert summary["config"]["table_lr"] == 5
    for flag, bad, said in (("--hmm-states", "-1", "--hmm-states"), ("--ngram", "-1", "--ngram"),
                            ("--ngram", "1", "ngram must be 0 (off) or an order >= 2, got 1"),
                            ("--table-lr", "0", "table_lr must be a positive finite number, got 0.0")):
        capsys.readouterr()
        assert main(["train", "--language", "preset:2gram", flag, bad, "--out", str(tmp_path / "bad")]) == 2, flag
        assert said in capsys.readouterr().err, flag
