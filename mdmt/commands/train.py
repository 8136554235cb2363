"""``mdmt train``: train an MDM (continuous-time ELBO, SUBS) or its AR baseline on a language (Section 5, Appendix E.2).

Sequences are drawn from the language afresh at every step (a function of the seed and the
step), or read from a stored set written by ``mdmt data`` (``--data FOLDER``: epochs of seeded
permutations, the folder's validation set); the validation NLL per token is reported against the language's entropy rate.  The
checkpoint ``OUT/ckpt.pt`` (model, optimizer, scheduler, RNG states, step) lets ``--resume``
continue a stopped run exactly; ``OUT/summary.json`` holds the final numbers.
"""

from __future__ import annotations

HELP = "train an MDM (ELBO, SUBS) or AR transformer on a language; checkpoint and --resume"


def add_arguments(p):
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--language", help="language file (JSON/.npz) or preset:NAME[:SEED]")
    src.add_argument("--preset", help="preset language name (e.g. 2gram, 3gram-ter, hmm) or interval-<l>")
    src.add_argument("--data", help="a stored data set (mdmt data): its language, L, training and validation sequences")
    p.add_argument("--language-seed", type=int, default=0, help="seed of the preset language (default 0)")
    p.add_argument("--model", choices=["tiny", "paper"], default="tiny", help="architecture (default tiny; paper = Table 2)")
    p.add_argument("--ar", action="store_true", help="train the autoregressive baseline instead of the MDM")
    p.add_argument("--positions", default=None,
                   help="position encoding: rotary+learned (default), rotary or learned")
    p.add_argument("--length", "-L", type=int, default=None, help="sequence length L (default: the architecture's)")
    p.add_argument("--steps", type=int, default=200, help="optimizer steps (default 200)")
    p.add_argument("--batch", type=int, default=32, help="batch size (default 32)")
    p.add_argument("--lr", type=float, default=3e-4, help="peak learning rate (default 3e-4)")
    p.add_argument("--seed", type=int, default=0, help="seed of initialization, data and noise (default 0)")
    p.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    p.add_argument("--out", required=True, help="folder for ckpt.pt and summary.json")
    p.add_argument("--resume", action="store_true", help="continue from OUT/ckpt.pt if it exists")
    p.add_argument("--learning-error", type=int, default=0, metavar="NUM",
                   help="after training an MDM, measure its learning error on NUM sequences")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def run(args) -> int:
    import json
    from pathlib import Path

    from empirical.model import ModelConfig
    from empirical.train import train

    from ._common import format_table, load_language, print_json, _clean

    data = None
    if args.data is not None:
        from empirical.data import load, spec_of

        train_set, val_set, manifest = load(args.data)  # ValueError if a file does not match its digest
        spec = spec_of(manifest)
        lang = spec.build_language()
        name = f"data:{args.data}"
        if args.length is not None and args.length != spec.length:
            raise ValueError(f"--length {args.length} differs from the data set's L = {spec.length}")
        args.length = spec.length
        data = (train_set, val_set)
    elif args.preset is not None:
        from empirical.data import named_language
        from empirical.model import PRESETS

        lang = named_language(args.preset, args.language_seed, args.length or PRESETS[args.model]["seq_len"])
        name = f"preset:{args.preset}:{args.language_seed}"
    else:
        lang = load_language(args.language)
        name = args.language
    for flag, v in (("--steps", args.steps), ("--batch", args.batch)):
        if v < 1:
            raise ValueError(f"{flag} must be a positive integer, got {v}")
    if args.length is not None and args.length < 1:
        raise ValueError(f"--length must be a positive integer, got {args.length}")
    cfg = ModelConfig.preset(args.model, lang.n_symbols, seq_len=args.length, causal=args.ar)
    if args.positions is not None:
        cfg = cfg.with_(positions=args.positions)  # ValueError names the valid encodings
    out = Path(args.out)
    res = train(cfg, lang, args.steps, args.batch, lr=args.lr, seed=args.seed, ckpt_path=out / "ckpt.pt",
                resume=args.resume, device=args.device, progress=not args.no_progress, data=data)
    if res.rank != 0:
        return 0  # under torchrun: rank 0 reports and writes summary.json
    summary = {"language": name, "kind": "ar" if args.ar else "mdm", "model": args.model, "model_config": cfg.to_dict(),
               "steps": args.steps, "batch": args.batch, "lr": args.lr, "seed": args.seed, **res.summary()}
    if args.learning_error and not args.ar:
        from empirical.metrics import learning_error
        from empirical.sampling import MDMDenoiser

        summary["learning_error"] = learning_error(lang, MDMDenoiser(res.model), cfg.seq_len, num=args.learning_error,
                                                   seed=args.seed + 1)
    (out / "summary.json").write_text(json.dumps(_clean(summary), indent=1, allow_nan=False) + "\n")
    if args.json:
        print_json(summary)
        return 0
    rows = [[r["step"], r["train_loss"], r["val_nll"], r["entropy_rate"], r["gap"]] for r in res.history]
    print(format_table(["step", "train loss", "val NLL", "entropy rate", "gap"], rows))
    print(f"{res.step}/{args.steps} steps, {res.model.num_parameters()} parameters, checkpoint {res.checkpoint}")
    if "learning_error" in summary:
        le = summary["learning_error"]
        print(f"learning error (nats/token): mean {le['mean']:.4g}, q90 {le['q90']:.4g}, q99 {le['q99']:.4g}, max {le['max']:.4g}")
    return 0
