"""``mdmt train``: train an MDM (continuous-time ELBO, SUBS) or its AR baseline on a language (Section 5.1, Appendix E.2).

Sequences are drawn from the language afresh at every step (a function of the seed and the
step), or read from a stored set written by ``mdmt data`` (``--data FOLDER``: epochs of seeded
permutations, the folder's validation set); the validation NLL per token is reported against the
language's entropy rate.  The checkpoint ``OUT/ckpt.pt`` (the whole training configuration,
model, optimizer, scheduler, RNG states, step) lets ``--resume`` continue a stopped run exactly;
``OUT/summary.json`` holds the final numbers.
"""

from __future__ import annotations

from ._common import add_json, add_language, add_model, add_seed, at_least, clean, format_table, print_json

HELP = "train an MDM (ELBO, SUBS) or AR transformer on a language; checkpoint and --resume"


def add_arguments(p):
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--language", metavar="SPEC",
                     help="language: preset:NAME[:SEED], interval:l or a language file")
    src.add_argument("--data", help="a stored data set (mdmt data): its language, L, training and validation sequences")
    add_model(p)
    p.add_argument("--ar", action="store_true", help="train the autoregressive baseline instead of the MDM")
    p.add_argument("--positions", default=None,
                   help="position encoding: rotary+learned (default), rotary or learned")
    p.add_argument("--length", "-L", type=int, default=None, help="sequence length L (default: the architecture's)")
    p.add_argument("--train-steps", type=int, default=200, help="optimizer steps (default 200)")
    p.add_argument("--batch", type=int, default=32, help="batch size (default 32)")
    p.add_argument("--lr", type=float, default=3e-4, help="peak learning rate (default 3e-4)")
    add_seed(p, what=" of initialization, data and noise")
    p.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    p.add_argument("--out", required=True, help="folder for ckpt.pt and summary.json")
    p.add_argument("--resume", action="store_true", help="continue from OUT/ckpt.pt if it exists")
    p.add_argument("--learning-error-num", type=int, default=0, metavar="NUM",
                   help="after training an MDM, measure its learning error on NUM sequences (default 0: no)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_json(p)


def run(args) -> int:
    import json
    from pathlib import Path

    from mdmt.constructions.languages.spec import canonical_spec, language_from_spec
    from mdmt.empirical.data import check_length
    from mdmt.empirical.model import PRESETS, ModelConfig
    from mdmt.empirical.train import TrainConfig, train

    at_least("--train-steps", args.train_steps)
    at_least("--batch", args.batch)
    at_least("--length", args.length)
    at_least("--learning-error-num", args.learning_error_num, 0)
    data = None
    if args.data is not None:
        from mdmt.empirical.data import load, spec_of

        train_set, val_set, manifest = load(args.data)  # ValueError if a file does not match its digest
        spec = spec_of(manifest)
        if args.length is not None and args.length != spec.length:
            raise ValueError(f"--length {args.length} differs from the data set's L = {spec.length}")
        length, language = spec.length, spec.language
        data = (train_set, val_set)
    else:
        language = canonical_spec(args.language)
        length = args.length or PRESETS[args.model]["seq_len"]
        check_length(language, length)
    lang = language_from_spec(language)
    model = ModelConfig.preset(args.model, lang.n_symbols, seq_len=length, causal=args.ar)
    if args.positions is not None:
        model = model.with_(positions=args.positions)  # ValueError names the valid encodings
    cfg = TrainConfig(model=model, language=language, train_steps=args.train_steps, batch=args.batch, lr=args.lr,
                      seed=args.seed)
    out = Path(args.out)
    res = train(cfg, lang, data=data, ckpt_path=out / "ckpt.pt", resume=args.resume, device=args.device,
                progress=not args.no_progress)
    if res.rank != 0:
        return 0  # under torchrun: rank 0 reports and writes summary.json
    summary = {"language": language, "data": args.data, "kind": "ar" if args.ar else "mdm", "model": args.model,
               **res.summary()}
    if args.learning_error_num and not args.ar:
        from mdmt.constructions.reverse.learning import learning_error
        from mdmt.empirical.sampling import MDMDenoiser

        summary["learning_error"] = learning_error(lang, MDMDenoiser(res.model), length, method="monte_carlo",
                                                   num=args.learning_error_num, seed=args.seed + 1)
    (out / "summary.json").write_text(json.dumps(clean(summary), indent=1, allow_nan=False) + "\n")
    if args.json:
        print_json(summary)
        return 0
    rows = [[r["step"], r["train_loss"], r["val_nll"], r["entropy_rate"], r["gap"]] for r in res.history]
    print(format_table(["step", "train loss", "val NLL", "entropy rate", "gap"], rows))
    print(f"{res.step}/{args.train_steps} steps, {res.model.num_parameters()} parameters, checkpoint {res.checkpoint}")
    if "learning_error" in summary:
        le = summary["learning_error"]
        print(f"learning error (nats/token): mean {le['mean']:.4g}, q90 {le['q90']:.4g}, q99 {le['q99']:.4g}, max {le['max']:.4g}")
    return 0
