"""``mdmt language``: draw a random language (a Table 1 preset or custom parameters)."""

from constructions import save_language
from constructions.random_languages import PRESETS, preset, pruned_fraction, random_hmm, random_ngram

from ._common import format_table, print_json

HELP = "draw a random n-gram/HMM language (Algorithms 1-2, Table 1 presets) and save it"


def add_arguments(p):
    p.add_argument("--preset", choices=list(PRESETS), help="a Table 1 preset")
    p.add_argument("--kind", choices=["ngram", "hmm"], help="custom language kind (instead of --preset)")
    p.add_argument("--n", type=int, default=3, help="n-gram order (custom)")
    p.add_argument("--states", type=int, default=32, help="HMM hidden states (custom)")
    p.add_argument("--vocab", type=int, default=8, help="vocabulary size (custom)")
    p.add_argument("--temperature", type=float, default=2.0, help="temperature (custom)")
    p.add_argument("--threshold", type=float, default=0.0, help="pruning threshold (custom)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="output file (.json or .npz)")
    p.add_argument("--list", action="store_true", help="list the presets with their parameters and pruned fractions")
    p.add_argument("--json", action="store_true", help="JSON output")


def run(args) -> int:
    if args.list:
        rows = []
        for name, pr in PRESETS.items():
            frac = pruned_fraction(preset(name, args.seed))
            rows.append({"name": name, "kind": pr.kind, "n": pr.n or None, "states": pr.n_states or None,
                         "vocab": pr.vocab_size, "temperature": pr.temperature, "threshold": pr.threshold,
                         "pruned_fraction": frac})
        if args.json:
            print_json(rows)
        else:
            print(format_table(["preset", "kind", "n", "states", "|V|", "temperature", "threshold", "pruned (transition)"],
                               [[r["name"], r["kind"], r["n"] or "-", r["states"] or "-", r["vocab"], r["temperature"],
                                 r["threshold"], r["pruned_fraction"].get("transition", r["pruned_fraction"].get("transmat"))]
                                for r in rows]))
        return 0
    if args.preset:
        lang = preset(args.preset, args.seed)
    elif args.kind == "ngram":
        lang = random_ngram(args.n, args.vocab, args.temperature, args.threshold, args.seed)
    elif args.kind == "hmm":
        lang = random_hmm(args.states, args.vocab, args.temperature, args.threshold, args.seed)
    else:
        raise ValueError("give --preset NAME, --kind ngram|hmm, or --list")
    if not args.out:
        raise ValueError("--out FILE is required to save the language")
    save_language(lang, args.out)
    summary = {"language": repr(lang), "seed": args.seed, "pruned_fraction": pruned_fraction(lang), "out": args.out}
    if args.json:
        print_json(summary)
    else:
        print(f"{lang!r} seed={args.seed} pruned={summary['pruned_fraction']} -> {args.out}")
    return 0
