"""``mdmt sample``: the oracle MDM sampler at any length, with SER and generative perplexity."""

from ._common import (add_force, add_json, add_language, add_length, add_num, add_schedule, add_seed, add_steps,
                      load_language, print_quantities, schedule_pi)

HELP = "sample from the oracle MDM (N steps, ddpm_cache) and report SER, generative perplexity and NFE"


def add_arguments(p):
    add_language(p)
    add_length(p)
    add_steps(p)
    add_num(p, 1000, "samples")
    add_seed(p)
    p.add_argument("--kl", action="store_true", help="also estimate E_tau KL(q||p_tau)/L (the C1 bound on the TER gap)")
    p.add_argument("--out", help="write the samples here, one per line (after a # header naming the request)")
    add_force(p)
    add_schedule(p)
    add_json(p)


def run(args) -> int:
    import numpy as np

    from mdmt.constructions.reverse.metrics import perplexity_note, sample_metrics
    from mdmt.constructions.reverse.sampler import assignment_kl_estimate, sample_mdm
    from mdmt.constructions.reverse.schedules import expected_nfe

    header = out_path = None
    if args.out:  # checked before sampling: a bad --out fails at once, not after the work
        from mdmt.constructions.outputs import check_output_file

        header = " ".join(f"# mdmt sample --language {args.language} --length {args.length} --steps {args.steps} "
                          f"--num {args.num} --seed {args.seed} --schedule {args.schedule}".split()) + "\n"
        out_path = check_output_file(args.out, force=args.force, same=lambda p: _first_line(p) == header)
    lang = load_language(args.language)
    pi = schedule_pi(args.schedule, args.steps)
    res = sample_mdm(lang, args.length, pi, args.num, seed=args.seed)
    metrics = sample_metrics(lang, res.samples)
    out = {"length": args.length, "steps": args.steps, "schedule": args.schedule, **metrics,
           "nfe_mean": float(res.nfe.mean()), "expected_nfe": expected_nfe(pi, args.length)}
    note = perplexity_note(metrics)
    if note:
        out["note"] = note
    if args.kl:
        est = assignment_kl_estimate(lang, args.length, pi, args.num, seed=args.seed + 1)
        out["assignment_kl_per_token_nats"] = est["kl_per_token_nats"]
        out["assignment_kl_ci"] = est["ci"]
    if out_path is not None:
        from mdmt.constructions.outputs import atomic_file

        with atomic_file(out_path, "w") as fh:
            fh.write(header)
            np.savetxt(fh, res.samples, fmt="%d")
    print_quantities(out, args.json)
    return 0


def _first_line(path) -> str:
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.readline()
