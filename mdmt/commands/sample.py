"""``mdmt sample``: the oracle MDM sampler at any length, with SER and generative perplexity."""

import numpy as np

from constructions.sampler import assignment_kl_estimate, sample_metrics, sample_mdm
from constructions.schedules import expected_nfe

from ._common import add_schedule_arguments, format_table, load_language, print_json, schedule_pi

HELP = "sample from the oracle MDM (N steps, ddpm_cache) and report SER, generative perplexity and NFE"


def add_arguments(p):
    p.add_argument("--language", required=True, help="language file (.json/.npz) or preset:NAME[:SEED]")
    p.add_argument("--length", "-L", type=int, required=True, help="sequence length L")
    p.add_argument("--steps", "-N", type=int, required=True, help="number of sampling steps N")
    p.add_argument("--num", "-M", type=int, default=1000, help="number of samples")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--kl", action="store_true", help="also estimate E_tau KL(q||p_tau)/L (the C1 bound on the TER gap)")
    p.add_argument("--out", help="write the samples here, one per line")
    add_schedule_arguments(p)
    p.add_argument("--json", action="store_true", help="JSON output")


def run(args) -> int:
    lang = load_language(args.language)
    pi = schedule_pi(args, args.steps)
    res = sample_mdm(lang, args.length, pi, args.num, seed=args.seed)
    out = {"length": args.length, "steps": args.steps, "schedule": args.schedule, **sample_metrics(lang, res.samples),
           "nfe_mean": float(res.nfe.mean()), "expected_nfe": expected_nfe(pi, args.length)}
    if args.kl:
        est = assignment_kl_estimate(lang, args.length, pi, args.num, seed=args.seed + 1)
        out["assignment_kl_per_token_nats"] = est["kl_per_token_nats"]
        out["assignment_kl_ci"] = est["ci"]
    if args.out:
        np.savetxt(args.out, res.samples, fmt="%d")
    if args.json:
        print_json(out)
    else:
        print(format_table(["quantity", "value"], [[k, v] for k, v in out.items()]))
    return 0
