"""The sweep engine (mdmt.sweep): the same results in this process and on a Dask cluster, longest expected first,
a killed worker's part rerun elsewhere, the ETA and the makespan worked by hand."""

import os
import signal
import threading
import time

import pytest

from mdmt.sweep import Sweep, lpt_makespan, run_parts, scheduler_address


@pytest.mark.integration
def test_results_are_the_same_in_this_process_and_on_a_local_cluster():
    parts = [(k, 3 * k + 1) for k in range(7)]
    costs = [1, 5, 2, 9, 0, 3, 3]
    serial = run_parts(lambda p: p[0] * p[1], parts, costs=costs)
    order = [i for i, _ in serial]
    assert order == [3, 1, 5, 6, 2, 0, 4]  # longest expected first, ties in part order
    cluster = dict(run_parts(lambda p: p[0] * p[1], parts, jobs=2, costs=costs))
    assert cluster == {i: a * b for i, (a, b) in enumerate(parts)}


@pytest.mark.integration
def test_a_killed_worker_loses_no_part():
    """Kill one worker process of a two-worker LocalCluster while the parts run: Dask reruns its part elsewhere
    and every result arrives, once."""
    from dask.distributed import Client, LocalCluster

    def slow(x):
        import time as _time

        _time.sleep(0.4)
        return x * x

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        pids = sorted(client.run(os.getpid).values())
        got = {}
        sweep = run_parts(slow, list(range(8)), scheduler=cluster.scheduler_address)
        runner = threading.Thread(target=lambda: got.update(dict(sweep)))
        runner.start()
        time.sleep(0.6)  # the first parts are running
        os.kill(pids[0], signal.SIGKILL)
        runner.join(timeout=120)
        client.wait_for_workers(2, timeout=60)
        assert pids[0] not in client.run(os.getpid).values()  # that worker did die (its nanny started another)
    assert not runner.is_alive() and got == {k: k * k for k in range(8)}


def test_the_eta_scales_the_cost_model_by_the_measured_times():
    """By hand: expected 4, 2, 2 s; the first part took 8 s (twice its cost), so the 4 s left are 8 s more on one
    worker and 4 s on two."""
    sweep = Sweep(lambda p: p, [0, 1, 2], costs=[4, 2, 2])
    assert sweep.eta() is None
    sweep.seconds[0] = 8.0
    assert sweep.eta() == 8.0
    sweep.workers = 2
    assert sweep.eta() == 4.0


def test_the_makespan_of_longest_first_by_hand():
    """5, 4, 3, 3, 3 on two workers: 5 | 4 ; 3 to the second (7) ; 3 to the first (8) ; 3 to the second (10)."""
    assert lpt_makespan([3, 5, 3, 4, 3], 2) == 10
    assert lpt_makespan([3, 5, 3, 4, 3], 1) == 18 and lpt_makespan([2, 2], 8) == 2


@pytest.mark.parametrize("address, ok", [("tcp://10.0.0.1:8786", True), ("tls://node-3:8786", True),
                                         ("tcp://host", True), ("8786", False), ("tcp://", False),
                                         ("tcp://a b:1", False), ("http://x:1/path", False)])
def test_scheduler_addresses_are_checked(address, ok, monkeypatch):
    monkeypatch.delenv("MDMT_SCHEDULER", raising=False)
    if ok:
        assert scheduler_address(address) == address
    else:
        with pytest.raises(ValueError, match="expected an address such as tcp://HOST:8786"):
            scheduler_address(address)
    monkeypatch.setenv("MDMT_SCHEDULER", "tcp://from-env:8786")
    assert scheduler_address(None) == "tcp://from-env:8786" and scheduler_address("") is None


def test_bad_costs_are_refused():
    with pytest.raises(ValueError, match="costs: expected 2 finite"):
        Sweep(lambda p: p, [1, 2], costs=[1.0, float("nan")])
    with pytest.raises(ValueError, match="jobs"):
        Sweep(lambda p: p, [1, 2], jobs=0)


@pytest.mark.torch  # the committed run's configuration has networks: reading it checks their settings with torch
def test_the_figure1_cost_model_ranks_the_measured_parts_of_the_committed_run():
    """The cost model (mdmt.empirical.experiments.part_seconds) against the measured seconds of the 30 parts of
    docs/results/figure1_tiny: rank correlation at least 0.8, and totals within 25 % for oracle and network parts."""
    import importlib.util
    from pathlib import Path

    from scipy.stats import spearmanr

    from mdmt.empirical.experiments import part_seconds

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "sweep.py"
    spec = importlib.util.spec_from_file_location("bench_sweep", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    cfg, measured, parts = bench.committed_parts()
    assert len(measured) == 30
    expected = {k: part_seconds(cfg, parts[k]) for k in measured}
    keys = sorted(measured)
    assert spearmanr([measured[k] for k in keys], [expected[k] for k in keys]).statistic >= 0.8
    for kind in ("oracle", "networks"):
        ratio = sum(measured[k] for k in keys if k[1] == kind) / sum(expected[k] for k in keys if k[1] == kind)
        assert 0.8 <= ratio <= 1.25, (kind, ratio)


@pytest.mark.integration
@pytest.mark.parametrize("argv", [
    ["adaptive", "ser", "--interval-lengths", "3", "--intervals", "2,4", "--curve-length", "6", "--num", "50",
     "--policies", "iid,confidence"],
    ["adaptive", "ter", "--language", "preset:2gram-ter", "--lengths", "8,16", "--policies", "iid,confidence",
     "--num", "16"],
])
def test_the_adaptive_studies_give_the_same_numbers_on_a_local_cluster(argv, capsys):
    import json

    from mdmt.cli import main

    outputs = []
    for jobs in ("1", "2"):
        assert main(argv + ["--json", "--no-progress", "--jobs", jobs]) == 0
        out = json.loads(capsys.readouterr().out)
        out.pop("provenance", None)
        outputs.append(out)
    assert outputs[0] == outputs[1]


@pytest.mark.integration
def test_an_atlas_of_several_instances_is_one_sweep(tmp_path, capsys):
    """Repeated --language and comma-separated --length/--steps: every instance, in order, the same on a
    LocalCluster as in this process; atlas.csv starts with language, L, N; one instance keeps the single form."""
    import csv
    import json

    from mdmt.cli import main

    argv = ["atlas", "--language", "interval:2", "--language", "preset:2gram", "-L", "2,4", "-N", "2", "--processes",
            "iid,uniform", "--json"]
    outs = []
    for jobs in ("1", "2"):
        assert main(argv + ["--jobs", jobs]) == 0
        outs.append(json.loads(capsys.readouterr().out))
        outs[-1].pop("provenance", None)
    assert outs[0] == outs[1]
    inst = [(r["instance"]["language"], r["instance"]["length"], r["instance"]["steps"]) for r in outs[0]["instances"]]
    assert inst == [("interval:2", 2, 2), ("interval:2", 4, 2), ("preset:2gram", 2, 2), ("preset:2gram", 4, 2)]
    assert main(argv[:-1] + ["--out", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    with open(tmp_path / "a" / "atlas.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0])[:4] == ["language", "L", "N", "process"] and len(rows) == 8
    assert main(["atlas", "--language", "interval:2", "-L", "4", "-N", "2", "--processes", "iid", "--json"]) == 0
    single = json.loads(capsys.readouterr().out)
    assert "instances" not in single and single["rows"][0]["kl"] == outs[0]["instances"][1]["rows"][0]["kl"]


@pytest.mark.integration
def test_a_figure1_run_resumed_on_a_local_cluster_recomputes_only_what_is_missing(tmp_path):
    """An oracle Figure 1 run, half of its points then deleted (an interrupted run), resumed with 2 Dask workers:
    the same rows as the run in one process, and the points that were kept are not rewritten."""
    import shutil

    from mdmt.empirical.experiments import Figure1, Figure1Config

    cfg = Figure1Config(kinds=("oracle",), ter_languages=("preset:2gram-ter",), ser_languages=("interval:2",),
                        lengths=(8, 16), steps=(2, 8), length=8, num=32)
    quiet = dict(progress=False, log=lambda *_: None)
    first = Figure1(cfg, tmp_path / "a", **quiet).run()
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    points = sorted((tmp_path / "b" / "rows").glob("*.json"))
    kept = {p: p.stat().st_mtime_ns for p in points[::2]}
    for p in points[1::2]:
        p.unlink()
    resumed = Figure1(cfg, tmp_path / "b", jobs=2, **quiet).run()

    def strip(rows):
        return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]

    assert strip(resumed["rows"]) == strip(first["rows"]) and len(points) == 8
    assert all(p.stat().st_mtime_ns == t for p, t in kept.items())


def test_jobs_auto_takes_every_core_only_for_a_run_worth_a_cluster(monkeypatch):
    """auto_jobs by hand: 1 below a minute of expected work or for one part; else one worker per usable core, at
    most one per part.  The default Figure 1 (its cost model: about 110 worker-minutes) gets both cores of the
    2-core machine; a toy run stays in this process."""
    import mdmt.sweep as sweep
    from mdmt.empirical.experiments import Figure1Config, part_seconds

    monkeypatch.setattr(sweep, "usable_cores", lambda: 2)
    assert sweep.auto_jobs(59.9, 30) == 1 and sweep.auto_jobs(1e6, 1) == 1 and sweep.auto_jobs(float("nan"), 5) == 1
    assert sweep.auto_jobs(60.0, 30) == 2
    monkeypatch.setattr(sweep, "usable_cores", lambda: 8)
    assert sweep.auto_jobs(1e4, 3) == 3 and sweep.auto_jobs(1e4, 30) == 8
    cfg = Figure1Config(kinds=("oracle",))
    langs = [(n, "ter") for n in cfg.ter_languages] + [(n, "ser") for n in cfg.ser_languages]
    parts = [(i, n, r, ("oracle",), (L,)) for i, (n, r) in enumerate(langs) for L in cfg.lengths]
    assert sum(part_seconds(cfg, p) for p in parts) > sweep.AUTO_SECONDS
    toy = Figure1Config(kinds=("oracle",), ter_languages=("preset:2gram-ter",), ser_languages=(), lengths=(16,),
                        steps=(2, 4), num=32)
    assert part_seconds(toy, (0, "preset:2gram-ter:0", "ter", ("oracle",), (16,))) < sweep.AUTO_SECONDS


def test_figure1_jobs_flag_takes_auto_or_a_positive_integer(tmp_path, capsys):
    from mdmt.cli import main

    for bad, message in (("0", "--jobs must be an integer >= 1, got 0"), ("two", "--jobs")):
        assert main(["figure1", "--kinds", "oracle", "--out", str(tmp_path / bad), "--jobs", bad]) != 0
        assert message in capsys.readouterr().err
