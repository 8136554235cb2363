"""``mdmt figure1``: Figure 1 of the paper -- TER and SER of MDMs against the steps N, at several lengths L.

For each TER language (threshold-0 n-gram presets) the figure shows the TER gap
ln(generative perplexity) - H/L of samples from the oracle MDM at N = 8 ... 4096 ddpm_cache
steps for every length of ``--lengths``, and from the MDM and its AR twin trained at ``--length``;
for each SER language (pruned presets, ``hmm-sparse``, and ``interval:l``, the Theorem 4.4
counterexample HMM) the sequence error rate, with the exact oracle SER of the interval HMM
beside its Monte Carlo value.  A third row plots, against L, the smallest N at which the oracle
reaches TER gap <= 0.05 nats/token or SER <= 0.1 (flat for TER, growing for SER), with the exact
values where a closed form exists.  Every point is stored as it is computed and training
checkpoints as they are written, so an interrupted run resumes where it stopped: run the same
command again.  Outputs in ``--out``: figure1.csv, figure1.json (rows, per-language training
numbers, measured learning error, steps to target, provenance), figure1.md, and two figures
(``--format`` png, pdf or svg): figure1.png, the TER-gap view above, and figure1_paper.png, the
paper's own axes (generative perplexity and SER against N at the training length, the AR model
as a horizontal line); both drawn by :mod:`mdmt.plots`.
"""

from __future__ import annotations

from ._common import (add_force, add_format, add_json, jobs_value, add_length, add_model, add_schedule, add_scheduler, add_seed, add_steps,
                      at_least, int_list, integer, name_list, names, print_json, scheduler_of)


def add_arguments(p):
    add_model(p)
    p.add_argument("--out", required=True, help="folder of the run (created; an existing run is resumed)")
    add_force(p)
    p.add_argument("--ter-languages", default="preset:2gram-ter,preset:3gram-ter,preset:4gram-ter", metavar="SPEC,...",
                   help="comma-separated language SPECs for the perplexity panels "
                        "(default preset:2gram-ter,preset:3gram-ter,preset:4gram-ter)")
    p.add_argument("--ser-languages", default="preset:hmm-sparse,preset:3gram,interval:4", metavar="SPEC,...",
                   help="comma-separated language SPECs for the SER panels, interval:l for the Theorem 4.4 "
                        "counterexample (default preset:hmm-sparse,preset:3gram,interval:4; '' for none)")
    add_steps(p, required=False, default="8,16,32,64,128,256,512,1024,2048,4096", many=True)
    p.add_argument("--lengths", default="64,128,256,512", metavar="L,L,...",
                   help="comma-separated lengths L of the oracle curves (default 64,128,256,512)")
    p.add_argument("--kinds", default="oracle,mdm,ar",
                   help="curves to compute in this run: any of oracle,mdm,ar (default all); "
                        "the figure shows every point present in --out")
    add_length(p, required=False, help="sequence length L of the trained networks (default: the architecture's)")
    p.add_argument("--train-steps", type=integer, default=None,
                   help="optimizer steps per model (default: the architecture's recipe)")
    p.add_argument("--batch", type=integer, default=None, help="training and sampling batch (default: the recipe's)")
    p.add_argument("--lr", type=float, default=None, help="peak learning rate (default: the recipe's)")
    p.add_argument("--estimator", choices=("count", "time", "harmonic"), default=None,
                   help="NELBO estimator of the MDM's training (default: the recipe's)")
    p.add_argument("--num", "-M", type=integer, default=None, help="number of samples per point (default: the scale's)")
    p.add_argument("--learning-error-num", type=integer, default=None,
                   help="sequences for the measured learning error and the AR KL (default: the scale's)")
    add_schedule(p)
    add_seed(p, what=" of training, sampling and measurement")
    p.add_argument("--jobs", type=jobs_value, default="auto",
                   help="compute the run's parts (each language's networks with their points, its oracle "
                        "curve at each length) on this many worker processes of an embedded Dask cluster, one torch "
                        "and one numba thread each, longest expected first; auto: one per usable core when the "
                        "parts are expected to take a minute or more, else this process (default auto)")
    add_scheduler(p)
    p.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_format(p)
    add_json(p)


def written_by_mdmt(cfg, fmt: str = "png") -> dict:
    """The files of a figure1 folder that the folder rule checks, and how each is recognised as mdmt's.

    The points (``rows/``) and checkpoints are never written over: a point present is kept if its stamp checks
    (any other is refused, :func:`mdmt.empirical.experiments.read_point`), and a checkpoint is resumed only if
    its digest checks.
    """
    from mdmt.runtime.outputs import csv_header_starts, figure_written_by, read_json_document
    from mdmt.empirical.experiments import needs_networks, slug
    from mdmt.plots import figure_files

    def json_keys(*keys):
        def test(path):
            doc = read_json_document(path)
            return isinstance(doc, dict) and all(k in doc for k in keys)
        return test

    def md(p):
        with open(p, encoding="utf-8", errors="replace") as fh:
            return fh.readline(256).startswith("Command: `")

    same = {"config.json": json_keys("result_settings"), "figure1.json": json_keys("config", "rows", "provenance"),
            "figure1.csv": lambda p: csv_header_starts(p, ("language", "role", "kind", "N", "L")),
            "figure1.md": md}
    for name, tag in figure_files("figure1.json", fmt).items():
        same[name] = lambda p, tag=tag: figure_written_by(p, tag)
    if needs_networks(cfg.kinds):
        for spec in cfg.ter_languages + cfg.ser_languages:
            same[f"{slug(spec)}/summary.json"] = json_keys("language", "role")
    return same


def run(args) -> int:
    import sys
    from pathlib import Path

    from mdmt.runtime.locks import output_lock
    from mdmt.runtime.outputs import check_output_folder, write_text
    from mdmt.empirical.experiments import Figure1, Figure1Config, markdown_tables
    from mdmt.runtime.provenance import describe, record

    if not names(args.ter_languages) and not names(args.ser_languages):
        raise ValueError("--ter-languages and --ser-languages are both empty: give at least one language")
    cfg = Figure1Config(model=args.model, ter_languages=names(args.ter_languages), ser_languages=names(args.ser_languages),
                        steps=tuple(int_list("--steps", args.steps)), lengths=tuple(int_list("--lengths", args.lengths)),
                        kinds=name_list("--kinds", args.kinds, "curve kind"), length=args.length,
                        train_steps=args.train_steps, batch=args.batch,
                        lr=args.lr, estimator=args.estimator, num=args.num, learning_error_num=args.learning_error_num,
                        seed=args.seed, schedule=args.schedule)
    log = (lambda msg: print(msg, file=sys.stderr)) if args.json else print
    prov = record()
    jobs = None if args.jobs == "auto" else at_least("--jobs", args.jobs)
    scheduler = scheduler_of(args)
    # before the work: a file there that mdmt did not write is refused unless --force, and one run writes at a time
    same = written_by_mdmt(cfg, args.format)
    check_output_folder(args.out, files=list(same), force=args.force, same=same)
    with output_lock(args.out):
        fig = Figure1(cfg, args.out, device=args.device, progress=not args.no_progress, log=log, provenance=prov,
                      jobs=jobs, scheduler=scheduler, figure_format=args.format)
        result = fig.run()
        md = markdown_tables(result)
        write_text(Path(args.out) / "figure1.md", "\n".join(describe(p) for p in result["provenance"]) + "\n\n" + md)
    if args.json:
        print_json(result)
        return 0
    print(md, end="")
    print(f"{len(result['rows'])} points; {Path(args.out) / 'figure1.csv'}, figure1.json, figure1.md, "
          f"figure1.{args.format}, figure1_paper.{args.format} "
          f"({result['seconds_this_run']:.1f} s this run)")
    return 0
