"""``mdmt train``: train an MDM (continuous-time NELBO, SUBS) or its AR baseline on a language (Section 5.1, Appendix E.2).

Sequences are drawn from the language afresh at every step (a function of the seed and the
step), or read from a stored set written by ``mdmt data`` (``--data FOLDER``: epochs of seeded
permutations, the folder's validation set).  The defaults are the recipe of the architecture
(``--model``; :data:`mdmt.empirical.train.RECIPES`).  Validation reports the paired gap: the
model's NLL (the NELBO for an MDM) minus the exact -ln q(x) of the same validation sequences,
per token, with its 95% interval.

``OUT/ckpt.pt`` (digest in ``OUT/ckpt.pt.sha256``) is written every ``--ckpt-every`` steps, at
the end, and on SIGINT/SIGTERM; ``--resume`` continues a stopped run exactly, and extends a
finished one when ``--train-steps`` is larger (a new learning-rate cycle over the added steps).
When resuming, settings not given on the command line are taken from the checkpoint.
``OUT/summary.json`` holds the final numbers with their provenance (command, commit, machine,
versions).  A bad ``--out`` is reported before training starts; a non-finite loss stops
training with an error and keeps the last good checkpoint.
"""

from __future__ import annotations

from ._common import (integer, add_force, add_json, add_model, at_least, clean, format_table, learning_error_line, print_json,
                      seed_value)


def add_arguments(p):
    src = p.add_mutually_exclusive_group()
    src.add_argument("--language", metavar="SPEC",
                     help="language: preset:NAME[:SEED], interval:l, task:NAME[:PARAMS] or a language file (with --resume: "
                          "default the checkpoint's)")
    src.add_argument("--data", help="a stored data set (mdmt data): its language, L, training and validation sequences")
    add_model(p)
    p.set_defaults(model=None)  # None: not given, so a resume can tell an explicit --model from the default tiny
    p.add_argument("--ar", action="store_true", help="train the autoregressive baseline instead of the MDM")
    p.add_argument("--positions", default=None,
                   help="position encoding: rotary+learned (default), rotary or learned")
    p.add_argument("--neighbours", type=integer, default=None, metavar="K",
                   help="embed the tokens at offsets -K..K of each position (AR: -K..-1) as well; 0: off "
                        "(default: the architecture's)")
    p.add_argument("--window", type=integer, default=None, metavar="W",
                   help="embed the joint ids of each run of W consecutive tokens inside those offsets (AR: -K..0) as "
                        "well; 0: off (default: the architecture's)")
    p.add_argument("--recurrent", type=integer, default=None, metavar="H",
                   help="a GRU of H units over the embeddings before the transformer blocks (both directions in the "
                        "MDM, forward in the AR model); 0: off (default: the architecture's)")
    p.add_argument("--hmm-states", type=integer, default=None, metavar="S",
                   help="an HMM layer of S hidden states: a learned HMM whose exact posterior (MDM) or filter (AR) "
                        "is added to the output logits; 0: off (default: the architecture's)")
    p.add_argument("--ngram", type=integer, default=None, metavar="N",
                   help="an n-gram layer of order N: a learned n-gram table whose exact posterior (MDM) or next-token "
                        "law (AR) is added to the output logits; 0: off (default: the architecture's)")
    p.add_argument("--length", "-L", type=integer, default=None, help="sequence length L (default: the architecture's)")
    p.add_argument("--train-steps", type=integer, default=None,
                   help="optimizer steps (default: the architecture's recipe; with --resume, more steps extend a "
                        "finished run)")
    p.add_argument("--batch", type=integer, default=None, help="batch size (default: the recipe's)")
    p.add_argument("--lr", type=float, default=None, help="peak learning rate (default: the recipe's)")
    p.add_argument("--table-lr", type=float, default=None, metavar="X",
                   help="the n-gram layer's table learns at X times the learning rate (default: the recipe's)")
    p.add_argument("--estimator", choices=("count", "time", "harmonic"), default=None,
                   help="NELBO estimator of the MDM: count (m masked positions, m uniform, weight L/m), time "
                        "(MDLM's t ~ U(0,1), weight 1/t) or harmonic (P(m) ~ 1/m, weight H_L) (default: the recipe's)")
    p.add_argument("--seed", type=seed_value, default=None,
                   help="random seed of initialization, data and noise (default 0)")
    p.add_argument("--ckpt-every", type=integer, default=None, metavar="K",
                   help="write the checkpoint every K steps (default: every train-steps/20)")
    p.add_argument("--num-val", type=integer, default=None,
                   help="number of validation sequences for the paired validation gap (default 256)")
    p.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    p.add_argument("--out", required=True, help="folder for ckpt.pt and summary.json")
    add_force(p)
    p.add_argument("--resume", action="store_true",
                   help="continue OUT/ckpt.pt (or extend it to a larger --train-steps) if it exists")
    p.add_argument("--learning-error-num", type=integer, default=0, metavar="NUM",
                   help="after training an MDM, measure its learning error on NUM sequences (default 0: no)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_json(p)


def _config(args, language: str, length: int, lang, resumed):
    """The TrainConfig of the command line; with a checkpoint to resume, its settings fill what is not given."""
    from mdmt.empirical.model import ModelConfig
    from mdmt.empirical.train import RECIPES, TrainConfig

    if resumed is not None:
        base = resumed
    else:
        name = args.model or "tiny"
        base = TrainConfig(model=ModelConfig.preset(name, lang.n_symbols, seq_len=length, causal=args.ar),
                           language=language, **RECIPES[name])
    arch = {k: v for k, v in (("positions", args.positions), ("neighbours", args.neighbours),
                                          ("window", args.window), ("recurrent", args.recurrent),
                                          ("hmm_states", args.hmm_states), ("ngram", args.ngram)) if v is not None}
    model = base.model.with_(**arch)  # ModelConfig names the valid values; a resume names the settings that differ
    changes = {k: v for k, v in (("train_steps", args.train_steps), ("batch", args.batch), ("lr", args.lr),
                                 ("estimator", args.estimator), ("seed", args.seed), ("ckpt_every", args.ckpt_every),
                                 ("val_size", args.num_val), ("table_lr", args.table_lr)) if v is not None}
    if resumed is not None and args.language is not None:
        changes["language"] = language
    return base.with_(model=model, **changes)


_SHAPE = ("d_model", "n_layers", "n_heads")  # what a --model preset fixes beyond the flags a resume may keep


def _preset_of(model) -> str | None:
    """The ``--model`` preset whose shape (width, depth, heads) a checkpoint's ModelConfig has, or None."""
    from mdmt.empirical.model import PRESETS

    return next((name for name, arch in PRESETS.items() if all(getattr(model, k) == arch[k] for k in _SHAPE)), None)


def _shape(arch: dict) -> str:
    """``d_model 64, 2 layers, 4 heads``."""
    return f"d_model {arch['d_model']}, {arch['n_layers']} layers, {arch['n_heads']} heads"


def check_resume(args, resumed, language: str, length: int, out) -> None:
    """Refuse a resume whose command line disagrees with the checkpoint in ``out``, naming the setting and both values.

    Compared: the kind (``--ar``), ``--length`` (given, or a ``--data`` set's L), ``--model`` (when
    given) and the language (``--language`` or a ``--data`` set's).  Settings not given are taken
    from the checkpoint; the other settings (architecture flags, recipe) are compared by
    :func:`mdmt.empirical.train.train`.
    """
    where = f"--out {out} holds a checkpoint"
    kind = "AR" if resumed.model.causal else "MDM"
    if args.ar != resumed.model.causal:
        asked = "--ar asks for an AR model" if args.ar else "without --ar the model is an MDM"
        raise ValueError(f"{asked}, but {where} of an {kind} model; {'drop' if args.ar else 'add'} --ar to resume it")
    if length != resumed.model.seq_len:
        flag = f"--length {args.length}" if args.length is not None else f"--data {args.data} (L = {length})"
        raise ValueError(f"{flag} differs from L = {resumed.model.seq_len} of the checkpoint: {where} trained at "
                         f"L = {resumed.model.seq_len}; drop the flag or choose another --out")
    if args.model is not None:
        from mdmt.empirical.model import PRESETS

        arch, held = PRESETS[args.model], {k: getattr(resumed.model, k) for k in _SHAPE}
        if any(held[k] != arch[k] for k in _SHAPE):
            found = _preset_of(resumed.model)
            raise ValueError(f"--model {args.model} ({_shape(arch)}) differs from the checkpoint's architecture: "
                             f"{where} of {f'--model {found}' if found else 'another shape'} ({_shape(held)}); "
                             "drop --model or choose another --out")
    if resumed.language is not None and language != resumed.language:
        flag = f"--language {args.language}" if args.data is None else f"--data {args.data} (language {language})"
        raise ValueError(f"{flag} differs from the checkpoint's language {resumed.language}: {where} trained on "
                         f"{resumed.language}; drop the flag or choose another --out")


def written_by_mdmt() -> dict:
    """The files of a train --out folder that the folder rule checks, and how each is recognised as mdmt's.

    ``ckpt.pt`` itself is never overwritten: an existing one is resumed (``--resume``, which checks its
    digest) or refused.
    """
    from mdmt.runtime.outputs import json_with_provenance

    def digest(p) -> bool:  # mdmt's own format, sha256sum's or upper-case hex (mdmt.empirical.checkpoint)
        from mdmt.empirical.checkpoint import MAX_DIGEST_BYTES, parse_digest

        return p.stat().st_size <= MAX_DIGEST_BYTES and parse_digest(p.read_bytes()) is not None

    return {"summary.json": json_with_provenance, "ckpt.pt.sha256": digest}


def run(args) -> int:
    import os
    from contextlib import nullcontext

    from mdmt.runtime.locks import output_lock
    from mdmt.runtime.outputs import check_output_folder

    # before the work: a file there that mdmt did not write is refused unless --force, and one run writes at a
    # time (under torchrun, rank 0 holds the lock for all ranks)
    same = written_by_mdmt()
    check_output_folder(args.out, files=list(same), force=args.force, same=same)
    with output_lock(args.out) if os.environ.get("RANK", "0") == "0" else nullcontext():
        return _run(args)


def _run(args) -> int:
    import sys
    from pathlib import Path

    from mdmt.constructions.languages.spec import canonical_spec, language_from_spec
    from mdmt.empirical.checkpoint import check_writable, read_checkpoint
    from mdmt.empirical.data import check_length
    from mdmt.empirical.model import PRESETS
    from mdmt.empirical.train import TrainConfig, TrainingInterrupted, train
    from mdmt.runtime.provenance import record

    for flag, value, least in (("--train-steps", args.train_steps, 1), ("--batch", args.batch, 1),
                               ("--length", args.length, 1), ("--learning-error-num", args.learning_error_num, 0),
                               ("--seed", args.seed, 0), ("--ckpt-every", args.ckpt_every, 1),
                               ("--neighbours", args.neighbours, 0), ("--window", args.window, 0),
                               ("--recurrent", args.recurrent, 0), ("--hmm-states", args.hmm_states, 0),
                               ("--ngram", args.ngram, 0),
                               ("--num-val", args.num_val, 1)):
        at_least(flag, value, least)
    if args.ar and args.learning_error_num:  # the learning error is a property of an MDM's denoiser q(x_i | x_U)
        raise ValueError(f"--learning-error-num {args.learning_error_num} measures the learning error of an MDM; it "
                         "does not apply to an AR model (--ar): drop one of the two flags")
    out = check_writable(args.out, "--out")
    ckpt = out / "ckpt.pt"
    resumed = None
    if ckpt.exists():
        if not args.resume:
            raise ValueError(f"--out {out} already holds a training run (ckpt.pt); add --resume to continue or extend "
                             "it, or choose another --out")
        resumed = read_checkpoint(ckpt, resume=True)[1]  # refuses a damaged or malformed checkpoint
    data = None
    if args.data is not None:
        from mdmt.empirical.data import load, spec_of

        train_set, val_set, manifest = load(args.data, flag="--data")  # ValueError if a file does not match its digest
        spec = spec_of(manifest)
        if args.length is not None and args.length != spec.length:
            raise ValueError(f"--length {args.length} differs from the data set's L = {spec.length}")
        length, language = spec.length, spec.language
        data = (train_set, val_set)
    elif args.language is not None:
        language = canonical_spec(args.language)
        length = args.length or (resumed.model.seq_len if resumed is not None else PRESETS[args.model or "tiny"]["seq_len"])
        check_length(language, length)
    elif resumed is not None and resumed.language is not None:
        language, length = resumed.language, args.length or resumed.model.seq_len
    else:
        raise ValueError("give --language SPEC or --data FOLDER (or --resume a run in --out)")
    if resumed is not None:
        check_resume(args, resumed, language, length, out)
    lang = language_from_spec(language)
    cfg = _config(args, language, length, lang, resumed)
    try:
        res = train(cfg, lang, data=data, ckpt_path=ckpt, resume=args.resume, device=args.device,
                    progress=not args.no_progress)
    except TrainingInterrupted as exc:
        print(f"mdmt train: interrupted: {exc}", file=sys.stderr)
        return 130
    if res.rank != 0:
        return 0  # under torchrun: rank 0 reports and writes summary.json
    summary = {"language": language, "data": args.data, "kind": "ar" if cfg.model.causal else "mdm",
               **res.summary()}
    if args.learning_error_num and not cfg.model.causal:
        from mdmt.constructions.reverse.learning import learning_error
        from mdmt.empirical.sampling import MDMDenoiser

        summary["learning_error"] = learning_error(lang, MDMDenoiser(res.model), length, method="monte_carlo",
                                                   num=args.learning_error_num, seed=cfg.seed + 1)
    summary["provenance"] = record()
    _write_summary(Path(out) / "summary.json", summary)
    if args.json:
        print_json(summary)
        return 0
    rows = [[r["step"], r["train_loss"], r["val_nll"], r["val_gap"], f"{r['val_gap_ci'][0]:+.4f}..{r['val_gap_ci'][1]:+.4f}",
             r["cpu_seconds"]] for r in res.history]
    print(format_table(["step", "train loss", "val NLL", "gap", "gap 95% CI", "CPU s"], rows))
    print(f"{res.step}/{cfg.train_steps} steps, {res.model.num_parameters()} parameters, {res.cpu_seconds:.0f} CPU s "
          f"of training; entropy rate {res.entropy_rate:.4f} nats/token; checkpoint {res.checkpoint}")
    if "learning_error" in summary:
        print(learning_error_line(summary["learning_error"]))
    return 0


def _write_summary(path, summary: dict) -> None:
    import json

    from mdmt.runtime.outputs import write_text

    write_text(path, json.dumps(clean(summary), indent=1, allow_nan=False) + "\n")
