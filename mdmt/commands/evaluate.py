"""``mdmt evaluate``: score a network trained by ``mdmt train`` against its language (Assumption 4.1, Eqs. 4-5).

For the checkpoint's network (and the language it was trained on, unless ``--language`` names
another of the same vocabulary) it reports

* the paired validation gap: the network's NLL per token -- the NELBO for an MDM, the exact NLL
  for an AR model -- minus the exact -ln q(x)/L of the *same* fresh sequences x ~ q, with its
  95% interval (for an AR model this is KL(q || p_AR)/L; for an MDM only at its own length);
* for an MDM, the measured learning error: the per-token KL(q(.|x_U) || p(.|x_U)) over random
  masks (:func:`mdmt.constructions.reverse.learning.learning_error`: mean with its interval,
  q90, q99, max);
* SER and generative perplexity (with intervals) and NFE of ``--num`` samples at every N of
  ``--steps`` (an AR model: one point, N = L).
"""

from __future__ import annotations

from ._common import (integer, add_json, add_length, add_num, add_schedule, add_seed, at_least, format_table, int_list,
                      learning_error_line, print_json, schedule_pi)


def add_arguments(p):
    p.add_argument("--checkpoint", required=True, metavar="CKPT", help="checkpoint written by mdmt train (OUT/ckpt.pt)")
    p.add_argument("--language", metavar="SPEC", default=None,
                   help="language to score against: preset:NAME[:SEED], interval:l, task:NAME[:PARAMS] or a language file "
                        "(default: the one the network was trained on)")
    add_length(p, required=False, help="sequence length L (default: the network's)")
    p.add_argument("--steps", "-N", default="16,64,256", metavar="N,N,...",
                   help="sampling steps N of the MDM, comma-separated (default 16,64,256)")
    add_num(p, 512, "samples per N")
    p.add_argument("--num-val", type=integer, default=512,
                   help="number of fresh validation sequences for the paired validation gap (default 512)")
    p.add_argument("--learning-error-num", type=integer, default=None,
                   help="sequences for the measured learning error of an MDM (default 256; 0: skip; not for an AR "
                        "checkpoint)")
    add_schedule(p)
    add_seed(p)
    p.add_argument("--batch", type=integer, default=256, help="sequences per network call (default 256)")
    p.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    add_json(p)


def run(args) -> int:
    from .sample import load_network

    for flag, v, least in (("--num", args.num, 1), ("--num-val", args.num_val, 2),
                           ("--learning-error-num", args.learning_error_num, 0), ("--batch", args.batch, 1)):
        if v is not None:
            at_least(flag, v, least)
    steps = int_list("--steps", args.steps)
    model, spec, lang, L = load_network(args.checkpoint, args.language, args.length, args.device)
    if model.cfg.causal and args.learning_error_num is not None:
        raise ValueError(f"--learning-error-num {args.learning_error_num} measures the learning error of an MDM; it "
                         f"does not apply to the AR checkpoint {args.checkpoint}")
    le_num = 256 if args.learning_error_num is None else args.learning_error_num
    from mdmt.empirical.evaluation import evaluate

    for N in steps if not model.cfg.causal else ():
        schedule_pi(args.schedule, N)  # a schedule or an N the schedule refuses is named here, with its flag
    res = evaluate(model, lang, L, steps, schedule=args.schedule.strip(), num=args.num, val_num=args.num_val,
                   learning_error_num=le_num, seed=args.seed, batch=args.batch)
    res = {"checkpoint": args.checkpoint, "language": spec, **res}
    if args.json:
        print_json(res)
        return 0
    g = res["val_gap"]
    print(f"{res['kind'].upper()} network, {res['parameters']} parameters, language {spec}, L = {L}")
    if g is not None:
        print(f"paired validation gap (model NLL - exact -ln q(x), nats/token, {g['num']} sequences): "
              f"{g['gap']:+.4f} (95% CI {g['ci'][0]:+.4f}..{g['ci'][1]:+.4f}); exact -ln q(x)/L = {g['exact_nll']:.4f}")
    if "learning_error" in res:
        print(learning_error_line(res["learning_error"]))
    print(format_table(["N", "NFE", "SER", "SER 95% CI", "gen. perplexity", "95% CI"],
                       [[p["N"], p["nfe_mean"], p["ser"], f"{p['ser_ci'][0]:.4f}..{p['ser_ci'][1]:.4f}",
                         p["gen_perplexity"], f"{p['gen_perplexity_ci'][0]:.4f}..{p['gen_perplexity_ci'][1]:.4f}"]
                        for p in res["points"]]))
    return 0
