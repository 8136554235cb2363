"""``mdmt samplers``: the network calls each sampler needs for a target SER against L (docs/samplers.md)."""

from ._common import (add_force, add_format, add_json, add_num, add_scheduler, add_seed, at_least, check_interval_multiple,
                      format_table, int_list, integer, load_language, print_json, scheduler_of)

COLUMNS = ["language", "panel", "L", "sampler", "steps", "calls", "ser", "ci", "method", "reached"]


def add_arguments(p):
    from mdmt.bounds.studies.samplers import SAMPLERS

    p.add_argument("--language", required=True, metavar="SPEC", action="append",
                   help="language: preset:NAME[:SEED] (Table 1), interval:l (the Theorem 4.4 counterexample) or a "
                        "language file (.json/.npz); repeat the option for several languages")
    p.add_argument("--lengths", default="6,12,24,48",
                   help="lengths L, comma-separated (default 6,12,24,48); an explicit law (task:...) is studied at "
                        "its own length: give a task at several sizes as several --language")
    p.add_argument("--samplers", default=SAMPLERS, metavar="SPEC,SPEC,...",
                   help=f"samplers, comma-separated: policy SPECs, verified (one block for the rest) and ar "
                        f"(default {SAMPLERS})")
    p.add_argument("--target", type=float, default=0.1, help="SER target (default 0.1)")
    add_num(p, 500, "Monte Carlo samples per point (where the exact law is out of reach)")
    add_seed(p)
    p.add_argument("--jobs", type=integer, default=1,
                   help="compute the (language, L, sampler) parts on this many worker processes of an embedded Dask "
                        "cluster, one thread each, longest expected first (default 1: in this process)")
    add_scheduler(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar on standard error")
    p.add_argument("--out", help="write samplers.csv, samplers.json (with provenance) and the figure samplers.png "
                                 "(--format) into this folder")
    add_format(p)
    add_force(p)
    add_json(p)


def written_by_mdmt(fmt: str = "png") -> dict:
    """The files of a samplers folder and how each is recognised as mdmt's (the folder rule of --out)."""
    from mdmt.plots import figure_files
    from mdmt.runtime.outputs import csv_header_is, figure_written_by, json_with_provenance

    return {"samplers.csv": lambda p: csv_header_is(p, COLUMNS), "samplers.json": json_with_provenance,
            **{f: lambda p, tag=tag: figure_written_by(p, tag) for f, tag in figure_files("samplers.json", fmt).items()}}


def run(args) -> int:
    from mdmt.bounds.studies.samplers import samplers_study, study_lengths
    from mdmt.constructions.reverse.policies import split_policies

    specs = [s.strip() for s in args.language]
    for s in specs:
        load_language(s)
    lengths = int_list("--lengths", args.lengths)
    for s in specs:
        for L in lengths:
            check_interval_multiple(s, L, "--lengths")
    L_max = max(max(study_lengths(s, lengths)) for s in specs)
    samplers = split_policies(args.samplers)
    if not samplers:
        raise ValueError(f"--samplers must list at least one sampler, got {args.samplers!r}")
    if not (0 < args.target < 1):
        raise ValueError(f"--target must be an SER in (0, 1), got {args.target!r}")
    at_least("--num", args.num, 2)
    at_least("--jobs", args.jobs)
    from mdmt.runtime.resources import check_memory, check_work

    # a Monte Carlo point keeps (num, L) arrays; a search runs up to 16 L steps of them
    check_memory(f"--num {args.num} samples of --lengths {L_max}", 64 * args.num * L_max,
                 "use a smaller --num or --lengths")
    check_work(f"--num {args.num} samples of --lengths {L_max} ({len(samplers)} samplers, {len(specs)} languages)",
               16 * 16 * args.num * L_max * L_max * len(samplers) * len(specs), "use a smaller --num, --lengths or fewer --samplers")
    if args.out:
        from mdmt.runtime.locks import output_lock
        from mdmt.runtime.outputs import check_output_folder
        from mdmt.runtime.provenance import record

        same = written_by_mdmt(args.format)
        check_output_folder(args.out, files=list(same), force=args.force, same=same)
        with output_lock(args.out):
            prov = record()
            res = samplers_study(specs, lengths, samplers, target=args.target, num=args.num, seed=args.seed,
                                 jobs=args.jobs, scheduler=scheduler_of(args), progress=not args.no_progress)
            _write(res, args.out, prov, args.format)
    else:
        res = samplers_study(specs, lengths, samplers, target=args.target, num=args.num, seed=args.seed, jobs=args.jobs,
                             scheduler=scheduler_of(args), progress=not args.no_progress)
    if args.json:
        print_json(res)
        return 0
    for lang in specs:
        rows = [r for r in res["rows"] if r["language"] == lang]
        print(f"{lang}: network calls for SER <= {args.target:g} ('-' = not reached; * = Monte Carlo)")
        table = []
        Ls = study_lengths(lang, lengths)
        for s in samplers:
            cells = []
            for L in Ls:
                r = next(r for r in rows if r["L"] == L and r["sampler"] == s)
                mark = "" if r["method"] == "exact" else "*"
                cells.append(f"{r['calls']:.3g}{mark}" if r["reached"] else "-")
            table.append([s] + cells)
        print(format_table(["sampler"] + [f"L={L}" for L in Ls], table, left=(0,)))
    return 0


def _write(res, out, provenance, fmt="png"):
    import json
    from pathlib import Path

    from mdmt.plots import save_figures
    from mdmt.runtime.outputs import make_folder, write_csv, write_text

    from ._common import clean

    folder = make_folder(Path(out))
    res["provenance"] = provenance
    write_csv(folder / "samplers.csv", COLUMNS, [clean({k: r.get(k) for k in COLUMNS}) for r in res["rows"]])
    write_text(folder / "samplers.json", json.dumps(clean(res), indent=1, allow_nan=False) + "\n")
    save_figures(res, folder, "samplers.json", fmt)
