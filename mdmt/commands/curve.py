"""``mdmt curve ter|ser``: bound curves and the step counts they imply."""

import csv

from bounds.curves import ser_curve, ter_curve

from ._common import format_table, print_json

HELP = "bound curves: TER chain bound vs N over several L, or interval-HMM SER with Theorems 4.3/4.4"


def add_arguments(p):
    p.add_argument("kind", choices=["ter", "ser"])
    p.add_argument("--n", type=int, default=3, help="ter: n-gram order")
    p.add_argument("--eps", type=float, default=0.05, help="ter: the epsilon of Theorem 4.2")
    p.add_argument("--vocab", type=int, default=8, help="ter: vocabulary size |V|")
    p.add_argument("--length", "-L", type=int, default=None, help="sequence length (ter: added to --lengths)")
    p.add_argument("--lengths", default="256,1024,4096", help="ter: comma-separated lengths")
    p.add_argument("--schedule", default="warmstart", choices=["warmstart", "linear", "cosine"], help="ter: schedule")
    p.add_argument("--interval-length", "-l", type=int, default=5, help="ser: interval length l")
    p.add_argument("--eps-learning", type=float, default=None,
                   help="learning error (ter default 0; ser default 1/128, the Theorem 4.4 threshold)")
    p.add_argument("--csv", help="write the rows to this CSV file")
    p.add_argument("--plot", help="write a PNG plot to this file")
    p.add_argument("--json", action="store_true")


def run(args) -> int:
    if args.kind == "ter":
        lengths = sorted({int(x) for x in args.lengths.split(",") if x.strip()} | ({args.length} if args.length else set()))
        out = ter_curve(args.n, args.eps, lengths, args.vocab, args.eps_learning or 0.0, args.schedule)
        header = ["L", "N", "chain_bound", "theorem42_bound"]
    else:
        L = args.length or 1000
        eps_l = 1 / 128 if args.eps_learning is None else args.eps_learning
        out = ser_curve(args.interval_length, L, eps_l)
        header = ["N", "C", "oracle_ser", "theorem44_lower", "theorem43_upper"]
    if args.csv:
        with open(args.csv, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=header)
            w.writeheader()
            w.writerows(out["rows"])
    if args.plot:
        _plot(args.kind, out, args.plot)
    if args.json:
        print_json(out)
        return 0
    print(format_table(header, [[r[h] for h in header] for r in out["rows"]]))
    if args.kind == "ter":
        print(f"\ntarget eps_learning + 4 eps log|V| = {out['target']:.6g} nats/token")
        print(f"smallest N meeting it (exact chain bound): " + ", ".join(f"L={L}: {N}" for L, N in out["min_steps"].items()))
        print(f"explicit Theorem 4.2 step count: N >= {out['theorem42_steps']}")
    else:
        print(f"\ncritical_c = {out['critical_c']:.6g} (largest N/L with oracle SER > 1/2; N* = {out['critical_steps']})")
        print(f"explicit Theorem 4.4 constant C_0 = {out['theorem44_constant']:.6g} at eps_learning = {out['eps_learning']:.6g}")
    return 0


def _plot(kind, out, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    if kind == "ter":
        for L in sorted({r["L"] for r in out["rows"]}):
            rs = [r for r in out["rows"] if r["L"] == L]
            ax.loglog([r["N"] for r in rs], [r["chain_bound"] for r in rs], marker="o", label=f"chain bound, L={L}")
        ax.axhline(out["target"], color="k", ls="--", label="eps_learning + 4 eps log|V|")
        ax.set_xlabel("sampling steps N")
        ax.set_ylabel("bound on KL(q||p_N)/L (nats/token)")
        ax.set_title(f"TER: {out['n']}-gram, eps={out['eps']}, {out['schedule']} schedule")
    else:
        rs = out["rows"]
        x = [r["C"] for r in rs]
        ax.semilogx(x, [r["oracle_ser"] for r in rs], marker="o", label="exact oracle SER")
        ax.semilogx(x, [r["theorem44_lower"] for r in rs], marker="s", label=f"Thm 4.4 lower bound (eps={out['eps_learning']:.3g})")
        ax.semilogx(x, [r["theorem43_upper"] for r in rs], marker="^", label="Thm 4.3 upper bound (oracle)")
        ax.axvline(out["critical_c"], color="k", ls="--", label=f"critical C = {out['critical_c']:.3g}")
        ax.axhline(0.5, color="gray", ls=":")
        ax.set_xlabel("C = N / L")
        ax.set_ylabel("SER")
        ax.set_title(f"SER: interval HMM l={out['interval_length']}, L={out['L']}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
