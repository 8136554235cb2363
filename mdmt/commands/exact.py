"""``mdmt exact``: the exact output law of the N-step sampler on a small language."""

from ._common import add_json, add_language, add_length, add_schedule, add_steps, load_language, print_quantities, schedule_pi

HELP = "exact KL(q||p_N), log2 TER gap, SER and proof-chain quantities of the oracle sampler (small L)"


def add_arguments(p):
    add_language(p)
    add_length(p)
    add_steps(p)
    add_schedule(p)
    add_json(p)


def run(args) -> int:
    from mdmt.constructions.reverse.exact import exact_metrics

    lang = load_language(args.language)
    pi = schedule_pi(args.schedule, args.steps)
    out = {"length": args.length, "steps": args.steps, "schedule": args.schedule,
           **exact_metrics(lang, args.length, pi)}
    print_quantities(out, args.json)
    return 0
