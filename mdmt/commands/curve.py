"""``mdmt curve ter|ser``: bound curves and the step counts they imply (Theorems 4.2-4.4)."""

import math

from ._common import (add_force, add_json, at_least, figure_file, format_table, int_list, integer,
                      print_json)

HEADERS = {"ter": ["L", "N", "chain_bound", "theorem42_bound"], "ser": ["L", "N", "C", "oracle_ser", "theorem44_lower",
                                                                        "theorem43_upper"]}


def _outputs(p):
    p.add_argument("--csv", help="write the rows to this CSV file")
    p.add_argument("--plot", metavar="FILE", help="write the plot to this file: .png, or .pdf / .svg (vector, for papers)")
    add_force(p, "--csv or --plot file")
    add_json(p)


def add_arguments(p):
    sub = p.add_subparsers(dest="kind", metavar="ter|ser", parser_class=type(p))
    sub.required = True
    ter = sub.add_parser("ter", help="the (C4) chain bound on the TER gap against N, for several L (n-gram)",
                         description="the (C4) chain bound on the TER gap against N for several L, and the smallest N "
                                     "meeting the Theorem 4.2 target eps_learning + 4 eps log|V|")
    ter.add_argument("--n", type=integer, default=3, help="n-gram order (default 3)")
    ter.add_argument("--eps", type=float, default=0.05, help="the epsilon of Theorem 4.2 (default 0.05)")
    ter.add_argument("--vocab", type=integer, default=8, help="vocabulary size |V| (default 8)")
    ter.add_argument("--lengths", default="256,1024,4096", help="comma-separated lengths L (default 256,1024,4096)")
    ter.add_argument("--steps", "-N", default=None, metavar="N,N,...",
                     help="sampling steps N of the curve, comma-separated (default 2, 4, ..., 4096 and the Theorem 4.2 "
                          "step count)")
    ter.add_argument("--schedule", default="warmstart", metavar="SPEC",
                     help="masking schedule: warmstart (Theorem 4.2's: the first step reveals the fraction --eps), "
                          "warmstart[:FIRST], linear, cosine, loglinear[:EPS]; explicit reveal probabilities p1,p2,... "
                          "fix N and make no curve (default warmstart)")
    ter.add_argument("--eps-learning", type=float, default=0.0, help="learning error eps_learning (default 0)")
    _outputs(ter)
    ser = sub.add_parser("ser", help="exact oracle SER on the interval HMM with the Theorem 4.3/4.4 bounds",
                         description="exact oracle SER on the interval HMM against N = C L, the Theorem 4.4 lower "
                                     "bound, the Theorem 4.3 upper bound and the critical constant C")
    ser.add_argument("--interval-length", "-l", type=integer, default=5, help="interval length l (default 5)")
    ser.add_argument("--length", "-L", default="1000", metavar="L[,L,...]",
                     help="sequence length L, a multiple of l, or several, comma-separated (default 1000)")
    ser.add_argument("--eps-learning", type=float, default=1 / 128,
                     help="learning error of the Theorem 4.4 bound (default 1/128, the theorem's threshold)")
    _outputs(ser)


def _finite(flag: str, value, low: float = 0.0, low_open: bool = False, high: float | None = None) -> float:
    """A finite number in the stated range, or a one-line error naming the flag and the value."""
    ok = math.isfinite(value) and (value > low if low_open else value >= low) and (high is None or value < high)
    if not ok:
        rng = f"in ({low:g}, {high:g})" if high is not None else (f"> {low:g}" if low_open else f">= {low:g}")
        raise ValueError(f"{flag} must be a finite number {rng}, got {value!r}")
    return value


MAX_SER_LENGTH = 1 << 27  # the O(L) P_distinct of the Theorem 4.3 bound (mdmt.bounds.studies.curves.p_distinct_linear)


def _check_ser(l: int, L: int) -> None:
    """--interval-length and --length of ``curve ser``, checked naming the flags before the library sees them."""
    from mdmt.constructions.reverse.interval_closed_forms import MAX_INTERVAL

    at_least("--interval-length", l, 2)
    at_least("--length", L, 1)
    if l > MAX_INTERVAL:
        raise ValueError(f"--interval-length {l}: the exact closed forms of interval length l = {l} cost O(l^2 log N) "
                         f"per point; mdmt's limit is l <= {MAX_INTERVAL}")
    if L % l:
        raise ValueError(f"--length {L}: L={L} is not a multiple of the interval length l={l} (--interval-length)")
    if L > MAX_SER_LENGTH:
        raise ValueError(f"--length {L}: the Theorem 4.3 bound at N >= L costs O(L) memory and time; mdmt's limit "
                         f"is --length <= {MAX_SER_LENGTH}")


def run(args) -> int:
    from mdmt.bounds.studies.curves import ser_curve, ter_curve
    from mdmt.runtime.outputs import check_output_file, csv_header_is, figure_written_by, write_csv

    header = HEADERS[args.kind]
    if args.force and not (args.csv or args.plot):
        raise ValueError("--force applies to --csv or --plot (it lets them replace a file mdmt did not write)")
    if args.csv:  # before the work: a bad path, or a file that is not mdmt's, fails at once
        check_output_file(args.csv, force=args.force, same=lambda p: csv_header_is(p, header), flag="--csv")
    if args.plot:
        check_output_file(figure_file(args.plot), force=args.force,
                          same=lambda p: figure_written_by(p, f"curve {args.kind}"), flag="--plot")
    eps_learning = _finite("--eps-learning", args.eps_learning)
    if args.kind == "ter":
        lengths = sorted(set(int_list("--lengths", args.lengths)))
        at_least("--n", args.n, 2)
        at_least("--vocab", args.vocab, 2)
        eps = _finite("--eps", args.eps, 0.0, low_open=True, high=1.0)
        steps = int_list("--steps", args.steps) if args.steps is not None else None
        out = ter_curve(args.n, eps, lengths, args.vocab, eps_learning, args.schedule, steps)
    else:
        lengths = sorted(set(int_list("--length", args.length)))
        for L in lengths:
            _check_ser(args.interval_length, L)
        out = ser_curve(args.interval_length, lengths, eps_learning)
    if args.csv:
        write_csv(args.csv, header, out["rows"])
    if args.plot:
        from mdmt.plots import curve_ser_figure, curve_ter_figure, save

        save((curve_ter_figure if args.kind == "ter" else curve_ser_figure)(out), args.plot, f"curve {args.kind}")
    if args.json:
        print_json(out)
        return 0
    print(format_table(header, [[r[h] for h in header] for r in out["rows"]]))
    if args.kind == "ter":
        print(f"\ntarget eps_learning + 4 eps log|V| = {out['target']:.6g} nats/token")
        print("smallest N meeting it (exact chain bound): " + ", ".join(f"L={L}: {N}" for L, N in out["min_steps"].items()))
        print(f"explicit Theorem 4.2 step count: N >= {out['theorem42_steps']}")
    else:
        print("\ncritical C (largest N/L with oracle SER > 1/2): "
              + ", ".join(f"L={L}: {c:.6g} (N* = {out['critical_steps'][L]})" for L, c in out["critical_c"].items()))
        print(f"explicit Theorem 4.4 constant C_0 = {out['theorem44_constant']:.6g} at eps_learning = {out['eps_learning']:.6g}")
    return 0
