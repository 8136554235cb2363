"""``mdmt language``: draw a random language (Algorithms 1-2: a Table 1 preset or custom parameters) and save it."""

from constructions import save_language
from constructions.random_languages import KAPPA, PRESETS, preset, pruned_fraction, random_hmm, random_ngram

from ._common import format_table, print_json

HELP = "draw a random n-gram/HMM language (Algorithms 1-2, Table 1 presets) and save it"


def add_arguments(p):
    p.add_argument("--preset", choices=list(PRESETS), help="a Table 1 preset (see --list)")
    p.add_argument("--kind", choices=["ngram", "hmm"], help="custom language kind (instead of --preset)")
    p.add_argument("--n", type=int, default=3, help="n-gram order (custom ngram; default 3)")
    p.add_argument("--states", type=int, default=32, help="hidden states (custom hmm; default 32)")
    p.add_argument("--vocab", type=int, default=8, help="vocabulary size |V| (custom; default 8)")
    p.add_argument("--temperature", type=float, default=2.0, help="temperature, higher = more random (custom; default 2)")
    p.add_argument("--threshold", type=float, default=0.0,
                   help="entries below it are pruned and the row renormalised (custom; default 0)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--out", help="output file (.json, or .npz)")
    p.add_argument("--list", action="store_true", help="list the presets with their parameters and pruned fractions")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of text")


def _list(args) -> int:
    rows = []
    for name, pr in PRESETS.items():
        rows.append({**pr.as_dict(), "seed": args.seed, "pruned_fraction": pruned_fraction(preset(name, args.seed))})
    if args.json:
        print_json(rows)
        return 0
    table = []
    for r in rows:
        f = r["pruned_fraction"]
        table.append([r["name"], r["kind"], r["n"] or "-", r["n_states"] or "-", r["vocab_size"], r["temperature"],
                      r["threshold"], f"{f['initial']:.3f}", f"{f['transition']:.3f}",
                      f"{f['emission']:.3f}" if "emission" in f else "-"])
    print(format_table(["preset", "kind", "n", "states", "|V|", "temperature", "threshold",
                        "pruned initial", "pruned transition", "pruned emission"], table))
    print(f"(seed {args.seed}; rows are softmax({KAPPA:g}*log U/temperature), U uniform, pruned below the threshold)")
    return 0


def run(args) -> int:
    if args.list:
        return _list(args)
    if args.preset and args.kind:
        raise ValueError("give either --preset NAME or --kind ngram|hmm, not both")
    if args.preset:
        lang = preset(args.preset, args.seed)
        name = args.preset
        params = PRESETS[args.preset].as_dict()
    elif args.kind == "ngram":
        lang = random_ngram(args.n, args.vocab, args.temperature, args.threshold, args.seed)
        name = f"{args.n}gram"
        params = {"kind": "ngram", "n": args.n, "vocab_size": args.vocab, "temperature": args.temperature,
                  "threshold": args.threshold}
    elif args.kind == "hmm":
        lang = random_hmm(args.states, args.vocab, args.temperature, args.threshold, args.seed)
        name = "hmm"
        params = {"kind": "hmm", "n_states": args.states, "vocab_size": args.vocab, "temperature": args.temperature,
                  "threshold": args.threshold}
    else:
        raise ValueError("give --preset NAME, --kind ngram|hmm, or --list")
    if not args.out:
        raise ValueError("--out FILE is required to save the language")
    params = {**params, "seed": args.seed}
    save_language(lang, args.out, name=name, metadata={"generator": "mdmt language", **params})
    fractions = pruned_fraction(lang)
    if args.json:
        print_json({"language": repr(lang), "name": name, "parameters": params, "pruned_fraction": fractions,
                    "out": str(args.out)})
    else:
        pruned = ", ".join(f"{k} {v:.3f}" for k, v in fractions.items())
        print(f"{lang!r} seed={args.seed} pruned fraction: {pruned} -> {args.out}")
    return 0
