"""``mdmt schedule``: the optimal fixed step sizes of a language (exact KL) beside balanced, Theorem 4.2 and random sizes."""

from ._common import (add_json, add_language, add_num, add_seed, at_least, check_interval_multiple, format_table,
                      int_list, integer, load_language, print_json)

PROFILES = ("auto", "exact", "markov", "monte_carlo")


def add_arguments(p):
    add_language(p)
    p.add_argument("--length", "-L", required=True, metavar="L[,L,...]",
                   help="sequence length L; with --target, several (comma-separated): the smallest N against L")
    p.add_argument("--steps", "-N", type=integer, default=None, help="sampling steps N (required without --target)")
    p.add_argument("--target", type=float, default=None,
                   help="a KL target (nats): print the smallest N whose optimal (and balanced) sizes reach it, per L")
    p.add_argument("--per-token", action="store_true", help="--target is on KL/L (nats per token: the TER gap)")
    p.add_argument("--profile", default="auto", choices=PROFILES,
                   help="the information profile: exact (small L), markov (a bigram, any L), monte_carlo (any HMM, "
                        "with intervals) or auto (the first that applies; default)")
    add_num(p, 2000, "Monte Carlo sequences of the profile")
    add_seed(p)
    add_json(p)


def run(args) -> int:
    from mdmt.bounds.studies.schedule import min_steps, schedule_study

    lengths = int_list("--length", args.length)
    for L in lengths:
        check_interval_multiple(args.language, L)
    at_least("--num", args.num, 2)
    lang = load_language(args.language)
    L_max = max(lengths)
    from mdmt.runtime.resources import check_memory as _check_memory

    # the exact bigram profile keeps (L, L) conditional entropies; the DP takes N L^2 (L^3 with --target)
    _check_memory(f"--length {L_max}: the information profile", 24 * L_max * L_max, "use a smaller --length")
    if args.target is not None:
        from mdmt.runtime.resources import check_work as _check_work

        _check_work(f"--length {L_max}: the optimal KL against N (up to N = L)", 4 * L_max ** 3, "use a smaller --length")
    bigram = getattr(lang, "n", None) == 2 and hasattr(lang, "transition_")
    if args.profile == "monte_carlo" or (args.profile == "auto" and not bigram and L_max > 12):
        from mdmt.runtime.resources import check_memory, check_work
  # a Monte Carlo profile keeps (num, L + 1) values and scores num sequences L times
        check_memory(f"--num {args.num} sequences of --length {L_max} for the Monte Carlo profile",
                     40 * args.num * (L_max + 1), "use a smaller --num or --length")
        check_work(f"--num {args.num} sequences of --length {L_max} for the Monte Carlo profile",
                   4 * args.num * L_max * L_max * lang.n_symbols, "use a smaller --num or --length")
    if args.target is None:
        if args.steps is None:
            raise ValueError("--steps is required (or --target for the smallest N against L)")
        at_least("--steps", args.steps)
        if len(lengths) > 1:
            raise ValueError(f"--length {args.length}: give one length with --steps (several only with --target)")
        if args.steps > lengths[0]:
            raise ValueError(f"--steps {args.steps} > --length {lengths[0]}: every step reveals at least one position")
        res = schedule_study(lang, lengths[0], args.steps, args.profile, args.num, args.seed)
        res["language"] = args.language
        if args.json:
            print_json(res)
            return 0
        print(f"{args.language}, L = {res['length']}, N = {res['steps']} (profile: {res['profile_method']})")
        print(f"optimal sizes: {' '.join(map(str, res['sizes']))}")
        rows = [[r["schedule"], r["kl_nats"], "" if r["kl_ci"] is None else f"[{r['kl_ci'][0]:.4g}, {r['kl_ci'][1]:.4g}]",
                 r["expected_nfe"], r["ratio"]] for r in res["comparisons"]]
        print(format_table(["schedule", "kl_nats", "ci", "expected_nfe", "ratio"], rows, left=(0,)))
        print("E_tau KL(q || p_tau) of the oracle (nats); ratio = KL / the optimal KL (docs/samplers.md)")
        return 0
    if not (args.target > 0 and args.target < float("inf")):
        raise ValueError(f"--target must be a positive number (nats), got {args.target!r}")
    rows = min_steps(lang, lengths, args.target, args.per_token, args.profile, args.num, args.seed)
    res = {"language": args.language, "target": args.target, "per_token": args.per_token, "min_steps": rows}
    if args.json:
        print_json(res)
        return 0
    what = "KL/L" if args.per_token else "KL"
    print(f"{args.language}: smallest N with {what} <= {args.target:g} nats ('-' = not even at N = L)")
    keys = ["length", "optimal_steps", "optimal_kl_nats", "uniform_steps", "uniform_kl_nats", "profile_method"]
    print(format_table(keys, [["-" if r[k] is None else r[k] for k in keys] for r in rows]))
    return 0
