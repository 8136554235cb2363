"""The ParallelBench Section 4 table and figure: accuracy of the list tasks against tokens per step, from mdmt's
exact laws (:func:`mdmt.constructions.reverse.support_exact.support_law`) beside the closed forms of
:mod:`mdmt.bounds.theorems.parallelbench` (docs/tasks.md, "ParallelBench Section 4").
"""

from __future__ import annotations

from fractions import Fraction

from ..theorems import parallelbench as pb
from mdmt.defaults import DECODES

FIGURE_TASKS = ("shuffle", "replace-random", "copy")


def accuracy_rows(n: int = 8, tasks=FIGURE_TASKS, decodes=DECODES, remainder: str = "last") -> list[dict]:
    """One row per (task, k, decode): the exact accuracy of mdmt's law with k tokens per step (random positions),
    the closed form, and whether they agree.  ``remainder="last"``: steps k, ..., k, n mod k (the paper's setting);
    ``"first"``: the balanced sizes over ceil(n/k) steps with the larger steps first (LLaDA's code)."""
    from mdmt.constructions.languages.spec import language_from_spec
    from mdmt.constructions.reverse.policies import Balanced, Sizes
    from mdmt.constructions.reverse.support_exact import support_law, symmetry_generators

    rows = []
    for task in tasks:
        lang = language_from_spec(pb.task_spec(task, n))
        gens = symmetry_generators(lang)
        for k in range(1, n + 1):
            if remainder == "last":
                sizes = pb.k_sizes(n, k)
                policy = Sizes(sizes)
            else:
                policy = Balanced(-(-n // k), "first")
                sizes = policy.sizes_for(n).tolist()
            for decode in decodes:
                law = support_law(lang, policy, decode=decode, symmetries=gens, rationals=True)
                closed = pb.accuracy(task, n, sizes, decode)
                rows.append({"task": task, "n": n, "k": k, "sizes": list(map(int, sizes)), "decode": decode,
                             "accuracy": law.accuracy_exact, "closed_form": closed,
                             "agree": law.accuracy_exact == closed, "kl_nats": law.kl_nats})
    return rows


def markdown_table(rows) -> str:
    """Tasks x decoding rules as rows, k = 1..n as columns: the exact accuracies (fractions)."""
    ks = sorted({r["k"] for r in rows})
    head = "| task | decoding | " + " | ".join(f"k = {k}" for k in ks) + " |"
    out = [head, "|" + "---|" * (len(ks) + 2)]
    keys = []
    for r in rows:
        if (r["task"], r["decode"]) not in keys:
            keys.append((r["task"], r["decode"]))
    for task, decode in keys:
        cells = []
        for k in ks:
            r = next(r for r in rows if r["task"] == task and r["decode"] == decode and r["k"] == k)
            f: Fraction = r["accuracy"]
            cells.append(str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}")
        out.append(f"| {task} | {decode} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def plot(rows, path) -> None:
    """Accuracy against tokens per step, one line per task and decoding rule (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    styles = {"sample": "-", "greedy": "--"}
    colours = dict(zip(FIGURE_TASKS, ("C0", "C1", "C2")))
    n = rows[0]["n"]
    for task in dict.fromkeys(r["task"] for r in rows):
        for decode in DECODES:
            pts = [(r["k"], float(r["accuracy"])) for r in rows if r["task"] == task and r["decode"] == decode]
            if not pts:
                continue
            ks, acc = zip(*pts)
            ax.plot(ks, [max(a, 1e-6) for a in acc], styles[decode], marker="o", ms=3.5,
                    color=colours.get(task, "C3"), label=f"{task}, {decode}")
    ax.set_yscale("log")
    ax.set_ylim(1e-6 * 0.8, 1.5)
    ax.set_xlabel("tokens per step k (the last step takes n mod k)")
    ax.set_ylabel("accuracy = 1 - SER (exact; 0 drawn at 1e-6)")
    ax.set_title(f"ParallelBench list tasks, n = {n}: oracle with random positions")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
