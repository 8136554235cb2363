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
* L_T of Replace Random (Theorem 1, Eq. 2) for a partition into steps of sizes s_t: before step t the replaced
  item is still masked with probability m_t/n (otherwise the rest is fixed and C = 0); then each of the s_t
  revealed positions is "replaced" with probability 1/m_t, and the step's joint law puts 1/m_t on each of them
  and (m_t - s_t)/m_t on "none": C_t = (m_t/n) [s_t h(1/m_t) - (s_t/m_t) log m_t - ((m_t - s_t)/m_t)
  log(m_t/(m_t - s_t))] (:func:`replace_random_lt`).  The oracle attains Eq. (2) (KL = L_T), and its output
  law is constant on the support, so accuracy = exp(-L_T) here as on Shuffle.

**The paper's printed statements** (Section 4.1-4.2 and Table 1, in bits as printed) are transcribed once, in
the ``printed_*`` functions and ``PRINTED_*`` constants below, each naming its equation or Table 1 cell; the
conditions under which they are stated (k | n, n > 2, gamma > 0.5, gamma >= (n-1)/n) are part of the
transcription.  ``mdmt verify`` (family PB, rows ``T1`` and ``S4``) and tests/test_parallelbench_table1.py
compare them with mdmt's exact laws and with the closed forms above; docs/tasks.md ("ParallelBench Table 1,
row by row") gives the verdicts.
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


def _h(p: Fraction) -> sp.Expr:
    """The binary entropy h(p) in nats (sympy), exact for rational p."""
    p = sp.Rational(p.numerator, p.denominator)
    return sum((-q * sp.log(q) for q in (p, 1 - p) if q), sp.Integer(0))


def replace_random_lt(sizes) -> sp.Expr:
    """Eq. (2) for Replace Random: L_T = sum_t E C(S_t | X, S_<t) for steps of these sizes (nats, sympy; module
    docstring).  One step: Eq. (3); steps of size 1: 0 (Remark 1)."""
    n = sum(sizes)
    out = sp.Integer(0)
    for m, s in _remaining(sizes):
        if s < 2:
            continue  # one token: no correlation
        block = sp.Rational(s, m) * sp.log(m) + (sp.Rational(m - s, m) * sp.log(sp.Rational(m, m - s)) if m > s else 0)
        out += sp.Rational(m, n) * (s * _h(Fraction(1, m)) - block)
    return out


def double_factorial(n: int) -> int:
    """n!! = n (n - 2) (n - 4) ... down to 1 or 2; 0!! = (-1)!! = 1."""
    out = 1
    for j in range(n, 0, -2):
        out *= j
    return out


# ----------------------------------------------------------------------------- the paper's printed statements
# ParallelBench, arXiv 2510.04767, Section 4 and Table 1, transcribed as printed (logarithms base 2: bits).
# None means "not stated by the paper for these arguments" (outside the printed condition).

def log2(x) -> sp.Expr:
    """The paper's log2 (sympy, exact)."""
    return sp.log(sp.sympify(x), 2)


def bits_to_nats(expr) -> sp.Expr:
    """A printed quantity in bits as nats: expr * log 2, expanded (the form of mdmt's closed forms)."""
    return sp.expand(sp.sympify(expr) * sp.log(2))


# Table 1, row "Copy & Replace Index": C(Y|X) = 0, lim C = 0, accuracy 1 under every decoding (Section 4.1).
PRINTED_COPY_C = sp.Integer(0)
PRINTED_COPY_C_LIMIT = sp.Integer(0)
PRINTED_COPY_ACCURACY = Fraction(1)


def printed_replace_random_c(n: int) -> sp.Expr:
    """Eq. (3), Table 1 "Replace Random / C(Y|X)": (n - 1)[log2(n) - log2(n - 1)] bits."""
    return (n - 1) * (log2(n) - log2(n - 1))


PRINTED_REPLACE_RANDOM_C_LIMIT = log2(sp.E)  # Eq. (3), Table 1: lim C(Y|X) = log2(e) ~ 1.44 bits
PRINTED_REPLACE_RANDOM_C_LIMIT_DECIMAL = "1.44"


def printed_shuffle_c(n: int) -> sp.Expr:
    """Eq. (4), Table 1 "Shuffle / C(Y|X)": n log2(n) - log2(n!) bits."""
    return n * log2(n) - log2(sp.factorial(n))


PRINTED_SHUFFLE_C_LIMIT = sp.oo  # Eq. (4), Table 1: lim C(Y|X) = infinity


def printed_shuffle_lt(sizes) -> sp.Expr:
    """Section 4.1 (Shuffle): L_T({S_t}) = sum_t |S_t| log2(k_t) - log2(n!), k_t = n - sum_(j<t) |S_j|, bits."""
    n = sum(sizes)
    return sum((s * log2(k) for k, s in _remaining(sizes)), sp.Integer(0)) - log2(sp.factorial(n))


def printed_shuffle_l_half(n: int) -> sp.Expr:
    """Section 4.1 (Shuffle), T = n/2 (2 tokens per step): L_(n/2) = log2(n!! / (n - 1)!!) bits."""
    return log2(sp.Rational(double_factorial(n), double_factorial(n - 1)))


def printed_shuffle_accuracy(n: int, k: int) -> Fraction | None:
    """Eq. (5), Table 1 "Shuffle / Acc. (Greedy, Top-k)": prod_(i=1)^(n/k) P(n-(i-1)k, k) / (n-(i-1)k)^k, P the
    falling factorial; the product runs over n/k steps, so it is stated for k | n only (None otherwise)."""
    if n % k:
        return None
    out = Fraction(1)
    for i in range(1, n // k + 1):
        m = n - (i - 1) * k
        out *= Fraction(math.perm(m, k), m ** k)
    return out


def printed_shuffle_accuracy_case(n: int, k: int) -> Fraction | None:
    """Eq. (5), its three cases: n!/n^n if k = n, (n-1)!!/n!! if k = 2, 1 if k = 1 (None for other k)."""
    if k == n:
        return Fraction(math.factorial(n), n ** n)
    if k == 2:
        return Fraction(double_factorial(n - 1), double_factorial(n))
    if k == 1:
        return Fraction(1)
    return None


def printed_replace_random_greedy(n: int, k: int) -> Fraction | None:
    """Section 4.2.1, Table 1 "Replace Random / Acc. (Greedy, Top-k)": 0.5 if k = 2, 0 if k > 2 (k | n assumed
    "for simplicity"; None for k = 1, which is not stated)."""
    if k < 2:
        return None
    return Fraction(1, 2) if k == 2 else Fraction(0)


def printed_replace_random_one_step(n: int) -> Fraction:
    """Section 4.2.1: Replace Random in one step with temperature 1: Acc(n) = ((n-1)/n)^(n-1)."""
    return Fraction(n - 1, n) ** (n - 1)


PRINTED_REPLACE_RANDOM_ONE_STEP_LIMIT = sp.exp(-1)  # Section 4.2.1: lim Acc(n) = 1/e


def printed_shuffle_threshold(gamma) -> Fraction | None:
    """Section 4.2.2, Table 1 "Shuffle / Acc. (Greedy, Threshold)": 1 if gamma > 0.5 (None otherwise)."""
    return Fraction(1) if Fraction(gamma) > Fraction(1, 2) else None


def printed_replace_random_threshold(n: int, gamma) -> Fraction:
    """Section 4.2.2, Table 1 "Replace Random / Acc. (Greedy, Threshold)": 1 if gamma >= (n-1)/n, else 0 (greedy
    decoding; the text assumes n > 2: :func:`stated_replace_random_threshold`)."""
    return Fraction(1) if Fraction(gamma) >= Fraction(n - 1, n) else Fraction(0)


# The conditions under which the paper states these results (Section 4.2): outside them the printed formula is
# not claimed, and mdmt's exact value may part from it (docs/tasks.md gives the exact values there).

def stated_shuffle_accuracy(n: int, k: int) -> bool:
    """Eq. (5) is a product over n/k steps of k tokens: k | n."""
    return n % k == 0


def stated_replace_random_greedy(n: int, k: int) -> bool:
    """Section 4.2.1: "assume k | n for simplicity" (and k >= 2)."""
    return k >= 2 and n % k == 0


def stated_replace_random_threshold(n: int) -> bool:
    """Section 4.2.2: "Under greedy decoding with n > 2"."""
    return n > 2
