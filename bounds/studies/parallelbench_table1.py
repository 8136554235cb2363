"""ParallelBench's printed Table 1 and Figure 2 beside mdmt's exact values (docs/tasks.md, "ParallelBench Table 1,
row by row").

:func:`table1_values` gives, for each printed cell of Table 1 (Kang et al., arXiv 2510.04767) and each n, the
printed entry (the ``printed_*`` transcriptions of :mod:`mdmt.bounds.theorems.parallelbench`), mdmt's exact value
from the task's law (:func:`mdmt.constructions.reverse.support_exact.support_law`, exact rationals; C(Y|X) from the
listed support) and whether they are equal; :func:`figure2_curves` the exact curves of Figure 2 (a)-(e).  Family PB
of ``mdmt verify`` checks the same cells (rows ``T1``) with exact arithmetic; this module only tabulates them.
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..theorems import parallelbench as pb

LN2 = math.log(2)


def _law(spec: str, policy, decode: str, cache: dict):
    from mdmt.constructions.languages.spec import language_from_spec
    from mdmt.constructions.reverse.support_exact import support_law, symmetry_generators

    if spec not in cache:
        lang = language_from_spec(spec)
        cache[spec] = (lang, symmetry_generators(lang))
    lang, gens = cache[spec]
    return support_law(lang, policy, decode=decode, symmetries=gens, rationals=True)


def _tc_bits(spec: str, cache: dict) -> float:
    """C(Y|X) = sum_i H(y_i) - H(Y) of the listed law, in bits (float64 from the support)."""
    from mdmt.constructions.languages.spec import language_from_spec
    from mdmt.constructions.reverse.information import information_quantities

    lang = cache[spec][0] if spec in cache else language_from_spec(spec)
    return information_quantities(lang, lang.length)["total_correlation"] / LN2


def fmt(x) -> str:
    """A Fraction as p/q, a float to 4 decimals, None as a dash."""
    if x is None:
        return "-"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, Fraction):
        return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"
    return f"{float(x):.4f}"


def table1_values(ns=range(2, 9), gammas=(Fraction(0), Fraction(3, 10), Fraction(1, 2), Fraction(7, 10),
                                          Fraction(9, 10))) -> list[dict]:
    """One dict per (cell, n, k or gamma): ``cell``, ``n``, ``arg``, ``printed`` (None: the printed formula is not
    defined there), ``stated`` (inside the paper's condition), ``exact`` (mdmt's law) and ``agree``."""
    from mdmt.constructions.reverse.policies import Sizes, Threshold

    cache: dict = {}
    out = []

    def add(cell, n, arg, printed, exact, stated=True):
        same = printed is not None and (abs(float(printed) - float(exact)) < 1e-12 if isinstance(exact, float)
                                        else Fraction(printed) == exact)
        out.append({"cell": cell, "n": n, "arg": arg, "printed": printed, "exact": exact, "stated": stated,
                    "agree": same})

    for n in ns:
        ri, rr, sh = f"task:replace-index:n={n}", f"task:replace-random:n={n}", f"task:shuffle:n={n}"
        add("Copy & Replace Index / C(Y|X)", n, None, float(pb.PRINTED_COPY_C), _tc_bits(ri, cache))
        add("Replace Random / C(Y|X)", n, None, float(pb.printed_replace_random_c(n)), _tc_bits(rr, cache))
        add("Shuffle / C(Y|X)", n, None, float(pb.printed_shuffle_c(n)), _tc_bits(sh, cache))
        for k in range(1, n + 1):
            sizes = Sizes(pb.k_sizes(n, k))
            add("Copy & Replace Index / Acc. (Greedy, Top-k)", n, k, pb.PRINTED_COPY_ACCURACY,
                _law(ri, sizes, "greedy", cache).accuracy_exact)
            if k >= 2:
                add("Replace Random / Acc. (Greedy, Top-k)", n, k, pb.printed_replace_random_greedy(n, k),
                    _law(rr, sizes, "greedy", cache).accuracy_exact, pb.stated_replace_random_greedy(n, k))
            printed = pb.printed_shuffle_accuracy(n, k)  # k | n; else the case k = 2 of Eq. (5), n odd
            add("Shuffle / Acc. (Greedy, Top-k)", n, k, printed if printed is not None else
                pb.printed_shuffle_accuracy_case(n, k),
                _law(sh, sizes, "greedy" if n <= 6 else "sample", cache).accuracy_exact,
                pb.stated_shuffle_accuracy(n, k))
        for g in gammas:
            th = Threshold(float(g))
            add("Copy & Replace Index / Acc. (Greedy, Threshold)", n, g, pb.PRINTED_COPY_ACCURACY,
                _law(ri, th, "greedy", cache).accuracy_exact)
            add("Replace Random / Acc. (Greedy, Threshold)", n, g, pb.printed_replace_random_threshold(n, g),
                _law(rr, th, "greedy", cache).accuracy_exact, pb.stated_replace_random_threshold(n))
            add("Shuffle / Acc. (Greedy, Threshold)", n, g, pb.printed_shuffle_threshold(g),
                _law(sh, th, "greedy" if n <= 6 else "sample", cache).accuracy_exact, g > Fraction(1, 2))
    return out


def values_markdown(rows, cell: str, ns) -> str:
    """A Markdown table of one cell: rows k (or gamma), columns n; each entry ``exact`` (``printed`` where it
    differs; ``*`` outside the paper's stated condition)."""
    args = list(dict.fromkeys(r["arg"] for r in rows if r["cell"] == cell))
    name = "gamma" if cell.endswith("Threshold)") else "k"
    head = f"| {name} | " + " | ".join(f"n = {n}" for n in ns) + " |"
    lines = [head, "|" + "---|" * (len(ns) + 1)]
    for a in args:
        cells = []
        for n in ns:
            r = next((r for r in rows if r["cell"] == cell and r["n"] == n and r["arg"] == a), None)
            if r is None:
                cells.append("")
                continue
            s = fmt(r["exact"])
            if not r["agree"]:
                s += f" (printed {fmt(r['printed'])})" if r["printed"] is not None else " (not printed)"
            if not r["stated"]:
                s += " *"
            cells.append(s)
        lines.append(f"| {fmt(a) if a is not None else ''} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- Figure 2

FIG2_NS = tuple(range(6, 17, 2))  # the input lengths of Figure 2 (even: k = 2 divides n)
FIG2_GAMMAS = tuple(Fraction(g, 100) for g in (30, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90, 95, 99))


def figure2_curves(ns=FIG2_NS, n_threshold: int = 10, gammas=FIG2_GAMMAS, law_up_to: dict | None = None,
                   shuffle_law_gammas=()) -> list[dict]:
    """The exact curves of ParallelBench's Figure 2: (a)-(d) accuracy against n for k = 1, 2, n tokens per step
    (random positions, remainder last), Shuffle and Replace Random, temperature 1 (``sample``) and greedy; (e)
    accuracy against the threshold gamma at n = ``n_threshold``.  Values are mdmt's closed forms; where
    ``law_up_to[task]`` >= n (and for the Shuffle thresholds in ``shuffle_law_gammas``) mdmt's exact law is
    computed as well and must agree (``source`` says which)."""
    from mdmt.constructions.reverse.policies import Sizes, Threshold

    law_up_to = {"shuffle": 8, "replace-random": 12} if law_up_to is None else law_up_to
    cache: dict = {}
    out = []
    panels = {("shuffle", "sample"): "a", ("shuffle", "greedy"): "b", ("replace-random", "sample"): "c",
              ("replace-random", "greedy"): "d"}
    for (task, decode), panel in panels.items():
        for n in ns:
            for label, k in (("k=1", 1), ("k=2", 2), ("k=n", n)):
                sizes = pb.k_sizes(n, k)
                closed = pb.accuracy(task, n, sizes, decode)
                source = "closed form"
                if n <= law_up_to.get(task, 0):
                    law = _law(pb.task_spec(task, n), Sizes(sizes), decode, cache).accuracy_exact
                    if law != closed:
                        raise AssertionError(f"{task} n={n} k={k} {decode}: law {law} != closed form {closed}")
                    source = "law"
                out.append({"panel": panel, "task": task, "decode": decode, "n": n, "curve": label, "x": n,
                            "accuracy": closed, "source": source})
    n = n_threshold
    for task in ("shuffle", "replace-random"):
        for decode in ("greedy", "sample"):
            for g in gammas:
                closed = pb.threshold_accuracy(task, n, g, decode)
                source = "closed form"
                # the law at the float nearest gamma: within TIE_TOL of a confidence it acts as gamma itself
                if task == "replace-random" or g in shuffle_law_gammas:
                    law = _law(pb.task_spec(task, n), Threshold(float(g)), decode, cache).accuracy_exact
                    if law != closed:
                        raise AssertionError(f"{task} n={n} gamma={g} {decode}: law {law} != closed form {closed}")
                    source = "law"
                out.append({"panel": "e", "task": task, "decode": decode, "n": n, "curve": f"{task}, {decode}",
                            "x": g, "accuracy": closed, "source": source})
    return out


def plot_figure2(rows, path) -> None:
    """Five panels like ParallelBench's Figure 2, from mdmt's exact values (accuracy in %)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 5, figsize=(17, 3.4))
    titles = {"a": "(a) Shuffle (tau = 1)", "b": "(b) Shuffle (tau = 0)", "c": "(c) Replace (tau = 1)",
              "d": "(d) Replace (tau = 0)"}
    for ax, panel in zip(axes, "abcde"):
        pts = [r for r in rows if r["panel"] == panel]
        for curve in dict.fromkeys(r["curve"] for r in pts):
            xs = [float(r["x"]) for r in pts if r["curve"] == curve]
            ys = [100 * float(r["accuracy"]) for r in pts if r["curve"] == curve]
            ax.plot(xs, ys, marker="o", ms=3, label=curve)
        n = pts[0]["n"] if panel == "e" else None
        ax.set_title(titles.get(panel, f"(e) Threshold (n = {n})"), fontsize=9)
        ax.set_xlabel("threshold gamma" if panel == "e" else "input length n", fontsize=8)
        ax.set_ylim(-3, 103)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    axes[0].set_ylabel("accuracy (%), exact")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
