"""``mdmt exact``: the exact output law of the N-step sampler on a small language."""

from ._common import (add_json, add_language, add_length, add_schedule, add_steps, at_least, check_interval_multiple,
                      load_language, print_quantities, schedule_pi)


def add_arguments(p):
    add_language(p)
    add_length(p)
    add_steps(p)
    add_schedule(p)
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
    check_interval_multiple(args.language, args.length)
    check_exact_size(lang.n_symbols, args.length, lang)  # before anything of size (V+1)^L is built
    pi = schedule_pi(args.schedule, args.steps)
    out = {"length": args.length, "steps": args.steps, "schedule": args.schedule,
           **exact_metrics(lang, args.length, pi)}
    print_quantities(out, args.json)
    return 0
