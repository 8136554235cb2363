"""``mdmt counterexample``: write the interval counterexample HMM of Theorem 4.4 (Example C.7, Note C.8)."""

from ._common import add_force, add_json, integer, print_json


def add_arguments(p):
    p.add_argument("--interval-length", "-l", type=integer, default=5,
                   help="interval length l >= 2 (default 5: 16 symbols)")
    p.add_argument("--out", required=True, help="output file (.npz, in any case, for NumPy's format; JSON otherwise)")
    add_force(p)
    add_json(p)


def run(args) -> int:
    from mdmt.constructions.languages import interval_hmm, save_language
    from mdmt.constructions.languages.interval import check_interval_length
    from mdmt.constructions.languages.io import written_for
    from mdmt.runtime.outputs import check_output_file

    try:
        l = check_interval_length(args.interval_length)
    except ValueError as exc:
        raise ValueError(f"--interval-length {args.interval_length}: {exc}") from None
    name = f"interval-l{l}"
    metadata = {"construction": "interval counterexample (Theorem 4.4)", "interval_length": l,
                "pairs_per_interval": l * (l - 1) // 2, "spec": f"interval:{l}"}
    out = check_output_file(args.out, force=args.force, same=lambda p: written_for(p, name=name, metadata=metadata))
    hmm = interval_hmm(l)
    save_language(hmm, out, name=name, metadata=metadata)
    summary = {"interval_length": l, "n_symbols": hmm.n_symbols, "n_states": hmm.n_states,
               "pairs_per_interval": l * (l - 1) // 2, "spec": f"interval:{l}", "out": str(args.out)}
    if args.json:
        print_json(summary)
    else:
        print(f"interval HMM l={l}: {hmm.n_symbols} symbols, {hmm.n_states} hidden states, "
              f"{l * (l - 1) // 2} fair pair bits per interval (L must be a multiple of {l}; "
              f"the same language is --language interval:{l}) -> {args.out}")
    return 0
