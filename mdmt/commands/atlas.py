"""``mdmt atlas``: the exact KL of every reverse process beside the published bounds, on one small instance."""

from ._common import (add_force, add_json, add_language, add_length, add_steps, format_table, load_language,
                      name_list, print_json)

_SHOW = ("process", "expected_nfe", "kl", "ser", "assignment_kl", "chain_bound", "li_cai", "tc_ratio", "dtc_ratio",
         "pb_lower")
_BARS = (("kl", "exact KL(q||p)"), ("assignment_kl", "E[log q/p_traj] (C1)"), ("chain_bound", "chain bound (C4)"),
         ("li_cai", "Li & Cai"), ("pb_lower", "ParallelBench lower"))


def add_arguments(p):
    from mdmt.defaults import ATLAS_PROCESSES, POLICY_FORMS

    add_language(p)
    add_length(p)
    add_steps(p)
    p.add_argument("--processes", default=ATLAS_PROCESSES, metavar="SPEC,SPEC,...",
                   help=f"reverse processes, comma-separated: {POLICY_FORMS} (default: all of them)")
    p.add_argument("--out", help="write atlas.csv, atlas.json (with provenance) and atlas.png into this folder")
    add_force(p)
    add_json(p)


OUTPUTS = ("atlas.csv", "atlas.json", "atlas.png")


def written_by_mdmt() -> dict:
    """How each file of an atlas folder is recognised as mdmt's (the folder rule of --out, docs/reliability.md)."""
    from mdmt.bounds.atlas import COLUMNS
    from mdmt.constructions.outputs import csv_header_starts, json_with_provenance, png_written_by

    return {"atlas.csv": lambda p: csv_header_starts(p, COLUMNS), "atlas.json": json_with_provenance,
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


def _run(args, prov) -> int:
    from mdmt.bounds.atlas import atlas

    processes = ",".join(name_list("--processes", args.processes, "reverse process"))
    lang = load_language(args.language)
    res = atlas(lang, args.length, args.steps, processes)
    res["instance"]["language"] = args.language
    if args.out:
        _write(res, args.out, prov)
    if args.json:
        print_json(res)
        return 0
    inst = res["instance"]
    print(f"{args.language}, L = {args.length}, N = {args.steps}: H = {inst['entropy']:.6g}, "
          f"TC = {inst['total_correlation']:.6g}, DTC = {inst['dual_total_correlation']:.6g}, "
          f"sum_i I(X_i; X_-i) = {inst['sum_mutual_information']:.6g} nats")
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
    keys = list(COLUMNS) + [k for k in dict.fromkeys(k for r in res["rows"] for k in r) if k not in COLUMNS]
    write_csv(folder / "atlas.csv", keys, [clean(r) for r in res["rows"]])
    write_text(folder / "atlas.json", json.dumps(clean(res), indent=1, allow_nan=False) + "\n")
    _plot(res, folder / "atlas.png")


def _plot(res: dict, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rows = res["rows"]
    x = np.arange(len(rows))
    width = 0.8 / len(_BARS)
    fig, ax = plt.subplots(figsize=(max(7, 0.8 * len(rows)), 4.2))
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
    fig.tight_layout()
    from mdmt.constructions.outputs import save_figure

    save_figure(fig, path, "atlas", dpi=120)
    plt.close(fig)
