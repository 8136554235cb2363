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
``CP``   Copy (mdmt's copy chain) and Replace Index;
``T1``   ParallelBench's printed Table 1, cell by cell (:func:`table1_rows`): each printed entry, as transcribed in
         :mod:`mdmt.bounds.theorems.parallelbench` (``printed_*``), against mdmt's exact law of the task, for
         n = 2..8; where the paper states a result under a condition (k | n, n > 2, gamma > 0.5) the row checks the
         verdict itself: equal where the condition holds, and equal or not outside it exactly as docs/tasks.md
         says ("ParallelBench Table 1, row by row");
``S4``   the other quantitative statements of Sections 4.1-4.2 (:func:`section4_rows`): L_T of Shuffle for any
         partition and L_(n/2), the three cases of Eq. (5) and their limits, the limits log2(e) and 1/e, Theorem
         1's equality (KL = L_T for a fixed partition; the random positions of Section 4.2 go below it on Replace
         Random), Remark 1 (L_1 = C, L_n = 0), Theorem 2 (L*_T >= L*_(T+1), minimised over every ordered set
         partition of the listed law for n <= 4 and over step sizes for n <= 8), top-k by confidence = by random
         positions.
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import sympy as sp

from ..theorems import parallelbench as pb
from ..theorems.intervals import LogSum
from .check_rows import Row, decide, exact_row, to_logsum

FAMILY = "PB"
THRESHOLDS = (Fraction(0), Fraction(1, 10), Fraction(3, 10), Fraction(1, 2), Fraction(7, 10), Fraction(9, 10))


def _lang(task, n, V=2):
    from mdmt.constructions.languages.spec import language_from_spec

    return language_from_spec(pb.task_spec(task, n, V))


def parallelbench_rows(quick: bool = False, n_max: int = 8) -> list[Row]:
    from mdmt.constructions.reverse.policies import Sizes, Threshold
    from mdmt.constructions.reverse.support_exact import support_law, symmetry_generators

    rows: list[Row] = []
    F = FAMILY
    memo: dict = {}  # conditional total correlations of the listed laws (_tc_ls)
    for n in range(2, n_max + 1):  # Eq. 3
        X = _lang("replace-random", n).support_
        C = _tc_ls(X, (), tuple(range(n)), memo)
        rows.append(exact_row(F, f"replace-random:n={n}", "E3 C(Y|X) = (n-1) log(n/(n-1))", C,
                              pb.replace_random_tc(n), "=="))
    for n in range(2, min(5, n_max) + 1):  # Eq. 4 from the listed law
        X = _lang("shuffle", n).support_
        for k in range(1, n + 1):
            sizes = pb.k_sizes(n, k)
            blocks, start = [], 0
            for s in sizes:
                blocks.append(tuple(range(start, start + s)))
                start += s
            lt = _lt_of_law(X, blocks, memo)
            rows.append(exact_row(F, f"shuffle:n={n}", f"E4 L_T, k={k}", lt, pb.shuffle_lt(sizes), "=="))
    cache, tcache, gcache = {}, {}, {}
    for task in ("shuffle", "replace-random", "copy", "replace-index"):
        for n in range(2, n_max + 1):
            lang = _lang(task, n)
            gens = gcache[task, n] = (lang, symmetry_generators(lang))
            gens = gens[1]
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
                                      pb.printed_replace_random_one_step(n), "=="))
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
                    tcache[task, n, g, decode] = law
                    rows.append(exact_row(F, inst, f"TH threshold {g}, {decode}", law.accuracy_exact,
                                          pb.threshold_accuracy(task, n, g, decode), "=="))
    rows += table1_rows(cache, tcache, gcache, n_max, memo)
    rows += section4_rows(cache, gcache, n_max, memo)
    return rows


def _around(x: float, rel: float = 1e-9) -> tuple[float, float]:
    """A float with a relative tolerance, as an enclosure (both sides come from float64 arithmetic)."""
    d = abs(x) * rel + 1e-15
    return x - d, x + d


# ----------------------------------------------------------------------------- Table 1 and Section 4, as printed

def _entropy_ls(counts) -> LogSum:
    """H of the law proportional to integer counts, exact (nats) as a LogSum: sum (c/g) log(g/c)."""
    g = int(sum(counts))
    terms: dict = {}
    for c in counts:
        if c:
            r = Fraction(g, int(c))
            terms[r] = terms.get(r, 0) + Fraction(int(c), g)
    return LogSum(0, terms)


def _tc_ls(X: np.ndarray, past: tuple, block: tuple, memo: dict) -> LogSum:
    """E over the past of C(Y_block | Y_past) = sum_i H(y_i | past) - H(Y_block | past) for the uniform law on the
    rows of X, exact (a LogSum), memoised per (law, past, block)."""
    key = (X.shape, X.tobytes(), past, block) if X.nbytes <= 1 << 16 else None
    if key is None or key not in memo:
        M = X.shape[0]
        groups: dict = {}
        for row in X.tolist():
            groups.setdefault(tuple(row[i] for i in past), []).append(row)
        out = LogSum()
        for rows in groups.values():
            c = -_entropy_ls(Counter(tuple(r[i] for i in block) for r in rows).values())
            for i in block:
                c = c + _entropy_ls(Counter(r[i] for r in rows).values())
            out = out + c * Fraction(len(rows), M)
        if key is None:
            return out
        memo[key] = out
    return memo[key]


def _lt_of_law(X: np.ndarray, blocks, memo: dict) -> LogSum:
    """Eq. (2): L_T of the listed law for the ordered partition ``blocks`` (tuples of positions), exact."""
    out, past = LogSum(), ()
    for b in blocks:
        out = out + _tc_ls(X, past, tuple(sorted(b)), memo)
        past = tuple(sorted(past + tuple(b)))
    return out


def _ordered_partitions(items: tuple):
    """Every ordered partition of ``items`` into non-empty blocks (Fubini many)."""
    if not items:
        yield []
        return
    n = len(items)
    for mask in range(1, 1 << n):
        first = tuple(items[i] for i in range(n) if mask >> i & 1)
        rest = tuple(items[i] for i in range(n) if not mask >> i & 1)
        for tail in _ordered_partitions(rest):
            yield [first] + tail


def _compositions(n: int):
    """Every composition of n (ordered step sizes), as lists."""
    for mask in range(1 << (n - 1)):
        sizes, run = [], 1
        for i in range(n - 1):
            if mask >> i & 1:
                sizes.append(run)
                run = 1
            else:
                run += 1
        yield sizes + [run]


def _exact_min(values: list) -> LogSum:
    """The least of exact LogSums: floats pick the candidates, exact comparisons decide among near ties."""
    fl = [float(v) for v in values]
    lo = min(fl)
    near = [v for v, f in zip(values, fl) if f <= lo + 1e-9 * max(1.0, abs(lo))]
    best = near[0]
    for v in near[1:]:
        if (v - best).sign() < 0:
            best = v
    return best


def _ls(x) -> LogSum:
    """An exact value (Fraction, sympy rational/log expression, LogSum) as a LogSum."""
    return to_logsum(x)


def _printed_row(inst, case, value, printed, relation, note: str = "") -> Row:
    """An exact row whose bound is a printed entry; an entry that is not an exact number of the kind the row
    compares (a product of logarithms, say) makes a failing row that names it, not an error."""
    try:
        return exact_row(FAMILY, inst, case, value, printed, relation, note=note)
    except (ValueError, TypeError) as exc:
        return Row(FAMILY, inst, case, (math.nan, math.nan), (math.nan, math.nan), relation, "exact", False,
                   -math.inf, -math.inf, f"printed entry {printed}: {exc}")


def _verdict_row(inst, case, exact, closed, printed, agrees: bool, note: str = "") -> Row:
    """A Table 1 cell: mdmt's exact value (``exact``) equals its closed form (``closed``), and equals the printed
    entry (``printed``; None: the paper's formula is not defined there) exactly when ``agrees`` says so.  The
    verdict itself is checked: a cell documented as "agrees" fails if the printed formula parts, and one
    documented as "differs" fails if they coincide."""
    try:
        same = printed is not None and (_ls(exact) - _ls(printed)).sign() == 0
    except (ValueError, TypeError):
        same = False
    row = exact_row(FAMILY, inst, case, exact, closed, "==", note=note or (
        "agrees with the printed entry" if agrees else
        f"printed {printed if printed is not None else '(not defined)'}: differs (outside the stated condition)"))
    row.holds = row.holds and same == agrees
    return row


def table1_rows(cache: dict, tcache: dict, gcache: dict, n_max: int = 8, memo: dict | None = None) -> list[Row]:
    """ParallelBench Table 1, row by row (module docstring, ``T1``).  ``cache[task, n, k, decode]`` and
    ``tcache[task, n, gamma, decode]``: the exact laws of :func:`parallelbench_rows` (k tokens per step, remainder
    last; the confidence threshold); ``gcache[task, n]``: (the law, its symmetry generators)."""
    from mdmt.constructions.languages.explicit import ExplicitLanguage
    from mdmt.constructions.reverse.policies import Sizes, Threshold
    from mdmt.constructions.reverse.support_exact import support_law

    F, rows, memo = FAMILY, [], {} if memo is None else memo
    ns = range(2, n_max + 1)
    # Copy & Replace Index: ParallelBench's Copy is Y = X (a point mass at the input), Replace Index a point mass too
    for n in ns:
        point_masses = (("copy:Y=X", ExplicitLanguage([list(range(n))])), ("replace-index", _lang("replace-index", n)))
        for name, lang in point_masses:
            inst = f"{name}:n={n}"
            X = lang.support_
            c = sum((_entropy_ls(np.unique(X[:, i], return_counts=True)[1]) for i in range(n)), LogSum()) \
                - LogSum.log(X.shape[0])
            rows.append(_printed_row(inst, "T1 Copy & Replace Index: C(Y|X) = 0 (so lim C = 0)", c,
                                  pb.PRINTED_COPY_C, "=="))
            # Y = X: one step and the lowest threshold suffice (a point mass: every decoding outputs it); the
            # point mass replace-index has every k and threshold from the laws above
            for k in (range(1, n + 1) if name == "replace-index" else (n,)):
                law = cache.get(("replace-index", n, k, "greedy")) if name == "replace-index" else \
                    support_law(lang, Sizes(pb.k_sizes(n, k)), decode="greedy", symmetries=False, rationals=True)
                rows.append(_printed_row(inst, f"T1 Copy & Replace Index: Acc. (Greedy, Top-k) = 1, k={k}",
                                      law.accuracy_exact, pb.PRINTED_COPY_ACCURACY, "=="))
            for g in (THRESHOLDS if name == "replace-index" else THRESHOLDS[:1]):
                law = tcache.get(("replace-index", n, g, "greedy")) if name == "replace-index" else \
                    support_law(lang, Threshold(float(g)), decode="greedy", symmetries=False, rationals=True)
                rows.append(_printed_row(inst, f"T1 Copy & Replace Index: Acc. (Greedy, Threshold) = 1, gamma={g}",
                                      law.accuracy_exact, pb.PRINTED_COPY_ACCURACY, "=="))
    for n in ns:  # Replace Random
        inst = f"replace-random:n={n}"
        lang = _lang("replace-random", n)
        X = lang.support_
        c = _tc_ls(X, (), tuple(range(n)), memo)
        rows.append(_printed_row(inst, "T1 Replace Random: C(Y|X) = (n-1)[log2(n) - log2(n-1)] (Eq. 3), in nats", c,
                              pb.bits_to_nats(pb.printed_replace_random_c(n)), "=="))
        for k in range(2, n + 1):
            acc = cache["replace-random", n, k, "greedy"].accuracy_exact
            stated = pb.stated_replace_random_greedy(n, k)
            r = n % k
            agrees = stated or r >= 3  # outside k | n the last step (n mod k positions) decides: 1 for 1, 1/2 for 2
            rows.append(_verdict_row(inst, f"T1 Replace Random: Acc. (Greedy, Top-k) = 0.5 if k=2, 0 if k>2; k={k}",
                                     acc, pb.replace_random_greedy_accuracy(pb.k_sizes(n, k)),
                                     pb.printed_replace_random_greedy(n, k), agrees))
        gammas = sorted(set(THRESHOLDS) | _boundary_gammas(n))
        for g in gammas:
            law = tcache.get(("replace-random", n, g, "greedy"))
            if law is None:
                law = support_law(lang, Threshold(float(g)), decode="greedy", symmetries=gcache["replace-random", n][1],
                                  rationals=True)
            agrees = pb.stated_replace_random_threshold(n) or g >= Fraction(1, 2)  # n = 2, gamma < 1/2: a tie, 1/2
            rows.append(_verdict_row(inst, f"T1 Replace Random: Acc. (Greedy, Threshold) = 1 if gamma >= (n-1)/n, "
                                           f"else 0; gamma={g}", law.accuracy_exact,
                                     pb.replace_random_threshold_accuracy(n, g, "greedy"),
                                     pb.printed_replace_random_threshold(n, g), agrees))
    for n in ns:  # Shuffle
        inst = f"shuffle:n={n}"
        X = _lang("shuffle", n).support_
        c = sum((_entropy_ls(np.unique(X[:, i], return_counts=True)[1]) for i in range(n)), LogSum()) \
            - LogSum.log(X.shape[0])
        rows.append(_printed_row(inst, "T1 Shuffle: C(Y|X) = n log2(n) - log2(n!) (Eq. 4), in nats", c,
                              pb.bits_to_nats(pb.printed_shuffle_c(n)), "=="))
        for k in range(1, n + 1):
            decode = "greedy" if ("shuffle", n, k, "greedy") in cache else "sample"  # the same law (uniform marginals)
            acc = cache["shuffle", n, k, decode].accuracy_exact
            if pb.stated_shuffle_accuracy(n, k):
                rows.append(_printed_row(inst, f"T1 Shuffle: Acc. (Greedy, Top-k) = Eq. (5), k={k} divides n",
                                      acc, pb.printed_shuffle_accuracy(n, k), "==", note=f"{decode} law"))
            case = pb.printed_shuffle_accuracy_case(n, k)
            if case is not None:  # k = 2 with n odd: the last step reveals one item, a factor 1
                rows.append(_printed_row(inst, f"T1 Shuffle: Eq. (5) case k={'n' if k == n else k}", acc, case, "==",
                                      note=f"{decode} law, remainder last"))
        for g in (Fraction(1, 2) + Fraction(1, 1024), Fraction(7, 10), Fraction(9, 10)):
            for decode in ("greedy", "sample"):
                law = tcache.get(("shuffle", n, g, decode))
                if law is None:
                    if decode == "greedy" and n > 6:
                        continue
                    lang, gens = gcache["shuffle", n]
                    law = support_law(lang, Threshold(float(g)), decode=decode, symmetries=gens, rationals=True)
                rows.append(_printed_row(inst, f"T1 Shuffle: Acc. (Greedy, Threshold) = 1 if gamma > 0.5; gamma={g}, "
                                               f"{decode}", law.accuracy_exact, pb.printed_shuffle_threshold(g), "=="))
    return rows


def _boundary_gammas(n: int) -> set:
    """The Replace Random threshold's boundary gamma = (n-1)/n and a gamma just below it.  The law is computed at the
    float nearest gamma; a confidence within TIE_TOL of the threshold counts as equal to it (policies, "Ties"), so the
    float nearest (n-1)/n acts as (n-1)/n itself, a binary fraction (n = 4, 8) or not."""
    b = Fraction(n - 1, n)
    return {b, b - Fraction(1, 1024)}


def section4_rows(cache: dict, gcache: dict, n_max: int = 8, memo: dict | None = None) -> list[Row]:
    """The quantitative statements of Sections 4.1-4.2 other than Table 1's cells (module docstring, ``S4``);
    ``cache`` and ``gcache`` as in :func:`table1_rows`."""
    from mdmt.constructions.reverse.policies import FixedOrder, TopK
    from mdmt.constructions.reverse.support_exact import support_law

    F, rows, memo = FAMILY, [], {} if memo is None else memo
    ns = range(2, n_max + 1)
    # Eq. (4)'s L_T of Shuffle for every partition (step sizes), printed (bits) against mdmt's closed form (nats)
    for n in range(2, min(6, n_max) + 1):
        for sizes in _compositions(n):
            rows.append(_printed_row(f"shuffle:n={n}", f"S4 L_T = sum |S_t| log2 k_t - log2 n!, sizes {sizes}",
                                  pb.shuffle_lt(sizes), pb.bits_to_nats(pb.printed_shuffle_lt(sizes)), "=="))
    for n in ns:  # L_(n/2) = log2(n!!/(n-1)!!): T = n/2 for n even; n odd: remainder last agrees, first does not
        printed = pb.bits_to_nats(pb.printed_shuffle_l_half(n))
        rows.append(_printed_row(f"shuffle:n={n}", "S4 L_(n/2) = log2(n!!/(n-1)!!), 2 per step, remainder last",
                              pb.shuffle_lt(pb.k_sizes(n, 2)), printed, "=="))
        if n % 2:
            first = [1] + [2] * (n // 2)
            rows.append(_verdict_row(f"shuffle:n={n}", "S4 L_(n/2) = log2(n!!/(n-1)!!), 2 per step, remainder first",
                                     pb.shuffle_lt(first), pb.bits_to_nats(log_ratio(double_factorials(n - 1, n - 2))),
                                     printed, False, note="n odd, remainder first: log2((n-1)!!/(n-2)!!)"))
    for n in list(ns) + [16, 64, 256]:  # the limits, as bounds that tend to them, n by n
        inst = f"n={n}"
        acc2 = pb.printed_shuffle_accuracy_case(n, 2)
        if n % 2 == 0:  # T = n/2
            a, b = pb.double_factorial(n), pb.double_factorial(n - 1)
            rows.append(_printed_row(inst, "S4 lim L_(n/2) = inf: (n!!/(n-1)!!)^2 >= n + 1", Fraction(a * a, b * b),
                                  Fraction(n + 1), ">="))
            rows.append(_printed_row(inst, "S4 Eq. (5) k=2 -> 0: ((n-1)!!/n!!)^2 <= 1/(n+1)", acc2 * acc2,
                                  Fraction(1, n + 1), "<="))
        rows.append(_printed_row(inst, "S4 Eq. (5): k=n below k=2, n!/n^n <= (n-1)!!/n!!",
                              pb.printed_shuffle_accuracy_case(n, n), acc2, "<="))
        c_rr = _ls(pb.replace_random_tc(n))
        limit = pb.bits_to_nats(pb.PRINTED_REPLACE_RANDOM_C_LIMIT)  # log2(e) bits = 1 nat
        rows.append(_printed_row(inst, "S4 Eq. (3) lim C = log2(e): C < log2(e)", c_rr, limit, "<="))
        rows.append(_printed_row(inst, "S4 Eq. (3) lim C = log2(e): C >= log2(e) - 1/(2(n-1)) nats", c_rr,
                              limit - sp.Rational(1, 2 * (n - 1)), ">="))
        log_acc = LogSum.log(pb.printed_replace_random_one_step(n))  # = -C: the one-step oracle attains Eq. (2)
        rows.append(_printed_row(inst, "S4 one step, temperature 1: ((n-1)/n)^(n-1) = exp(-C(Y|X))", -log_acc, c_rr,
                              "=="))
        rows.append(_printed_row(inst, "S4 one step, temperature 1: ((n-1)/n)^(n-1) > 1/e", log_acc, LogSum(-1),
                              ">="))
        c_sh = _ls(pb.shuffle_tc(n, n))
        rows.append(_printed_row(inst, "S4 Eq. (4) lim C = inf: C >= n - 1 - log(n)/2 nats", c_sh,
                              LogSum(n - 1) - LogSum.log(n) * Fraction(1, 2), ">="))
    for n in range(2, min(8, n_max)):  # monotone in n
        inst = f"n={n}..{n + 1}"
        rows.append(_printed_row(inst, "S4 Eq. (3) C increases with n", _ls(pb.replace_random_tc(n)),
                              _ls(pb.replace_random_tc(n + 1)), "<="))
        rows.append(_printed_row(inst, "S4 one step ((n-1)/n)^(n-1) decreases with n",
                              pb.printed_replace_random_one_step(n + 1), pb.printed_replace_random_one_step(n), "<="))
    rows.append(_printed_row("log2(e)", "T1 Replace Random: lim C printed as 1.44",
                          Fraction(str(round(float(pb.PRINTED_REPLACE_RANDOM_C_LIMIT), 2))),
                          Fraction(pb.PRINTED_REPLACE_RANDOM_C_LIMIT_DECIMAL), "=="))
    # Theorem 1 (Eq. 2) attained by a fixed partition; the random positions of Section 4.2 go below L_T
    for task, n_top, lt in (("replace-random", n_max, pb.replace_random_lt), ("shuffle", min(5, n_max), pb.shuffle_lt)):
        for n in range(2, n_top + 1):
            lang, gens = gcache[task, n]
            inst = pb.task_spec(task, n)[5:]
            for k in range(1, n + 1):
                sizes = pb.k_sizes(n, k)
                order = np.repeat(np.arange(1, len(sizes) + 1), sizes)
                law = support_law(lang, FixedOrder("order", order=order), symmetries=gens, rationals=True)
                q = Fraction(1, lang.n_sequences)
                kl = sum((LogSum.log(q / law.prob_exact(j)) * q for j in range(lang.n_sequences)), LogSum())
                rows.append(_printed_row(inst, f"S4 Eq. (2) attained: KL = L_T for the fixed partition, k={k}", kl,
                                      lt(sizes), "=="))
                if task == "replace-random":
                    acc = cache[task, n, k, "sample"].accuracy_exact  # p constant on the support: KL = -log(acc)
                    rows.append(_printed_row(inst, f"S4 random positions: KL = -log(acc) <= L_T, k={k}",
                                          -LogSum.log(acc), lt(sizes), "<=", note="strict when 2 <= s_t < m_t"))
    # Remark 1 and Theorem 2
    for task, lt in (("shuffle", pb.shuffle_lt), ("replace-random", pb.replace_random_lt)):
        for n in ns:
            inst = pb.task_spec(task, n)[5:]
            tc = pb.shuffle_tc(n, n) if task == "shuffle" else pb.replace_random_tc(n)
            rows.append(_printed_row(inst, "S4 Remark 1: L_1 = C(Y|X)", lt([n]), tc, "=="))
            rows.append(_printed_row(inst, "S4 Remark 1: L_|Y| = 0", lt([1] * n), 0, "=="))
            best = {}
            for sizes in _compositions(n):
                best.setdefault(len(sizes), []).append(_ls(lt(sizes)))
            star = {T: _exact_min(v) for T, v in best.items()}
            if n <= min(4, n_max):  # every ordered set partition, from the listed law
                X = gcache[task, n][0].support_
                by_T: dict = {}
                for blocks in _ordered_partitions(tuple(range(n))):
                    by_T.setdefault(len(blocks), []).append(_lt_of_law(X, blocks, memo))
                for T, vals in by_T.items():
                    rows.append(_printed_row(inst, f"S4 Theorem 2: L*_{T} over the {len(vals)} ordered set "
                                                   "partitions of the listed law = over step sizes",
                                          _exact_min(vals), star[T], "=="))
            for T in range(1, n):
                rows.append(_printed_row(inst, f"S4 Theorem 2: L*_{T} >= L*_{T + 1}", star[T], star[T + 1], ">="))
    # Top-k by confidence: every masked confidence is equal (or 1), so it is top-k at random positions
    for task in ("shuffle", "replace-random"):
        for n in range(2, min(6, n_max) + 1):
            lang, gens = gcache[task, n]
            for k in range(2, n + 1):
                if n % k:
                    continue
                for decode in ("greedy", "sample"):
                    law = support_law(lang, TopK("confidence", sizes=pb.k_sizes(n, k)), decode=decode, symmetries=gens,
                                      rationals=True)
                    rows.append(_printed_row(pb.task_spec(task, n)[5:], f"S4 top-k by confidence = random, k={k}, "
                                                                        f"{decode}", law.accuracy_exact,
                                          cache[task, n, k, decode].accuracy_exact, "=="))
    return rows


def double_factorials(a: int, b: int) -> Fraction:
    """a!! / b!!."""
    return Fraction(pb.double_factorial(a), pb.double_factorial(b))


def log_ratio(r: Fraction) -> sp.Expr:
    """log2 of a rational (bits, sympy)."""
    return pb.log2(sp.Rational(r.numerator, r.denominator))
