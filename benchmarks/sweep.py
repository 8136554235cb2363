"""The sweep engine measured: the cost model against measured part times, scaling on LocalClusters, a paper-scale
estimate.

    python benchmarks/sweep.py [--out docs/results/sweep.md] [--skip-scaling]

1. **Cost model** (``--fit`` is always done): the least-squares fit of log seconds of the 240 oracle points of
   the committed Figure 1 run (docs/results/figure1_tiny) that :data:`mdmt.empirical.experiments.ORACLE_SECONDS`
   and its exponents come from, the model's expected seconds of each part of that run beside its measured
   seconds (the points' own clocks; a language's networks: training wall time and points), their rank
   correlation, and the wall time of those parts on 2 workers, longest first (:func:`mdmt.sweep.lpt_makespan`).
2. **Scaling**: one fixed oracle sweep (4 languages x 3 lengths = 12 parts, about a minute) run in this process, on a
   LocalCluster of 1 worker and on one of 2 workers: wall times, the speed-up, the scheduler's overhead per
   part (wall of 1 worker minus the parts' own seconds, per part), and whether the rows are identical.
3. **Paper scale**: the default languages at L = 64 ... 1024 with 5 seeds, on 64 workers: the oracle parts from
   the cost model scaled by measured / expected of section 1 (longest first), and the networks' training,
   extrapolated from the tiny run's measured throughput by parameters x tokens (CPU seconds; a GPU is the
   realistic worker for them, and this machine has none to measure).

The report (Markdown, with the command, commit and machine) goes to standard output and, with ``--out``, to
that file (written atomically).
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import re
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RUN = ROOT / "docs" / "results" / "figure1_tiny"


PART_LINE = re.compile(r"\] (\S+): (?:networks|oracle at L = (\d+)) done \((\d+) s;")


def committed_parts():
    """(config, {part key: measured seconds}, {part key: part tuple}) of the committed Figure 1 run.

    A part's seconds are those its worker measured, as the run printed them (run.log, the command's
    output); a run without that log falls back to the sum of its points' sampling seconds and its
    networks' training seconds (which leave out the rest of a part: metrics, the assignment KL)."""
    from mdmt.empirical.experiments import Figure1Config

    d = json.loads((RUN / "figure1.json").read_text())
    cfg = Figure1Config(**d["config"])
    roles = {name: "ter" for name in cfg.ter_languages} | {name: "ser" for name in cfg.ser_languages}
    measured, parts = collections.defaultdict(float), {}
    for r in csv.DictReader((RUN / "figure1.csv").open()):
        oracle = r["kind"] == "oracle"
        key = (r["language"], "oracle" if oracle else "networks", int(r["L"]) if oracle else 0)
        measured[key] += float(r["seconds"])
        parts[key] = (0, r["language"], roles[r["language"]], ("oracle",) if oracle else ("mdm", "ar"),
                      (int(r["L"]),) if oracle else ())
    for name, s in d["summaries"].items():
        measured[(name, "networks", 0)] += sum(v["wall_seconds"] for v in s.values()
                                               if isinstance(v, dict) and "wall_seconds" in v)
    log = RUN / "run.log"
    if log.exists():
        logged = {(m.group(1), "oracle" if m.group(2) else "networks", int(m.group(2) or 0)): float(m.group(3))
                  for m in PART_LINE.finditer(log.read_text())}
        if set(logged) == set(measured):
            measured = logged
    return cfg, dict(measured), parts


def cost_model_section() -> tuple[list[str], dict]:
    import numpy as np
    from scipy.stats import spearmanr

    from mdmt.constructions.languages.spec import language_from_spec
    from mdmt.empirical.experiments import (ORACLE_L, ORACLE_N, ORACLE_SECONDS, ORACLE_TER, ORACLE_W, part_seconds,
                                            recursion_work)
    from mdmt.sweep import lpt_makespan

    cfg, measured, parts = committed_parts()
    work = {}
    X, y = [], []
    for r in csv.DictReader((RUN / "figure1.csv").open()):
        if r["kind"] != "oracle":
            continue
        W = work.setdefault(r["language"], recursion_work(language_from_spec(r["language"])))
        L, N = int(r["L"]), int(r["N"])
        X.append([1.0, math.log(L), math.log(min(N, L)), math.log(W), 1.0 if r["role"] == "ter" else 0.0])
        y.append(math.log(float(r["seconds"])))
    coef, *_ = np.linalg.lstsq(np.array(X), np.array(y), rcond=None)
    expected = {k: part_seconds(cfg, parts[k]) for k in measured}
    keys = sorted(measured, key=lambda k: -measured[k])
    rho = spearmanr([measured[k] for k in keys], [expected[k] for k in keys]).statistic
    ratio = {kind: sum(measured[k] for k in keys if k[1] == kind) / sum(expected[k] for k in keys if k[1] == kind)
             for kind in ("oracle", "networks")}
    lines = ["## The cost model against the committed run", "",
             f"Fit of log seconds of the {len(y)} oracle points of `docs/results/figure1_tiny`: "
             f"seconds = {math.exp(coef[0]):.2g} · L^{coef[1]:.2f} · min(N, L)^{coef[2]:.2f} · W^{coef[3]:.2f} · "
             f"{math.exp(coef[4]):.2f}^[TER language] (num = 512); in the code: {ORACLE_SECONDS:.2g} · L^{ORACLE_L} · "
             f"min(N, L)^{ORACLE_N} · W^{ORACLE_W} · {ORACLE_TER}^[TER] (the constant scaled so that the model's "
             "total of these points is their measured total).", "",
             f"Rank correlation (Spearman) of expected and measured seconds over the {len(keys)} parts: **{rho:.2f}**; "
             f"measured / expected in total: oracle parts {ratio['oracle']:.2f}, network parts "
             f"{ratio['networks']:.2f} (the ETA of the progress view rescales by this ratio as parts finish).", "",
             "| part | measured s | expected s |", "| --- | ---: | ---: |"]
    for k in keys[:12]:
        what = "networks" if k[1] == "networks" else f"oracle at L = {k[2]}"
        lines.append(f"| {k[0]}: {what} | {measured[k]:.0f} | {expected[k]:.0f} |")
    total = sum(measured.values())
    lines += ["", f"The run's parts took {total / 60:.1f} worker-minutes. On 2 workers, longest first, they take "
              f"**{lpt_makespan(measured.values(), 2) / 60:.1f} min** (lower bound: half the total, "
              f"{total / 120:.1f} min; the longest part {max(measured.values()) / 60:.1f} min)."]
    return lines, ratio


def _scaling_config():
    from mdmt.empirical.experiments import Figure1Config

    return Figure1Config(kinds=("oracle",), ter_languages=("preset:2gram-ter", "preset:3gram-ter"),
                         ser_languages=("preset:hmm-sparse", "preset:3gram"), lengths=(128, 256, 512),
                         steps=(8, 64, 512), length=128, num=512)


def _strip(rows):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


def scaling_section() -> list[str]:
    from dask.distributed import LocalCluster

    from mdmt.empirical.experiments import Figure1
    from mdmt.sweep import ONE_THREAD

    cfg = _scaling_config()
    langs = [(n, "ter") for n in cfg.ter_languages] + [(n, "ser") for n in cfg.ser_languages]
    results = {}
    for label, jobs, workers in (("this process", 1, 0), ("LocalCluster, 1 worker", 1, 1),
                                 ("LocalCluster, 2 workers", 2, 0)):
        with tempfile.TemporaryDirectory() as tmp:
            cluster = (LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                    env=dict(ONE_THREAD)) if workers else None)
            try:
                fig = Figure1(cfg, Path(tmp) / "run", progress=False, log=lambda *_: None, jobs=jobs,
                              scheduler=cluster.scheduler_address if cluster else None)
                n_parts = len(fig._parts(langs))
                t0 = time.perf_counter()
                res = fig.run()
                wall = time.perf_counter() - t0
            finally:
                if cluster is not None:
                    cluster.close()
            own = sum(r["seconds"] for r in res["rows"])
            results[label] = (wall, own, _strip(res["rows"]))
            print(f"scaling: {label}: {wall:.1f} s", file=sys.stderr)
    base = results["this process"]
    one, two = results["LocalCluster, 1 worker"], results["LocalCluster, 2 workers"]
    same = all(r[2] == base[2] for r in results.values())
    lines = ["## Scaling on this machine", "",
             f"One oracle sweep: {', '.join(n for n, _ in langs)} at L = 128, 256, 512, N = 8, 64, 512, "
             f"512 sequences per point: {n_parts} parts.", "",
             "| run | wall s | parts' own s |", "| --- | ---: | ---: |"]
    lines += [f"| {label} | {w:.1f} | {o:.1f} |" for label, (w, o, _) in results.items()]
    lines += ["", f"Speed-up of 2 workers over 1: **{one[0] / two[0]:.2f}×** (over this process: "
              f"{base[0] / two[0]:.2f}×); the scheduler's overhead per part (1 worker: wall minus the parts' own "
              f"seconds, including the cluster's start and the workers' imports): "
              f"**{(one[0] - one[1]) / n_parts:.2f} s**. Rows identical in the three runs: **{same}**."]
    return lines


def paper_scale_section(ratio: dict) -> list[str]:
    from mdmt.empirical.experiments import Figure1Config, part_seconds, train_config
    from mdmt.empirical.recipes import ARCHITECTURES
    from mdmt.sweep import lpt_makespan

    lengths, seeds, workers = (64, 128, 256, 512, 1024), 5, 64
    cfg = Figure1Config(lengths=lengths)
    oracle = []
    for name in cfg.ter_languages + cfg.ser_languages:
        role = "ter" if name in cfg.ter_languages else "ser"
        for L in lengths:
            oracle += [ratio["oracle"] * part_seconds(cfg, (0, name, role, ("oracle",), (L,)))] * seeds

    def params(arch):
        return 12 * arch["n_layers"] * arch["d_model"] ** 2

    tiny, paper = ARCHITECTURES["tiny"], ARCHITECTURES["paper"]
    t = train_config(Figure1Config(), "preset:2gram-ter", 8, "mdm")
    p = train_config(Figure1Config(model="paper"), "preset:2gram-ter", 8, "mdm")
    scale = (params(paper) * p.train_steps * p.batch * paper["seq_len"]) / (
        params(tiny) * t.train_steps * t.batch * tiny["seq_len"])
    tiny_networks = ratio["networks"] * part_seconds(Figure1Config(), (0, "preset:2gram-ter", "ter", ("mdm", "ar"), ()))
    networks = [tiny_networks * scale] * (6 * seeds)
    return ["## Paper scale on 64 workers (an estimate)", "",
            f"The default six languages at L = {', '.join(map(str, lengths))}, N = 8 … 4096, {seeds} seeds: "
            f"{len(oracle)} oracle parts, {len(networks)} network parts.", "",
            f"* Oracle parts (CPU), from the cost model times the measured / expected ratio above: "
            f"{sum(oracle) / 3600:.1f} worker-hours; on {workers} workers, longest first, "
            f"**{lpt_makespan(oracle, workers) / 60:.0f} min** (the longest part: {max(oracle) / 60:.0f} min).",
            f"* Network parts: the `paper` model (d = {paper['d_model']}, {paper['n_layers']} layers, L = "
            f"{paper['seq_len']}, {p.train_steps} steps) is about {scale:,.0f}× the tiny one in parameters × tokens, "
            f"so {tiny_networks * scale / 86400:,.0f} CPU-days per language and seed, extrapolated from the tiny "
            "run's measured training: these parts need GPU workers, whose speed this machine cannot measure; "
            "with them the oracle parts above bound the sweep's wall time from below."]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="also write the report (Markdown) to this file")
    parser.add_argument("--skip-scaling", action="store_true", help="leave out the LocalCluster runs")
    args = parser.parse_args(argv)
    from mdmt.runtime.provenance import record

    prov = record()
    lines = ["# The sweep engine: cost model, scaling, paper scale", "",
             f"Produced by `python benchmarks/sweep.py` at commit `{prov['commit']}` on "
             f"{prov['machine'].get('cpu', '?')} ({prov['machine'].get('cores', '?')} cores), {prov['started']}.", ""]
    section, ratio = cost_model_section()
    lines += section + [""]
    if not args.skip_scaling:
        lines += scaling_section() + [""]
    lines += paper_scale_section(ratio)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        from mdmt.runtime.outputs import write_text

        write_text(Path(args.out), text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
