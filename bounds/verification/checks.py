"""Every link of the paper's proofs as a family of checks with certified verdicts (Appendices A-C).

:data:`FAMILIES` is the registry of ``mdmt verify``'s families (key and one-line title, in report
order); each function here computes the rows of one or more families of the paper's statements
(Lemmas A.1, B.2, B.3, B.8, B.9, B.11, C.1, Theorems 4.2-4.4, Eq. 3).  The rows, their verdicts
(``certified``, ``exact``, ``numeric``, ``proved`` / ``stated``; ``undecided`` counts as a
violation) and the instances the families run on are in :mod:`.check_rows`.

The two sides of every row come from different code paths: the library's float algorithms
(constructions/reverse, bounds/dependencies) against the definitions evaluated in
:mod:`.references`, and every bound from its statement in :mod:`.statements`.  No row is true by
construction: a bound evaluated at the very point where it was solved for, or a bound equal to 1,
is not a check and is not emitted.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import sympy as sp

from mdmt.constructions.reverse.chain import assignment_quantities, chain_quantities
from mdmt.constructions.reverse.exact import exact_output_law
from mdmt.constructions.reverse.interval_closed_forms import oracle_ser
from mdmt.constructions.reverse.learning import learning_error
from mdmt.constructions.reverse.schedules import (WarmStart, expected_nfe, p_distinct, reveal_probabilities,
                                                  reveal_rates, revealed_before)

from . import rounding
# the rows and instances, re-exported on purpose: mdmt.bounds.verification.checks keeps every name it had
from .check_rows import Instance as Instance
from .check_rows import Row as Row
from .check_rows import _pair as _pair
from .check_rows import agree as agree
from .check_rows import decide as decide
from .check_rows import exact_row as exact_row
from .check_rows import schedule as schedule
from .check_rows import to_logsum as to_logsum
from ..theorems.dependencies import dependencies_for_assignment, expected_dependencies_per_step
from ..theorems.interval_bounds import mismatch_probability, ser_lower_bound
from ..theorems.intervals import Iv, LogSum, arb_module
from .references import (IntervalLaw, Reference, dependencies_by_segments, expected_dependencies_exact, frac, kl_from,
                         p_distinct_exact, partition_probabilities, ser_from)
from ..theorems.statements import (ALL, CHAIN_BOUND, LEMMA_A1, LEMMA_B8, MISMATCH, SEPARATORS, THEOREM_42, THEOREM_42_DEPENDENCIES,
                         THEOREM_42_STEPS, THEOREM_43, THEOREM_44, THEOREM_44_ANY, THEOREM_44_BOUND, UNION_BOUND,
                         theorem_42_steps)

FAMILIES = {  # key: title (at most 42 characters, for one line per family)
    "SD": "derivation steps of the statements",
    "S": "schedules: pi, r_j, P_distinct, E[NFE]",
    "D": "dependencies: the scan and E[D_j]",
    "EQ3": "Eq. 3: p_N = mixture over reveal orders",
    "C1": "Lemma B.2: KL(q||p_N) <= E KL(q||p_tau)",
    "C2": "Lemma B.3: KL(q||p_tau) = sum TC + learn",
    "C2E": "Lemma B.3 in expectation (library chain)",
    "C3": "Lemma A.1: TC_j <= (|S_j|-1) log|V|",
    "C4": "Lemma B.8: TC_j <= D_j log|V|",
    "C4E": "Lemma B.9: KL <= L eps + log|V| E[sum D]",
    "B11": "Lemma B.11: E[D_j] <= L pi^2(n-1)/a^(n-1)",
    "C5": "Theorem 4.2: E[sum D_j] <= 4 eps L",
    "LE": "learning error (max form), library",
    "T43": "Theorem 4.3: SER <= 1 - P_d e^(-L eps)",
    "T43u": "Lemma C.1: 1 - P_d <= C(L,2) sum pi_j^2",
    "T44": "Theorem 4.4: SER >= 1-(1-p_e(1-P_l))^(L/l)",
    "T44x": "interval closed forms (library) = exact",
    "T44N": "Theorem 4.4, N steps: 1 - e^(-p_e L/(l N))",
    "T44C": "Theorem 4.4: SER > 1/2 at N = C_0 L",
    "CV": "curves: critical C and minimal N",
    "AB": "atlas: bounds hold where they apply; tight",
    "AV": "atlas constants, orders, scores by hand",
    "AX": "atlas: documented failures reproduced",
    "IT": "information: H, TC, DTC, sum I, profile",
    "PL": "policy laws = trajectory enumeration",
    "CE": "certification refuses false steps",
    "SP": "samplers: DP, bisect, ReMDM, verified",
    "IA": "interval arithmetic encloses exact values",
    "OP": "oracle posteriors q(x_i | x_U) = joint",
    "RF": "refutation: claims, certificates by hand",
    "PB": "ParallelBench Sec. 4 = exact task laws",
}


# ----------------------------------------------------------------------------- families

SD_PARTS = (0, 3, len(ALL))  # the statements of SD's two jobs: sympy's costliest three, then the rest (about equal)


def derivation_rows(part: int | None = None) -> list[Row]:
    """Every step of every statement (proved / certified / exact on laws / stated) and its final form; ``part`` 0 or
    1: the statements ``ALL[SD_PARTS[part]:SD_PARTS[part + 1]]`` alone (``mdmt verify`` runs the two parts as two
    jobs, which a first run proves on two cores; their rows, in order, are those of ``part=None``)."""
    rows = []
    for st in (ALL if part is None else ALL[SD_PARTS[part]:SD_PARTS[part + 1]]):
        for k, res in enumerate(st.check()):
            rows.append(Row("SD", st.key, f"step{k + 1}", (math.nan, math.nan), (math.nan, math.nan), "step",
                            res.method if res.ok else "FAILED", res.ok, 0.0, math.nan, f"{res.description}: {res.detail}"))
    return rows


def schedule_rows() -> list[Row]:
    """The library's pi, r_j, P_distinct and E[NFE] against their exact values."""
    rows = []
    specs = [("linear", 1, None), ("linear", 7, None), ("linear", 64, None), ("cosine", 5, None), ("cosine", 32, None),
             ("warmstart", 1, 0.3), ("warmstart", 9, 0.2), ("loglinear", 6, 0.01), ("loglinear", 40, 1e-5)]
    for name, N, param in specs:
        label, pi, ex = schedule((name, N, param) if param is not None else (name, N))
        exI = [Iv.from_arb([p])[0] if type(p).__name__ == "arb" else Iv.from_fractions(np.array([p], dtype=object))[0]
               for p in ex]
        tol = rounding.tol_reveal_probabilities(N)
        for j in range(N):
            rows.append(agree("S", label, f"pi[{j + 1}]", pi[j], exI[j], tol))
        # rates and the rest from the library's pi, taken as exact rationals
        pf = [frac(p) for p in pi]
        a = [sum(pf[:j], Fraction(0)) for j in range(N)]
        r = reveal_rates(pi)
        tr = rounding.tol_reveal_rates(np.array([float(p) for p in pf]), np.array([float(x) for x in a]))
        for j in range(N):
            rem = 1 - a[j]
            last = max(k for k in range(N) if pf[k] > 0)
            exact_r = Fraction(1) if j >= last or rem <= 0 else min(Fraction(1), pf[j] / rem)
            rows.append(agree("S", label, f"r[{j + 1}]", r[j], exact_r, float(tr[j])))
        for L in (1, 2, 3, 5):
            if L > N:
                continue
            pd = p_distinct_exact(pf, L)  # of the library's pi as it is
            dlog = rounding.tol_log_p_distinct(N, L, pi)
            rows.append(agree("S", label, f"P_distinct(L={L})", p_distinct(pi, L), pd, float(pd) * math.expm1(dlog) + 1e-300))
            nfe = sum((1 - (1 - p) ** L for p in pf), Fraction(0))
            rows.append(agree("S", label, f"E[NFE](L={L})", expected_nfe(pi, L), nfe, rounding.tol_expected_nfe(N, float(nfe))))
    return rows


def dependency_rows(quick: bool) -> list[Row]:
    """The scan against Definition B.5 over every assignment; E[D_j] (library) against exact rationals."""
    rows = []
    for n in (2, 3, 4):
        for L, N in ((6, 3), (7, 2)) if quick else ((6, 3), (7, 3), (8, 2)):
            taus = np.array(np.meshgrid(*[np.arange(1, N + 1)] * L, indexing="ij")).reshape(L, -1).T
            lib = np.array([np.pad(dependencies_for_assignment(n, t), (0, N - int(t.max()))) for t in taus])
            ref = dependencies_by_segments(n, taus)
            bad = int(np.sum(np.any(lib != ref, axis=1)))
            rows.append(Row("D", f"n{n}L{L}", f"scan all {len(taus)} tau in [{N}]^{L}", (float(bad), float(bad)),
                            (0.0, 0.0), "==", "exact", bad == 0, -float(bad), math.nan, "assignments where they differ"))
    cases = [(2, 5, ("linear", 3)), (3, 12, ("cosine", 4)), (4, 40, ("warmstart", 6, 0.2)), (3, 300, ("linear", 16)),
             (2, 2000, ("loglinear", 8, 0.01))]
    for n, L, spec in cases:
        label, pi, ex = schedule(spec)
        lib = expected_dependencies_per_step(n, L, pi)
        pf = [frac(p) for p in pi]
        exact = expected_dependencies_exact(n, L, pf, exact=L <= 400)
        a = revealed_before(pi)
        vals = [float(e) if isinstance(e, Fraction) else float(e.mid()) for e in exact]
        tol = rounding.tol_dependencies(L, pi, a, vals)
        for j in range(len(pi)):
            rows.append(agree("D", f"n{n}L{L}{label}", f"E[D_{j + 1}]", lib[j], exact[j], float(tol[j])))
    return rows


def separator_bound_rows(quick: bool) -> list[Row]:
    """Lemma B.11's explicit bound against the exact E[D_j], j >= 2 (rational schedules: exact)."""
    rows = []
    cases = [(2, 1000, [Fraction(999, 1000), Fraction(1, 1000)], "tight"), (3, 1000, [Fraction(999, 1000), Fraction(1, 1000)], "tight"),
             (2, 64, [Fraction(1, 8)] * 8, ""), (3, 128, [Fraction(1, 2)] + [Fraction(1, 32)] * 16, ""),
             (4, 50, [Fraction(1, 4)] * 4, "")]
    if not quick:
        cases += [(2, 4096, [Fraction(1, 10)] + [Fraction(9, 10 * 34)] * 34, ""), (5, 200, [Fraction(1, 5)] * 5, "")]
    for n, L, pi, note in cases:
        ex = expected_dependencies_exact(n, L, pi, exact=True)
        a = Fraction(0)
        for j, p in enumerate(pi):
            if j >= 1 and p > 0:
                b = SEPARATORS.exact(L=L, pi_j=p, n=n, a_j=a)
                rows.append(exact_row("B11", f"n{n}L{L}N{len(pi)}", f"j={j + 1}", ex[j], b, "<=", note))
            a += p
    return rows


def theorem42_rows(quick: bool) -> list[Row]:
    """E[sum_j D_j] <= 4 eps L (statement) at N = the explicit Theorem 4.2 count, exact or certified."""
    rows = []
    lengths = [256, 1024, 4096] if quick else [256, 1024, 4096, 16384]
    for n, eps_text in ((2, "1/10"), (3, "3/10")) + (() if quick else ((4, "2/5"),)):
        eps = Fraction(eps_text)
        N = int(sp.ceiling(THEOREM_42_STEPS.exact(n=n, epsilon=eps)))
        pi = [Fraction(1)] if N == 1 else [eps] + [(1 - eps) / (N - 1)] * (N - 1)
        for L in lengths:
            exact = L <= 1024
            per = expected_dependencies_exact(n, L, pi, exact=exact)
            total = sum(per, Fraction(0)) if exact else sum(per[1:], per[0])
            bound = THEOREM_42_DEPENDENCIES.exact(epsilon=eps, L=L)
            label = f"n{n}eps{float(eps):g}N{N}"
            if exact:
                rows.append(exact_row("C5", label, f"L={L}", total, bound, "<="))
            else:
                rows.append(decide("C5", label, f"L={L}", total, bound, "<="))
        # the library's count is the same integer
        lib = theorem_42_steps(n, float(eps))
        rows.append(exact_row("C5", f"n{n}eps{float(eps):g}", "N_42 (library) = ceiling of the statement", lib, N, "=="))
    return rows


def tc_rows(inst: Instance) -> list[Row]:
    """C3 (Lemma A.1) and C4 (Lemma B.8) for every revealed set U and step set S (|S| >= 2): all reveal
    assignments, since every (U, S) is a step of some assignment."""
    rows = []
    L, V = inst.L, inst.language.n_symbols
    bits = [1 << (L - 1 - i) for i in range(L)]
    pairs = []
    for U in range(1 << L):
        rest = [i for i in range(L) if not U & bits[i]]
        for k in range(2, len(rest) + 1):
            for S_idx in itertools.combinations(rest, k):
                pairs.append((U, sum(bits[i] for i in S_idx), S_idx))
    if not pairs:
        return rows
    tcs = inst.ref.total_correlations(np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))
    a1 = {k: LEMMA_A1.arb(d=k, V=V) for k in range(2, L + 1)}
    a1x = {k: LEMMA_A1.exact(d=k, V=V) for k in range(2, L + 1)}
    b8 = {D: (LEMMA_B8.arb(D_j=D, V=V), LEMMA_B8.exact(D_j=D, V=V)) for D in range(1, L)}
    for t, (U, S, S_idx) in enumerate(pairs):
        tc = tcs[t]
        k = len(S_idx)
        case = f"U={U:0{L}b},S={S:0{L}b}"
        tcx = (lambda U=U, S=S: inst.refx.total_correlations(np.array([U]), np.array([S]))[0]) if inst.exact else None
        rows.append(decide("C3", inst.key, case, tc, a1[k], "<=", *(_ex(tcx, a1x[k]))))
        if inst.n is not None:
            tau = np.full(L, 3)
            tau[[i for i in range(L) if U & bits[i]]] = 1
            tau[list(S_idx)] = 2
            D = int(dependencies_for_assignment(inst.n, tau)[1])
            if D == 0:
                ok = independent_given(inst.ref, U, S_idx)
                rows.append(Row("C4", inst.key, case, _pair(tc), (0.0, 0.0), "<=", "exact", ok, 0.0, 0.0,
                                "D_j = 0: independence given the separators, exactly"))
            else:
                rows.append(decide("C4", inst.key, case, tc, b8[D][0], "<=", *(_ex(tcx, b8[D][1]))))
    return rows


def _ex(value_fn, bound):
    """(exact value, exact bound) for decide's exact fallback; the value is computed only if needed."""
    return (None, None) if value_fn is None else (value_fn, bound)


def independent_given(ref: Reference, U: int, S_idx) -> bool:
    """q(x_{U+S}) q(x_U)^(|S|-1) = prod_{i in S} q(x_{U+i}) for every x, in exact rationals (TC = 0 exactly).

    Every q(x_W) is n_W / D over one common denominator D, and both sides have |S| factors, so the
    identity is compared on the integers n_W (Reference.q_ext_num).
    """
    lay, qe = ref.lay, ref.q_ext_num
    L, V = ref.L, ref.V
    Upos = [i for i in range(L) if U & lay.bit(i)]
    W = Upos + list(S_idx)
    grid = np.indices((V,) * len(W)).reshape(len(W), -1).T
    base = np.full((len(grid), L), V)
    base[:, W] = grid
    st = lambda keep: (np.where(np.isin(np.arange(L), keep)[None, :], base, V) * lay.strides).sum(axis=1)  # noqa: E731
    joint = qe[st(W)]
    ctx = qe[st(Upos)]
    singles = [qe[st(Upos + [i])] for i in S_idx]
    k = len(S_idx)
    lhs = joint * ctx ** (k - 1)
    rhs = singles[0]
    for s in singles[1:]:
        rhs = rhs * s
    return bool(np.all(lhs == rhs))


def chain_rows(inst: Instance, quick: bool) -> list[Row]:
    """C1, C2 (every reveal order), C2E, C4E, EQ3, LE, T43 and T44 on one instance."""
    rows = []
    L, V = inst.L, inst.language.n_symbols
    for spec in inst.denoisers:
        dl = inst.den_label(spec)
        ch = inst.chain(spec)
        chx = inst.chain(spec, "refx") if inst.exact else None
        # C2 per reveal order: left from p_tau sequence by sequence, right from entropies and row-wise KL
        taus = _tau_labels(inst)
        if chx is not None:
            for p, tau in enumerate(taus):
                rows.append(exact_row("C2", inst.key, f"{dl}/tau={tau}", chx.left[p], chx.right[p], "=="))
        else:
            left, right = _enclosures(ch.left), _enclosures(ch.right)
            for p, tau in enumerate(taus):
                rows.append(decide("C2", inst.key, f"{dl}/tau={tau}", left[p], right[p], "=="))
        eps_enc = inst.eps_max(spec)
        eps_hi = float(_pair(eps_enc)[1]) if spec != "oracle" else 0.0
        eps_exact = inst.eps_max(spec, "refx") if inst.exact and spec != "oracle" else (LogSum() if spec == "oracle" else None)
        if inst.agreement and spec != "oracle":
            lib = learning_error(inst.language, inst.denoiser(spec), L, method="exact", tables=inst.tables)["max"]
            encf = inst.eps_max(spec, "reff")
            rows.append(agree("LE", inst.key, dl, lib, encf, rounding.tol_learning_max(V, _magnitude(inst))))
        for sspec in inst.schedules:
            label, pi_lib, pi_ex = schedule(sspec)
            N = len(pi_lib)
            if N > (inst.max_blocks or L) and inst.max_blocks is not None:
                continue
            case = f"{label}/{dl}"
            probs = partition_probabilities(inst.parts, pi_ex, inst.ref.B)
            ekl, pN = ch.expected(probs)
            kl, ser = kl_from(inst.ref, pN), ser_from(pN)
            exact_ok = chx is not None and all(isinstance(p, Fraction) for p in pi_ex)
            if exact_ok:
                probx = partition_probabilities(inst.parts, pi_ex, inst.refx.B)
                eklx, pNx = chx.expected(probx)
                klx, serx = kl_from(inst.refx, pNx), ser_from(pNx)
            # C1: Jensen over reveal orders
            if N >= 2 or exact_ok:
                rows.append(decide("C1", inst.key, case, kl, ekl, "<=", *((klx, eklx) if exact_ok else (None, None))))
            # C4E: the chain bound, for n-grams
            if inst.n is not None:
                ed = expected_dependencies_exact(inst.n, L, pi_ex, exact=all(isinstance(p, Fraction) for p in pi_ex))
                ed_total = sum(ed[1:], ed[0])
                bound = L * CHAIN_BOUND.arb(epsilon_learning=eps_hi, V=V, E_D=ed_total, L=L)
                exb = (L * CHAIN_BOUND.exact(epsilon_learning=0, V=V, E_D=ed_total, L=L)) if exact_ok and spec == "oracle" else None
                rows.append(decide("C4E", inst.key, case, kl, bound, "<=", *((klx, exb) if exb is not None else (None, None))))
            # T43: only where the bound is informative (P_distinct > 0)
            if N >= L:
                pd = p_distinct_exact(pi_ex, L) if all(isinstance(p, Fraction) for p in pi_ex) else None
                if pd is not None and pd > 0:
                    b = THEOREM_43.arb(P_distinct=pd, L=L, epsilon_learning=eps_hi)
                    exb = THEOREM_43.exact(P_distinct=pd, L=L, epsilon_learning=_sym(eps_exact)) if exact_ok and eps_exact is not None else None
                    rows.append(decide("T43", inst.key, case, ser, b, "<=", *((serx, exb) if exb is not None else (None, None))))
            # T44 on the interval HMM
            if inst.interval is not None:
                l = inst.interval
                pl = p_distinct_exact(pi_ex, l) if all(isinstance(p, Fraction) for p in pi_ex) else None
                if pl is not None:
                    b = THEOREM_44_BOUND.arb(epsilon_learning=eps_hi, P_distinct_l=pl, L=L, l=l)
                    exb = THEOREM_44_BOUND.exact(epsilon_learning=_sym(eps_exact), P_distinct_l=pl, L=L, l=l) if exact_ok and eps_exact is not None else None
                    rows.append(decide("T44", inst.key, case, ser, b, ">=", *((serx, exb) if exb is not None else (None, None))))
            # the library against the references, on its own float inputs
            if inst.agreement and N <= 8:
                rows += agreement_rows(inst, spec, sspec, pi_lib, case)
    return rows


def _tau_labels(inst: Instance) -> list[str]:
    """The reveal order of every partition as digits, e.g. "2131" (position i revealed at step tau_i)."""
    return inst.cached("tau_labels", lambda: ["".join(map(str, row)) for row in (inst.parts.blocks + 1).tolist()])


def _enclosures(iv: Iv) -> list[tuple[float, float]]:
    """The (lo, hi) pairs of a 1-d interval array, as Python floats."""
    return list(zip(iv.lo.tolist(), iv.hi.tolist()))


def _sym(x):
    """A LogSum as a sympy expression (for exact statement evaluation)."""
    if x is None:
        return None
    e = sp.Rational(x.a.numerator, x.a.denominator)
    for r, c in x.terms.items():
        e += sp.Rational(c.numerator, c.denominator) * sp.log(sp.Rational(r.numerator, r.denominator))
    return e


def _magnitude(inst: Instance) -> float:
    """An upper bound of |log| of every positive probability the library's float tables hold."""
    def build():
        q = inst.tables.q_ext
        m = float(np.max(np.abs(np.log(q[q > 0]))))
        for spec in inst.denoisers:
            D = inst.D_float(spec)
            if D is not None:
                live = inst.tables.q_ext > 0
                d = D[live]
                m = max(m, float(np.max(np.abs(np.log(d[d > 0])))))
        return 2 * m + 2
    return inst.cached("magnitude", build)


def agreement_rows(inst: Instance, spec, sspec, pi, case) -> list[Row]:
    """EQ3 (the library's exact law), C2E (the library's chain quantities) against the float-input reference."""
    rows = []
    L, V = inst.L, inst.language.n_symbols
    den = inst.denoiser(spec)
    chf = inst.chain(spec, "reff")
    probs = partition_probabilities(inst.parts, list(pi), chf.ref.B)
    ekl, pN = chf.expected(probs)
    res = exact_output_law(inst.language, L, pi, den, tables=inst.tables,
                           table=None if den is None else inst.D_float(spec))
    a = revealed_before(pi)
    rel = rounding.rel_tol_exact_law(L, pi, a)
    supp = chf.ref.support
    lib = res.p[supp]
    ref_mid = pN.mid
    dev = np.abs(lib - ref_mid) - 0.5 * pN.width
    worst = int(np.argmax(dev / np.maximum(ref_mid, 1e-300)))
    rows.append(agree("EQ3", inst.key, f"{case}/p_N(x) worst", lib[worst], pN[worst], rel * float(pN.hi[worst]) + 1e-300))
    ok_all = bool(np.all(dev <= rel * pN.hi + 1e-300))
    rows.append(Row("EQ3", inst.key, f"{case}/p_N(x) all {len(supp)}", (float(np.max(dev)),) * 2, (0.0, 0.0), "==", "numeric",
                    ok_all, float(np.min(rel * pN.hi - dev)), math.nan, f"relative tolerance {rel:.2g}"))
    rows.append(agree("EQ3", inst.key, f"{case}/SER", res.ser, ser_from(pN), rounding.tol_ser_from_law(rel, lib)))
    kl = kl_from(chf.ref, pN)
    if math.isfinite(res.kl_nats):
        rows.append(agree("EQ3", inst.key, f"{case}/KL", res.kl_nats, kl,
                          rounding.tol_kl_from_law(rel, inst.tables.q[supp], lib)))
    cq = chain_quantities(inst.language, L, pi, den, tables=inst.tables,
                          table=None if den is None else inst.D_float(spec))
    P = len(inst.parts.blocks)
    tc, lr = chf.tc, chf.learning_sum
    tol = rounding.tol_chain(L, len(pi), V, _magnitude(inst))
    rows.append(agree("C2E", inst.key, f"{case}/E KL(q||p_tau)", cq["expected_assignment_kl"], ekl, tol))
    rows.append(agree("C2E", inst.key, f"{case}/E TC", cq["expected_total_correlation"], _dot(probs, tc), tol))
    rows.append(agree("C2E", inst.key, f"{case}/E learning", cq["expected_learning_term"], _dot(probs, lr), tol))
    if den is None:
        rows.append(Row("C2E", inst.key, f"{case}/oracle learning = 0", (cq["expected_learning_term"],) * 2, (0.0, 0.0),
                        "==", "exact", cq["expected_learning_term"] == 0.0, -abs(cq["expected_learning_term"]), 0.0,
                        "the oracle's rows are the posterior rows"))
    # one assignment through the library's per-assignment path
    blocks = inst.parts.blocks[min(P - 1, P // 2)]
    aq = assignment_quantities(inst.language, blocks + 1, den, tables=inst.tables,
                               table=None if den is None else inst.D_float(spec))
    p = min(P - 1, P // 2)
    rows.append(agree("C2E", inst.key, f"{case}/KL(q||p_tau) tau={''.join(str(int(b) + 1) for b in blocks)}",
                      aq["kl_nats"], chf.left[p], tol))
    return rows


def _dot(probs, vals):
    return (probs * vals).sum()


def union_bound_rows() -> list[Row]:
    """Lemma C.1: 1 - P_distinct <= C(L, 2) sum_j pi_j^2, exactly, on rational schedules."""
    rows = []
    for L in (2, 3, 5, 8):
        for spec in (("linear", L), ("linear", 2 * L), ("linear", 100 * L), ("warmstart", 4 * L, 0.25),
                     ("loglinear", 3 * L, 0.01)):
            label, _, ex = schedule(spec)
            pd = p_distinct_exact(ex, L)
            s2 = sum((p * p for p in ex), Fraction(0))
            rows.append(exact_row("T43u", f"L{L}", label, 1 - pd, UNION_BOUND.exact(L=L, S_2=s2), "<=",
                                  "attained: one pair" if L == 2 else ""))
    return rows


def interval_rows(quick: bool) -> list[Row]:
    """The interval HMM at any L: closed form (library) = exact rho; Theorem 4.4 (any schedule, and at C_0)."""
    rows = []
    cases = [(2, 1000, ("linear", 1000)), (3, 300, ("cosine", 64)), (5, 1000, ("linear", 1443)),
             (5, 1000, ("warmstart", 200, 0.3)), (4, 400, ("loglinear", 50, 0.01)), (5, 10 ** 6, ("linear", 1442695))]
    if not quick:
        cases += [(2, 10 ** 6, ("linear", 360674)), (6, 6000, ("linear", 20000))]
    for l, L, spec in cases:
        label, pi, _ = schedule(spec)
        values, counts = np.unique(pi[pi > 0], return_counts=True)
        lib_groups = [(frac(v), int(c)) for v, c in zip(values, counts)]  # the library's pi, exactly
        total = sum(v * c for v, c in lib_groups)
        groups = [(v / total, c) for v, c in lib_groups]  # ... normalised exactly: a schedule
        lab = f"l{l}L{L}{label}"
        law = IntervalLaw(l, L, groups)
        ser = law.ser_arb()
        # the library's closed form, against the exact rho of the same float pi
        dlog = rounding.tol_log_rho(l, len(values), len(pi), float(values.min()))
        lib = oracle_ser(l, L, pi)
        rows.append(agree("T44x", lab, "oracle SER = 1 - rho^(L/l)", lib, IntervalLaw(l, L, lib_groups).ser_arb(),
                          rounding.tol_oracle_ser(L // l, lib, dlog)))
        # Theorem 4.4 at eps = 0 for the oracle: compare the bases rho and 1 - p_e (1 - P_l) exactly
        pl = p_distinct_exact(groups, l)
        base_bound = 1 - Fraction(1, 2) * (1 - pl)
        rows.append(exact_row("T44", lab, "oracle: rho <= 1 - p_e(0)(1 - P_l) (so SER >= bound)", law.rho, base_bound, "<=",
                              "attained for l = 2" if l == 2 else ""))
        # the any-schedule form: SER >= 1 - exp(-p_e L/(l N))
        b = THEOREM_44_ANY.arb(epsilon_learning=0, L=L, l=l, N=len(pi), prec=256)
        rows.append(decide("T44N", lab, "oracle", ser, b, ">="))
        # the library's bound = the statement at the library's P_distinct(l)
        lib_b = ser_lower_bound(l, L, pi, 0.0)
        pl_lib = p_distinct_exact(lib_groups, l)
        dP = float(pl_lib) * math.expm1(rounding.tol_log_p_distinct(len(pi), l, pi)) + 4 * rounding.U
        tol = rounding.tol_ser_lower_bound(L // l, lib_b, float(pl_lib), dP)
        if tol <= 1e-6:  # where the library's log-space P_distinct (lgamma of N) is too coarse, no informative row
            rows.append(agree("T44x", lab, "ser_lower_bound(eps=0) = statement", lib_b,
                              THEOREM_44_BOUND.arb(epsilon_learning=0, P_distinct_l=pl_lib, L=L, l=l, prec=256), tol))
    # the library's p_e(eps) = the statement, at learning errors > 0: exp(-2 eps) / 2 within the library's exp rounding
    for eps in (1 / 128, 0.05, 0.5):
        lib_p = mismatch_probability(eps)
        rows.append(agree("T44x", f"eps{eps:g}", "mismatch_probability = statement", lib_p,
                          MISMATCH.arb(epsilon_learning=eps, prec=256), (rounding.ULP_LIB + 3) * rounding.U * lib_p))
    # the library's bound at eps > 0 and l >= 3, against the value by hand: the linear schedule over N steps has
    # P_distinct(l) = N!/((N - l)! N^l) (3/8 at l = 3, N = 4; 24/125 at l = 4, N = 5), p_e = e^(-2 eps)/2, and
    # SER >= 1 - (1 - p_e (1 - P_distinct))^(L/l)
    arb = arb_module()[0]
    for l, L, N, eps in ((3, 6, 4, 0.1), (4, 8, 5, 0.05), (3, 9, 7, 0.3)):
        lib_b = ser_lower_bound(l, L, reveal_probabilities("linear", N), eps)
        miss = 1 - Fraction(math.perm(N, l), N ** l)
        base = 1 - (-2 * arb(eps)).exp() / 2 * arb(miss.numerator) / miss.denominator
        rows.append(agree("T44x", f"l{l}L{L}lin{N}eps{eps:g}", "ser_lower_bound(eps > 0) = by hand", lib_b,
                          1 - base ** (L // l), 64 * rounding.U * lib_b))
    # at N = floor(C_0 L): the oracle (l = 2, eps = 0: tight) and the explicit bound (l = 5, eps = 1/128)
    for l, eps, L in ((2, 0.0, 10 ** 6), (5, 1 / 128, 10 ** 6), (5, 1 / 128, 1000), (3, 0.05, 3 * 10 ** 5)):
        C0 = THEOREM_44.evaluate(l=l, epsilon_learning=eps)
        N = int(math.floor(C0 * L))
        lab = f"l{l}L{L}eps{eps:g}N{N}"
        if eps == 0:
            law = IntervalLaw(l, L, [(Fraction(1, N), N)])  # the linear schedule as (value, multiplicity)
            rows.append(decide("T44C", lab, "oracle SER > 1/2", law.ser_arb(), Fraction(1, 2), ">=",
                               note="tight: C_0 exact for l = 2"))
        pl = Fraction(math.perm(N, l), N ** l)
        b = THEOREM_44_BOUND.arb(epsilon_learning=eps, P_distinct_l=pl, L=L, l=l, prec=256)
        rows.append(decide("T44C", lab, "bound > 1/2 (exact P_l, any schedule)", b, Fraction(1, 2), ">="))
    return rows


def curve_rows() -> list[Row]:
    """The curves' step counts are the extreme ones (certified with the exact oracle SER and E[D_j])."""
    from ..studies.curves import critical_c, min_steps_ter, ter_target

    rows = []
    for l, L in ((5, 1000), (3, 300), (2, 100)):
        _, Ns = critical_c(l, L)
        for N, rel in ((Ns, ">="), (Ns + 1, "<=")):
            ser = IntervalLaw(l, L, [(Fraction(1, N), N)]).ser_arb()  # the linear schedule
            rows.append(decide("CV", f"l{l}L{L}", f"critical N*={Ns}: SER(N={N}) {'>' if rel == '>=' else '<='} 1/2",
                               ser, Fraction(1, 2), rel))
    for n, L, V, eps in ((3, 256, 8, 0.05), (2, 512, 4, 0.1)):
        N = min_steps_ter(n, L, V, eps)
        target = THEOREM_42.arb(epsilon_learning=0, epsilon=eps, V=V)
        for M, rel in ((N, "<="), (N - 1, ">=")):
            pi = reveal_probabilities(WarmStart(first=eps), M)
            ed = expected_dependencies_exact(n, L, [frac(p) for p in pi], exact=False)
            total = sum(ed[1:], ed[0])
            bound = CHAIN_BOUND.arb(epsilon_learning=0, V=V, E_D=total, L=L)
            rows.append(decide("CV", f"n{n}L{L}V{V}", f"min N={N}: chain bound(N={M}) {rel} target", bound, target,
                               "<=" if rel == "<=" else ">="))
        lib = ter_target(V, eps)
        rows.append(agree("CV", f"n{n}L{L}V{V}", "target (library) = statement", lib, target, 8 * 2.0 ** -53 * lib))
    return rows
