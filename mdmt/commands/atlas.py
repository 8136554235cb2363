"""``mdmt atlas``: the exact KL of every reverse process beside the published bounds, on one small instance, or on
an explicit law at the scale of its support (docs/atlas.md)."""

from ._common import (add_force, add_format, add_json, add_scheduler, add_steps, at_least, check_interval_multiple, format_table,
                      int_list, integer, load_language, name_list, print_json, scheduler_of)

_SHOW = ("process", "expected_nfe", "kl", "ser", "assignment_kl", "chain_bound", "li_cai", "tc_ratio", "dtc_ratio",
         "pb_lower")


def add_arguments(p):
    from mdmt.defaults import ATLAS_PROCESSES, POLICY_FORMS

    p.add_argument("--language", required=True, metavar="SPEC", action="append",
                   help="language: preset:NAME[:SEED] (Table 1), interval:l (the Theorem 4.4 counterexample), "
                        "task:NAME[:PARAMS] or a language file (.json/.npz); repeat the option for an atlas of several languages")
    p.add_argument("--length", "-L", required=True, metavar="L,L,...",
                   help="sequence length L, or several, comma-separated (every language at every length)")
    add_steps(p, many=True)
    p.add_argument("--jobs", type=integer, default=1,
                   help="compute the instances (language, L, N) of a sweep on this many worker processes of an "
                        "embedded Dask cluster, one thread each, largest first (default 1: in this process)")
    add_scheduler(p)
    p.add_argument("--processes", default=ATLAS_PROCESSES, metavar="SPEC,SPEC,...",
                   help=f"reverse processes, comma-separated: {POLICY_FORMS} (default: all of them)")
    p.add_argument("--out", help="write atlas.csv, atlas.json (with provenance) and the figure atlas.png (--format) "
                                 "into this folder")
    add_format(p)
    add_force(p)
    add_json(p)


def outputs(fmt: str = "png") -> tuple:
    """The files an atlas --out folder holds, its figure in format ``fmt``."""
    return tuple(written_by_mdmt(fmt))




def written_by_mdmt(fmt: str = "png") -> dict:
    """How each file of an atlas folder is recognised as mdmt's (the folder rule of --out, docs/reliability.md)."""
    from mdmt.bounds.studies.atlas import COLUMNS, SWEEP_KEYS
    from mdmt.runtime.outputs import csv_header_starts, figure_written_by, json_with_provenance
    from mdmt.plots import figure_files

    return {"atlas.csv": lambda p: csv_header_starts(p, COLUMNS) or csv_header_starts(p, SWEEP_KEYS + COLUMNS),
            "atlas.json": json_with_provenance,
            **{name: lambda p, tag=tag: figure_written_by(p, tag)
               for name, tag in figure_files("atlas.json", fmt).items()}}


def run(args) -> int:
    if not args.out:
        return _run(args, None)
    from mdmt.runtime.locks import output_lock
    from mdmt.runtime.outputs import check_output_folder
    from mdmt.runtime.provenance import record

    name_list("--processes", args.processes, "reverse process")
    # before the work: a file there that mdmt did not write is refused unless --force, and one run writes at a time
    check_output_folder(args.out, files=outputs(args.format), force=args.force, same=written_by_mdmt(args.format))
    with output_lock(args.out):
        return _run(args, record())  # the command, commit and machine, taken when the run starts


def _instances(args) -> tuple[list[str], list[int], list[int]]:
    """The language SPECs, lengths L and step counts N asked for (every instance is one of each), each language
    loaded (so a bad SPEC is named) and each length checked against an interval language first."""
    specs = [str(v).strip() for v in args.language]
    for spec in specs:
        load_language(spec)
    lengths = int_list("--length", args.length)
    steps = int_list("--steps", args.steps)
    for spec in specs:
        for L in lengths:
            check_interval_multiple(spec, L)
    return specs, lengths, steps


def _run(args, prov) -> int:
    from mdmt.bounds.studies.atlas import atlas_sweep

    processes = ",".join(name_list("--processes", args.processes, "reverse process"))
    at_least("--jobs", args.jobs)
    sweep = atlas_sweep(*_instances(args), processes, jobs=args.jobs, scheduler=scheduler_of(args))
    results = sweep["instances"]
    out = results[0] if len(results) == 1 else sweep
    if args.out:
        _write(out, args.out, prov, args.format)
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
        rows = [[r.get(c) for c in _SHOW] for r in res["rows"]]
        flags = [["" if r.get(marks.get(c, ""), None) is not False else " !" for c in _SHOW] for r in res["rows"]]
        print(format_table(list(_SHOW), rows, marks=flags))
    print("\nnats; '!' marks a bound that fails on this instance (see docs/atlas.md for which assumptions apply);"
          " tc_ratio = KL/(TC/K), dtc_ratio = KL/(DTC/K).")
    return 0


def _write(res: dict, out: str, provenance: dict, fmt: str = "png") -> None:
    import json
    from pathlib import Path

    from mdmt.bounds.studies.atlas import COLUMNS, SWEEP_KEYS, sweep_rows
    from mdmt.runtime.outputs import make_folder, write_csv, write_text

    from mdmt.plots import save_figures

    from ._common import clean

    folder = make_folder(Path(out))
    res["provenance"] = provenance
    sweep = "instances" in res
    first = list(SWEEP_KEYS + COLUMNS) if sweep else list(COLUMNS)
    rows = sweep_rows(res) if sweep else res["rows"]
    keys = first + [k for k in dict.fromkeys(k for r in rows for k in r) if k not in first]
    write_csv(folder / "atlas.csv", keys, [clean(r) for r in rows])
    write_text(folder / "atlas.json", json.dumps(clean(res), indent=1, allow_nan=False) + "\n")
    save_figures(res, folder, "atlas.json", fmt)
