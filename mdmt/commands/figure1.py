"""``mdmt figure1``: Figure 1 of the paper -- TER and SER of trained and oracle MDMs against N, with AR beside.

For each TER language (threshold-0 n-gram presets) the panel shows the generative perplexity of
samples from the trained MDM and from the oracle MDM at N = 8 ... 2048 ddpm_cache steps, the AR
model's, and the true perplexity exp(H/L); for each SER language (pruned presets, and
``interval-<l>``, the Theorem 4.4 counterexample HMM with interval length l) the sequence
error rate.  Every point is stored as it is computed and training checkpoints as they are
written, so an interrupted run resumes where it stopped: run the same command again.
Outputs in ``--out``: figure1.csv, figure1.png, figure1.json (rows, per-language training
numbers, measured learning error, provenance) and figure1.md (the tables).
"""

from __future__ import annotations

HELP = "Figure 1: TER/SER vs sampling steps N for trained and oracle MDMs and AR (CSV + PNG, resumable)"


def _names(text: str) -> tuple:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def add_arguments(p):
    p.add_argument("--preset", "--model", dest="model", choices=["tiny", "paper"], default="tiny",
                   help="architecture and scale (default tiny, for a CPU; paper = Table 2, for a GPU)")
    p.add_argument("--out", required=True, help="folder of the run (created; an existing run is resumed)")
    p.add_argument("--ter-languages", default="2gram-ter,3gram-ter,4gram-ter",
                   help="comma-separated presets for the perplexity panels (default 2gram-ter,3gram-ter,4gram-ter)")
    p.add_argument("--ser-languages", default="hmm,3gram,interval-4",
                   help="comma-separated presets, or interval-<l> for the Theorem 4.4 counterexample HMM, "
                        "for the SER panels (default hmm,3gram,interval-4; '' for none)")
    p.add_argument("--steps", default="8,16,32,64,128,256,512,1024,2048",
                   help="comma-separated numbers of sampling steps N (default 8,16,...,2048)")
    p.add_argument("--kinds", default="oracle,mdm,ar",
                   help="curves to compute in this run: any of oracle,mdm,ar (default all); "
                        "the figure shows every point present in --out")
    p.add_argument("--length", "-L", type=int, default=None, help="sequence length L (default: the architecture's)")
    p.add_argument("--train-steps", type=int, default=None, help="optimizer steps per model (default: the preset's)")
    p.add_argument("--batch", type=int, default=None, help="training and sampling batch (default: the preset's)")
    p.add_argument("--lr", type=float, default=None,
                   help="peak learning rate (default: the preset's, 1e-3 for tiny and 3e-4 for paper)")
    p.add_argument("--samples", type=int, default=None, help="sequences per point (default: the preset's)")
    p.add_argument("--learning-error-num", type=int, default=None,
                   help="sequences for the measured learning error and the AR KL (default: the preset's)")
    p.add_argument("--schedule", default="linear", help="masking schedule of the sampler (default linear)")
    p.add_argument("--seed", type=int, default=0, help="seed of training, sampling and measurement (default 0)")
    p.add_argument("--language-seed", type=int, default=0, help="seed of the preset languages (default 0)")
    p.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--json", action="store_true", help="print the result as one JSON document")


def run(args) -> int:
    import sys
    from pathlib import Path

    from empirical.experiments import Figure1, Figure1Config, markdown_tables
    from empirical.provenance import describe, record

    from ._common import print_json

    try:
        steps = tuple(int(v) for v in _names(args.steps))
    except ValueError:
        raise ValueError(f"--steps must be comma-separated integers, got {args.steps!r}") from None
    cfg = Figure1Config(model=args.model, ter_languages=_names(args.ter_languages), ser_languages=_names(args.ser_languages),
                        steps=steps, kinds=_names(args.kinds), length=args.length, train_steps=args.train_steps,
                        batch=args.batch, lr=args.lr, samples=args.samples, learning_error_num=args.learning_error_num,
                        seed=args.seed, language_seed=args.language_seed, schedule=args.schedule)
    log = (lambda msg: print(msg, file=sys.stderr)) if args.json else print
    prov = record()
    fig = Figure1(cfg, args.out, device=args.device, progress=not args.no_progress, log=log, provenance=prov)
    result = fig.run()
    md = markdown_tables(result)
    (Path(args.out) / "figure1.md").write_text(
        "\n".join(describe(p) for p in result["provenance"]) + "\n\n" + md)
    if args.json:
        print_json(result)
        return 0
    print(md, end="")
    print(f"{len(result['rows'])} points; {Path(args.out) / 'figure1.csv'}, figure1.png, figure1.json, figure1.md "
          f"({result['seconds_this_run']:.1f} s this run)")
    return 0
