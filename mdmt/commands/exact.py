"""``mdmt exact``: the exact output law of the N-step sampler on a small language."""

from constructions.exact import build_tables, chain_quantities, exact_output_law
from constructions.schedules import expected_nfe, p_distinct

from ._common import add_schedule_arguments, format_table, load_language, print_json, schedule_pi

HELP = "exact KL(q||p_N), log2 TER gap, SER and proof-chain quantities of the oracle sampler (small L)"


def add_arguments(p):
    p.add_argument("--language", required=True, help="language file (.json/.npz) or preset:NAME[:SEED]")
    p.add_argument("--length", "-L", type=int, required=True, help="sequence length L")
    p.add_argument("--steps", "-N", type=int, required=True, help="number of sampling steps N")
    add_schedule_arguments(p)
    p.add_argument("--json", action="store_true", help="JSON output")


def run(args) -> int:
    lang = load_language(args.language)
    pi = schedule_pi(args, args.steps)
    tables = build_tables(lang, args.length)
    res = exact_output_law(lang, args.length, pi, tables=tables)
    out = {
        "length": args.length,
        "steps": args.steps,
        "schedule": args.schedule,
        "kl_nats": res.kl_nats,
        "kl_bits_per_token": res.kl_bits_per_token,
        "ser": res.ser,
        "p_distinct": p_distinct(pi, args.length),
        "expected_nfe": expected_nfe(pi, args.length),
        **chain_quantities(lang, args.length, pi, tables=tables),
    }
    if args.json:
        print_json(out)
    else:
        print(format_table(["quantity", "value"], [[k, v] for k, v in out.items()]))
    return 0
