"""``mdmt dependencies``: the exact expected number of dependencies E[sum_j D_j] (C4; Definitions B.4-B.5)."""

from ._common import (add_json, add_length, add_schedule, add_steps, at_least, format_table, integer, print_json,
                      schedule_pi)


def add_arguments(p):
    p.add_argument("--n", type=integer, required=True, help="n-gram order (separators are runs of >= n-1 revealed tokens)")
    add_length(p)
    add_steps(p)
    add_schedule(p)
    add_json(p)


MAX_STEPS = 10 ** 7  # the per-step table has N rows
ROW_COST = 25_000  # operations per row of the per-step output, text or JSON (about 25 microseconds each, measured)
OPS_PER_UNIT = 16  # operations per unit of bounds.theorems.dependencies.dependency_work (measured: about 13 ns each)


def run(args) -> int:
    from mdmt.bounds.theorems.dependencies import check_dependency_work, expected_dependencies_per_step

    at_least("--n", args.n, 2)
    at_least("--length", args.length, 1)
    at_least("--steps", args.steps, 1)
    if args.steps > MAX_STEPS:
        raise ValueError(f"--steps N = {args.steps}: the per-step table has N rows; mdmt's limit is N <= {MAX_STEPS}")
    check_dependency_work(args.n, args.length, args.steps)  # before the schedule is built
    from mdmt.bounds.theorems.dependencies import dependency_work
    from mdmt.runtime.resources import check_work

    check_work(f"--steps {args.steps}: E[D_j] at each of the {args.steps} steps and their table",
               OPS_PER_UNIT * dependency_work(args.n, args.length, args.steps) + ROW_COST * args.steps,
               "use fewer --steps")
    pi = schedule_pi(args.schedule, args.steps)
    per_step = expected_dependencies_per_step(args.n, args.length, pi)
    out = {"n": args.n, "length": args.length, "steps": args.steps, "schedule": args.schedule,
           "expected_dependencies": float(per_step.sum()), "per_step": per_step}
    if args.json:
        print_json(out)
    else:
        print(format_table(["step j", "pi_j", "E[D_j]"], [[j + 1, pi[j], per_step[j]] for j in range(len(pi))]))
        print(f"E[sum_j D_j] = {out['expected_dependencies']:.6g}")
    return 0
