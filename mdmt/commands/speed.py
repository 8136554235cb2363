"""``mdmt speed``: wall time of N-step MDM sampling (ddpm_cache) against AR generation with a KV cache (Section 5).

Both models have the same architecture (``--model``) and freshly initialized weights: the
time of a forward pass does not depend on the weights.  The MDM takes NFE <= N network calls
per sequence on the full length L (bidirectional, no cache); the AR model takes L calls of one
token each through the KV cache.  The printed ratio is AR time / MDM time (> 1: MDM faster).
"""

from __future__ import annotations

from ._common import add_json, add_model, add_seed, add_steps, at_least, format_table, int_list, print_json

HELP = "time MDM sampling (N steps, ddpm_cache) against AR with a KV cache; print the ratio"


def add_arguments(p):
    add_model(p)
    p.add_argument("--lengths", default="64,128", help="comma-separated sequence lengths L (default 64,128)")
    add_steps(p, required=False, default="16", many=True)
    p.add_argument("--batch", type=int, default=4, help="sequences per run (default 4)")
    p.add_argument("--vocab", type=int, default=8, help="vocabulary size V (default 8)")
    p.add_argument("--repeats", type=int, default=1, help="timed runs after one warm-up; the median is reported (default 1)")
    p.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    add_seed(p)
    add_json(p)


def run(args) -> int:
    import statistics

    import torch

    from mdmt.constructions.reverse.schedules import reveal_probabilities
    from mdmt.empirical.model import ModelConfig, Transformer
    from mdmt.empirical.sampling import MDMDenoiser, ar_sample, ddpm_cache
    from mdmt.empirical.train import default_device

    lengths = int_list("--lengths", args.lengths)
    steps = int_list("--steps", args.steps)
    for name, v in (("--batch", args.batch), ("--vocab", args.vocab), ("--repeats", args.repeats)):
        at_least(name, v)
    device = torch.device(args.device) if args.device else default_device()

    def timed(fn):
        fn()  # warm-up
        runs = [fn() for _ in range(args.repeats)]
        return statistics.median(r.seconds for r in runs), runs[-1]

    rows = []
    for L in lengths:
        torch.manual_seed(args.seed)
        ar = Transformer(ModelConfig.preset(args.model, args.vocab, seq_len=L, causal=True)).to(device).eval()
        mdm = Transformer(ModelConfig.preset(args.model, args.vocab, seq_len=L, causal=False)).to(device).eval()
        t_ar, r_ar = timed(lambda: ar_sample(ar, args.batch, L, seed=args.seed, batch=args.batch, device=device))
        rows.append({"L": L, "model": "ar", "N": L, "nfe_mean": float(r_ar.nfe.mean()), "seconds": t_ar, "ar_over_mdm": 1.0})
        den = MDMDenoiser(mdm, batch=args.batch)
        for N in steps:
            pi = reveal_probabilities("linear", N)
            t_m, r_m = timed(lambda: ddpm_cache(den, args.batch, L, pi, seed=args.seed, batch=args.batch, device=device))
            rows.append({"L": L, "model": "mdm", "N": N, "nfe_mean": float(r_m.nfe.mean()), "seconds": t_m,
                         "ar_over_mdm": t_ar / t_m if t_m > 0 else None})
    meta = {"model": args.model, "batch": args.batch, "vocab": args.vocab, "repeats": args.repeats, "device": str(device),
            "torch": torch.__version__}
    if args.json:
        print_json({**meta, "rows": rows})
        return 0
    print(format_table(["L", "model", "N", "NFE", "seconds", "AR/MDM"],
                       [[r["L"], r["model"], r["N"], r["nfe_mean"], r["seconds"], r["ar_over_mdm"]] for r in rows]))
    print(f"model {args.model}, batch {args.batch}, device {device}; AR/MDM > 1 means MDM sampling is faster")
    return 0
