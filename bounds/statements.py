"""The paper's lemmas and theorems as sympy statements with explicit constants (Appendices A-C).

Each :class:`Statement` carries the paper's form (O-notation and assumptions, as
text), mdmt's explicit form (a sympy expression), and the derivation of every
constant as a list of steps that sympy verifies (``check()``): each step is an
identity ``lhs == rhs`` that must simplify to 0, or an inequality ``lhs <= rhs``
whose difference sympy proves non-negative on the stated domain (or, when
sympy cannot, is checked on a dense grid of the domain).  ``evaluate`` turns the
explicit form into a vectorised numpy function.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sympy as sp

# Symbols (positive reals unless said otherwise)
L, N, n, V, l, K = sp.symbols("L N n V l K", positive=True)
eps, eps_l, delta, u, C = sp.symbols("epsilon epsilon_learning delta u C", positive=True)
d = sp.symbols("d", positive=True, integer=True)


@dataclass
class Step:
    """One derivation step: ``kind`` is "==" or "<=" between two sympy expressions on ``domain``."""

    description: str
    lhs: sp.Expr
    rhs: sp.Expr
    kind: str = "=="
    domain: dict = field(default_factory=dict)  # symbol -> (low, high) for the numeric fallback

    def verify(self) -> bool:
        diff = sp.simplify(self.lhs - self.rhs)
        if self.kind == "==":
            return diff == 0
        # lhs <= rhs: try a symbolic proof, then a dense numeric check on the domain
        nonneg = sp.simplify(self.rhs - self.lhs)
        if nonneg.is_nonnegative:
            return True
        syms = sorted(nonneg.free_symbols, key=str)
        if not syms:
            return bool(float(nonneg) >= -1e-12)
        f = sp.lambdify(syms, nonneg, "numpy")
        grids = np.meshgrid(*[np.linspace(*self.domain.get(s, (1e-3, 10.0)), 60) for s in syms], indexing="ij")
        vals = np.asarray(f(*grids), dtype=float)
        return bool(np.all(vals[np.isfinite(vals)] >= -1e-12))


@dataclass
class Statement:
    name: str
    paper: str
    explicit_text: str
    explicit: sp.Expr
    assumptions: str
    steps: list[Step]

    def check(self) -> list[tuple[str, bool]]:
        """Verify every derivation step with sympy."""
        return [(s.description, s.verify()) for s in self.steps]

    def evaluate(self, **values):
        """Numeric value of the explicit form (vectorised over numpy arrays)."""
        syms = sorted(self.explicit.free_symbols, key=str)
        missing = [str(s) for s in syms if str(s) not in values]
        if missing:
            raise ValueError(f"{self.name}: missing values for {', '.join(missing)}")
        f = sp.lambdify(syms, self.explicit, "numpy")
        return f(*[values[str(s)] for s in syms])


def p_e(e):
    """Least mismatch probability of a colliding pair under learning error e: e^(-2e)/2."""
    return sp.exp(-2 * e) / 2


def _kl_bern_half(x):
    return -sp.log(4 * x * (1 - x)) / 2


LEMMA_A1 = Statement(
    name="Lemma A.1 (multi-token sampling)",
    paper="The total correlation of d variables over V is at most (d-1) log|V|.",
    explicit_text="TC(X_1..X_d | x_U) = sum_i H(X_i|x_U) - H(X_S|x_U) <= (d-1) log|V|",
    explicit=(d - 1) * sp.log(V),
    assumptions="none beyond a finite vocabulary",
    steps=[
        Step("H(X_S) >= max_i H(X_i), so TC <= sum_i H_i - max_i H_i <= (d-1) max_i H_i",
             (d - 1) * sp.Symbol("H_max", positive=True), (d - 1) * sp.log(V), "<=",
             {sp.Symbol("H_max", positive=True): (0.0, 1.0)}),
    ],
)
# The numeric fallback above needs H_max <= log V; make the domain explicit: V in [e, 10], H_max in [0, 1].
LEMMA_A1.steps[0].domain.update({V: (float(np.e), 10.0), d: (1.0, 10.0)})

CHERNOFF = Statement(
    name="Lemma A.2 (Chernoff)",
    paper="For X a sum of independent Bernoulli variables with mean mu, P(X <= (1-delta) mu) <= exp(-delta^2 mu / 2).",
    explicit_text="P(X <= (1-delta) mu) <= exp(-delta^2 mu / 2), 0 < delta < 1",
    explicit=sp.exp(-delta**2 * sp.Symbol("mu", positive=True) / 2),
    assumptions="independent Bernoulli summands (here: separators in disjoint blocks)",
    steps=[
        Step("(1-delta) log(1-delta) >= -delta + delta^2/2 on (0,1), the step from the MGF bound",
             -delta + delta**2 / 2, (1 - delta) * sp.log(1 - delta), "<=", {delta: (1e-4, 0.9999)}),
    ],
)

PINSKER = Statement(
    name="Lemma A.3 (Pinsker)",
    paper="TV(P, Q) <= sqrt(KL(P||Q)/2).",
    explicit_text="for Bern(1/2) vs Bern(u): |u - 1/2| <= sqrt(eps/2) when KL <= eps",
    explicit=sp.sqrt(eps / 2),
    assumptions="none",
    steps=[
        Step("KL(Bern(1/2)||Bern(u)) >= 2 (u - 1/2)^2", 2 * (u - sp.Rational(1, 2)) ** 2, _kl_bern_half(u), "<=",
             {u: (1e-4, 1 - 1e-4)}),
    ],
)

SEPARATORS = Statement(
    name="Lemmas B.10/B.11 (separators and dependencies), explicit",
    paper="With enough revealed tokens, separators are frequent (Chernoff), so few new tokens share a segment.",
    explicit_text="E[D_j] <= L pi_j^2 (n-1) / a_j^(n-1) for j >= 2 (a_j = P(revealed before j))",
    explicit=L * sp.Symbol("pi_j", positive=True) ** 2 * (n - 1) / sp.Symbol("a_j", positive=True) ** (n - 1),
    assumptions="n-gram language; separators are runs of >= n-1 revealed positions",
    steps=[
        Step("D_j = sum_seg (m_seg - 1)_+ <= sum_seg C(m_seg, 2): C(m,2) - (m-1) = (m-1)(m-2)/2 >= 0",
             sp.Symbol("m", positive=True) - 1, sp.Symbol("m", positive=True) * (sp.Symbol("m", positive=True) - 1) / 2,
             "<=", {sp.Symbol("m", positive=True): (2.0, 50.0)}),  # m = 1: both sides 0
        Step("sum_{g>=0} (1-a^(n-1))^floor(g/(n-1)) = (n-1) sum_k (1-a^(n-1))^k = (n-1) / a^(n-1)",
             (n - 1) / (1 - (1 - sp.Symbol("a", positive=True) ** (n - 1))), (n - 1) / sp.Symbol("a", positive=True) ** (n - 1)),
    ],
)

THEOREM_42 = Statement(
    name="Theorem 4.2 (TER, n-gram)",
    paper="For L > O((n-1)/eps^(n+0.5)) there is a schedule with N = O((n-1)/eps^n) steps such that "
    "log TER(p) <= log TER(q) + eps_learning + 4 eps log|V|.",
    explicit_text="warm-start schedule (pi_1 = eps, rest even), N >= 1 + (n-1)/(3 eps^n), any L: "
    "KL(q||p_N)/L <= eps_learning + 4 eps log|V|",
    explicit=1 + (n - 1) / (3 * eps**n),
    assumptions="learning error averaged over the sampler's contexts (the learning term of C2) at most L eps_learning; "
    "n-gram language; no condition on L",
    steps=[
        Step("E[D_1] = eps L - P(S_1 nonempty) <= eps L (one segment at step 1)",
             eps * L - (1 - (1 - eps) ** L), eps * L, "<=", {eps: (1e-3, 0.999), L: (1.0, 500.0)}),
        Step("sum_{j>=2} pi_j^2 = (1-eps)^2/(N-1) <= 1/(N-1)", (1 - eps) ** 2 / (N - 1), 1 / (N - 1), "<=",
             {eps: (1e-3, 0.999), N: (2.0, 1e4)}),
        Step("a_j >= eps for j >= 2: L pi_j^2 (n-1)/a_j^(n-1) <= L pi_j^2 (n-1)/eps^(n-1)",
             (n - 1) / (eps + sp.Symbol("t", nonnegative=True)) ** (n - 1), (n - 1) / eps ** (n - 1), "<=",
             {eps: (1e-2, 1.0), sp.Symbol("t", nonnegative=True): (0.0, 1.0), n: (2.0, 6.0)}),
        Step("N - 1 >= (n-1)/(3 eps^n) makes that <= 3 eps L",
             (L * (n - 1) / ((N - 1) * eps ** (n - 1))).subs(N, 1 + (n - 1) / (3 * eps**n)), 3 * eps * L),
    ],
)

THEOREM_43 = Statement(
    name="Theorem 4.3 (SER upper bound)",
    paper="With enough steps (N = O(L^2) or reveal one token per step) and small learning error, SER is small.",
    explicit_text="SER(p_N) <= 1 - P_distinct exp(-L eps_learning); linear schedule: 1 - P_distinct <= L(L-1)/(2N), "
    "so N >= L(L-1)/delta and eps_learning <= delta/(2L) give SER <= delta",
    explicit=1 - sp.Symbol("P_distinct", positive=True) * sp.exp(-L * eps_l),
    assumptions="learning error for every x_U (KL(q(.|x_U)||p(.|x_U)) <= eps_learning), so p lands in supp q(.|x_U) "
    "with probability >= exp(-eps_learning)",
    steps=[
        Step("union bound over pairs, linear schedule: C(L,2) sum_j pi_j^2 = L(L-1)/(2N)",
             sp.binomial(L, 2) * N * (1 / N) ** 2, L * (L - 1) / (2 * N)),
        Step("N = L(L-1)/delta gives L(L-1)/(2N) = delta/2", (L * (L - 1) / (2 * N)).subs(N, L * (L - 1) / delta), delta / 2),
        Step("1 - exp(-L eps_learning) <= L eps_learning <= delta/2", 1 - sp.exp(-sp.Symbol("x", positive=True)),
             sp.Symbol("x", positive=True), "<="),
    ],
)

THEOREM_44 = Statement(
    name="Theorem 4.4 (SER lower bound, interval HMM)",
    paper="There is an HMM over 16 symbols such that for any reverse model with eps_learning < 1/128 and any "
    "schedule there is a constant C with SER(p) > 1/2 when N = C L.",
    explicit_text="SER >= 1 - (1 - p_e(eps)(1 - P_distinct(l; pi)))^(L/l) >= 1 - exp(-p_e(eps) L / (l N)); "
    "so N = C L with C < C_0 = p_e(eps) / (l ln 2), p_e(eps) = e^(-2 eps)/2, gives SER > 1/2 for every L and schedule",
    explicit=p_e(eps) / (l * sp.log(2)),
    assumptions="learning error for every x_U; interval HMM with interval length l (l = 5: 16 symbols)",
    steps=[
        Step("KL(Bern(1/2)||Bern(u_min)) = eps  <=>  2 u_min (1 - u_min) = e^(-2 eps)/2",
             2 * (sp.exp(-2 * eps) / 4), p_e(eps)),
        Step("the bound at the solution: -1/2 log(4 u(1-u)) with 4u(1-u) = e^(-2 eps) equals eps",
             -sp.log(sp.exp(-2 * eps)) / 2, eps),
        Step("a pair collides with probability sum_j pi_j^2 >= 1/N (Cauchy-Schwarz); N = 2: p^2 + (1-p)^2 >= 1/2",
             sp.Rational(1, 2), sp.Symbol("p", positive=True) ** 2 + (1 - sp.Symbol("p", positive=True)) ** 2, "<=",
             {sp.Symbol("p", positive=True): (0.0, 1.0)}),
        Step("1 - exp(-p_e/(l C)) > 1/2  <=>  C < p_e/(l ln 2)",
             sp.exp(-p_e(eps) / (l * (p_e(eps) / (l * sp.log(2))))), sp.Rational(1, 2)),
        Step("(1 - x)^K <= exp(-x K)", (1 - sp.Symbol("x", positive=True)) ** K, sp.exp(-sp.Symbol("x", positive=True) * K), "<=",
             {sp.Symbol("x", positive=True): (0.0, 1.0), K: (1.0, 50.0)}),
    ],
)

ALL = [LEMMA_A1, CHERNOFF, PINSKER, SEPARATORS, THEOREM_42, THEOREM_43, THEOREM_44]


def theorem_42_steps(n_: int, eps_: float) -> int:
    """The smallest integer N with N >= 1 + (n-1)/(3 eps^n) (explicit Theorem 4.2)."""
    return int(np.ceil(1 + (n_ - 1) / (3 * eps_**n_) - 1e-12))


def theorem_44_constant(l_: int, eps_: float) -> float:
    """C_0 = p_e(eps)/(l ln 2): N <= C_0 L steps cannot bring SER below 1/2 (explicit Theorem 4.4)."""
    return float(np.exp(-2 * eps_) / 2 / (l_ * np.log(2)))
