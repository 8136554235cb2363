"""Checks of the layer beyond the paper: the bound atlas, information quantities, reveal policies,
certification and interval arithmetic, each against a second code path.

Families (``mdmt verify -k KEY``):

``AB``  every bound of the atlas (:mod:`mdmt.bounds.studies.atlas`) holds where its assumption does, on
        random n-gram and HMM instances, with and without learning error; and each is attained on
        its tight instance: Li & Cai's at L = 2, N = 1 (KL = I(X_1; X_2), by enumeration), the chain
        bound (C4) on a copying chain revealed at once ((L - 1) log|V|), ParallelBench's lower
        bound for fixed orders (= KL for the oracle), the information-profile closed forms (a third
        code path for fixed and random step sizes).
``AV``  the atlas's constants against values derived by hand in the row's comment: Li & Cai's
        2^ceil(log2 s_max) - 1 at largest step sizes that are and are not powers of two, the
        random-size TC and DTC rates, the boundary laws w(u), balanced sizes, the stride and block
        orders as literal vectors, the three scores on literal rows.
``AX``  the documented failures, reproduced as expected failures: Li & Cai's bound under top-k
        confidence (positions chosen by the denoiser, not uniformly: the assumption fails, and so
        does the bound), and ParallelBench's partition bound under i.i.d. reveal steps (a mixture
        of partitions: KL = log(4/3) < (1/2) log 2 on two tokens that must agree).
``IT``  H, H(X_i), H(X_i | X_-i), TC, DTC and sum_i I(X_i; X_-i) of the library against sums of the
        joint table; the identity sum_i I = TC + DTC; the information profile f(u) against the
        entropies of every subset.
``PL``  the exact output law on V^L and E[NFE] of every policy against the enumeration of every
        trajectory (:mod:`.brute_force`), whose rules are written from the definitions, with the
        fixed orders given as literal vectors and the random sizes from every draw of the boundaries.
``CE``  certification refuses what is false: an identity of every statement shifted by 1/1000, an
        exact law statement with a gap lowered below its equality case, and false inequalities in one
        variable (one false only near an end of its domain) -- and still certifies their true forms.
``IA``  interval arithmetic encloses: +, -, *, /, integer powers, sums, log and exp of random
        intervals contain the exact results (rationals for the field operations, arb at 256 bits
        for log and exp), and the enclosures are at most a few units in the last place wide.

Every row is numeric with its stated tolerance (float64 evaluations of the library against a
reference computed another way), exact (rational), or certified (arb).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import sympy as sp

from mdmt.constructions.languages.interval import interval_hmm
from mdmt.constructions.languages.ngram import NGram
from mdmt.constructions.languages.random_languages import random_hmm, random_ngram
from mdmt.constructions.reverse.denoisers import UniformMixture

from . import brute_force as bf
from .checks import Row, agree, exact_row
from ..theorems.intervals import Iv, LogSum, arb_module

ATLAS_TOL = 1e-9  # relative tolerance of the atlas's "holds" decisions (float64 sums of at most 3^L terms)
LAW_TOL = 1e-12  # |p_library - p_enumerated| on V^L (both float64, at most a few hundred terms per entry)


def _copy(V: int) -> NGram:
    """x_1 uniform on V tokens, then x_(i+1) = x_i: every token determines the others."""
    return NGram(2, np.full(V, 1.0 / V), np.eye(V))


def holds(family, instance, case, lhs: float, rhs: float, note: str = "", tol: float = ATLAS_TOL) -> Row:
    """A numeric ``lhs <= rhs`` row, up to ``tol * (1 + |rhs|)`` for the rounding of two float64 evaluations."""
    slack = rhs + tol * (1 + abs(rhs)) - lhs
    ok = bool(math.isfinite(lhs) and math.isfinite(rhs) and slack >= 0)
    return Row(family, instance, case, (lhs, lhs), (rhs, rhs), "<=", "numeric", ok, slack,
               slack / max(abs(rhs), 1e-300), note or f"tolerance {tol:.0e} relative")


def _ln(x) -> object:
    """log of a positive rational as a certified arb ball (256 bits)."""
    arb = arb_module()[0]
    f = Fraction(x)
    return arb(f.numerator).log() - arb(f.denominator).log() if f != 1 else arb(0)


def _ball(x):
    """A rational as an arb ball."""
    arb = arb_module()[0]
    f = Fraction(x)
    return arb(f.numerator) / f.denominator


def _reference_law(lang, L: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of V^L and q on them, from the exact rational law of :mod:`.references` (not the library's tables)."""
    from .references import Reference

    q = np.array([float(v) for v in Reference(lang, L).q_frac])
    return bf.all_sequences(lang.n_symbols, L), q


def _kl(q: np.ndarray, p: np.ndarray) -> float:
    s = q > 0
    return float(np.sum(q[s] * (np.log(q[s]) - np.log(p[s]))))


# ----------------------------------------------------------------------------- AB: the atlas's bounds hold and are tight

AB_INSTANCES = (  # key, language, L, N, denoiser (uniform mixture weight) or None for the oracle
    ("ng3s3", lambda: random_ngram(3, 2, 2.0, 0.0, seed=3), 6, 3, None),
    ("hmms6", lambda: random_hmm(3, 3, 1.5, 0.05, seed=6), 4, 2, None),
    ("ng3s7", lambda: random_ngram(3, 2, 2.0, 0.0, seed=7), 5, 3, 0.2),
)


AB_FULL = (  # added by the full run
    ("ng4s5", lambda: random_ngram(4, 2, 3.0, 0.0, seed=5), 7, 3, None),
    ("hmms2", lambda: random_hmm(2, 3, 1.0, 0.0, seed=2), 4, 3, 0.1),
)


def atlas_rows(quick: bool = True) -> list[Row]:
    from ..studies.atlas import atlas

    rows = []
    for key, make, L, N, lam in AB_INSTANCES + (() if quick else AB_FULL):
        lang = make()
        res = atlas(lang, L, N, denoiser=None if lam is None else UniformMixture(lang, lam))
        inst = f"{key}L{L}N{N}" + ("" if lam is None else f"mix{lam:g}")
        for r in res["rows"]:
            p = r["process"]
            rows.append(holds("AB", inst, f"{p}: KL <= E log q/p_traj (Jensen)", r["kl"], r["assignment_kl"]))
            if r["chain_bound_applies"]:
                rows.append(holds("AB", inst, f"{p}: KL <= chain (C4)", r["kl"], r["chain_bound"]))
            if r["li_cai_applies"]:
                rows.append(holds("AB", inst, f"{p}: KL <= Li & Cai", r["kl"], r["li_cai"]))
            if r["pb_applies"]:
                rows.append(holds("AB", inst, f"{p}: ParallelBench E sum TC <= KL", r["pb_lower"], r["kl"]))
                if lam is None:  # one fixed partition, the oracle: the lower bound is the KL itself
                    rows.append(agree("AB", inst, f"{p}: ParallelBench = KL (oracle, fixed order)", r["pb_lower"],
                                      r["kl"], ATLAS_TOL * (1 + r["kl"])))
            if r.get("random_sizes_bound") is not None:
                rows.append(holds("AB", inst, f"{p}: E log q/p_traj <= random-size rate", r["assignment_kl"],
                                  r["random_sizes_bound"]))
            if "profile_kl" in r:  # the closed form of the information profile: a third code path
                rows.append(agree("AB", inst, f"{p}: profile closed form = E log q/p_traj", r["profile_kl"],
                                  r["assignment_kl"], ATLAS_TOL * (1 + r["assignment_kl"])))
    # tight: Li & Cai at L = 2, N = 1: KL = I(X_1; X_2) = (2^1 - 1)/2 (I(X_1; X_2) + I(X_2; X_1))
    lang = NGram(2, [0.5, 0.3, 0.2], [[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.1, 0.3, 0.6]])
    X, q = _reference_law(lang, 2)
    info = bf.information_by_enumeration(X, q)
    mi = float(info["marginal_entropy"].sum() - info["entropy"])
    r = atlas(lang, 2, 1, "uniform")["rows"][0]
    rows.append(agree("AB", "ng2V3L2N1", "Li & Cai attained: KL = I(X1;X2) (enumeration)", r["kl"], mi, 1e-12))
    rows.append(agree("AB", "ng2V3L2N1", "Li & Cai attained: bound = I(X1;X2) (enumeration)", r["li_cai"], mi, 1e-12))
    # tight: the chain bound on a copying chain revealed at once: KL = TC = (L - 1) log|V| = D log|V|
    V, L = 3, 5
    r = atlas(_copy(V), L, 1, "uniform")["rows"][0]
    exact = (L - 1) * _ln(V)
    rows.append(agree("AB", f"copyV{V}L{L}N1", "chain (C4) attained: KL = (L-1) log|V|", r["kl"], exact, 1e-12))
    rows.append(agree("AB", f"copyV{V}L{L}N1", "chain (C4) attained: bound = (L-1) log|V|", r["chain_bound"], exact,
                      1e-12))
    r = atlas(_copy(V), L, 1, "iid")["rows"][0]  # the paper's i.i.d. steps, N = 1: the same single step
    rows.append(agree("AB", f"copyV{V}L{L}N1", "iid: chain (C4) attained: bound = (L-1) log|V|", r["chain_bound"],
                      exact, 1e-12))
    return rows


# ----------------------------------------------------------------------------- AV: constants by hand

def atlas_value_rows() -> list[Row]:
    from mdmt.constructions.reverse.policies import (CONFIDENCE, MARGIN, NEG_ENTROPY, balanced_sizes, cut_weights,
                                                      fixed_order, score_table)

    from ..studies.atlas import atlas, random_sizes_bound

    rows = []
    ln2 = _ln(2)
    # Li & Cai's constant 2^ceil(log2 s_max) - 1 on a binary copying chain, where I(X_i; X_-i) = log 2 for every i
    # (each token determines the others), so sum_i I = L log 2 and li_cai = (2^ceil(log2 s_max) - 1) log 2 (oracle).
    # By hand: s_max = 2 -> 1; 3, 4 -> 3; 5, 6, 7 -> 7.  Balanced sizes: L = 5, N = 2 is 3 + 2; L = 4, N = 2 is 2 + 2.
    for L, N, factor in ((4, 2, 1), (3, 1, 3), (4, 1, 3), (5, 2, 3), (5, 1, 7), (6, 1, 7), (7, 1, 7)):
        r = atlas(_copy(2), L, N, "uniform")["rows"][0]
        rows.append(agree("AV", f"copyV2L{L}N{N}", f"Li & Cai constant {factor} (s_max {-(-L // N)})", r["li_cai"],
                          factor * ln2, 1e-12))
    # the random-size rates (docs/atlas.md): tc 2 TC H_(L-1) / (N - 1 + H_(L-1)); dtc DTC H_(L-1) / (N - 1 - H_(L-1)).
    # L = 4: H_3 = 11/6.  tc, N = 3, TC = 3/2: (11/2) / (23/6) = 33/23.  dtc, N = 5, DTC = 2: (11/3) / (13/6) = 22/13.
    # L = 3: H_2 = 3/2; tc, N = 2, TC = 1: 3 / (5/2) = 6/5.  L = 2: H_1 = 1; tc, N = 4, TC = 1/2: 1 / 4.
    for args, value in (((4, 3, "tc", 1.5, 99.0), Fraction(33, 23)), ((4, 5, "dtc", 99.0, 2.0), Fraction(22, 13)),
                        ((3, 2, "tc", 1.0, 99.0), Fraction(6, 5)), ((2, 4, "tc", 0.5, 99.0), Fraction(1, 4))):
        lib = random_sizes_bound(*args)
        rows.append(agree("AV", f"L{args[0]}N{args[1]}", f"random-size {args[2]} rate = {value}",
                          math.nan if lib is None else lib, value, 4e-16 * float(value)))
    # boundary laws w(u), u = 1..L-1, L = 4: tc 1/(L - u) = 1/3, 1/2, 1 (sum 11/6); dtc 1/u = 1, 1/2, 1/3
    for law, expect in (("tc", (Fraction(2, 11), Fraction(3, 11), Fraction(6, 11))),
                        ("dtc", (Fraction(6, 11), Fraction(3, 11), Fraction(2, 11))),
                        ("uniform", (Fraction(1, 3),) * 3)):
        lib = cut_weights(4, law)
        for u, e in enumerate(expect, start=1):
            rows.append(agree("AV", "L4", f"boundary law {law}: w({u}) = {e}", lib[u - 1], e, 4e-16))
    # fixed orders as literal vectors: stride puts position i (0-based) at step i mod N + 1, blocks at floor(i N / L) + 1
    literal = {("stride", 5, 3): [1, 2, 3, 1, 2], ("stride", 6, 4): [1, 2, 3, 4, 1, 2],
               ("blocks", 5, 3): [1, 1, 2, 2, 3], ("blocks", 7, 3): [1, 1, 1, 2, 2, 3, 3]}
    for (kind, L, N), vec in literal.items():
        lib = fixed_order(kind, L, N).tolist()
        rows.append(Row("AV", f"L{L}N{N}", f"{kind} order = {vec}", (0.0, 0.0), (0.0, 0.0), "==", "exact", lib == vec,
                        0.0 if lib == vec else -1.0, 0.0, f"library: {lib}"))
    lib = balanced_sizes(7, 3).tolist()
    rows.append(Row("AV", "L7N3", "balanced sizes = [3, 2, 2]", (0.0, 0.0), (0.0, 0.0), "==", "exact", lib == [3, 2, 2],
                    0.0 if lib == [3, 2, 2] else -1.0, 0.0, f"library: {lib}"))
    # scores of literal rows: confidence = the largest, margin = largest - second largest, minus the entropy
    for row, conf, margin in (([0.5, 0.3, 0.2], Fraction(1, 2), Fraction(1, 5)), ([0.1, 0.6, 0.3], Fraction(3, 5),
                                                                                  Fraction(3, 10)),
                              ([0.25, 0.25, 0.4, 0.1], Fraction(2, 5), Fraction(3, 20))):
        P = np.array([row])
        lab = "p=" + ",".join(f"{v:g}" for v in row)
        rows.append(agree("AV", lab, f"confidence = {conf}", score_table(P, CONFIDENCE)[0], conf, 1e-15))
        rows.append(agree("AV", lab, f"margin = {margin}", score_table(P, MARGIN)[0], margin, 1e-15))
        neg_h = sum(_ball(Fraction(v).limit_denominator(1000)) * _ln(Fraction(v).limit_denominator(1000)) for v in row)
        rows.append(agree("AV", lab, "minus the entropy = sum p log p", score_table(P, NEG_ENTROPY)[0], neg_h, 1e-15))
    return rows


# ----------------------------------------------------------------------------- AX: documented failures

def expected_failure_rows() -> list[Row]:
    from ..studies.atlas import atlas

    rows = []
    # Li & Cai under top-k confidence: binary 3-gram (seed 7, temperature 1), L = 5, N = 3.  The KL comes from the
    # enumeration of every trajectory (not the library's chain); the bound from the atlas.
    lang, L, N = random_ngram(3, 2, 1.0, 0.0, seed=7), 5, 3
    X, q = _reference_law(lang, L)
    r = atlas(lang, L, N, "confidence")["rows"][0]
    p, _ = bf.policy_law_by_trajectories(X, bf.oracle_from_joint(X, q), bf.reference_rule(
        "topk", score="confidence", sizes=[2, 2, 1]), N)
    kl = _kl(q, p)
    row = holds("AX", f"ng3s7L{L}N{N}", "expected failure: Li & Cai under top-k confidence (KL > bound)",
                r["li_cai"], kl, note="the bound assumes uniformly random positions; reproduced")
    rows.append(row)
    # ParallelBench's partition bound under i.i.d. steps: two tokens that must agree (interval HMM, l = 2), N = 2
    # linear steps: p = (1/2) uniform + (1/2) q, so KL = log(4/3) < E TC = (1/2) log 2 (docs/atlas.md)
    r = atlas(interval_hmm(2), 2, 2, "iid")["rows"][0]
    rows.append(agree("AX", "iv2L2N2", "iid: KL = log(4/3)", r["kl"], _ln(Fraction(4, 3)), 1e-15))
    rows.append(agree("AX", "iv2L2N2", "iid: E sum TC = (1/2) log 2", r["pb_lower"], _ln(2) / 2, 1e-15))
    rows.append(exact_row("AX", "iv2L2N2", "expected failure: ParallelBench for random partitions (log(4/3) < log 2/2)",
                          LogSum.log(Fraction(4, 3)), LogSum.log(Fraction(2)) * Fraction(1, 2), "<="))
    return rows


# ----------------------------------------------------------------------------- IT: information quantities

IT_INSTANCES = (
    ("ng3s1", lambda: random_ngram(3, 2, 2.0, 0.05, seed=1), 6),
    ("ng2V3s4", lambda: random_ngram(2, 3, 1.0, 0.0, seed=4), 5),
    ("hmms3", lambda: random_hmm(3, 3, 1.5, 0.05, seed=3), 4),
)


def information_rows(quick: bool = False) -> list[Row]:
    """IT: the information quantities against sums of the exact joint table; the full run also checks the Student-t
    intervals of the Monte Carlo estimators (:func:`student_t_rows`: scipy.stats, whose import alone is half a
    second)."""
    from mdmt.constructions.reverse.information import information_profile, information_quantities
    from mdmt.constructions.reverse.tables import build_tables

    rows = []
    for key, make, L in IT_INSTANCES:
        lang = make()
        inst = f"{key}L{L}"
        lib = information_quantities(lang, L)
        X, q = _reference_law(lang, L)
        ref = bf.information_by_enumeration(X, q)
        H, Hi, Hc = ref["entropy"], ref["marginal_entropy"], ref["conditional_entropy"]
        tol = 1e-11 * (1 + H)
        method = lib["method"]
        rows.append(agree("IT", inst, f"H(X) ({method})", lib["entropy"], H, tol))
        for i in range(L):
            rows.append(agree("IT", inst, f"H(X_{i + 1})", lib["marginal_entropy"][i], Hi[i], tol))
            rows.append(agree("IT", inst, f"H(X_{i + 1} | X_-{i + 1})", lib["conditional_entropy"][i], Hc[i], tol))
        rows.append(agree("IT", inst, "TC = sum H(X_i) - H(X)", lib["total_correlation"], Hi.sum() - H, tol))
        rows.append(agree("IT", inst, "DTC = H(X) - sum H(X_i | X_-i)", lib["dual_total_correlation"], H - Hc.sum(), tol))
        rows.append(agree("IT", inst, "sum_i I(X_i; X_-i)", lib["sum_mutual_information"], (Hi - Hc).sum(), tol))
        rows.append(agree("IT", inst, "identity: sum_i I = TC + DTC (library)", lib["sum_mutual_information"],
                          lib["total_correlation"] + lib["dual_total_correlation"], tol))
        f = information_profile(build_tables(lang, L))
        g = bf.subset_entropy_profile(X, q)
        for u in range(1, L + 1):
            rows.append(agree("IT", inst, f"profile f({u}) = mean H(X_W), |W| = {u}", f[u], g[u], tol))
    return rows if quick else rows + student_t_rows()


def student_t_rows() -> list[Row]:
    """IT: the Monte Carlo estimators' intervals (mean_interval) against scipy's one-sample t confidence interval."""
    from scipy import stats

    from mdmt.constructions.reverse.confidence import mean_interval

    rows = []
    rng = np.random.default_rng(7)
    for num, level in ((10, 0.95), (400, 0.999), (4000, 0.9)):
        x = rng.exponential(1.0, num)
        _, lo, hi = mean_interval(x, level)
        ci = stats.ttest_1samp(x, 0.0).confidence_interval(level)
        for end, lib, ref in (("low", lo, ci.low), ("high", hi, ci.high)):
            rows.append(agree("IT", f"t{num}", f"Student-t {level:g} interval, {end} end = scipy.stats", lib, ref,
                              1e-12 * (1 + abs(ref))))
    return rows


# ----------------------------------------------------------------------------- PL: policy laws by enumeration

PL_INSTANCES = (  # key, language, L, N; the interval HMM has ties (every first marginal is uniform)
    ("ng3s1", lambda: random_ngram(3, 2, 2.0, 0.0, seed=1), 5, 3),
    ("ng2V3s4", lambda: random_ngram(2, 3, 1.0, 0.0, seed=4), 4, 3),
    ("hmms4", lambda: random_hmm(3, 3, 1.5, 0.0, seed=4), 3, 2),
    ("iv2", lambda: interval_hmm(2), 4, 2),
)
# the fixed orders, written out (0-based position i): stride i mod N + 1, blocks floor(i N / L) + 1
PL_ORDERS = {("stride", 5, 3): [1, 2, 3, 1, 2], ("blocks", 5, 3): [1, 1, 2, 2, 3], ("stride", 4, 3): [1, 2, 3, 1],
             ("blocks", 4, 3): [1, 1, 2, 3], ("stride", 3, 2): [1, 2, 1], ("blocks", 3, 2): [1, 1, 2],
             ("stride", 4, 2): [1, 2, 1, 2], ("blocks", 4, 2): [1, 1, 2, 2]}


def _enumerated(spec: str, X, q, L: int, N: int):
    """(p on V^L, E[NFE]) of a policy by enumerating trajectories, with the rule written from its definition."""
    den = bf.oracle_from_joint(X, q)
    sizes = [L // N + (1 if j < L % N else 0) for j in range(N)]  # balanced: the first L mod N steps get one more
    if spec in ("confidence", "margin", "entropy"):
        return bf.policy_law_by_trajectories(X, den, bf.reference_rule("topk", score=spec, sizes=sizes), N)
    if spec == "uniform":
        return bf.policy_law_by_trajectories(X, den, bf.reference_rule("sizes", sizes=sizes), N)
    if spec in ("stride", "blocks"):
        order = PL_ORDERS[spec, L, N]
        return bf.policy_law_by_trajectories(X, den, bf.reference_rule("fixed", order=order), max(order))
    if spec.startswith("threshold:"):
        return bf.policy_law_by_trajectories(X, den, bf.reference_rule("threshold", tau=float(spec[10:])), L)
    if spec.startswith("entropy-sum:"):
        return bf.policy_law_by_trajectories(X, den, bf.reference_rule("entropy-sum", gamma=float(spec[12:])), L)
    if spec.startswith("random:"):
        p, nfe = np.zeros(len(X)), 0.0
        for s, w in bf.random_size_law(L, N, bf.boundary_weights(L, spec[7:])).items():
            ps, _ = bf.policy_law_by_trajectories(X, den, bf.reference_rule("sizes", sizes=list(s)), len(s))
            p += float(w) * ps
            nfe += float(w) * len(s)
        return p, nfe
    raise ValueError(spec)


def policy_rows() -> list[Row]:
    from mdmt.constructions.reverse.policies import parse_policy
    from mdmt.constructions.reverse.policy_exact import exact_policy_law

    specs = ("uniform", "confidence", "margin", "entropy", "threshold:0.6", "entropy-sum:0.5", "stride", "blocks",
             "random:tc", "random:dtc")
    rows = []
    for key, make, L, N in PL_INSTANCES:
        lang = make()
        X, q = _reference_law(lang, L)
        for spec in specs:
            p_ref, nfe_ref = _enumerated(spec, X, q, L, N)
            law = exact_policy_law(lang, L, parse_policy(spec, N), support_only=False)
            inst = f"{key}L{L}N{N}"
            diff = float(np.max(np.abs(law.result.p - p_ref)))
            rows.append(Row("PL", inst, f"{spec}: p on V^L = trajectories", (diff, diff), (0.0, 0.0), "==", "numeric",
                            diff <= LAW_TOL, LAW_TOL - diff, math.nan, f"tolerance {LAW_TOL:.0e} on the largest |difference|"))
            rows.append(agree("PL", inst, f"{spec}: E[NFE] = trajectories", law.expected_nfe, nfe_ref, 1e-12 * nfe_ref))
            rows.append(agree("PL", inst, f"{spec}: KL(q||p) = trajectories", law.result.kl_nats, _kl(q, p_ref),
                              1e-9 * (1 + _kl(q, p_ref))))
    return rows


# ----------------------------------------------------------------------------- CE: certification refuses false steps

CE_QUICK = {("A3", 0), ("pe", 3), ("T42N", 1), ("T43N", 0), ("T44C", 0), ("T43", 0)}  # --quick: steps that are
# refused within milliseconds once falsified (sympy gives up on the others only after a long simplification)


def certification_rows(quick: bool = True) -> list[Row]:
    from ..theorems.statements import ALL, Identity, OnLaws

    rows = []

    def refused(inst, case, step, should_hold: bool):
        res = step.verify()
        ok = res.ok == should_hold
        what = "certified" if should_hold else "refused"
        return Row("CE", inst, f"{case}: {what}", (0.0, 0.0), (0.0, 0.0), "step", "exact" if ok else "FAILED", ok,
                   0.0, math.nan, f"{res.method}: {res.detail}"[:200])

    from ..theorems.certify import NotCertified, certify_nonneg

    x = sp.Symbol("x", real=True)
    cases = (  # (case, rhs - lhs, domain, true?); a box budget of 60: the true ones need at most 40
        ("log(1+x) <= x", x - sp.log(1 + x), (0, 1), True),
        ("x - x^2/2 <= log(1+x)", sp.log(1 + x) - x + x ** 2 / 2, (0, 1), True),
        ("x <= log(1+x) (false on (0, 1], equal at 0)", sp.log(1 + x) - x, (0, 1), False),
        ("x - x^2/2 + x^3/2 <= log(1+x) (false on (0, 1], equal at 0)", sp.log(1 + x) - x + x ** 2 / 2 - x ** 3 / 2,
         (0, 1), False),
        ("1 - e^(-x) <= x - x^2/3 (false for x > 1.36)", x - x ** 2 / 3 - 1 + sp.exp(-x), (0, 2), False),
        ("e^(-2x)/2 <= (1 - x)/2 (false for x > 0.797)", (1 - x) / 2 - sp.exp(-2 * x) / 2, (0, 1), False),
        # a narrow dip whose ends are box ends: each half is monotone from a negative end value
        ("1/10000 <= (x - 1/2)^2 (false on (0.49, 0.51))", (x - sp.Rational(1, 2)) ** 2 - sp.Rational(1, 10000), (0, 1),
         False),
        # negative just left of an increasing root: f(1) > 0 and f' > 0, so a closure from the right end that asked
        # f' >= 0 (instead of f' <= 0) would accept it
        ("1/100 <= x (false on [0, 0.01))", x - sp.Rational(1, 100), (0, 1), False),
    )
    for case, gap, (lo, hi), truth in cases:
        try:
            cert = certify_nonneg(gap, x, lo, hi, max_boxes=60)
            ok, detail = True, f"{cert.method}: {cert.detail}"
        except NotCertified as exc:
            ok, detail = False, f"refused: {exc}"
        good = ok == truth
        rows.append(Row("CE", "inequalities", f"{case}: {'certified' if truth else 'refused'}", (0.0, 0.0), (0.0, 0.0),
                        "step", "exact" if good else "FAILED", good, 0.0, math.nan, detail[:200]))
    for st in ALL:  # every identity of every statement, shifted: must be refused
        for k, step in enumerate(st.steps):
            if quick and (st.key, k) not in CE_QUICK:
                continue
            if isinstance(step, Identity):
                rows.append(refused(st.key, f"step{k + 1} + 1/1000", Identity(step.description, step.lhs,
                                                                              step.rhs + sp.Rational(1, 1000)), False))
            if isinstance(step, OnLaws):
                res = step.verify()
                if res.ok and "(0 with" not in res.detail:  # attained on some law: lowering the gap makes it false
                    def lowered(law, gap=step.gap):
                        g = gap(law)
                        return [v - Fraction(1, 10 ** 6) for v in g] if isinstance(g, list) else g - Fraction(1, 10 ** 6)
                    rows.append(refused(st.key, f"step{k + 1} with its gap lowered by 1e-6",
                                        OnLaws(step.description, step.laws, lowered), False))
    return rows


# ----------------------------------------------------------------------------- OP: oracle posteriors by enumeration

OP_INSTANCES = (  # n-grams of order 3 and 4 (contexts of two and three digits: the digit order of the first window
    # matters) and an HMM; every partial sequence of V^L, off the support too (continued uniformly)
    ("ng3s1", lambda: random_ngram(3, 2, 2.0, 0.05, seed=1), 5),
    ("ng4V3s2", lambda: random_ngram(4, 3, 1.0, 0.0, seed=2), 4),
    ("hmms3", lambda: random_hmm(3, 3, 1.5, 0.05, seed=3), 4),
)


def posterior_rows() -> list[Row]:
    """The languages' own posterior_marginals (the n-gram's forward-backward over contexts, the HMM's) at every
    partial sequence against q(x_i = v | x_U) summed from the joint table of :mod:`.references`."""
    from mdmt.runtime.validation import MASK

    rows = []
    for key, make, L in OP_INSTANCES:
        lang = make()
        X, q = _reference_law(lang, L)
        V = lang.n_symbols
        partial = np.indices((V + 1,) * L).reshape(L, -1).T
        partial = np.where(partial == V, MASK, partial)
        live = np.array([bool(np.any(np.all((X == p) | (p < 0), axis=1) & (q > 0))) for p in partial])
        partial = partial[live]  # q(x_U) > 0: where the oracle is defined
        lib = lang.posterior_marginals(partial)
        masked = partial < 0
        diff = max(float(np.max(np.abs(lib[k][masked[k]] - bf.posterior_by_enumeration(X, q, partial[k])[masked[k]]),
                                initial=0.0)) for k in range(len(partial)))
        rows.append(Row("OP", f"{key}L{L}", f"posterior_marginals at the {len(partial)} partial sequences of the support "
                        "= joint",
                        (diff, diff), (0.0, 0.0), "==", "numeric", diff <= LAW_TOL, LAW_TOL - diff, math.nan,
                        f"tolerance {LAW_TOL:.0e} on the largest |difference|"))
    return rows


# ----------------------------------------------------------------------------- IA: interval arithmetic encloses

def _fr(v: float) -> Fraction:
    return Fraction(float(v))


def interval_rows(n: int = 400) -> list[Row]:
    """Family IA on ``n`` random intervals (module docstring): both ends of every enclosure are checked."""
    arb = arb_module()[0]
    rng = np.random.default_rng(20251)
    a_lo = rng.uniform(-3, 3, n)
    a = Iv(a_lo, a_lo + rng.uniform(0, 1e-3, n) * rng.integers(0, 2, n))
    b_lo = rng.uniform(0.1, 4, n)
    b = Iv(b_lo, b_lo + rng.uniform(0, 1e-3, n) * rng.integers(0, 2, n))
    pos = Iv(b.lo * 0.37, b.hi * 0.37)
    rows = []

    def ends(iv, k):
        return _fr(iv.lo[k]), _fr(iv.hi[k])

    def check_field(name, x, y, out, fn, widen: float):
        bad, wide = 0, 0.0
        for k in range(n):
            xl, xh = ends(x, k)
            yl, yh = ends(y, k)
            corners = [fn(u, v) for u in (xl, xh) for v in (yl, yh)]  # monotone in each argument on these boxes
            lo, hi = min(corners), max(corners)
            if not (_fr(out.lo[k]) <= lo and hi <= _fr(out.hi[k])):
                bad += 1
            scale = max(abs(float(lo)), abs(float(hi)), 1e-300)
            wide = max(wide, float((_fr(out.hi[k]) - hi) + (lo - _fr(out.lo[k]))) / scale)
        rows.append(Row("IA", "random", f"{name} encloses the exact result ({n} intervals)", (float(bad), float(bad)),
                        (0.0, 0.0), "==", "exact", bad == 0, -float(bad), 0.0, ""))
        rows.append(holds("IA", "random", f"{name} is at most {widen:g} ulp wider", wide, widen * 2.0 ** -52, tol=0.0))

    check_field("a + b", a, b, a + b, lambda u, v: u + v, 4)
    check_field("a - b", a, b, a - b, lambda u, v: u - v, 4)
    check_field("a * b", a, b, a * b, lambda u, v: u * v, 4)
    check_field("a / b", a, b, a / b, lambda u, v: u / v, 4)
    check_field("b * c (both >= 0)", b, pos, b * pos, lambda u, v: u * v, 4)  # the fast path for non-negative factors
    # integer powers, sums, log and exp: enclosures of the exact values (arb at 256 bits for log and exp)
    bad = {"b^5": 0, "sum": 0, "log": 0, "exp": 0}
    p5, lg, ex = b ** 5, b.log(), a.exp()
    old = arb_module()[1].prec
    arb_module()[1].prec = 256
    try:
        for k in range(n):
            bl, bh = ends(b, k)
            if not (_fr(p5.lo[k]) <= bl ** 5 and bh ** 5 <= _fr(p5.hi[k])):
                bad["b^5"] += 1
            lo_ok = arb(float(lg.lo[k])) <= arb(float(b.lo[k])).log()
            hi_ok = arb(float(b.hi[k])).log() <= arb(float(lg.hi[k]))
            bad["log"] += not (lo_ok and hi_ok)
            lo_ok = arb(float(ex.lo[k])) <= arb(float(a.lo[k])).exp()
            hi_ok = arb(float(a.hi[k])).exp() <= arb(float(ex.hi[k]))
            bad["exp"] += not (lo_ok and hi_ok)
        for m in (*range(2, 60), n):
            s = a[:m].sum()
            lo = sum((_fr(v) for v in a.lo[:m]), Fraction(0))
            hi = sum((_fr(v) for v in a.hi[:m]), Fraction(0))
            bad["sum"] += not (_fr(s.lo) <= lo and hi <= _fr(s.hi))
    finally:
        arb_module()[1].prec = old
    for name, count in bad.items():
        rows.append(Row("IA", "random", f"{name} encloses the exact result", (float(count), float(count)), (0.0, 0.0),
                        "==", "certified" if name in ("log", "exp") else "exact", count == 0, -float(count), 0.0, ""))
    return rows
