"""`mdmt figure1` (mdmt.empirical.experiments): the N sweep, its resumption, merging and outputs, at toy scale on CPU."""

from __future__ import annotations

import csv
import json
import math
import shutil

import numpy as np
import pytest

pytest.importorskip("torch")

from mdmt.empirical.experiments import POINT_STAMP, Figure1, Figure1Config, markdown_tables, row_path  # noqa: E402
from mdmt.cli import main  # noqa: E402

TOY = dict(model="tiny", ter_languages=("preset:2gram-ter",), ser_languages=("preset:2gram",), steps=(1, 16), length=16,
           lengths=(16, 32), train_steps=6, batch=8, num=48, learning_error_num=16, val_size=32, seed=3)
TER, SER, IV = "preset:2gram-ter:0", "preset:2gram:0", "interval:2"


def _run(out, **changes):
    cfg = Figure1Config(**{**TOY, **changes})
    return Figure1(cfg, out, device="cpu", progress=False, log=lambda *_: None).run()


def _key(r):
    return (r["language"], r["kind"], r["L"], r["N"])


def _strip(rows):
    return {_key(r): {k: v for k, v in r.items() if k != "seconds"} for r in rows}


def _same_up_to_float32(got: dict, want: dict) -> None:
    """Rows equal, except that numbers computed from the network's float32 outputs (the measured learning error
    and what uses it) may differ by the rounding of a float32 reduction run with another thread count."""
    assert got.keys() == want.keys()
    for k, row in want.items():
        assert got[k].keys() == row.keys(), k
        for f, v in row.items():
            if isinstance(v, float) and isinstance(got[k][f], float):
                assert got[k][f] == pytest.approx(v, rel=1e-6, abs=1e-12), (k, f)
            else:
                assert got[k][f] == v, (k, f)


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("fig1")
    return out, _run(out)


@pytest.mark.integration
def test_every_point_and_output_is_written(full_run):
    out, res = full_run
    keys = {_key(r) for r in res["rows"]}
    want = {(lang, "oracle", L, N) for lang in (TER, SER) for L in (16, 32) for N in (1, 16)}
    want |= {(lang, "mdm", 16, N) for lang in (TER, SER) for N in (1, 16)}  # trained at L = 16 only
    want |= {(TER, "ar", 16, 16), (SER, "ar", 16, 16)}  # AR: one point, N = L
    assert keys == want
    for name in ("figure1.csv", "figure1.png", "figure1.json", "config.json"):
        assert (out / name).stat().st_size > 0
    with open(out / "figure1.csv") as fh:
        assert len(list(csv.DictReader(fh))) == len(want)
    s = res["summaries"][TER]
    assert s["learning_error"]["mean"] > 0  # a 6-step network is far from the oracle
    assert s["train_ar"]["val_gap_ci"][0] <= s["train_ar"]["val_gap"] <= s["train_ar"]["val_gap_ci"][1]
    assert s["train_mdm"]["cpu_seconds"] > 0
    md = markdown_tables(res)
    assert f"#### {TER}: oracle MDM" in md and "| L = 16 | L = 32 |" in md and "Smallest N reaching the target" in md
    assert {(t["language"], t["kind"], t["L"]) for t in res["targets"]} >= {(TER, "oracle", 16), (SER, "oracle", 32)}


@pytest.mark.integration
def test_points_measure_what_they_claim(full_run):
    _, res = full_run
    rows = {_key(r): r for r in res["rows"]}
    # One step reveals everything at once: NFE = 1; the AR model takes L calls.
    assert rows[(SER, "oracle", 16, 1)]["nfe_mean"] == 1.0 and rows[(SER, "oracle", 32, 1)]["nfe_mean"] == 1.0
    assert rows[(SER, "ar", 16, 16)]["nfe_mean"] == 16.0
    # The pruned 2-gram has a strict support: one step (independent tokens) leaves it far more
    # often than 16 steps on L = 16 (the oracle's SER decreases with N, Theorem 4.3).
    assert rows[(SER, "oracle", 16, 1)]["ser"] > rows[(SER, "oracle", 16, 16)]["ser"]
    # Threshold-0 language: full support, finite perplexity, SER 0; the TER gap is ln(perplexity) - H/L.
    r = rows[(TER, "oracle", 16, 16)]
    assert r["ser"] == 0 and math.isfinite(r["gen_perplexity"]) and r["gen_perplexity_lo"] <= r["gen_perplexity"] <= r["gen_perplexity_hi"]
    assert r["ter_gap"] == pytest.approx(math.log(r["gen_perplexity"]) - r["entropy_rate"])
    assert r["ter_gap_lo"] <= r["ter_gap"] <= r["ter_gap_hi"]
    # E_tau KL(q || p_tau)/L (C1) is estimated for the oracle on TER languages, and the chain bound lies above it
    assert r["assignment_kl_lo"] <= r["assignment_kl"] <= r["assignment_kl_hi"] <= r["kl_bound_per_token"] + 0.05
    # The chain bound with eps = 0 for the oracle is below the trained model's (eps > 0) at the same N.
    assert rows[(TER, "oracle", 16, 16)]["kl_bound_per_token"] < rows[(TER, "mdm", 16, 16)]["kl_bound_per_token"]
    assert rows[(TER, "ar", 16, 16)]["kl_bound_per_token"] is None


@pytest.mark.integration
def test_rerun_recomputes_nothing_and_changed_settings_are_refused(full_run):
    out, res = full_run
    stamps = {p.name: p.stat().st_mtime_ns for p in (out / "rows").glob("*.json")}
    again = _run(out)
    assert {p.name: p.stat().st_mtime_ns for p in (out / "rows").glob("*.json")} == stamps
    assert _strip(again["rows"]) == _strip(res["rows"])
    with pytest.raises(ValueError, match="train_steps"):
        _run(out, train_steps=7)
    settings = json.loads((out / "config.json").read_text())["result_settings"]
    assert settings["architecture"]["ngram"] == 4  # the tiny preset, recorded whole
    older = out.parent / (out.name + "-older")  # a folder made before the preset changed: refused, not mixed
    older.mkdir()
    settings["architecture"] = {**settings["architecture"], "ngram": 0}
    (older / "config.json").write_text(json.dumps({"result_settings": settings}))
    with pytest.raises(ValueError, match=r"other settings \(architecture differ\)"):
        _run(older)


@pytest.mark.integration
def test_parts_run_apart_merge_into_the_same_figure(full_run, tmp_path):
    """Oracle curves in one folder, trained models in another: copied together they equal one run."""
    _, res = full_run
    a, b = tmp_path / "a", tmp_path / "b"
    _run(a, kinds=("oracle",))
    assert not (a / "preset_2gram_0" / "mdm").exists()  # the oracle part trains nothing
    _run(b, kinds=("mdm", "ar"))
    for p in (a / "rows").glob("*.json"):
        shutil.copy(p, b / "rows" / p.name)
    merged = Figure1(Figure1Config(**TOY), b, device="cpu", progress=False, log=lambda *_: None).assemble()
    assert _strip(merged["rows"]) == _strip(res["rows"])


@pytest.mark.integration
def test_parts_in_worker_processes_give_the_same_numbers(full_run, tmp_path):
    """--jobs 2: each language's networks and its oracle curve at each length computed apart, in two processes,
    give the rows and summaries of the run in one process."""
    _, res = full_run
    out = tmp_path / "jobs"
    fig = Figure1(Figure1Config(**TOY), out, device="cpu", progress=False, log=lambda *_: None, jobs=2)
    parts = fig._parts([(TER, "ter"), (SER, "ser")])
    assert sorted((p[1], p[3], p[4]) for p in parts) == sorted(
        [(lang, ("mdm", "ar"), ()) for lang in (TER, SER)] + [(lang, ("oracle",), (L,)) for lang in (TER, SER)
                                                             for L in (16, 32)])
    par = fig.run()
    _same_up_to_float32(_strip(par["rows"]), _strip(res["rows"]))
    for lang in (TER, SER):
        assert par["summaries"][lang]["entropy_rate"] == res["summaries"][lang]["entropy_rate"]
        assert par["summaries"][lang]["learning_error"]["mean"] == pytest.approx(
            res["summaries"][lang]["learning_error"]["mean"], rel=1e-6)
        # one torch thread per worker, also after numba's first parallel launch (which resets OpenMP's count)
        assert par["summaries"][lang]["train_mdm"]["torch_threads"] == 1
        assert par["summaries"][lang]["train_ar"]["torch_threads"] == 1
    assert fig._parts([(TER, "ter"), (SER, "ser")]) == []  # nothing left: a rerun computes nothing


@pytest.mark.integration
def test_interrupted_training_resumes(tmp_path):
    out = tmp_path / "r"
    cfg = Figure1Config(**{**TOY, "ser_languages": (), "kinds": ("mdm",), "train_steps": 12})
    fig = Figure1(cfg, out, device="cpu", progress=False, log=lambda *_: None)
    from mdmt.empirical.checkpoint import load_checkpoint
    from mdmt.empirical.experiments import train_config
    from mdmt.empirical.train import train

    lg = fig._language(0, TER, "ter")
    tc = train_config(cfg, TER, lg.lang.n_symbols, "mdm")
    ckpt = out / lg.folder / "mdm" / "ckpt.pt"
    # Stop the training halfway, as a killed run would, then let figure1 finish it.
    train(tc, lg.lang, ckpt_path=ckpt, device="cpu", stop_at=5, progress=False)
    assert load_checkpoint(ckpt)["step"] == 5
    fig.run()
    assert load_checkpoint(ckpt)["step"] == 12
    resumed = json.loads(row_path(out, TER, "mdm", 16, 16).read_text())
    fresh = _run(tmp_path / "f", ser_languages=(), kinds=("mdm",), train_steps=12)
    assert {k: v for k, v in resumed.items() if k not in ("seconds", POINT_STAMP)} == _strip(fresh["rows"])[
        (TER, "mdm", 16, 16)]


def test_config_validation():
    for bad, match in ((dict(kinds=("oracle", "gpt")), "gpt"), (dict(steps=(8, 0)), "N"),
                       (dict(ter_languages=("preset:5gram",)), "5gram"),
                       (dict(ter_languages=(), ser_languages=()), "no language"),
                       (dict(ser_languages=("preset:2gram-ter:0",)), "twice"), (dict(schedule="nope"), "nope"),
                       (dict(model="huge"), "huge"), (dict(num=0), "num"), (dict(lr=-1e-3), "lr")):
        with pytest.raises(ValueError, match=match):
            Figure1Config(**{**TOY, **bad})
    assert Figure1Config(model="paper").length == 512 and Figure1Config().length == 64
    from mdmt.empirical.train import RECIPES

    assert Figure1Config(model="paper").lr == RECIPES["paper"]["lr"] and Figure1Config().lr == RECIPES["tiny"]["lr"]
    assert Figure1Config(lr=2e-3).lr == 2e-3 and Figure1Config().lengths == (64, 128, 256, 512)
    assert Figure1Config(length=32).lengths == (32, 64, 128, 256, 512)
    with pytest.raises(ValueError, match="multiple of the interval length l = 4"):
        Figure1Config(lengths=(64, 66))


def test_paper_architecture_has_ten_layers_for_the_4gram():
    from mdmt.empirical.experiments import model_config

    cfg = Figure1Config(model="paper")
    assert model_config(cfg, "preset:4gram-ter:0", 8, causal=False).n_layers == 10
    assert model_config(cfg, "preset:3gram-ter:0", 8, causal=True).n_layers == 8


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["figure1", "--out", str(tmp_path / "x"), "--steps", "8,x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--steps" in err[0]
    assert main(["figure1", "--out", str(tmp_path / "x"), "--kinds", "oracle,bert"]) == 2
    assert "bert" in capsys.readouterr().err


@pytest.mark.integration
def test_cli_oracle_only_run(tmp_path, capsys):
    out = tmp_path / "cli"
    rc = main(["figure1", "--out", str(out), "--kinds", "oracle", "--ter-languages", "preset:2gram-ter",
               "--ser-languages", "", "--steps", "2,4", "--length", "8", "--lengths", "8,16", "--num", "16",
               "--no-progress"])
    assert rc == 0
    text = capsys.readouterr().out
    assert f"#### {TER}: oracle MDM" in text and "| N | L = 8 | L = 16 |" in text and (out / "figure1.md").exists()
    data = json.loads((out / "figure1.json").read_text())
    assert data["provenance"][0]["command"].startswith("mdmt figure1") or data["provenance"][0]["command"]
    assert np.isclose(data["rows"][0]["true_perplexity"], math.exp(data["rows"][0]["entropy_rate"]))


@pytest.mark.integration
def test_interval_counterexample_panel(tmp_path):
    """interval:2: each interval of 2 positions repeats one fair bit (|V| = 2).  A one-step
    sampler draws all L = 16 tokens independently and uniformly (the oracle marginals are
    uniform), so an interval is consistent with probability 1/2 and, by hand,
    SER = 1 - 2^(-8) = 0.99609.  With N = 16 linear-schedule steps the reveal steps are uniform
    on 1..N, the oracle conditions correctly across steps, and an interval fails only when both
    of its positions are revealed at the same step (1/N) and draw different bits (1/2):
    SER = 1 - (1 - 1/32)^8 = 0.22425."""
    res = _run(tmp_path / "iv", ter_languages=(), ser_languages=(IV,), kinds=("oracle", "mdm"), num=400, lengths=(16,))
    rows = {_key(r): r for r in res["rows"]}
    one = rows[(IV, "oracle", 16, 1)]
    assert one["ser_lo"] <= 1 - 2.0**-8 <= one["ser_hi"]
    sixteen = rows[(IV, "oracle", 16, 16)]
    assert sixteen["ser_lo"] <= 1 - (1 - 1 / 32) ** 8 <= sixteen["ser_hi"]
    assert one["entropy_rate"] == pytest.approx(math.log(2) / 2)  # 8 fair bits over 16 tokens
    # The exact oracle SER (interval_closed_forms) agrees with the same hand formulas, and for
    # l = 2 the Theorem 4.4 bound at eps = 0 is attained: every collision is the whole interval.
    assert one["ser_exact_oracle"] == pytest.approx(1 - 2.0**-8)
    assert sixteen["ser_exact_oracle"] == pytest.approx(1 - (1 - 1 / 32) ** 8)
    assert sixteen["ser_lower_bound"] == pytest.approx(sixteen["ser_exact_oracle"])
    assert res["rows"][0]["kl_bound_per_token"] is None  # no Theorem 4.2 chain bound for an HMM
    # The trained MDM's bound uses its measured worst-case per-token KL; a larger eps lowers it.
    eps = res["summaries"][IV]["learning_error"]["max"]
    mdm = rows[(IV, "mdm", 16, 16)]
    assert eps > 0 and mdm["ser_lower_bound"] < sixteen["ser_lower_bound"]
    assert mdm["ser_lower_bound"] == pytest.approx(1 - (1 - math.exp(-2 * eps) / 2 / 16) ** 8)
    with pytest.raises(ValueError, match="multiple of the interval length l = 3"):
        Figure1Config(**{**TOY, "ser_languages": ("interval:3",)})
    # the exact smallest N with SER <= 0.1, by hand for l = 2: (1 - 1/(2N))^(L/2) >= 0.9 at L = 16 first holds at
    # N = 39 (1/(2 (1 - 0.9^(1/8))) = 38.2); the swept N (1, 16) do not reach it
    target = next(t for t in res["targets"] if t["kind"] == "oracle")
    assert target["exact_N"] == 39 and target["exact_what"] == "exact oracle SER" and target["smallest_N"] is None


def test_smallest_steps_takes_the_first_n_from_which_on_the_target_holds():
    from mdmt.empirical.experiments import exact_smallest_steps, smallest_steps

    assert smallest_steps([(8, 0.3), (16, 0.04), (32, 0.06), (64, 0.01), (128, 0.0)], 0.05) == 64  # a dip does not count
    assert smallest_steps([(8, 0.03), (16, 0.2)], 0.05) is None and smallest_steps([(8, 0.0)], 0.05) == 8
    # the chain bound of a 2-gram: the smallest N whose bound is <= 0.05, checked against its neighbour
    from mdmt.bounds.theorems.dependencies import chain_bound
    from mdmt.constructions.reverse.schedules import reveal_probabilities

    N, what = exact_smallest_steps("preset:2gram-ter", "ter", 64, "linear")
    lang_n, V = 2, 8
    assert what == "Theorem 4.2 chain bound"
    assert chain_bound(lang_n, 64, reveal_probabilities("linear", N), V) <= 0.05 < chain_bound(
        lang_n, 64, reveal_probabilities("linear", N - 1), V)

