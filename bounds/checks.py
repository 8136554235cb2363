"""Every link of the proofs as a check on exact values (Appendices A-C; the chain C1-C5 of docs/theorems.md).

Each function returns :class:`Row` objects (check, instance, exact value, bound,
margin, verdict).  Every check takes ``weaken``: the bound's constant is
multiplied by it (1 = the real bound).  The test suite runs each family with a
weakened constant (e.g. 0.5) and demands that it *fails* somewhere, so no check
here can pass vacuously.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mdmt.constructions.reverse.chain import assignment_quantities, chain_quantities
from mdmt.constructions.reverse.exact import exact_output_law
from mdmt.constructions.reverse.interval_closed_forms import mismatch_probability, oracle_ser, ser_lower_bound
from mdmt.constructions.reverse.learning import learning_error
from mdmt.constructions.reverse.schedules import WarmStart, p_distinct, reveal_probabilities
from mdmt.constructions.reverse.tables import build_tables

from .dependencies import chain_bound, dependencies_for_assignment, expected_dependencies
from .statements import ALL, theorem_42_steps, theorem_44_constant

TOL = 1e-9


@dataclass
class Row:
    check: str
    instance: str
    value: float
    bound: float
    relation: str  # "<=", ">=", "==" (within TOL)

    @property
    def margin(self) -> float:
        if self.relation == "<=":
            return self.bound - self.value
        if self.relation == ">=":
            return self.value - self.bound
        return -abs(self.value - self.bound)

    @property
    def holds(self) -> bool:
        if self.relation == "==":
            return abs(self.value - self.bound) <= TOL * max(1.0, abs(self.bound))
        return self.margin >= -TOL * max(1.0, abs(self.bound))


@dataclass
class Instance:
    """A small language with an exact evaluation set-up."""

    name: str
    language: object
    L: int
    n: int | None = None  # n-gram order (for separator checks), None for a general HMM
    interval: int | None = None  # interval length for the counterexample


def c1_c2_c3_c4(inst: Instance, pi: np.ndarray, denoiser=None, den_name="oracle", sched_name="", weaken=1.0,
                n_assignments=3, seed=0) -> list[Row]:
    """C1, C2, C3 (Lemma A.1), C4 (per step and in expectation) and Theorem 4.3 on one exact instance."""
    lang, L = inst.language, inst.L
    V = lang.n_symbols
    logV = math.log(V)
    tables = build_tables(lang, L)
    res = exact_output_law(lang, L, pi, denoiser, tables=tables)
    chain = chain_quantities(lang, L, pi, denoiser, tables=tables)
    eps = learning_error(lang, denoiser, L, method="exact", tables=tables)["max"] if denoiser is not None else 0.0
    tag = f"{inst.name} L={L} N={len(pi)} {sched_name} {den_name}"
    rows = [
        Row("C1 KL(q||p_N) <= E_tau KL(q||p_tau)", tag, res.kl_nats, weaken * chain["expected_assignment_kl"], "<="),
        Row("C2 E KL_tau = E TC + E learning", tag, chain["expected_assignment_kl"],
            weaken * (chain["expected_total_correlation"] + chain["expected_learning_term"]), "=="),
        Row("Thm 4.3 SER <= 1 - P_distinct e^(-L eps)", tag, res.ser,
            weaken * (1 - p_distinct(pi, L) * math.exp(-L * eps)), "<="),
    ]
    rng = np.random.default_rng(seed)
    for _ in range(n_assignments):
        tau = rng.choice(len(pi), size=L, p=pi) + 1
        aq = assignment_quantities(lang, tau, denoiser, tables=tables)
        tc = aq["total_correlation"]
        rows.append(Row("C2 KL(q||p_tau) = sum TC_j + sum learning_j", f"{tag} tau={tau.tolist()}", aq["kl_nats"],
                        weaken * (sum(tc.values()) + sum(aq["learning"].values())), "=="))
        for j, t in tc.items():
            size = int((tau == j).sum())
            rows.append(Row("C3 TC_j <= (|S_j|-1) log|V| (Lemma A.1)", f"{tag} tau={tau.tolist()} j={j}", t,
                            weaken * (size - 1) * logV, "<="))
        if inst.n is not None:
            D = dependencies_for_assignment(inst.n, tau)
            for j, t in tc.items():
                rows.append(Row("C4 TC_j <= D_j log|V| (separators)", f"{tag} tau={tau.tolist()} j={j}", t,
                                weaken * D[j - 1] * logV, "<="))
    if inst.n is not None:
        rows.append(Row("C4 KL(q||p_N) <= L eps + log|V| E[sum D_j]", tag, res.kl_nats,
                        weaken * L * chain_bound(inst.n, L, pi, V, eps), "<="))
    return rows


def c5_theorem_42(n: int, eps: float, lengths, weaken=1.0) -> list[Row]:
    """Explicit Theorem 4.2: warm-start schedule with N = theorem_42_steps(n, eps) gives E[sum D_j] <= 4 eps L."""
    N = theorem_42_steps(n, eps)
    pi = reveal_probabilities(WarmStart(first=eps), N)
    return [Row("C5/Thm 4.2 E[sum D_j] <= 4 eps L (warm start)", f"n={n} eps={eps} N={N} L={L}",
                expected_dependencies(n, L, pi), weaken * 4 * eps * L, "<=") for L in lengths]


def theorem_44_exact(inst: Instance, pi: np.ndarray, denoiser=None, den_name="oracle", weaken=1.0) -> list[Row]:
    """Interval HMM, exact small L: the closed form equals the generic evaluator; SER >= the Theorem 4.4 bound."""
    lang, L, l = inst.language, inst.L, inst.interval
    tables = build_tables(lang, L)
    res = exact_output_law(lang, L, pi, denoiser, tables=tables)
    eps = learning_error(lang, denoiser, L, method="exact", tables=tables)["max"] if denoiser is not None else 0.0
    tag = f"{inst.name} L={L} N={len(pi)} {den_name} eps={eps:.4g}"
    rows = [Row("Thm 4.4 SER >= 1-(1-p_e(1-P_d(l)))^(L/l)", tag, res.ser, weaken * ser_lower_bound(l, L, pi, eps), ">=")]
    if denoiser is None:
        rows.append(Row("Thm 4.4 closed form 1-rho^(L/l) = exact SER", tag, res.ser, weaken * oracle_ser(l, L, pi), "=="))
    return rows


def theorem_44_large(l: int, eps: float, lengths, weaken=1.0) -> list[Row]:
    """N = floor(C_0 L) steps: the explicit lower bound (any schedule) and the exact oracle SER exceed 1/2."""
    C0 = theorem_44_constant(l, eps)
    rows = []
    for L in lengths:
        N = max(1, int(math.floor(C0 * L)))
        lin = np.full(N, 1.0 / N)
        tag = f"l={l} L={L} N={N} (C_0={C0:.4f}) eps={eps:.4g}"
        rows.append(Row("Thm 4.4 lower bound > 1/2 at N = C_0 L", tag, ser_lower_bound(l, L, lin, eps), 0.5 * weaken, ">="))
        rows.append(Row("Thm 4.4 1 - exp(-p_e L/(l N)) > 1/2", tag,
                        -math.expm1(-mismatch_probability(eps) * L / (l * N)), 0.5 * weaken, ">="))
        rows.append(Row("Thm 4.4 oracle SER >= lower bound", tag, oracle_ser(l, L, lin), weaken * ser_lower_bound(l, L, lin, 0.0), ">="))
    return rows


def sympy_derivations() -> list[Row]:
    """Every derivation step of bounds.statements, verified by sympy (1 = verified)."""
    return [Row("sympy derivation", f"{s.name}: {desc}", float(ok), 1.0, "==") for s in ALL for desc, ok in s.check()]
