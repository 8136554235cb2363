"""Closed forms of ParallelBench Section 4 (Kang et al., ICLR 2026, arXiv 2510.04767) for the list tasks.

The tasks are the explicit laws ``task:copy``, ``task:replace-index``, ``task:replace-random`` and
``task:shuffle`` (docs/tasks.md): the law of the output Y given one input list X of n distinct items.  The oracle
decodes in steps that reveal uniformly random positions (sizes s_1..s_T, summing to n), the tokens of a step
drawn independently from the marginals (``sample``, temperature 1) or set to the argmax with ties broken
uniformly (``greedy``, ParallelBench's ideal model); accuracy = P(Y in the support) = 1 - SER.  Every value is
an exact rational (``fractions.Fraction``) or a sympy expression in logarithms (nats), written once here and
checked against mdmt's own exact laws (:mod:`mdmt.constructions.reverse.support_exact`) by ``mdmt verify``
(family PB) and tests/test_parallelbench.py.

Conditional total correlation (Eq. 3 of ParallelBench): C(Y | X) = sum_i H(y_i | X) - H(Y | X).

* Replace Random, one step: H(Y | X) = log n, and each y_i is "replaced" with probability 1/n, so
  C = n h(1/n) - log n = (n - 1) log(n / (n - 1))                                     (:func:`replace_random_tc`).
* Shuffle (Eq. 4): with m items still unplaced, revealing s of the m masked positions together,
  C = s log m - log(m! / (m - s)!); for a partition into steps of sizes s_1..s_T,
  L_T = sum_t C_t with m_t = n - s_1 - ... - s_{t-1}                  (:func:`shuffle_tc`, :func:`shuffle_lt`).
* Shuffle accuracy (Eq. 5): every marginal is uniform on the m_t unplaced items, and a step is right exactly when
  its s_t independent draws are distinct: accuracy = prod_t m_t! / ((m_t - s_t)! m_t^(s_t)) = exp(-L_T)
  (:func:`shuffle_accuracy`).  With k tokens per step, the partition is k, k, ..., k, n mod k (:func:`k_sizes`);
  the paper's product over n/k steps of size k assumes k divides n, and mdmt's value for other k is the same
  product with the last factor taken at s_T = n mod k (remainder last) or with the balanced sizes of
  ``--remainder first``.  The marginals being uniform, greedy decoding (uniform ties) has the same law.
* Replace Random accuracy with sampling: at a step with m masked positions (the replaced item among them), each of
  the s revealed positions says "replaced" independently with probability 1/m; exactly one gives a right output
  (the rest is then forced), none leaves the replaced item uniform among the m - s others, two or more are wrong:
  A(m; s_1, s_2, ...) = s_1/m ((m-1)/m)^(s_1-1) + ((m-1)/m)^(s_1) A(m - s_1; s_2, ...), A(0; ) = 0.
  One step: ((n-1)/n)^(n-1)                                                        (:func:`replace_random_accuracy`).
* Replace Random accuracy with greedy: while m >= 3 masked positions remain the argmax of each is "kept"
  (1/m < (m-1)/m), so everything hinges on the last step: size 1 is right, size 2 ties (right with probability
  1/2), size >= 3 keeps every item (never right).  Hence 1/2 for k = 2 and 0 for larger k when k divides n;
  for other k the value is that of the last step's size (:func:`replace_random_greedy_accuracy`).
* Confidence threshold gamma (every masked position with max_v p(v) > gamma, at least the most confident one,
  ties uniformly; Fast-dLLM's rule): on Shuffle every confidence is 1/m, so single items are placed until
  1/m > gamma and the m* = min(n, ceil(1/gamma) - 1) last ones in one step: accuracy m*! / m*^(m*)
  (:func:`shuffle_threshold_accuracy`).  On Replace Random every masked confidence is (m-1)/m (1 when m = 1):
  :func:`replace_random_threshold_accuracy`.
* Copy (mdmt's ``task:copy``: one uniform token of V repeated n times): the first step's s_1 draws must agree,
  V^(1 - s_1); ParallelBench's Copy (Y = X, a point mass) and Replace Index have accuracy 1 and C = 0 for every
  decoding (:func:`copy_accuracy`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import sympy as sp

TASKS = ("copy", "replace-index", "replace-random", "shuffle")


def k_sizes(n: int, k: int) -> list[int]:
    """k tokens per step: [k] * (n // k) and the rest n mod k last (ParallelBench's k-per-step setting)."""
    if not (1 <= k <= n):
        raise ValueError(f"tokens per step k = {k} must be in 1..n = {n}")
    return [k] * (n // k) + ([n % k] if n % k else [])


def _remaining(sizes) -> list[tuple[int, int]]:
    n = sum(sizes)
    out, m = [], n
    for s in sizes:
        out.append((m, s))
        m -= s
    return out


# ----------------------------------------------------------------------------- conditional total correlation

def replace_random_tc(n: int):
    """Eq. 3: C(Y | X) of Replace Random in one step, nats (sympy): (n - 1) log(n / (n - 1)); 0 for n = 1."""
    return sp.Integer(0) if n == 1 else (n - 1) * sp.log(sp.Rational(n, n - 1))


def shuffle_tc(m: int, s: int):
    """Eq. 4: C of revealing s of m unplaced Shuffle positions together, nats (sympy): s log m - log(m!/(m-s)!)."""
    return s * sp.log(m) - sp.log(sp.factorial(m) / sp.factorial(m - s))


def shuffle_lt(sizes):
    """Eq. 4: L_T = sum_t C(S_t | X, S_<t) of Shuffle for the partition into steps of these sizes (sympy, nats)."""
    return sum((shuffle_tc(m, s) for m, s in _remaining(sizes)), sp.Integer(0))


# ----------------------------------------------------------------------------- accuracies (exact rationals)

def shuffle_accuracy(sizes) -> Fraction:
    """Eq. 5: prod_t m_t! / ((m_t - s_t)! m_t^(s_t)); sampling and greedy alike (uniform marginals)."""
    out = Fraction(1)
    for m, s in _remaining(sizes):
        out *= Fraction(math.factorial(m), math.factorial(m - s) * m ** s)
    return out


def replace_random_accuracy(sizes) -> Fraction:
    """Replace Random with sampling from the marginals (module docstring); one step: ((n-1)/n)^(n-1)."""
    acc, reach = Fraction(0), Fraction(1)  # reach: P(no position has said "replaced" yet)
    for m, s in _remaining(sizes):
        keep = Fraction(m - 1, m)
        acc += reach * s * Fraction(1, m) * keep ** (s - 1)
        reach *= keep ** s
    return acc


def replace_random_greedy_accuracy(sizes) -> Fraction:
    """Replace Random with greedy decoding: 1, 1/2 or 0 as the last step reveals 1, 2 or more positions."""
    last = list(sizes)[-1]
    return {1: Fraction(1), 2: Fraction(1, 2)}.get(last, Fraction(0))


def copy_accuracy(n: int, V: int, sizes) -> Fraction:
    """mdmt's copy chain (one uniform token of V repeated n times): V^(1 - s_1), sampling and greedy alike."""
    return Fraction(1, V ** (list(sizes)[0] - 1))


def threshold_m_star(n: int, gamma) -> int:
    """The Shuffle items placed together in the threshold rule's last step: the largest m <= n with 1/m > gamma."""
    g = Fraction(gamma)
    return max(m for m in range(1, n + 1) if Fraction(1, m) > g) if g < 1 else 1


def shuffle_threshold_accuracy(n: int, gamma) -> Fraction:
    """Shuffle with the confidence threshold gamma (module docstring): m*! / m*^(m*)."""
    m = threshold_m_star(n, gamma)
    return Fraction(math.factorial(m), m ** m)


def replace_random_threshold_accuracy(n: int, gamma, decode: str = "sample") -> Fraction:
    """Replace Random with the confidence threshold gamma (module docstring), sampling or greedy tokens.

    While the replaced item is masked, each of the m masked positions has confidence (m-1)/m (1 when m = 1):
    above gamma all m are revealed in one step, else one (uniformly): sampled, it is the replaced item w.p. 1/m
    (then the rest is forced: right) or not (m - 1 remain); greedy keeps it for m >= 3 and is right either way
    at m = 2."""
    g = Fraction(gamma)
    acc, reach = Fraction(0), Fraction(1)
    for m in range(n, 0, -1):
        conf = Fraction(m - 1, m) if m > 1 else Fraction(1)
        if conf > g:
            one_step = Fraction(m - 1, m) ** (m - 1) if decode == "sample" else \
                {1: Fraction(1), 2: Fraction(1, 2)}.get(m, Fraction(0))
            return acc + reach * one_step
        if decode == "sample":
            acc += reach * Fraction(1, m)
            reach *= Fraction(m - 1, m)
        elif m == 2:
            return acc + reach
    return acc


def accuracy(task: str, n: int, sizes, decode: str = "sample", V: int = 2) -> Fraction:
    """The closed-form accuracy of a list task decoded in random-position steps of these sizes."""
    if task == "shuffle":
        return shuffle_accuracy(sizes)
    if task == "replace-random":
        return replace_random_accuracy(sizes) if decode == "sample" else replace_random_greedy_accuracy(sizes)
    if task == "copy":
        return copy_accuracy(n, V, sizes)
    if task == "replace-index":
        return Fraction(1)
    raise ValueError(f"task {task!r} is not one of {', '.join(TASKS)}")


def threshold_accuracy(task: str, n: int, gamma, decode: str = "sample", V: int = 2) -> Fraction:
    """The closed-form accuracy of a list task under the confidence threshold gamma."""
    if task == "shuffle":
        return shuffle_threshold_accuracy(n, gamma)
    if task == "replace-random":
        return replace_random_threshold_accuracy(n, gamma, decode)
    if task == "copy":
        return Fraction(1, V ** (n - 1)) if Fraction(1, V) > Fraction(gamma) else Fraction(1)
    if task == "replace-index":
        return Fraction(1)
    raise ValueError(f"task {task!r} is not one of {', '.join(TASKS)}")


def task_spec(task: str, n: int, V: int = 2) -> str:
    """The language SPEC of a list task (docs/tasks.md)."""
    return f"task:copy:n={n},V={V}" if task == "copy" else f"task:{task}:n={n}"
