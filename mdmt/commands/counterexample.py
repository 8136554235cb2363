"""``mdmt counterexample``: write the Theorem 4.4 interval HMM as JSON."""

from constructions import interval_hmm, save_language

from ._common import print_json

HELP = "write the interval counterexample HMM of Theorem 4.4 (|V| = 2^(l-1)) to a JSON file"


def add_arguments(p):
    p.add_argument("--interval-length", "-l", type=int, default=5, help="interval length l >= 2 (default 5: 16 symbols)")
    p.add_argument("--out", required=True, help="output file (.json, or .npz)")
    p.add_argument("--json", action="store_true", help="print a JSON summary")


def run(args) -> int:
    hmm = interval_hmm(args.interval_length)
    save_language(hmm, args.out)
    summary = {"interval_length": args.interval_length, "n_symbols": hmm.n_symbols, "n_states": hmm.n_states, "out": args.out}
    if args.json:
        print_json(summary)
    else:
        print(f"interval HMM l={args.interval_length}: {hmm.n_symbols} symbols, {hmm.n_states} hidden states -> {args.out}")
    return 0
