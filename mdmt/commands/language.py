"""``mdmt language``: write a language to a file -- one named by a SPEC, or a random one drawn by Algorithms 1-2."""

from ._common import add_force, add_json, format_table, print_json, seed_value


def add_arguments(p):
    p.add_argument("--language", metavar="SPEC",
                   help="the language to write: preset:NAME[:SEED] (see --list), interval:l, or a language file")
    p.add_argument("--kind", choices=["ngram", "hmm"], help="draw a custom random language of this kind (instead of --language)")
    p.add_argument("--n", type=int, default=3, help="n-gram order (custom ngram; default 3)")
    p.add_argument("--states", type=int, default=32, help="hidden states (custom hmm; default 32)")
    p.add_argument("--vocab", type=int, default=8, help="vocabulary size |V| (custom; default 8)")
    p.add_argument("--temperature", type=float, default=2.0, help="temperature, higher = more random (custom; default 2)")
    p.add_argument("--threshold", type=float, default=0.0,
                   help="entries below it are pruned and the row renormalised (custom; default 0)")
    p.add_argument("--seed", type=seed_value, default=0,
                   help="random seed of a custom language, or of the --list table (default 0)")
    p.add_argument("--out", help="output file (.json, or .npz)")
    p.add_argument("--list", action="store_true", help="list the presets with their parameters and pruned fractions")
    add_force(p)
    add_json(p)


def _list(args) -> int:
    from mdmt.constructions.languages.random_languages import KAPPA, PRESETS, preset, pruned_fraction

    rows = []
    for name, pr in PRESETS.items():
        rows.append({**pr.as_dict(), "spec": f"preset:{name}:{args.seed}",
                     "pruned_fraction": pruned_fraction(preset(name, args.seed))})
    if args.json:
        print_json(rows)
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
    return 0


_BYTES_PER_ENTRY = {"json": 120, "npz": 48}  # peak bytes per probability while drawing and writing one


def _request(args) -> tuple[str, dict, int]:
    """(name, metadata, number of probabilities) of the language asked for, checked before anything is built."""
    from mdmt.constructions.languages import canonical_spec
    from mdmt.constructions.languages.ngram import check_order
    from mdmt.constructions.languages.random_languages import PRESETS
    from mdmt.constructions.validation import positive_int

    if args.language and args.kind:
        raise ValueError("give either --language SPEC or --kind ngram|hmm, not both")
    if args.language:
        spec = canonical_spec(args.language)
        params = {"spec": spec}
        if spec.startswith("preset:"):
            params.update(PRESETS[spec.split(":")[1]].as_dict(), seed=int(spec.split(":")[2]))
        return spec, params, 0
    if args.kind is None:
        raise ValueError("give --language SPEC, --kind ngram|hmm, or --list")
    V = positive_int("--vocab", args.vocab)
    positive_int("--seed", args.seed, minimum=0)
    common = {"vocab_size": args.vocab, "temperature": args.temperature, "threshold": args.threshold, "seed": args.seed}
    if args.kind == "ngram":
        n = check_order(args.n)
        return f"{n}gram", {"kind": "ngram", "n": n, **common}, (V + 1) * V ** (n - 1)
    S = positive_int("--states", args.states)
    return "hmm", {"kind": "hmm", "n_states": S, **common}, S * (S + V + 1)


def run(args) -> int:
    from mdmt.constructions.languages import language_from_spec, save_language
    from mdmt.constructions.languages.io import written_for
    from mdmt.constructions.languages.random_languages import pruned_fraction, random_hmm, random_ngram
    from mdmt.constructions.outputs import check_output_file
    from mdmt.constructions.resources import check_memory

    if args.list:
        return _list(args)
    name, params, entries = _request(args)
    if not args.out:
        raise ValueError("--out FILE is required to save the language")
    metadata = {"generator": "mdmt language", **params}
    out = check_output_file(args.out, force=args.force, same=lambda p: written_for(p, name=name, metadata=metadata))
    if entries:
        fmt = "npz" if out.suffix == ".npz" else "json"
        check_memory(f"a random {args.kind} language with {entries} probabilities written as {fmt}",
                     _BYTES_PER_ENTRY[fmt] * entries,
                     "use a smaller --vocab, --n or --states" + (" or an .npz file" if fmt == "json" else ""))
    if args.language:
        lang = language_from_spec(params["spec"])
    elif args.kind == "ngram":
        lang = random_ngram(params["n"], args.vocab, args.temperature, args.threshold, args.seed)
    else:
        lang = random_hmm(params["n_states"], args.vocab, args.temperature, args.threshold, args.seed)
    save_language(lang, out, name=name, metadata=metadata)
    fractions = pruned_fraction(lang)
    if args.json:
        print_json({"language": repr(lang), "name": name, "parameters": params, "pruned_fraction": fractions,
                    "out": str(args.out)})
    else:
        pruned = ", ".join(f"{k} {v:.3f}" for k, v in fractions.items())
        print(f"{lang!r} ({name}) pruned fraction: {pruned} -> {args.out}")
    return 0
