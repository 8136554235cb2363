"""Family PB of ``mdmt verify``: ParallelBench Section 4 (arXiv 2510.04767) as exact rows.

Each row sets a closed form of :mod:`mdmt.bounds.theorems.parallelbench` against mdmt's own exact law of the
task (:func:`mdmt.constructions.reverse.support_exact.support_law` on ``task:NAME``), in exact rationals, or
against an information quantity computed from the task's support (exact sums of rational multiples of logs):

``E3``   Eq. 3: C(Y | X) of Replace Random = sum_i H(y_i) - H(Y) of the listed law, n = 2..n_max;
``E4``   Eq. 4: L_T of Shuffle = the sum over the steps of the conditional total correlations of the listed law
         (every revealed past averaged), for the k-token partitions, n <= 5;
``E5``   Eq. 5: Shuffle accuracy with k tokens per step, and exp(-L_T) = accuracy (the bound is attained);
``RR``   Replace Random: sampling ((n-1)/n)^(n-1) in one step and the recursion for k per step; greedy 1/2 for
         k = 2 and 0 for larger k dividing n (every k: the last step's size decides);
``TH``   the confidence threshold on Shuffle, Replace Random and Copy, sampling and greedy;
``ID``   accuracy = 2^(-KL in bits) on the uniform tasks with random positions (floats);
``CP``   Copy (mdmt's copy chain) and Replace Index.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import sympy as sp

from ..theorems import parallelbench as pb
from .check_rows import Row, decide, exact_row

FAMILY = "PB"
THRESHOLDS = (Fraction(0), Fraction(1, 10), Fraction(3, 10), Fraction(1, 2), Fraction(7, 10), Fraction(9, 10))


def _lang(task, n, V=2):
    from mdmt.constructions.languages.spec import language_from_spec

    return language_from_spec(pb.task_spec(task, n, V))


def _entropy_of_counts(counts) -> sp.Expr:
    """H of the law proportional to integer counts, exact (nats): sum (c/g) log(g/c)."""
    g = int(sum(counts))
    return sum((sp.Rational(int(c), g) * sp.log(sp.Rational(g, int(c))) for c in counts if c), sp.Integer(0))


def _tc_of_block(X: np.ndarray, past: list[int], block: list[int]) -> sp.Expr:
    """E over the past of C(Y_block | past) = sum_i H(y_i | past) - H(Y_block | past), for a uniform law on the rows
    of X, computed from the rows (each past value weighted by its count)."""
    M = X.shape[0]
    keys = [tuple(r) for r in X[:, past].tolist()] if past else [()] * M
    groups: dict = {}
    for k, key in enumerate(keys):
        groups.setdefault(key, []).append(k)
    out = sp.Integer(0)
    for rows in groups.values():
        Y = X[rows]
        w = sp.Rational(len(rows), M)
        joint = np.unique(Y[:, block], axis=0, return_counts=True)[1]
        c = -_entropy_of_counts(joint)
        for i in block:
            c += _entropy_of_counts(np.unique(Y[:, i], return_counts=True)[1])
        out += w * c
    return sp.nsimplify(sp.expand_log(out, force=True)) if out != 0 else out


def parallelbench_rows(quick: bool = False, n_max: int = 8) -> list[Row]:
    from mdmt.constructions.reverse.policies import Sizes, Threshold
    from mdmt.constructions.reverse.support_exact import support_law, symmetry_generators

    rows: list[Row] = []
    F = FAMILY
    for n in range(2, n_max + 1):  # Eq. 3
        X = _lang("replace-random", n).support_
        C = sum((_entropy_of_counts(np.unique(X[:, i], return_counts=True)[1]) for i in range(n)), sp.Integer(0)) \
            - sp.log(X.shape[0])
        rows.append(exact_row(F, f"replace-random:n={n}", "E3 C(Y|X) = (n-1) log(n/(n-1))", C,
                              pb.replace_random_tc(n), "=="))
    for n in range(2, min(5, n_max) + 1):  # Eq. 4 from the listed law
        X = _lang("shuffle", n).support_
        for k in range(1, n + 1):
            sizes = pb.k_sizes(n, k)
            lt, start = sp.Integer(0), 0
            for s in sizes:
                lt += _tc_of_block(X, list(range(start)), list(range(start, start + s)))
                start += s
            rows.append(exact_row(F, f"shuffle:n={n}", f"E4 L_T, k={k}", lt, pb.shuffle_lt(sizes), "=="))
    cache = {}
    for task in ("shuffle", "replace-random", "copy", "replace-index"):
        for n in range(2, n_max + 1):
            lang = _lang(task, n)
            gens = symmetry_generators(lang)
            inst = pb.task_spec(task, n)[5:]
            for k in range(1, n + 1):
                sizes = pb.k_sizes(n, k)
                for decode in ("sample", "greedy"):
                    if task == "shuffle" and decode == "greedy" and n > 6:
                        continue  # the same law as sampling (uniform marginals), checked up to n = 6
                    law = support_law(lang, Sizes(sizes), decode=decode, symmetries=gens, rationals=True)
                    cache[task, n, k, decode] = law
                    acc = law.accuracy_exact
                    key = {"shuffle": "E5", "replace-random": "RR"}.get(task, "CP")
                    rows.append(exact_row(F, inst, f"{key} accuracy, k={k}, {decode}", acc,
                                          pb.accuracy(task, n, sizes, decode), "=="))
                    if task == "shuffle" and decode == "sample":
                        lt = pb.shuffle_lt(sizes)
                        rows.append(exact_row(F, inst, f"E5 exp(-L_T) = accuracy, k={k}", acc,
                                              sp.nsimplify(sp.exp(-lt)), "=="))
                    if acc > 0:  # the identity accuracy = 2^(-KL bits) on a uniform support, random positions
                        kl_bits = law.kl_nats / math.log(2)
                        rows.append(decide(F, inst, f"ID accuracy = 2^-KL bits, k={k}, {decode}",
                                           _around(2.0 ** -kl_bits), _around(float(acc)), "==",
                                           note="floats (KL from the float64 law)"))
            if task == "replace-random":
                law = cache[task, n, n, "sample"]
                rows.append(exact_row(F, inst, "RR one step, temperature 1: ((n-1)/n)^(n-1)", law.accuracy_exact,
                                      Fraction(n - 1, n) ** (n - 1), "=="))
                for k in range(2, n + 1):
                    if n % k == 0:
                        want = Fraction(1, 2) if k == 2 else Fraction(0)
                        rows.append(exact_row(F, inst, f"RR greedy, k={k} divides n: {want}",
                                              cache[task, n, k, "greedy"].accuracy_exact, want, "=="))
            for g in THRESHOLDS:
                for decode in ("sample", "greedy"):
                    if task == "shuffle" and decode == "greedy" and n > 6:
                        continue
                    law = support_law(lang, Threshold(float(g)), decode=decode, symmetries=gens, rationals=True)
                    rows.append(exact_row(F, inst, f"TH threshold {g}, {decode}", law.accuracy_exact,
                                          pb.threshold_accuracy(task, n, g, decode), "=="))
    return rows


def _around(x: float, rel: float = 1e-9) -> tuple[float, float]:
    """A float with a relative tolerance, as an enclosure (both sides come from float64 arithmetic)."""
    d = abs(x) * rel + 1e-15
    return x - d, x + d
