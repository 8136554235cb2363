"""Mutation score of mdmt's checks: how many seeded mistakes `pytest` and `mdmt verify --quick` catch.

A catalogue of semantic mutants -- the kind of mistake a derivation or an implementation can hide: a
wrong constant, an off-by-one, a dropped factor, a loosened or tightened bound, a wrong sign -- over the
bound formulas (bounds/theorems/statements.py), the dependency counts (bounds/theorems/dependencies.py), the schedules
(constructions/reverse/schedules.py), the exact law (exact.py, tables.py), the proof-chain quantities
(chain.py), the interval closed forms and the curves (M01-M49); and over the layer beyond the paper
(M50-M70): the atlas's bounds and closed forms (bounds/studies/atlas.py), the reveal policies and their exact
chain (policies.py, policy_exact.py), the information quantities, Theorem 4.4 at eps > 0,
certification (bounds/theorems/certify.py), interval arithmetic (bounds/theorems/intervals.py), the Student-t
intervals of the estimators and the segment sampler; and over the refutation layer and verify's own checks
(M71-M80): claims in ball arithmetic, the claim quantities, certificates' rounding, the search's families
and shards, the certifier's monotonicity closure, the n-gram posterior, and verify's interval and
random-size rows.  Each mutant replaces one piece of source text
(it must occur exactly once), then

* ``mdmt verify --quick`` runs: the mutant is *killed by verify* when it exits non-zero (a violated or
  undecided row, or a crash);
* the whole test suite runs (``pytest -x -q``, slow tests skipped; the mutant's own test files
  first -- ``Mutant.tests`` -- the rest only if those pass): *killed by pytest* when it fails;

and the file is restored.  Mutants that cannot change any result (equivalent mutants) are marked in
the catalogue with the reason, and count in neither score.

numba's compiled kernels are cached in a temporary folder (``NUMBA_CACHE_DIR``) removed at the end.  mdmt
keys that cache on a hash of its whole source (mdmt/runtime/numba_cache.py), so each mutant -- also one
of a function that kernels in other files call -- is compiled fresh, never meets the machine code of the
unmutated source, and leaves nothing in the user's cache.

    python benchmarks/mutation.py                      # every mutant; about an hour on 2 cores
    python benchmarks/mutation.py --only M01,M19       # some
    python benchmarks/mutation.py --only M71 --first-only   # only the mutant's own tests, not the suite after them
    python benchmarks/mutation.py --no-pytest          # verify only
    python benchmarks/mutation.py --out docs/results/mutation.md
    python benchmarks/mutation.py --from-log run1.txt run2.txt --out docs/results/mutation.md   # runs in parts

Not part of CI.  It edits the working tree (and restores it, also on Ctrl-C); run it on a clean tree.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Mutant:
    id: str
    path: str
    old: str
    new: str
    what: str
    equivalent: str = ""  # why no result can change, for an equivalent mutant
    tests: tuple = ()  # the test files to run first (default: FIRST_TESTS)


S = "bounds/theorems/statements.py"
DEP = "bounds/theorems/dependencies.py"
SCH = "constructions/reverse/schedules.py"
EX = "constructions/reverse/exact.py"
CH = "constructions/reverse/chain.py"
ICF = "constructions/reverse/interval_closed_forms.py"
IB = "bounds/theorems/interval_bounds.py"
TAB = "constructions/reverse/tables.py"
CUR = "bounds/studies/curves.py"
AT = "bounds/studies/atlas.py"
POL = "constructions/reverse/policies.py"
POL_RULES = "constructions/reverse/policy_rules.py"  # the scores, step counts and the cut of policies.py
PEX = "constructions/reverse/policy_exact.py"
INF = "constructions/reverse/information.py"
CERT = "bounds/theorems/certify.py"
IVS = "bounds/theorems/intervals.py"
CONF = "constructions/reverse/confidence.py"
SAMK = "constructions/reverse/sampler_kernels.py"
T_ATLAS = ("tests/test_atlas.py", "tests/test_policies.py", "tests/test_information.py")
T_POL = ("tests/test_policies.py", "tests/test_interval_policies.py", "tests/test_atlas.py")
T_CERT = ("tests/test_statements.py", "tests/test_intervals.py", "tests/test_verify.py")
CLA = "bounds/refutation/claim_arithmetic.py"
QTY = "bounds/refutation/quantities.py"
REF = "bounds/refutation/refute.py"
FAM = "bounds/refutation/families.py"
CTF = "bounds/refutation/certificate.py"
CB = "bounds/verification/checks_beyond.py"
NGI = "constructions/languages/ngram_inference.py"

MUTANTS = [
    # --- bound formulas (the statements)
    Mutant("M01", S, "    explicit=sp.exp(-2 * eps_l) / 2,", "    explicit=sp.exp(-2 * eps_l),",
           "p_e loses its factor 1/2 (Theorem 4.4's mismatch probability)"),
    Mutant("M02", S, "    explicit=sp.exp(-2 * eps_l) / 2,", "    explicit=sp.exp(-eps_l) / 2,",
           "p_e with e^(-eps) for e^(-2 eps)"),
    Mutant("M03", S, "    explicit=MISMATCH.explicit / (l * sp.log(2)),", "    explicit=MISMATCH.explicit / sp.log(2),",
           "C_0 without its 1/l"),
    Mutant("M04", S, "    explicit=1 - (1 - MISMATCH.explicit * (1 - P_l)) ** (L / l),",
           "    explicit=1 - (1 - MISMATCH.explicit * (1 - P_l)) ** L,", "Theorem 4.4 bound with exponent L for L/l"),
    Mutant("M05", S, "    stable=-expm1((L / l) * log1p(-MISMATCH.explicit * (1 - P_l))),",
           "    stable=-expm1((L / l) * log1p(-MISMATCH.explicit * (1 - P_l) ** 2)),",
           "the evaluated form of the Theorem 4.4 bound differs from the stated one"),
    Mutant("M06", S, "    explicit=1 - P * sp.exp(-L * eps_l),", "    explicit=1 - P * sp.exp(-2 * L * eps_l),",
           "Theorem 4.3 loosened (e^(-2 L eps))"),
    Mutant("M07", S, "    explicit=1 - P * sp.exp(-L * eps_l),", "    explicit=1 - P * sp.exp(-eps_l),",
           "Theorem 4.3 tightened (e^(-eps) for e^(-L eps))"),
    Mutant("M08", S, "    explicit=(d - 1) * sp.log(V),", "    explicit=(d - 1) * sp.log(V) / 2,",
           "Lemma A.1 (the C3 bound) halved"),
    Mutant("M09", S, "    explicit=(d - 1) * sp.log(V),", "    explicit=d * sp.log(V),", "Lemma A.1 loosened to d log|V|"),
    Mutant("M10", S, "    explicit=D_j * sp.log(V),", "    explicit=(D_j - 1) * sp.log(V),", "Lemma B.8 with D_j - 1"),
    Mutant("M11", S, "    explicit=eps_l + sp.log(V) * ED / L,", "    explicit=eps_l / L + sp.log(V) * ED / L,",
           "the chain bound's learning term without its factor L"),
    Mutant("M12", S, "    explicit=L * pi_j ** 2 * (n - 1) / a_j ** (n - 1),", "    explicit=L * pi_j ** 2 * (n - 1) / a_j ** n,",
           "Lemma B.11 with a_j^n"),
    Mutant("M13", S, "    explicit=L * pi_j ** 2 * (n - 1) / a_j ** (n - 1),", "    explicit=L * pi_j ** 2 * (n - 2) / a_j ** (n - 1),",
           "Lemma B.11 with n - 2"),
    Mutant("M14", S, "    explicit=1 + (n - 1) / (3 * eps ** n),", "    explicit=1 + (n - 1) / (4 * eps ** n),",
           "a wrong constant in the Theorem 4.2 step count"),
    Mutant("M15", S, "    explicit=4 * eps * L,", "    explicit=3 * eps * L,", "Theorem 4.2's 4 eps L tightened to 3 eps L"),
    Mutant("M16", S, "    explicit=eps_l + 4 * eps * sp.log(V),", "    explicit=eps_l + 2 * eps * sp.log(V),",
           "Theorem 4.2's target with 2 eps log|V|"),
    Mutant("M17", S, "    explicit=L * (L - 1) / 2 * _s2,", "    explicit=L * (L - 1) / 4 * _s2,", "Lemma C.1's union bound halved"),
    Mutant("M18", S, "    return int(sp.ceiling(bound))", "    return int(sp.floor(bound))",
           "theorem_42_steps rounds down"),
    # --- dependency counts
    Mutant("M19", DEP, "            if run >= n - 1 and run > 0:", "            if run >= n and run > 0:",
           "off-by-one in the separator run length (the scan)"),
    Mutant("M20", DEP, "            if new[i] and not has_new:", "            if new[i]:", "every new position opens a segment"),
    Mutant("M21", DEP, "                    hh = 0 if (r >= cap and r > 0) else h", "                    hh = 0 if (r > cap and r > 0) else h",
           "off-by-one in the separator run length (the expectation's scan)"),
    Mutant("M22", DEP, "    return L * pi - segments", "    return (L - 1) * pi - segments", "E[D_j] with L - 1 positions"),
    Mutant("M23", DEP, "            hh = 0 if r >= cap else h", "            hh = 0 if r > cap else h",
           "off-by-one in the transfer matrix (the long-sequence path)"),
    Mutant("M24", DEP, "E_D=expected_dependencies(n, L, pi), L=L)", "E_D=expected_dependencies(n, L, pi), L=L + 1)",
           "chain_bound divides by L + 1"),
    # --- schedules
    Mutant("M25", SCH, "        pi = np.concatenate([[self.first], np.full(N - 1, (1.0 - self.first) / (N - 1))])",
           "        pi = np.concatenate([[self.first], np.full(N - 1, (1.0 - self.first) / N)])",
           "warm start: the later steps share 1 - first over N instead of N - 1 (renormalised)"),
    Mutant("M26", SCH, "    remaining = 1.0 - before", "    remaining = 1.0 - before - 0.5 * pi", "reveal rates with a wrong remainder"),
    Mutant("M27", SCH, "    return np.minimum(np.concatenate([[0.0], np.cumsum(pi)[:-1]]), 1.0)",
           "    return np.minimum(np.cumsum(pi), 1.0)", "revealed-before probability a_j includes step j"),
    Mutant("M28", SCH, "        return float(math.lgamma(L + 1) + log_e[L])", "        return float(math.lgamma(L) + log_e[L])",
           "P_distinct with (L-1)! for L!"),
    Mutant("M29", SCH, "        return float(-np.expm1(L * np.log1p(-pi)).sum())", "        return float(-np.expm1((L - 1) * np.log1p(-pi)).sum())",
           "E[NFE] with L - 1 positions"),
    Mutant("M30", SCH, "        a = np.cos(0.5 * np.pi * np.asarray(t, dtype=np.float64))",
           "        a = np.cos(0.5 * np.pi * np.asarray(t, dtype=np.float64) ** 1.1)", "cosine schedule with t^1.1"),
    # --- the exact law
    Mutant("M31", EX, "    stay = 1.0 - r", "    stay = 1.0 - r * r", "wrong stay probability in the reverse chain"),
    Mutant("M32", EX, "        if pi[j] == 0.0:", "        if pi[j] < 0.3:", "steps with small pi_j skipped"),
    Mutant("M33", EX, "        return float(self.p[self.q > 0].sum())", "        return float(self.p.sum())",
           "SER from the mass everywhere, not on the support"),
    Mutant("M34", EX, "np.sum(self.q[m] * (np.log(self.q[m]) - np.log(self.p[m])))",
           "np.sum(self.p[m] * (np.log(self.q[m]) - np.log(self.p[m])))", "KL weighted by p instead of q"),
    Mutant("M35", EX, "    live = tables.q_ext > 0 if support_only else np.ones(tables.n_states, dtype=bool)",
           "    live = tables.q_ext >= 0 if support_only else np.ones(tables.n_states, dtype=bool)",
           "the chain also continues states outside the support",
           equivalent="a state with q(x_U) = 0 can never complete into the support, so p_N on the support, SER and "
                      "KL are unchanged (only slower)"),
    Mutant("M36", TAB, "                cond = np.where(masked > 0, child / np.where(masked > 0, masked, 1.0), 1.0 / V)",
           "                cond = np.where(masked > 0, (child / np.where(masked > 0, masked, 1.0)) ** 0.9, 1.0 / V)",
           "a tempered oracle (unnormalised q^0.9) in place of the oracle"),
    # --- the proof-chain quantities
    Mutant("M37", CH, "    tc = second - third", "    tc = second - 0.5 * third", "total correlation with half the joint entropy"),
    Mutant("M38", CH, "        post = qc / q[states][:, None]  # q(v | x_U): the same division as the oracle's table",
           "        post = qc / (1.01 * q[states][:, None])", "learning term against a mis-normalised posterior"),
    Mutant("M39", CH, "        h_joint = HW[uB | int(bit[S].sum())] - HW[uB]", "        h_joint = HW[uB | int(bit[S].sum())]",
           "per-assignment TC without conditioning on the revealed tokens"),
    Mutant("M40", CH, "    wsingle = _powers(a, k) * _powers(np.maximum(1.0 - a, 0.0), L - 1 - k) * pi[:, None]",
           "    wsingle = _powers(a, k) * _powers(np.maximum(1.0 - a, 0.0), L - k) * pi[:, None]",
           "weight of (U, i) with L - |U| masked positions instead of L - 1 - |U|"),
    Mutant("M41", CH, "    Hcsum = (u[:L] + 1) * Hsum[1:] - (L - u[:L]) * Hsum[:L]", "    Hcsum = (u[:L] + 1) * Hsum[1:] - (L - u[:L] - 1) * Hsum[:L]",
           "sum of conditional entropies with an off-by-one"),
    # --- the interval closed forms
    Mutant("M42", ICF, "    log_w = -(n * (n - 1) / 2) * math.log(2) - np.array([math.lgamma(k + 1) for k in n])",
           "    log_w = -(n * (n - 1)) * math.log(2) - np.array([math.lgamma(k + 1) for k in n])",
           "rho counting every same-step pair twice"),
    Mutant("M43", ICF, "    return float(-math.expm1((L // l) * log_rho(l, pi)))", "    return float(-math.expm1((L // l - 1) * log_rho(l, pi)))",
           "oracle SER with one interval less"),
    Mutant("M44", IB, "P_distinct_l=p_distinct(pi, l), L=L, l=l)", "P_distinct_l=p_distinct(pi, L), L=L, l=l)",
           "Theorem 4.4 bound with P_distinct of the whole sequence"),
    Mutant("M45", ICF, "            m >>= 1", "            m >>= 2", "repeated squaring skips powers (equal steps)"),
    Mutant("M46", IB, "    return MISMATCH.evaluate(epsilon_learning=learning_error_value(eps))",
           "    return MISMATCH.evaluate(epsilon_learning=2 * learning_error_value(eps))", "mismatch_probability at 2 eps"),
    # --- the curves
    Mutant("M47", CUR, "        lo, hi = (mid, hi) if ser(mid) > 0.5 else (lo, mid)", "        lo, hi = (mid, hi) if ser(mid) >= 0.5 else (lo, mid)",
           "critical C with >= 1/2 (not equivalent: at l = 2, L = 2, N = 1 the oracle SER is exactly 1/2)"),
    Mutant("M48", CUR, "    ok = lambda N: ter_chain_bound(n, L, N, V, eps, eps_learning, schedule) <= target + 1e-15  # noqa: E731",
           "    ok = lambda N: ter_chain_bound(n, L, N, V, eps, eps_learning, schedule) <= 0.9 * target  # noqa: E731",
           "minimal N against 90 % of the target"),
    Mutant("M49", CUR, "    return float(math.exp(np.sum(np.log1p(-k / N))))", "    return float(math.exp(np.sum(np.log1p(-k / (N + 1)))))",
           "P_distinct of the linear schedule beyond the array with N + 1"),
    # --- beyond the paper: the atlas's bounds and closed forms
    Mutant("M50", AT, "        return 2.0 * tc * h / (N - 1 + h) if h > 0 else 0.0", "        return tc * h / (N - 1 + h) if h > 0 else 0.0",
           "the random-size TC-law rate without its factor 2", tests=T_ATLAS),
    Mutant("M51", AT, "(2 ** math.ceil(math.log2(int(max(sizes)))) - 1)", "(2 ** math.floor(math.log2(int(max(sizes)))) - 1)",
           "Li & Cai's constant rounded down (floor for ceil)", tests=T_ATLAS),
    Mutant("M52", AT, "        total += s * (f[u + 1] - f[u]) - (f[u + s] - f[u])",
           "        total += s * (f[u + 1] - f[u]) - (f[u + s - 1] - f[u])", "profile closed form of fixed sizes off by one",
           tests=T_ATLAS),
    Mutant("M53", AT, "            er += max(0.0, 1.0 - acc) ** (N - 1)", "            er += max(0.0, 1.0 - acc) ** N",
           "profile closed form of random sizes with N boundaries for N - 1", tests=T_ATLAS),
    # --- the policies
    Mutant("M54", POL_RULES, "        return top[..., -1] - top[..., -2]", "        return top[..., -1] - P.min(axis=-1)",
           "margin score: top-1 minus the smallest probability (not the second largest)", tests=T_POL),
    Mutant("M55", POL, "        return i % N + 1", "        return (L - 1 - i) % N + 1", "stride order counted from the right end",
           tests=T_POL),
    Mutant("M56", POL, '"tc": 1.0 / (L - u)', '"tc": 1.0 / (L - u + 1)', "random sizes: tc boundary law 1/(L - u + 1)",
           tests=T_POL),
    Mutant("M57", POL_RULES, "    thr = vals[m - c]  # the c-th largest score", "    thr = vals[m - c - 1]  # the c-th largest score",
           "top-k cut at the (c+1)-th largest score", tests=T_POL,
           equivalent="the positions above the (c+1)-th largest score are the c largest, revealed for certain either "
                      "way, unless the c-th and (c+1)-th scores differ by less than TIE_TOL = 1e-9 without being equal "
                      "(no instance has such scores); no law changes, only step_cut's split into sure and tied "
                      "positions, which a contract test of step_cut checks"),
    Mutant("M58", POL_RULES, "        h.sort()\n        cum = 0.0", "        cum = 0.0",
           "entropy-sum: positions taken in their order, not by increasing entropy", tests=T_POL),
    Mutant("M59", POL_RULES, "        return c if c > 0 else 1", "        return c if c > 0 else m",
           "threshold: reveal every masked position when none is confident (not the most confident one)", tests=T_POL),
    Mutant("M60", PEX, "    acc[0] += mw\n", "    acc[0] += mw * n_sub\n", "E[NFE] counts revealed positions, not evaluations",
           tests=T_POL),
    Mutant("M61", PEX, "                acc[1] += mw * r * (math.log(r) - nq)", "                acc[1] += mw * r * (math.log(r) + nq)",
           "teacher-forced total correlation with a sign error", tests=T_ATLAS),
    # --- information quantities
    Mutant("M62", INF, "        a, b = max(0, i - k), min(L - 1, i + k)", "        a, b = max(0, i - k), min(L - 1, i + k - 1)",
           "windowed H(X_i | X_-i) with a context one token short on the right", tests=T_ATLAS),
    Mutant("M63", INF, "    return np.array([HW[sizes == u].mean() for u in range(L + 1)])",
           "    return np.array([HW[sizes == u].max() for u in range(L + 1)])",
           "information profile: the largest subset entropy for the average", tests=T_ATLAS),
    # --- interval Theorem 4.4 at eps > 0
    Mutant("M64", IB, "    return THEOREM_44_BOUND.evaluate(epsilon_learning=learning_error_value(eps), P_distinct_l=",
           "    return THEOREM_44_BOUND.evaluate(epsilon_learning=learning_error_value(eps) / (l - 1), P_distinct_l=",
           "Theorem 4.4's bound with eps divided by l - 1", tests=("tests/test_statements.py", "tests/test_interval.py")),
    # --- certification and interval arithmetic
    Mutant("M65", CERT, "            if s is None or s * sign < 0:", "            if s is None:",
           "certification by monotonicity from an end whose sign is wrong", tests=T_CERT),
    Mutant("M66", IVS, "        return Iv(_down(self.lo + o.lo), _up(self.hi + o.hi))", "        return Iv(self.lo + o.lo, self.hi + o.hi)",
           "interval addition without outward rounding", tests=T_CERT),
    Mutant("M67", IVS, "        return Iv(_down(s_lo - _up(e_lo)), _up(s_hi + _up(e_hi)))", "        return Iv(s_lo, s_hi)",
           "interval sum without its rounding-error widening", tests=T_CERT),
    # --- estimators and the segment sampler
    Mutant("M68", CONF, "float(x.std(ddof=1)) / math.sqrt(len(x))", "float(x.std(ddof=1)) / len(x)",
           "Student-t interval with n for sqrt(n)", tests=("tests/test_reliability.py", "tests/test_information.py",
                                                           "tests/test_policies.py")),
    Mutant("M69", SAMK, "                    if seg[k, 4] == 1 and not score_mode and transform != 2:",
           "                    if seg[k, 4] <= 2 and not score_mode and transform != 2:",
           "segment sampler: segments with two reveals not re-checked for q(x_U) = 0",
           tests=("tests/test_sampler.py", "tests/test_ddpm_cache.py", "tests/test_inference.py")),
    Mutant("M70", POL_RULES, "    return ns, nt, c - ns\n", "    return ns, min(nt, c - ns), c - ns\n",
           "top-k ties broken by position (the leftmost tied) instead of uniformly at random", tests=T_POL),
    # --- the refutation layer (claims, claim quantities, certificates, families, shards) and verify's own checks
    Mutant("M71", CLA, "            return x.log() / arb(2).log()", "            return x.log() / arb(2)",
           "claims: log2 in ball arithmetic divided by 2 instead of log 2", tests=(
               "tests/test_certificate.py::test_li_and_cai_certified_where_s_max_is_not_a_power_of_two",)),
    Mutant("M72", QTY, 'tables=tables)["max"])', 'tables=tables)["mean"])',
           "claim quantity eps in its mean form instead of the max form of Section 4.1",
           tests=("tests/test_quantities.py::test_eps_is_the_learning_error_in_its_max_form_by_hand",)),
    Mutant("M73", REF, "    chosen = min(violating)[1] if violating", "    chosen = violating[0][1] if violating",
           "sharded refute reports the first shard's violation, not the smallest",
           tests=("tests/test_refute.py::test_a_sharded_search_reports_the_smallest_violation_of_any_shard",)),
    Mutant("M74", FAM, "c = np.where(rows > 0, 1 + np.round(", "c = np.where(rows > 0, np.round(",
           "Algorithm 1/2 draws coded without the 1 + (each row's smallest entry becomes a zero)",
           tests=("tests/test_refute.py::test_algorithm_draws_are_coded_by_hand_keeping_each_rows_smallest_entry",)),
    Mutant("M75", CTF, "    R = np.round(P * scale)", "    R = np.floor(P * scale)",
           "dyadic rounding of a certificate's tables by floor instead of to nearest",
           tests=("tests/test_certificate.py::test_dyadic_rows_round_to_nearest_by_hand",)),
    Mutant("M76", CB, "if not (_fr(out.lo[k]) <= lo and hi <= _fr(out.hi[k])):", "if not (_fr(out.lo[k]) <= lo):",
           "verify's IA family checks only the lower end of a field operation's enclosure (a check of verify itself: "
           "verify cannot catch it on a correct library)",
           tests=("tests/test_verify.py::test_the_interval_family_checks_both_ends_of_every_enclosure",)),
    Mutant("M77", CB, 'random-size rate", r["assignment_kl"],', 'random-size rate", r["kl"],',
           "verify's random-size row compares KL instead of E log q/p_traj with the rate (a check of verify itself)",
           tests=("tests/test_verify.py::test_the_families_beyond_the_paper_catch_seeded_mistakes",)),
    Mutant("M78", CERT, '(b, "right", -sign)', '(b, "right", sign)',
           "monotonicity closure at the right end asks f' >= 0 instead of f' <= 0 (accepts x - 1/100 >= 0 on [0, 1])",
           tests=("tests/test_statements.py::test_certify_refuses_false_claims",)),
    Mutant("M79", NGI, "inv, V ** (k - 1 - j), V)", "inv, V ** j, V)",
           "n-gram posterior: the first window's context digits read little-endian",
           tests=("tests/test_inference.py::test_ngram_tables_path_equals_the_hmm_path_and_brute_force",)),
    Mutant("M80", CB, 'bad["log"] += not (lo_ok and hi_ok)', 'bad["log"] += not lo_ok',
           "verify's IA family checks only the lower end of log's enclosure (a check of verify itself)",
           tests=("tests/test_verify.py::test_the_interval_family_checks_both_ends_of_every_enclosure",)),
]


def run(cmd, timeout, env=None) -> tuple[int, float]:
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout,
                           env=env)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        rc = -1  # a hang counts as caught
    return rc, time.perf_counter() - t0


def apply(m: Mutant) -> str:
    path = ROOT / m.path
    text = path.read_text()
    count = text.count(m.old)
    if count != 1:
        raise SystemExit(f"{m.id}: the text to mutate occurs {count} times in {m.path}")
    path.write_text(text.replace(m.old, m.new))
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated mutant ids")
    ap.add_argument("--no-pytest", action="store_true", help="run mdmt verify --quick only")
    ap.add_argument("--first-only", action="store_true",
                    help="run only each mutant's own tests (Mutant.tests), not the rest of the suite after them")
    ap.add_argument("--out", help="write the markdown report here")
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="seconds for each verify or pytest run of a mutant; a run that takes longer counts as "
                         "catching it (a hang is noticed) (default 600)")
    ap.add_argument("--from-log", nargs="+", metavar="LOG",
                    help="no runs: build the report from the printed lines of earlier runs (e.g. one stopped and "
                         "continued with --only)")
    args = ap.parse_args(argv)
    if args.from_log:
        results = from_logs(args.from_log)
        report = render(results, None, args)
        print(report)
        if args.out:
            Path(args.out).write_text(report)
        return 0
    chosen = [m for m in MUTANTS if not args.only or m.id in args.only.split(",")]
    files = sorted({m.path for m in chosen})
    dirty = subprocess.run(["git", "status", "--porcelain", "--", *files], cwd=ROOT, capture_output=True, text=True).stdout
    if dirty.strip():
        raise SystemExit(f"uncommitted changes in the files to mutate:\n{dirty}")
    exe = Path(sys.executable).parent
    mdmt = str(exe / "mdmt") if (exe / "mdmt").exists() else "mdmt"
    verify_cmd = [mdmt, "verify", "--quick"]
    # the whole suite in two runs: the tests of the mutated modules first, the rest only if those pass
    pytest = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
    def stop(signum, frame):  # SIGTERM too restores the mutated file (the finally below)
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    results = []
    t_start = time.perf_counter()
    numba_cache = tempfile.mkdtemp(prefix="mdmt-mutation-numba-")
    env = {**os.environ, "NUMBA_CACHE_DIR": numba_cache}
    try:
        run_mutants(chosen, verify_cmd, None if args.no_pytest else pytest, args.timeout, env, results,
                    args.first_only)
    finally:
        shutil.rmtree(numba_cache, ignore_errors=True)
    total = time.perf_counter() - t_start
    report = render(results, total, args)
    print(report)
    if args.out:
        Path(args.out).write_text(report)
    return 0


FIRST_TESTS = ("tests/test_statements.py", "tests/test_verify.py", "tests/test_bounds.py", "tests/test_dependencies.py",
               "tests/test_exact.py", "tests/test_interval_closed_forms.py", "tests/test_schedules.py")


def run_mutants(chosen, verify_cmd, pytest, timeout, env, results, first_only: bool = False) -> None:
    """Apply, run and restore each mutant in turn, appending its result to ``results`` and printing its line.

    The whole suite runs in two parts: the mutant's own test files first (``Mutant.tests``, by default
    ``FIRST_TESTS``; files or single tests), the rest only if those pass (unless ``first_only``)."""
    for m in chosen:
        first = list(m.tests or FIRST_TESTS)
        whole = [f for f in first if "::" not in f]  # the files run whole first; a file named by tests runs again
        pytest_cmds = []
        if pytest is not None:
            pytest_cmds.append(pytest + first)
            if not first_only:
                pytest_cmds.append(pytest + ["tests"] + [f"--ignore={f}" for f in whole])
        original = apply(m)
        try:
            rc_v, t_v = run(verify_cmd, timeout, env)
            rc_p, t_p = None, 0.0
            for cmd in pytest_cmds:
                rc_p, t = run(cmd, timeout, env)
                t_p += t
                if rc_p != 0:
                    break
        finally:
            (ROOT / m.path).write_text(original)
        res = {"mutant": m, "verify": rc_v != 0, "pytest": None if rc_p is None else rc_p != 0, "t_verify": t_v,
               "t_pytest": t_p}
        results.append(res)
        print(f"{m.id} {m.path}: verify {'killed' if res['verify'] else 'SURVIVED'} ({t_v:.0f} s)"
              + ("" if rc_p is None else f", pytest {'killed' if res['pytest'] else 'SURVIVED'} ({t_p:.0f} s)")
              + (f"  [equivalent: {m.equivalent}]" if m.equivalent else ""), flush=True)


LINE = re.compile(r"^(M\d+) \S+: verify (killed|SURVIVED) \((\d+) s\)(?:, pytest (killed|SURVIVED) \((\d+) s\))?")


def from_logs(paths) -> list[dict]:
    """Results from the lines ``main`` prints, in catalogue order; a later log's line for a mutant wins."""
    found = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            m = LINE.match(line)
            if m:
                found[m.group(1)] = {"verify": m.group(2) == "killed", "pytest": None if m.group(4) is None else
                                     m.group(4) == "killed", "t_verify": float(m.group(3)),
                                     "t_pytest": float(m.group(5) or 0)}
    missing = [m.id for m in MUTANTS if m.id not in found]
    if missing:
        raise SystemExit(f"no result for {', '.join(missing)} in {', '.join(paths)}")
    return [{"mutant": m, **found[m.id]} for m in MUTANTS]


def render(results, seconds, args) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    real = [r for r in results if not r["mutant"].equivalent]
    kv = sum(r["verify"] for r in real)
    kp = sum(bool(r["pytest"]) for r in real)
    lines = [
        "# Mutation score of mdmt's checks",
        "",
        (f"Command: `python benchmarks/mutation.py{' --only ' + args.only if args.only else ''}"
         f"{' --no-pytest' if args.no_pytest else ''} --timeout {args.timeout:g}` at commit {commit}, "
         f"{datetime.date.today()}, on {platform.machine()} ({os.cpu_count()} cores, shared with other jobs), python "
         f"{platform.python_version()}; {seconds / 60:.0f} min wall." if seconds is not None else
         f"Report built at commit {commit} with `python benchmarks/mutation.py --from-log "
         f"{' '.join(Path(p).name for p in args.from_log)}` from the printed lines of the runs named below."),
        "",
        f"**{len(results)} mutants, {len(results) - len(real)} equivalent.  Of the {len(real)} others, `mdmt verify --quick` "
        f"kills {kv} ({100 * kv / max(1, len(real)):.1f} %)"
        + ("" if args.no_pytest else f" and `pytest` kills {kp} ({100 * kp / max(1, len(real)):.1f} %)") + ".**",
        "",
        "| id | file | mutant | verify | pytest |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in results:
        m = r["mutant"]
        v = "killed" if r["verify"] else "**survived**"
        p = "-" if r["pytest"] is None else ("killed" if r["pytest"] else "**survived**")
        what = m.what + (f" — *equivalent: {m.equivalent}*" if m.equivalent else "")
        lines.append(f"| {m.id} | `{m.path}` | {what} | {v} | {p} |")
    missed_v = [r["mutant"].id for r in real if not r["verify"]]
    missed_p = [r["mutant"].id for r in real if r["pytest"] is False]
    lines += ["", "Non-equivalent mutants that `mdmt verify --quick` misses: " + (", ".join(missed_v) or "none") + "; "
              "that `pytest` misses: " + (", ".join(missed_p) or "none") + "."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
