"""``mdmt language``: write a language to a file -- one named by a SPEC, or a random one drawn by Algorithms 1-2."""

from ._common import add_force, add_json, format_table, integer, load_language, print_json, seed_value

_CUSTOM = {"n": 3, "states": 32, "vocab": 8, "temperature": 2.0, "threshold": 0.0}
"""The defaults of a custom language's options (None in the parser, so that an option given is told apart)."""


def add_arguments(p):
    p.add_argument("--language", metavar="SPEC",
                   help="the language to write: preset:NAME[:SEED] or task:NAME[:PARAMS] (see --list), interval:l, "
                        "or a language file")
    p.add_argument("--kind", choices=["ngram", "hmm"], help="draw a custom random language of this kind (instead of --language)")
    p.add_argument("--n", type=integer, default=None, help="n-gram order (custom ngram; default 3)")
    p.add_argument("--states", type=integer, default=None, help="hidden states (custom hmm; default 32)")
    p.add_argument("--vocab", type=integer, default=None, help="vocabulary size |V| (custom; default 8)")
    p.add_argument("--temperature", type=float, default=None,
                   help="temperature, higher = more random (custom; default 2)")
    p.add_argument("--threshold", type=float, default=None,
                   help="entries below it are pruned and the row renormalised (custom; default 0)")
    p.add_argument("--seed", type=seed_value, default=None,
                   help="random seed of a custom language, or of the --list table (default 0; a preset's seed is "
                        "part of its SPEC, preset:NAME:SEED)")
    p.add_argument("--out", help="output file (.npz, in any case, for NumPy's format; JSON otherwise)")
    p.add_argument("--normalise", action="store_true",
                   help="with --language FILE of an explicit law: divide its weights by their sum instead of "
                        "refusing weights that do not sum to 1 (the file written is normalised)")
    p.add_argument("--list", action="store_true", help="list the presets with their parameters and pruned fractions, and the task presets with their laws")
    add_force(p)
    add_json(p)


def _given(args, *flags) -> list[str]:
    """Those of ``flags`` (e.g. ``--n``) that were given on the command line."""
    return [f for f in flags if getattr(args, f.lstrip("-").replace("-", "_")) is not None
            and getattr(args, f.lstrip("-").replace("-", "_")) is not False]


def _refuse(args, flags, why: str) -> None:
    """A one-line error naming the first of ``flags`` that was given, with its value, and why it does not apply."""
    given = _given(args, *flags)
    if given:
        value = getattr(args, given[0].lstrip("-").replace("-", "_"))
        shown = "" if value is True else f" {value}"
        raise ValueError(f"{given[0]}{shown} {why}")


def _list(args) -> int:
    from mdmt.constructions.languages.random_languages import KAPPA, PRESETS, preset, pruned_fraction

    _refuse(args, ("--language", "--kind", "--n", "--states", "--vocab", "--temperature", "--threshold", "--out",
                   "--force", "--normalise"), "does not apply to --list (it takes only --seed and --json)")
    args.seed = 0 if args.seed is None else args.seed

    rows = []
    for name, pr in PRESETS.items():
        rows.append({**pr.as_dict(), "spec": f"preset:{name}:{args.seed}",
                     "pruned_fraction": pruned_fraction(preset(name, args.seed))})
    tasks = _task_rows()
    if args.json:
        print_json(rows + tasks)
        return 0
    table = []
    for r in rows:
        f = r["pruned_fraction"]
        table.append([r["spec"], r["kind"], r["n"] or "-", r["n_states"] or "-", r["vocab_size"], r["temperature"],
                      r["threshold"], f"{f['initial']:.3f}", f"{f['transition']:.3f}",
                      f"{f['emission']:.3f}" if "emission" in f else "-"])
    print(format_table(["language", "kind", "n", "states", "|V|", "temperature", "threshold",
                        "pruned initial", "pruned transition", "pruned emission"], table))
    print(f"(seed {args.seed}; rows are softmax({KAPPA:g}*log U/temperature), U uniform, pruned below the threshold)")
    print()
    print(format_table(["task (defaults)", "law (uniform on its support)"], [[t["spec"], t["law"]] for t in tasks],
                       left=(0, 1)))
    print("(task:NAME:key=value,...; the first parameter may be given by its value alone: task:latin:4; docs/tasks.md)")
    return 0


def _task_rows() -> list[dict]:
    """One row per task preset: its canonical SPEC with the defaults, its parameters and its one-line law."""
    from mdmt.constructions.languages.tasks import TASKS, canonical_task, parse_task

    return [{"name": name, "kind": "explicit", "spec": canonical_task(name, parse_task(name)),
             "parameters": [f"{p.name}: {p.doc}" for p in t.params], "law": t.law} for name, t in TASKS.items()]


_BYTES_PER_ENTRY = {"json": 120, "npz": 48}  # peak bytes per probability while drawing and writing one


def _request(args) -> tuple[str, dict, int]:
    """(name, metadata, number of probabilities) of the language asked for, checked before anything is built."""
    import math

    from mdmt.constructions.languages import canonical_spec
    from mdmt.constructions.languages.ngram import MAX_ORDER
    from mdmt.constructions.languages.random_languages import PRESETS

    if args.language is not None and args.kind:
        raise ValueError("give either --language SPEC or --kind ngram|hmm, not both")
    if args.language is not None:
        _refuse(args, ("--n", "--states", "--vocab", "--temperature", "--threshold"),
                f"does not apply to --language {args.language} (it sets a random --kind ngram|hmm language)")
        _refuse(args, ("--seed",), f"does not apply to --language {args.language} (a preset's seed is part of "
                                   "its SPEC: preset:NAME:SEED)")
        args.loaded = load_language(args.language, normalise=args.normalise)  # an error names --language and the SPEC
        spec = canonical_spec(args.language)
        params = {"spec": spec}
        if spec.startswith("preset:"):
            params.update(PRESETS[spec.split(":")[1]].as_dict(), seed=int(spec.split(":")[2]))
        return spec, params, 0
    if args.kind is None:
        raise ValueError("give --language SPEC, --kind ngram|hmm, or --list")
    _refuse(args, ("--normalise",), "applies to --language FILE only (an explicit law's weights)")
    _refuse(args, ("--states",) if args.kind == "ngram" else ("--n",),
            f"does not apply to --kind {args.kind} (--n is the order of an ngram, --states the hidden states of "
            "an hmm)")
    for key, value in _CUSTOM.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.seed = 0 if args.seed is None else args.seed
    if args.vocab < 1:
        raise ValueError(f"--vocab must be an integer >= 1, got {args.vocab}")
    if not (math.isfinite(args.temperature) and args.temperature > 0):
        raise ValueError(f"--temperature must be a positive number, got {args.temperature!r}")
    if not (math.isfinite(args.threshold) and 0 <= args.threshold < 1):
        raise ValueError(f"--threshold must be in [0, 1), got {args.threshold!r}")
    V = args.vocab
    common = {"vocab_size": V, "temperature": args.temperature, "threshold": args.threshold, "seed": args.seed}
    if args.kind == "ngram":
        if args.n < 2:
            raise ValueError(f"--n must be an n-gram order >= 2, got {args.n}")
        if args.n > MAX_ORDER:
            raise ValueError(f"--n {args.n} is larger than the largest supported n-gram order {MAX_ORDER}")
        n = args.n
        return f"{n}gram", {"kind": "ngram", "n": n, **common}, (V + 1) * V ** (n - 1)
    if args.states < 1:
        raise ValueError(f"--states must be an integer >= 1, got {args.states}")
    S = args.states
    return "hmm", {"kind": "hmm", "n_states": S, **common}, S * (S + V + 1)


def run(args) -> int:
    from mdmt.constructions.languages import save_language
    from mdmt.constructions.languages.io import written_for
    from mdmt.constructions.languages.random_languages import pruned_fraction, random_hmm, random_ngram
    from mdmt.runtime.outputs import check_output_file
    from mdmt.runtime.resources import check_memory

    if args.list:
        return _list(args)
    name, params, entries = _request(args)
    if not args.out:
        raise ValueError("--out FILE is required to save the language")
    metadata = {"generator": "mdmt language", **params}
    out = check_output_file(args.out, force=args.force, same=lambda p: written_for(p, name=name, metadata=metadata))
    if entries:
        fmt = "npz" if out.suffix.lower() == ".npz" else "json"
        check_memory(f"a random {args.kind} language with {entries} probabilities written as {fmt}",
                     _BYTES_PER_ENTRY[fmt] * entries,
                     "use a smaller --vocab, --n or --states" + (" or an .npz file" if fmt == "json" else ""))
    if args.language is not None:
        lang = args.loaded
    elif args.kind == "ngram":
        lang = random_ngram(params["n"], args.vocab, args.temperature, args.threshold, args.seed)
    else:
        lang = random_hmm(params["n_states"], args.vocab, args.temperature, args.threshold, args.seed)
    if getattr(lang, "kind", None) == "explicit":  # a support with weights: no parameter arrays to prune
        save_language(lang, out, name=name, metadata=metadata)
        if args.json:
            print_json({"language": repr(lang), "name": name, "parameters": params, "n_sequences": lang.n_sequences,
                        "exact_weights": lang.exact_weights is not None, "out": str(args.out)})
        else:
            print(f"{lang!r} ({name}) -> {args.out}")
        return 0
    fractions = pruned_fraction(lang)
    save_language(lang, out, name=name, metadata=metadata)
    if args.json:
        print_json({"language": repr(lang), "name": name, "parameters": params, "pruned_fraction": fractions,
                    "out": str(args.out)})
    else:
        pruned = ", ".join(f"{k} {v:.3f}" for k, v in fractions.items())
        print(f"{lang!r} ({name}) pruned fraction: {pruned} -> {args.out}")
    return 0
