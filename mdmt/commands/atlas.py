"""``mdmt atlas``: the exact KL of every reverse process beside the published bounds, on one small instance."""

from ._common import (add_force, add_json, add_scheduler, add_steps, at_least, check_interval_multiple, format_table,
                      int_list, integer, load_language, name_list, print_json, scheduler_of)

_SHOW = ("process", "expected_nfe", "kl", "ser", "assignment_kl", "chain_bound", "li_cai", "tc_ratio", "dtc_ratio",
         "pb_lower")
_BARS = (("kl", "exact KL(q||p)"), ("assignment_kl", "E[log q/p_traj] (C1)"), ("chain_bound", "chain bound (C4)"),
         ("li_cai", "Li & Cai"), ("pb_lower", "ParallelBench lower"))


def add_arguments(p):
    from mdmt.defaults import ATLAS_PROCESSES, POLICY_FORMS

    p.add_argument("--language", required=True, metavar="SPEC", action="append",
                   help="language: preset:NAME[:SEED] (Table 1), interval:l (the Theorem 4.4 counterexample) or a "
                        "language file (.json/.npz); repeat the option for an atlas of several languages")
    p.add_argument("--length", "-L", required=True, metavar="L,L,...",
                   help="sequence length L, or several, comma-separated (every language at every length)")
    add_steps(p, many=True)
    p.add_argument("--jobs", type=integer, default=1,
                   help="compute the instances (language, L, N) of a sweep on this many worker processes of an "
                        "embedded Dask cluster, one thread each, largest first (default 1: in this process)")
    add_scheduler(p)
    p.add_argument("--processes", default=ATLAS_PROCESSES, metavar="SPEC,SPEC,...",
                   help=f"reverse processes, comma-separated: {POLICY_FORMS} (default: all of them)")
    p.add_argument("--out", help="write atlas.csv, atlas.json (with provenance) and atlas.png into this folder")
    add_force(p)
    add_json(p)


OUTPUTS = ("atlas.csv", "atlas.json", "atlas.png")
SWEEP_KEYS = ("language", "L", "N")  # the columns an atlas of several instances puts first in atlas.csv


def written_by_mdmt() -> dict:
    """How each file of an atlas folder is recognised as mdmt's (the folder rule of --out, docs/reliability.md)."""
    from mdmt.bounds.atlas import COLUMNS
    from mdmt.constructions.outputs import csv_header_starts, json_with_provenance, png_written_by

    return {"atlas.csv": lambda p: csv_header_starts(p, COLUMNS) or csv_header_starts(p, SWEEP_KEYS + COLUMNS),
            "atlas.json": json_with_provenance,
            "atlas.png": lambda p: png_written_by(p, "atlas")}


def _cell(v, mark=None):
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return str(v)
    return f"{v:.4g}" + ("" if mark is None else (" !" if mark is False else ""))


def run(args) -> int:
    if not args.out:
        return _run(args, None)
    from mdmt.constructions.locks import output_lock
    from mdmt.constructions.outputs import check_output_folder
    from mdmt.provenance import record

    name_list("--processes", args.processes, "reverse process")
    # before the work: a file there that mdmt did not write is refused unless --force, and one run writes at a time
    check_output_folder(args.out, files=OUTPUTS, force=args.force, same=written_by_mdmt())
    with output_lock(args.out):
        return _run(args, record())  # the command, commit and machine, taken when the run starts


def _instances(args) -> list[tuple[str, int, int]]:
    """(language SPEC, L, N) of every instance asked for, each language loaded (so a bad SPEC is named) first."""
    specs = [str(v).strip() for v in args.language]
    for spec in specs:
        load_language(spec)
    lengths = int_list("--length", args.length)
    steps = int_list("--steps", args.steps)
    for spec in specs:
        for L in lengths:
            check_interval_multiple(spec, L)
    return [(spec, L, N) for spec in specs for L in lengths for N in steps]


def _run(args, prov) -> int:
    from mdmt.bounds.atlas import atlas_part, atlas_part_cost
    from mdmt.sweep import run_parts

    processes = ",".join(name_list("--processes", args.processes, "reverse process"))
    at_least("--jobs", args.jobs)
    instances = _instances(args)
    parts = [(spec, L, N, processes) for spec, L, N in instances]
    results = [None] * len(parts)
    for k, res in run_parts(atlas_part, parts, jobs=args.jobs, scheduler=scheduler_of(args), desc="atlas instances",
                            costs=[atlas_part_cost(p) for p in parts]):
        results[k] = res
    out = results[0] if len(results) == 1 else {"instances": results}
    if args.out:
        _write(out, args.out, prov)
    if args.json:
        print_json(out)
        return 0
    for k, res in enumerate(results):
        inst = res["instance"]
        print(("\n" if k else "") + f"{inst['language']}, L = {inst['length']}, N = {inst['steps']}: "
              f"H = {inst['entropy']:.6g}, TC = {inst['total_correlation']:.6g}, "
              f"DTC = {inst['dual_total_correlation']:.6g}, sum_i I(X_i; X_-i) = {inst['sum_mutual_information']:.6g} "
              "nats")
        marks = {"chain_bound": "chain_bound_holds", "li_cai": "li_cai_holds", "pb_lower": "pb_holds",
                 "assignment_kl": "assignment_kl_holds"}
        rows = [[r["process"]] + [_cell(r[c], r.get(marks.get(c, ""), None)) for c in _SHOW[1:]] for r in res["rows"]]
        print(format_table(list(_SHOW), rows))
    print("\nnats; '!' marks a bound that fails on this instance (see docs/atlas.md for which assumptions apply);"
          " tc_ratio = KL/(TC/K), dtc_ratio = KL/(DTC/K).")
    return 0


def _write(res: dict, out: str, provenance: dict) -> None:
    import json
    from pathlib import Path

    from mdmt.bounds.atlas import COLUMNS
    from mdmt.constructions.outputs import make_folder, write_csv, write_text

    from ._common import clean

    folder = make_folder(Path(out))
    res["provenance"] = provenance
    results = res.get("instances", [res])
    sweep = "instances" in res
    first = list(SWEEP_KEYS + COLUMNS) if sweep else list(COLUMNS)
    rows = [({"language": r["instance"]["language"], "L": r["instance"]["length"], "N": r["instance"]["steps"]}
             if sweep else {}) | row for r in results for row in r["rows"]]
    keys = first + [k for k in dict.fromkeys(k for r in rows for k in r) if k not in first]
    write_csv(folder / "atlas.csv", keys, [clean(r) for r in rows])
    write_text(folder / "atlas.json", json.dumps(clean(res), indent=1, allow_nan=False) + "\n")
    _plot(results, folder / "atlas.png")


def _plot(results: list, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = results[:MAX_PANELS]
    cols = min(2, len(shown))
    nrows = -(-len(shown) // cols)
    width = max(7, 0.8 * max(len(r["rows"]) for r in shown))
    fig, axes = plt.subplots(nrows, cols, figsize=(width * cols, 4.2 * nrows), squeeze=False)
    for ax, res in zip(axes.ravel(), shown):
        _panel(ax, res)
    for ax in axes.ravel()[len(shown):]:
        ax.set_visible(False)
    fig.tight_layout()
    from mdmt.constructions.outputs import save_figure

    save_figure(fig, path, "atlas", dpi=120)
    plt.close(fig)


MAX_PANELS = 12  # atlas.png draws the first instances of a larger sweep (atlas.csv and atlas.json hold them all)


def _panel(ax, res: dict) -> None:
    import numpy as np

    rows = res["rows"]
    x = np.arange(len(rows))
    width = 0.8 / len(_BARS)
    for b, (key, label) in enumerate(_BARS):
        vals = [r[key] if r[key] is not None and r[key] > 0 else np.nan for r in rows]
        ax.bar(x + (b - (len(_BARS) - 1) / 2) * width, vals, width, label=label)
    ax.set_yscale("log")
    ax.set_xticks(x, [r["process"] for r in rows], rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("nats")
    inst = res["instance"]
    ax.set_title(f"{inst.get('language', '')}  L={inst['length']}  N={inst['steps']}  "
                 f"(TC={inst['total_correlation']:.3g}, DTC={inst['dual_total_correlation']:.3g})", fontsize=9)
    ax.legend(fontsize=7)
