"""``mdmt exact``: the exact output law of the N-step sampler on a small language."""

from ._common import (add_json, add_language, add_length, add_schedule, add_steps, at_least, check_interval_multiple,
                      load_language, print_quantities, schedule_pi)


def add_arguments(p):
    from ._decoding import add_decoding

    add_language(p)
    add_length(p)
    add_steps(p)
    add_schedule(p)
    p.add_argument("--sizes", metavar="S1,S2,...",
                   help="explicit laws: reveal uniformly random positions in steps of these sizes (summing to L, "
                        "one per step) instead of the i.i.d. reveal steps of --schedule")
    add_decoding(p, sizes=False)
    add_json(p)


MAX_STEPS = 10 ** 7


def run(args) -> int:
    from mdmt.constructions.reverse.exact import exact_metrics
    from mdmt.constructions.reverse.tables import check_exact_size

    at_least("--length", args.length, 1)
    at_least("--steps", args.steps, 1)
    if args.steps > MAX_STEPS:
        raise ValueError(f"--steps N = {args.steps} exceeds mdmt's limit of {MAX_STEPS} steps for the exact law")
    lang = load_language(args.language)
    if getattr(lang, "kind", None) == "explicit":
        return _explicit(lang, args)
    if args.sizes is not None or args.decode != "sample":
        flag = "--sizes" if args.sizes is not None else "--decode greedy"
        raise ValueError(f"{flag}: mdmt exact takes it on explicit laws (task:NAME or an explicit language file); "
                         f"for {args.language} use mdmt adaptive exact --policy uniform --sizes ...")
    check_interval_multiple(args.language, args.length)
    check_exact_size(lang.n_symbols, args.length, lang)  # before anything of size (V+1)^L is built
    pi = schedule_pi(args.schedule, args.steps)
    out = {"length": args.length, "steps": args.steps, "schedule": args.schedule,
           **exact_metrics(lang, args.length, pi)}
    print_quantities(out, args.json)
    return 0


def _explicit(lang, args) -> int:
    """The exact law on the support of an explicit law: i.i.d. reveal steps of --schedule (Eq. 3), or --sizes."""
    from mdmt.constructions.reverse.policies import IID, Sizes

    from ._decoding import explicit_exact, sizes_of

    sizes = sizes_of(args)
    if sizes is not None:
        policy = Sizes(sizes, spec="uniform")
    else:
        policy = IID(schedule_pi(args.schedule, args.steps), spec=f"iid:{args.schedule}")
    out = {"schedule": None if sizes is not None else args.schedule, **explicit_exact(lang, args, policy)}
    print_quantities(out, args.json)
    return 0
