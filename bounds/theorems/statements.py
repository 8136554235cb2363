"""The paper's lemmas and theorems as sympy statements with explicit constants (Appendices A-C).

Each :class:`Statement` carries the paper's form (O-notation and assumptions, as text),
mdmt's explicit form (a sympy expression, ``explicit``), the derivation of that form as a
list of steps, and the expression the derivation arrives at (``derived``).  It is the one
source of truth for its formula: the checks (``mdmt verify``), the curves (``mdmt curve``)
and the library functions that compute a bound (``chain_bound``, ``ser_lower_bound``,
``mismatch_probability``, ``theorem_42_steps``, ``theorem_44_constant``) all evaluate
``explicit`` -- in float64 (``evaluate``, via sympy.lambdify, using ``stable``, a form proved
equal to ``explicit`` that avoids cancellation), in arb ball arithmetic (``arb``) or exactly
(``exact``).  ``check()`` verifies every step and that ``derived`` equals ``explicit``.
The class and the kinds of step are defined in :mod:`.statement_machinery` and importable from here.

How a step is known (proved, certified, checked on laws, or stated) is listed in :mod:`.statement_machinery`.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

from .statement_machinery import Fact as Fact
from .statement_machinery import Identity as Identity
from .statement_machinery import Inequality as Inequality
from .statement_machinery import OnLaws as OnLaws
from .statement_machinery import Statement as Statement
from .statement_machinery import StepResult as StepResult
from .statement_machinery import _exp_of_logs as _exp_of_logs
from .statement_machinery import _linear_sums as _linear_sums
from .statement_machinery import _logs_and_powers as _logs_and_powers
from .statement_machinery import _resolve as _resolve
from .statement_machinery import equal as equal

# Symbols (positive reals unless said otherwise)
L, N, n, V, l = sp.symbols("L N n V l", positive=True)
eps, eps_l, delta, u, C, mu = sp.symbols("epsilon epsilon_learning delta u C mu", positive=True)
d = sp.Symbol("d", positive=True, integer=True)
P = sp.Symbol("P_distinct", nonnegative=True)  # P(every step reveals at most one of the L positions)
P_l = sp.Symbol("P_distinct_l", nonnegative=True)  # the same for the l positions of one interval
ED = sp.Symbol("E_D", nonnegative=True)  # E[sum_j D_j]
D_j = sp.Symbol("D_j", nonnegative=True)  # dependencies of one step
pi_j, a_j = sp.symbols("pi_j a_j", positive=True)
x = sp.Symbol("x", real=True)  # the variable of univariate steps


# ----------------------------------------------------------------------------- statements

def _laws_a1():
    from .certify import adversarial_joint_laws, joint_laws

    for V_, d_, k_ in ((2, 2, 6), (2, 3, 4), (3, 2, 3)):
        yield from joint_laws(V_, d_, k_)
    for V_, d_ in ((2, 2), (2, 3), (3, 2), (3, 3), (4, 2), (2, 4)):
        for name, law in adversarial_joint_laws(V_, d_):
            yield f"V={V_} d={d_} {name}", law


def _a1_gap(law):
    from .certify import lemma_a1_gap

    x0 = next(iter(law))
    d_ = len(x0)
    V_ = max(2, 1 + max(max(k) for k in law))
    return lemma_a1_gap(V_, d_)(law)


def _a1_joint(law):
    from .certify import joint_entropy_gaps

    return joint_entropy_gaps(len(next(iter(law))))(law)


def _a1_marginal(law):
    from .certify import marginal_entropy_gaps

    x0 = next(iter(law))
    return marginal_entropy_gaps(max(2, 1 + max(max(k) for k in law)), len(x0))(law)


def _jensen_pairs():
    from .certify import law_pairs

    yield from law_pairs(2, 4)
    yield from law_pairs(3, 3)


def _jensen_gap(pair):
    from .certify import jensen_support_gap

    return jensen_support_gap(pair)


_H = sp.Symbol("H_max", nonnegative=True)
LEMMA_A1 = Statement(
    key="A1",
    name="Lemma A.1 (multi-token sampling)",
    paper="Sampling d tokens independently from their marginals costs at most (d-1) log|V| in KL: the total "
    "correlation of d variables over V is at most (d-1) log|V|.",
    explicit_text="TC(X_1..X_d | x_U) = sum_i H(X_i|x_U) - H(X_S|x_U) <= (d-1) log|V|",
    explicit=(d - 1) * sp.log(V),
    assumptions="none beyond a finite vocabulary",
    steps=[
        OnLaws("H(X_1..X_d) >= H(X_i) for every i (entropy of a joint law is at least that of a marginal)",
               _laws_a1, _a1_joint),
        OnLaws("H(X_i) <= log|V|", _laws_a1, _a1_marginal),
        OnLaws("hence TC <= sum_i H_i - max_i H_i <= (d-1) max_i H_i <= (d-1) log|V| (the lemma itself)", _laws_a1,
               _a1_gap),
    ],
    derived=lambda: (d * _H - _H).subs(_H, sp.log(V)),
)

_m = sp.IndexedBase("m")
_k = sp.Symbol("k", integer=True, positive=True)
_K, _S = sp.symbols("K S", positive=True)
LEMMA_B8 = Statement(
    key="B8",
    name="Lemma B.8 (dependencies bound the total correlation of a step), per step",
    paper="For an n-gram, the tokens of a step split into groups separated by separators; sampling them costs "
    "at most D_j log|V| (Lemma A.1 per group).",
    explicit_text="TC(X_{S_j} | x_{U_j}) <= D_j log|V|, D_j = |S_j| - #(segments holding a position of S_j)",
    explicit=D_j * sp.log(V),
    assumptions="n-gram language; separators are maximal runs of >= n-1 revealed positions (Definition B.4)",
    steps=[
        Fact("given the separators of U_j the segments are independent (the n-gram is a Markov chain of order n-1), so "
             "TC(X_{S_j}|x_{U_j}) is the sum of the segments' total correlations", "C4"),
        Identity("Lemma A.1 per segment: sum_k (m_k - 1) log|V| = (sum_k m_k - K) log|V|",
                 sp.Sum((_m[_k] - 1) * sp.log(V), (_k, 1, _K)), (sp.Sum(_m[_k], (_k, 1, _K)) - _K) * sp.log(V)),
    ],
    derived=lambda: ((_S - _K) * sp.log(V)).subs(_S, D_j + _K),
)

CHAIN_BOUND = Statement(
    key="B9",
    name="Lemma B.9 (the chain bound on KL), per token",
    paper="KL(q || p) <= sum_j E[D_j] log|V| + L eps_learning (Lemmas B.2, B.3, B.8).",
    explicit_text="KL(q||p_N)/L <= eps_learning + log|V| E[sum_j D_j] / L",
    explicit=eps_l + sp.log(V) * ED / L,
    assumptions="n-gram language; learning error in the averaged form: the learning term of C2 is at most L eps_learning",
    steps=[
        Fact("KL(q||p_N) <= E_tau KL(q||p_tau) (Lemma B.2, joint convexity)", "C1"),
        Fact("KL(q||p_tau) = sum_j TC_j + sum_j learning_j (Lemma B.3, chain rule)", "C2"),
        Fact("TC_j <= D_j log|V| (Lemma B.8)", "C4"),
    ],
    derived=(L * eps_l + ED * sp.log(V)) / L,
)

_r = sp.Symbol("r", nonnegative=True)
_g = sp.Symbol("g", integer=True, nonnegative=True)
_mm = sp.Symbol("m", integer=True, positive=True)
SEPARATORS = Statement(
    key="B11",
    name="Lemmas B.10/B.11 (separators and dependencies), explicit",
    paper="With enough revealed tokens separators are frequent (Chernoff, Lemma A.2), so few new tokens share a segment.",
    explicit_text="E[D_j] <= L pi_j^2 (n-1) / a_j^(n-1) for j >= 2 (a_j = P(revealed before step j))",
    explicit=L * pi_j ** 2 * (n - 1) / a_j ** (n - 1),
    assumptions="n-gram language; separators are runs of >= n-1 revealed positions",
    steps=[
        Inequality("D_j = sum_seg (m_seg - 1) <= sum_seg C(m_seg, 2): for integers m >= 1, (m-1)(m-2)/2 >= 0 "
                   "(m = 1, 2 give 0; m = 2 + k gives (k+1)k/2)", _mm - 1, _mm * (_mm - 1) / 2, {_mm: (1, sp.oo)}),
        Fact("two new positions g apart share a segment only if none of the floor((g-1)/(n-1)) disjoint blocks of n-1 "
             "positions between them is revealed before: probability <= pi_j^2 (1 - a_j^(n-1))^floor((g-1)/(n-1))", "B11"),
        Identity("sum_{g>=1} r^floor((g-1)/(n-1)) = (n-1) sum_{k>=0} r^k = (n-1)/(1-r), 0 <= r < 1",
                 lambda: (n - 1) * sp.Sum(_r ** _g, (_g, 0, sp.oo)).doit().args[0][0], (n - 1) / (1 - _r)),
    ],
    derived=lambda: (L * pi_j ** 2 * (n - 1) / (1 - _r)).subs(_r, 1 - a_j ** (n - 1)),
)

_t = sp.Symbol("t", nonnegative=True)
_42_pairs = L * (n - 1) / ((N - 1) * eps ** (n - 1))  # sum_{j>=2} of the separator bound at a_j >= eps
THEOREM_42_STEPS = Statement(
    key="T42N",
    name="Theorem 4.2 (TER, n-gram): the number of steps",
    paper="For L > O((n-1)/eps^(n+0.5)) there is a schedule with N = O((n-1)/eps^n) steps such that "
    "log TER(p) <= log TER(q) + eps_learning + 4 eps log|V|.",
    explicit_text="warm-start schedule (pi_1 = eps, the rest even) with N >= 1 + (n-1)/(3 eps^n) steps, any L",
    explicit=1 + (n - 1) / (3 * eps ** n),
    assumptions="n-gram language; learning error in the averaged form",
    steps=[
        Fact("step 1 reveals everything into one segment: E[D_1] = eps L - P(S_1 nonempty)", "C5"),
        Identity("warm start: sum_{j>=2} pi_j^2 = (N-1) ((1-eps)/(N-1))^2 = (1-eps)^2/(N-1)",
                 (N - 1) * ((1 - eps) / (N - 1)) ** 2, (1 - eps) ** 2 / (N - 1)),
        Inequality("(1-eps)^2 <= 1 for 0 <= eps <= 1", (1 - eps) ** 2, sp.Integer(1), {eps: (0, 1)}),
        Inequality("a_j >= eps for j >= 2, and a -> (n-1)/a^(n-1) is non-increasing for n >= 1 (its derivative "
                   "-(n-1)^2/a^n <= 0), so (n-1)/a_j^(n-1) <= (n-1)/eps^(n-1)", lambda: sp.diff((n - 1) / a_j ** (n - 1), a_j),
                   sp.Integer(0), {a_j: (0, sp.oo), n: (1, sp.oo)}),
        Fact("so sum_{j>=2} E[D_j] <= L (n-1) / ((N-1) eps^(n-1)) (Lemma B.11 summed)", "B11"),
    ],
    derived=lambda: sp.solve(sp.Eq(_42_pairs, 3 * eps * L), N)[0],
)

THEOREM_42_DEPENDENCIES = Statement(
    key="T42D",
    name="Theorem 4.2: the dependencies",
    paper="(Lemma B.12) the schedule's expected number of dependencies is O(eps L).",
    explicit_text="E[sum_j D_j] <= 4 eps L at N >= 1 + (n-1)/(3 eps^n) (warm start)",
    explicit=4 * eps * L,
    assumptions="n-gram language, warm-start schedule",
    steps=[
        Inequality("E[D_1] <= eps L: P(S_1 nonempty) = 1 - (1-eps)^L >= 0, as log(1-eps) <= 0 on [0, 1)",
                   sp.log(1 - eps), sp.Integer(0), {eps: (0, 1)}),
        Identity("at N = 1 + (n-1)/(3 eps^n): L (n-1)/((N-1) eps^(n-1)) = 3 eps L",
                 lambda: _42_pairs.subs(N, THEOREM_42_STEPS.explicit), 3 * eps * L),
    ],
    derived=lambda: eps * L + _42_pairs.subs(N, THEOREM_42_STEPS.explicit),
)

THEOREM_42 = Statement(
    key="T42",
    name="Theorem 4.2 (TER, n-gram)",
    paper=THEOREM_42_STEPS.paper,
    explicit_text="KL(q||p_N)/L <= eps_learning + 4 eps log|V| (nats per token), N >= 1 + (n-1)/(3 eps^n), any L",
    explicit=eps_l + 4 * eps * sp.log(V),
    assumptions="n-gram language; learning error in the averaged form (the learning term of C2 at most L eps_learning); "
    "no condition on L",
    steps=[Fact("the chain bound (Lemma B.9) with E[sum_j D_j] <= 4 eps L", "C5")],
    derived=lambda: CHAIN_BOUND.explicit.subs(ED, THEOREM_42_DEPENDENCIES.explicit),
)

THEOREM_43 = Statement(
    key="T43",
    name="Theorem 4.3 (SER upper bound)",
    paper="With enough steps (no two tokens revealed together) and small learning error, SER is small (Lemmas C.1-C.2).",
    explicit_text="SER(p_N) <= 1 - P_distinct exp(-L eps_learning), P_distinct = L! e_L(pi_1..pi_N)",
    explicit=1 - P * sp.exp(-L * eps_l),
    assumptions="learning error for every x_U (KL(q(.|x_U)||p(.|x_U)) <= eps_learning)",
    steps=[
        OnLaws("KL(q||p) >= -log p(supp q) (Jensen, Lemma C.2): a token lands in supp q(.|x_U) with probability "
               ">= exp(-eps_learning)", _jensen_pairs, _jensen_gap),
        Fact("given distinct reveal steps each of the L tokens is drawn given a context in the support", "T43"),
    ],
    derived=1 - P * sp.exp(-eps_l) ** L,
)

_s2 = sp.Symbol("S_2", nonnegative=True)  # sum_j pi_j^2
UNION_BOUND = Statement(
    key="T43u",
    name="Theorem 4.3: the collision probability (Lemma C.1)",
    paper="(Lemma C.1) with enough steps the probability of revealing two positions together is small.",
    explicit_text="1 - P_distinct <= C(L, 2) sum_j pi_j^2 (union bound over pairs)",
    explicit=L * (L - 1) / 2 * _s2,
    assumptions="any schedule",
    steps=[Fact("a pair of positions is revealed in the same step with probability sum_j pi_j^2; union over the "
                "C(L, 2) pairs", "T43u")],
    derived=lambda: sp.binomial(L, 2).expand(func=True) * _s2,
)

_a, _b = sp.symbols("a b", nonnegative=True)
THEOREM_43_STEPS = Statement(
    key="T43N",
    name="Theorem 4.3: steps for SER <= delta (linear schedule)",
    paper="Theorem 4.3: given a sufficient number of reverse steps the SER is at most delta.",
    explicit_text="linear schedule: N >= L(L-1)/delta and eps_learning <= delta/(2L) give SER <= delta",
    explicit=L * (L - 1) / delta,
    assumptions="linear schedule; learning error for every x_U",
    steps=[
        Identity("linear schedule: sum_j pi_j^2 = N (1/N)^2 = 1/N", N * (1 / N) ** 2, 1 / N),
        Identity("at N = L(L-1)/delta: C(L,2)/N = delta/2", (L * (L - 1) / 2 / N).subs(N, L * (L - 1) / delta), delta / 2),
        Inequality("1 - exp(-x) <= x for x >= 0 (x = L eps_learning <= delta/2)", 1 - sp.exp(-x), x, {x: (0, sp.oo)}),
        Inequality("1 - (1-a)(1-b) <= a + b for a, b >= 0", 1 - (1 - _a) * (1 - _b), _a + _b,
                   {_a: (0, sp.oo), _b: (0, sp.oo)}),
    ],
    derived=lambda: sp.solve(sp.Eq(UNION_BOUND.explicit.subs(_s2, 1 / N), delta / 2), N)[0],
)

_umin = (1 - sp.sqrt(1 - sp.exp(-2 * eps_l))) / 2
_kl_half = -sp.log(4 * u * (1 - u)) / 2
_ua, _ub = sp.symbols("u_a u_b", positive=True)
MISMATCH = Statement(
    key="pe",
    name="Example C.7 made exact: the least mismatch probability p_e(eps)",
    paper="Example C.7: a reverse model with learning error eps makes the two ends of a pair revealed in the same "
    "step disagree with probability bounded below (via Pinsker, Lemma A.3).",
    explicit_text="p_e(eps) = e^(-2 eps)/2",
    explicit=sp.exp(-2 * eps_l) / 2,
    assumptions="learning error at most eps for every x_U; the pair's shared bit is a fair coin under q",
    steps=[
        Identity("KL(Bern(1/2)||Bern(u)) = 1/2 log(1/(2u)) + 1/2 log(1/(2(1-u))) = -1/2 log(4u(1-u))",
                 sp.log(1 / (2 * u)) / 2 + sp.log(1 / (2 * (1 - u))) / 2, _kl_half),
        Inequality("it is non-increasing on (0, 1/2]: its derivative -(1-2u)/(2u(1-u)) <= 0",
                   lambda: sp.diff(_kl_half, u), sp.Integer(0), {u: (0, sp.Rational(1, 2))}),
        Identity("its root u_min = (1 - sqrt(1 - e^(-2 eps)))/2 < 1/2: KL(Bern(1/2)||Bern(u_min)) = eps, so learning "
                 "error <= eps means u in [u_min, 1 - u_min]", lambda: _kl_half.subs(u, _umin), eps_l),
        Identity("the mismatch probability u_a + u_b - 2 u_a u_b is affine in each variable (second derivatives 0): "
                 "its minimum over the square is at a corner",
                 lambda: sp.diff(_ua + _ub - 2 * _ua * _ub, _ua, 2) + sp.diff(_ua + _ub - 2 * _ua * _ub, _ub, 2), 0),
        Inequality("the corners (u, 1-u) give u^2 + (1-u)^2 >= 2u(1-u), the corners (u, u) and (1-u, 1-u)",
                   2 * u * (1 - u), u ** 2 + (1 - u) ** 2, {u: (0, 1)}),
    ],
    derived=lambda: 2 * _umin * (1 - _umin),
)

PINSKER = Statement(
    key="A3",
    name="Lemma A.3 (Pinsker), for Bern(1/2) against Bern(u)",
    paper="TV(P, Q) <= sqrt(KL(P||Q)/2).",
    explicit_text="|u - 1/2| <= sqrt(eps/2) when KL(Bern(1/2)||Bern(u)) <= eps; the mismatch bound it gives, 1/2 - eps, "
    "is below the exact p_e(eps)",
    explicit=sp.sqrt(eps_l / 2),
    assumptions="none",
    steps=[
        Identity("KL(Bern(1/2)||Bern(u)) is symmetric under u -> 1-u", lambda: _kl_half - _kl_half.subs(u, 1 - u), 0),
        Inequality("KL(Bern(1/2)||Bern(u)) >= 2 (u - 1/2)^2 on [1/2, 1)", 2 * (u - sp.Rational(1, 2)) ** 2, _kl_half,
                   {u: (sp.Rational(1, 2), 1)}),
        Inequality("Pinsker's mismatch bound 2u(1-u) >= 1/2 - eps is below the exact one: 1/2 - eps <= e^(-2 eps)/2",
                   sp.Rational(1, 2) - eps_l, sp.exp(-2 * eps_l) / 2, {eps_l: (0, sp.oo)}),
    ],
    derived=lambda: sp.Max(*sp.solve(sp.Eq(2 * (u - sp.Rational(1, 2)) ** 2, eps_l), u)) - sp.Rational(1, 2),
)

CHERNOFF = Statement(
    key="A2",
    name="Lemma A.2 (Chernoff), lower tail",
    paper="For X a sum of independent Bernoulli variables with mean mu, P(X <= (1-delta) mu) <= exp(-delta^2 mu / 2).",
    explicit_text="P(X <= (1-delta) mu) <= exp(-delta^2 mu / 2), 0 < delta < 1",
    explicit=sp.exp(-delta ** 2 * mu / 2),
    assumptions="independent Bernoulli summands",
    steps=[
        Fact("moment generating function: P(X <= (1-delta) mu) <= exp(-mu (delta + (1-delta) log(1-delta)))", ""),
        Inequality("(1-delta) log(1-delta) >= -delta + delta^2/2 on [0, 1)", -delta + delta ** 2 / 2,
                   (1 - delta) * sp.log(1 - delta), {delta: (0, 1)}),
    ],
    derived=sp.exp(-mu * (delta + (-delta + delta ** 2 / 2))),
)

_y = sp.Symbol("y", nonnegative=True)
THEOREM_44_BOUND = Statement(
    key="T44",
    name="Theorem 4.4 (SER lower bound, interval HMM), explicit",
    paper="(Lemma C.6) if sampling two positions of one interval together causes an error with probability >= p_e, "
    "SER >= 1 - (1 - p_e (1 - P_distinct(l)))^(L/l).",
    explicit_text="SER >= 1 - (1 - p_e(eps)(1 - P_distinct(l; pi)))^(L/l), p_e(eps) = e^(-2 eps)/2, every schedule",
    explicit=1 - (1 - MISMATCH.explicit * (1 - P_l)) ** (L / l),
    stable=-expm1((L / l) * log1p(-MISMATCH.explicit * (1 - P_l))),
    assumptions="learning error for every x_U; interval HMM with interval length l (l = 5: 16 symbols)",
    steps=[
        Fact("intervals are independent; an interval with a same-step pair fails with probability >= p_e given the "
             "past (Lemmas C.5-C.6 with the exact P_distinct(l; pi) in place of Lemma C.5's bound)", "T44"),
    ],
    derived=lambda: (1 - (1 - MISMATCH.explicit * (1 - P_l)) ** _K).subs(_K, L / l),  # K = L/l independent intervals
)

_xx = sp.Symbol("x_", nonnegative=True)
THEOREM_44_ANY = Statement(
    key="T44N",
    name="Theorem 4.4: the bound for N steps of any schedule",
    paper="(Theorem C.9) with N = C L steps the SER stays bounded away from 0.",
    explicit_text="SER >= 1 - exp(-p_e(eps) L / (l N)) for every schedule with N steps",
    explicit=1 - sp.exp(-MISMATCH.explicit * L / (l * N)),
    stable=-expm1(-MISMATCH.explicit * L / (l * N)),
    assumptions="as Theorem 4.4",
    steps=[
        Fact("1 - P_distinct(l; pi) >= P(a fixed pair is revealed together) = sum_j pi_j^2", "T44"),
        Identity("Cauchy-Schwarz for every N: sum_j pi_j^2 - 1/N = sum_j (pi_j - 1/N)^2 + (2/N)(sum_j pi_j - 1)",
                 sp.Sum(sp.IndexedBase("pi")[_k] ** 2, (_k, 1, N)) - 1 / N,
                 sp.Sum((sp.IndexedBase("pi")[_k] - 1 / N) ** 2, (_k, 1, N))
                 + 2 / N * (sp.Sum(sp.IndexedBase("pi")[_k], (_k, 1, N)) - 1)),
        Inequality("... and a sum of squares is >= 0, so sum_j pi_j = 1 gives sum_j pi_j^2 >= 1/N",
                   sp.Integer(0), (_t - 1 / N) ** 2, {_t: (0, 1), N: (1, sp.oo)}),
        Inequality("log(1-x) <= -x on [0, 1), so (1-x)^K = e^(K log(1-x)) <= e^(-xK) for K >= 0", sp.log(1 - x), -x,
                   {x: (0, 1)}),
        Inequality("e^(Kt) is non-decreasing in t for K >= 0 (derivative K e^(Kt) >= 0)", sp.Integer(0),
                   _K * sp.exp(_K * x), {_K: (0, sp.oo), x: (-sp.oo, sp.oo)}),
        Inequality("1 - (1 - p y)^K is non-decreasing in y (derivative p K (1 - p y)^(K-1) >= 0 for p y <= 1)",
                   sp.Integer(0), _a * _K * (1 - _a * _y) ** (_K - 1), {_a: (0, 1), _y: (0, 1), _K: (0, sp.oo)}),
    ],
    derived=1 - sp.exp(-MISMATCH.explicit * (1 / N) * (L / l)),
)

THEOREM_44 = Statement(
    key="T44C",
    name="Theorem 4.4 (SER lower bound, interval HMM): the constant",
    paper="There is an HMM over 16 symbols such that for any reverse model with eps_learning < 1/128 and any schedule "
    "there is a constant C with SER(p) > 1/2 when N = C L.",
    explicit_text="N <= C_0 L steps leave SER > 1/2 for every L and every schedule, C_0 = p_e(eps) / (l ln 2)",
    explicit=MISMATCH.explicit / (l * sp.log(2)),
    assumptions="learning error for every x_U; interval HMM with interval length l (l = 5: 16 symbols)",
    steps=[
        Identity("N = C L: p_e L/(l N) = p_e/(l C), independent of L", MISMATCH.explicit * L / (l * C * L),
                 MISMATCH.explicit / (l * C)),
        Fact("1 - exp(-p_e/(l C)) is decreasing in C, so C <= C_0 gives SER >= 1/2", "T44N"),
    ],
    derived=lambda: sp.solve(sp.Eq(1 - sp.exp(-MISMATCH.explicit / (l * C)), sp.Rational(1, 2)), C)[0],
)

ALL = [LEMMA_A1, CHERNOFF, PINSKER, MISMATCH, LEMMA_B8, CHAIN_BOUND, SEPARATORS, THEOREM_42_STEPS,
       THEOREM_42_DEPENDENCIES, THEOREM_42, THEOREM_43, UNION_BOUND, THEOREM_43_STEPS, THEOREM_44_BOUND, THEOREM_44_ANY,
       THEOREM_44]
BY_KEY = {s.key: s for s in ALL}


# ----------------------------------------------------------------------------- evaluated constants

def theorem_42_steps(n_: int, eps_: float) -> int:
    """The smallest integer N >= 1 + (n-1)/(3 eps^n) (explicit Theorem 4.2), computed exactly from the float eps."""
    bound = THEOREM_42_STEPS.exact(n=int(n_), epsilon=Fraction(float(eps_)))
    return int(sp.ceiling(bound))


def theorem_44_constant(l_: int, eps_: float) -> float:
    """C_0 = p_e(eps)/(l ln 2): N <= C_0 L steps cannot bring SER below 1/2 (explicit Theorem 4.4)."""
    return THEOREM_44.evaluate(l=l_, epsilon_learning=eps_)


def mismatch_probability(eps_: float) -> float:
    """p_e(eps) = e^(-2 eps)/2, evaluated from :data:`MISMATCH`."""
    return MISMATCH.evaluate(epsilon_learning=eps_)

