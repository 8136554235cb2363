"""`mdmt refute` proves: Shannon-type claims by the elemental inequalities (an LP whose certificate is checked exactly),
process claims by a small base of lemmas; and the audit's refute findings, each with the case that showed it."""

import itertools
import json
import math
import re
import time
from fractions import Fraction

import numpy as np
import pytest

from mdmt.bounds.refutation.refute import search
from mdmt.cli import main

HAN = "DTC <= (L - 1) * TC"


def _run(capsys, *argv):
    rc = main(["refute", *argv, "--no-progress"])
    out, err = capsys.readouterr()
    return rc, out, err


# ----------------------------------------------------------------------------- an independent reading of a certificate

def _subset(text: str) -> int:
    return sum(1 << (int(x) - 1) for x in re.findall(r"X(\d+)", text))


def _elemental_form(text: str) -> dict:
    """'I(X1; X2 | X3,X4) >= 0' or 'H(X2 | X1,X3) >= 0' as {bitmask: coefficient}, read here from the text alone."""
    m = re.fullmatch(r"I\((X\d+); (X\d+)(?: \| ([X\d,]+))?\) >= 0", text)
    out: dict = {}

    def add(mask, c):
        if mask:
            out[mask] = out.get(mask, 0) + c

    if m:
        a, b, k = _subset(m.group(1)), _subset(m.group(2)), _subset(m.group(3) or "")
        for mask, c in ((a | k, 1), (b | k, 1), (a | b | k, -1), (k, -1)):
            add(mask, c)
        return out
    m = re.fullmatch(r"H\((X\d+)(?: \| ([X\d,]+))?\) >= 0", text)
    assert m, text
    a, k = _subset(m.group(1)), _subset(m.group(2) or "")
    add(a | k, 1)
    add(k, -1)
    return out


def _han_form(L: int) -> dict:
    """(L - 1) TC - DTC over the joint entropies, from the definitions: TC = sum_i H(X_i) - H(X),
    DTC = H(X) - sum_i H(X_i | X_-i) = sum_i H(X_-i) - (L - 1) H(X)."""
    full = (1 << L) - 1
    out = {1 << i: Fraction(L - 1) for i in range(L)}
    out[full] = Fraction(-(L - 1)) - Fraction(-(L - 1))  # -(L - 1) H(X) from TC, +(L - 1) H(X) from -DTC
    for i in range(L):
        out[full ^ (1 << i)] = out.get(full ^ (1 << i), 0) - 1
    return {k: v for k, v in out.items() if v}


def test_dtc_below_l_minus_1_tc_is_proved_at_each_length_with_a_certificate_checked_here(capsys):
    """The issue's Done-when: proved (Shannon-type) at L = 3, 4, 5, each certificate re-added here, from the printed
    inequalities and multipliers alone, to (L - 1) TC - DTC coefficient by coefficient."""
    rc, text, err = _run(capsys, "--claim", HAN, "--lengths", "3,4,5", "--json")
    assert rc == 0, err
    r = json.loads(text)
    assert r["verdict"] == "proved (Shannon-type)" and r["search"]["evaluations"] == 0 and "instance" not in r
    assert [c["L"] for c in r["proof"]["classes"]] == [3, 4, 5]
    assert "not for every L" in r["proof"]["meaning"]
    for c in r["proof"]["classes"]:
        assert c["verdict"] == "proved (Shannon-type)" and "fmpq" in c["verified"]
        total: dict = {}
        for step in c["steps"]:
            y = Fraction(step["multiplier"])
            assert y > 0
            for mask, coef in _elemental_form(step["inequality"]).items():
                total[mask] = total.get(mask, 0) + y * coef
        assert {k: v for k, v in total.items() if v} == _han_form(c["L"]), c["L"]
        assert Fraction(c["slack"]) == 0
    rc, text, err = _run(capsys, "--claim", HAN, "--lengths", "3,4,5")
    assert rc == 0, err
    for L in (3, 4, 5):
        assert f"proof at L = {L}: proved (Shannon-type)" in text
    assert "verdict: proved (Shannon-type): for every joint distribution" in text and "1 x  I(X1; X2) >= 0" in text


def test_a_false_shannon_type_claim_is_not_proved_and_is_refuted_with_a_certificate():
    """DTC <= TC fails for X3 = X1 xor X2 (TC = log 2, DTC = 2 log 2): the LP finds no proof, the search a certified
    counterexample, as before."""
    res = search("DTC <= TC", "ngram:n=3,V=2", (3,), (1,), ("iid",), budget=12, seed=0)
    assert res.proof["classes"][0]["result"].reason.startswith("not Shannon-type")
    assert res.verdict == "certified violation" and res.certificate["margin"][1] < 0


def _entropies(p: np.ndarray) -> dict:
    """H(X_A) in nats of a joint law p over V^L, for every non-empty A (bitmask)."""
    L = p.ndim
    out = {}
    for mask in range(1, 1 << L):
        keep = tuple(i for i in range(L) if mask >> i & 1)
        m = p.sum(axis=tuple(i for i in range(L) if i not in keep)).ravel()
        m = m[m > 0]
        out[mask] = float(-(m * np.log(m)).sum())
    return out


@pytest.mark.parametrize("claim", [HAN, "TC <= (L - 1) * DTC", "H <= sum_MI + H", "TC + DTC >= 0", "DTC <= H"])
def test_what_is_proved_holds_on_random_joint_laws(claim):
    """Soundness, independently of the LP: every claim proved at L = 3, 4 holds on 40 random joint laws (Dirichlet
    weights, some sparse, on 2 and 3 values per variable), evaluated here from the law's own subset entropies."""
    from mdmt.bounds.refutation.claims import parse_claim
    from mdmt.bounds.refutation.rules import prove_claim
    from mdmt.bounds.refutation.shannon import Proof

    parsed = parse_claim(claim)
    rng = np.random.default_rng(0)
    for L in (3, 4):
        assert isinstance(prove_claim(parsed, L), Proof), (claim, L)
        for k in range(40):
            V = 2 + k % 2
            p = rng.dirichlet(np.full(V ** L, 0.3 if k % 3 else 1.0)).reshape((V,) * L)
            h = _entropies(p)
            full = (1 << L) - 1
            TC = sum(h[1 << i] for i in range(L)) - h[full]
            DTC = sum(h[full ^ (1 << i)] for i in range(L)) - (L - 1) * h[full]
            values = {"L": L, "H": h[full], "TC": TC, "DTC": DTC, "sum_MI": TC + DTC}
            assert parsed.margin(values) >= -1e-12, (claim, L, k)


def test_a_tampered_certificate_is_refused_by_the_exact_check():
    """The LP only proposes: shift one multiplier by 1/7, or drop one step, and the exact check refuses the proof."""
    from mdmt.bounds.refutation.shannon import add_forms, elemental, entropic_form, prove, verify

    L = 4
    target = add_forms({k: 3 * v for k, v in entropic_form("TC", L).items()}, entropic_form("DTC", L), -1)
    proof = prove(target, L)
    rows = {e.text: (1, e.text, "", dict(e.coeffs), 0) for e in elemental(L)}
    combination = [(y, rows[text]) for y, text, _ in proof.steps]
    assert verify(target, 0, False, combination) is not None
    shifted = [(y + Fraction(1, 7), row) if k == 0 else (y, row) for k, (y, row) in enumerate(combination)]
    assert verify(target, 0, False, shifted) is None
    assert verify(target, 0, False, combination[1:]) is None
    assert verify(target, 0, False, [(-y, row) for y, row in combination]) is None


def test_the_lp_size_is_counted_and_refused_beyond_the_limit_naming_it():
    """L + C(L, 2) 2^(L-2) elemental inequalities (by hand: 9 at L = 3, 28 at L = 4, 85 at L = 5; 11,530 at L = 10)."""
    from mdmt.bounds.refutation.rules import prove_claim
    from mdmt.bounds.refutation.shannon import MAX_LP_LENGTH, ProofSizeError, elemental, elemental_count, prove

    assert [elemental_count(L) for L in (3, 4, 5)] == [9, 28, 85] and elemental_count(10) == 11530
    assert [len(elemental(L)) for L in (3, 4, 5)] == [9, 28, 85]
    assert MAX_LP_LENGTH == 9
    with pytest.raises(ProofSizeError, match="L = 10: the LP over 1,023 joint entropies and 11,530 elemental"):
        prove({1: 1}, 10)
    r = prove_claim(HAN, 10)
    assert r.reason.startswith("not attempted: L = 10") and "11,530" in r.reason


def test_an_lp_proof_at_l_5_takes_well_under_5_seconds():
    from mdmt.bounds.refutation.rules import prove_claim
    from mdmt.bounds.refutation.shannon import Proof

    prove_claim(HAN, 3)  # imports
    t0 = time.perf_counter()
    proof = prove_claim("TC <= (L - 1) * DTC", 5)
    assert isinstance(proof, Proof) and time.perf_counter() - t0 < 5


@pytest.mark.parametrize("claim, process, proved, lemmas", [
    ("KL <= TC", "confidence", True, {"trajectory-dpi", "chain-rule"}),
    ("KL <= TC", "threshold:0.5", True, {"trajectory-dpi", "chain-rule"}),
    ("KL <= L * eps + log(V) * E_D", "iid", True, {"trajectory-dpi", "lemma-B.8"}),
    ("KL <= L * eps + log(V) * E_D", "margin", True, {"trajectory-dpi", "lemma-B.8"}),
    ("SER <= 1 - exp(-KL)", "uniform", True, {"ser-kl"}),
    ("SER <= 1 - exp(-TC)", "confidence", True, {"ser-kl", "trajectory-dpi", "chain-rule"}),
    ("E_TC <= KL", "stride", True, {"fixed-partition"}),
    ("E_TC <= KL", "iid", False, None),  # false for random partitions (ParallelBench, docs/refute.md)
    ("KL <= TC / N", "uniform", False, None),
    ("KL <= L * eps + log(V) * E_D / 2", "iid", False, None),  # a seeded wrong constant
    ("KL <= (2 ** ceil(log2(s_max)) - 1) / L * sum_MI", "uniform", False, None),
])
def test_the_lemma_base_proves_what_follows_and_nothing_else(claim, process, proved, lemmas):
    from mdmt.bounds.refutation.rules import prove_claim
    from mdmt.bounds.refutation.shannon import Proof

    r = prove_claim(claim, 4, N=2, process=process, V=2, n=2, ngram=True)
    assert isinstance(r, Proof) == proved, getattr(r, "reason", None)
    if proved:
        assert r.kind == "lemmas" and {lemma for _, _, lemma in r.steps if lemma} == lemmas
    else:
        assert r.reason.startswith(("not covered by the rules", "not linear"))


def test_lemma_b8_needs_an_ngram_and_fixed_partition_needs_a_fixed_order():
    """And a quantity the instances do not have is never proved about (P_distinct >= 0 of an n-gram)."""
    from mdmt.bounds.refutation.rules import prove_claim
    from mdmt.bounds.refutation.shannon import Proof

    assert isinstance(prove_claim("P_distinct >= 0", 3, N=2, process="iid", V=4, l=3), Proof)
    assert prove_claim("P_distinct >= 0", 3, N=2, process="iid", V=2, ngram=True).reason.endswith("interval HMM only")
    assert "n-gram languages only" in prove_claim("E_D >= 0", 3, N=2, process="iid", V=2).reason

    assert not isinstance(prove_claim("KL <= log(V) * E_D", 4, N=2, process="iid", V=2, ngram=False), Proof)
    for process in ("uniform", "confidence", "random:tc"):
        assert not isinstance(prove_claim("E_TC <= KL", 4, N=2, process=process, V=2), Proof), process


def test_every_fact_the_lemma_base_uses_holds_on_mdmts_own_evaluations():
    """Each fact the prover may use (rules._facts: its coefficients and constant, as the LP reads them), evaluated on
    the exact quantities of a 3-gram at L = 4, N = 2 for every kind of process, with the joint entropies of the
    language's own subsets: KL <= E_TC, E_TC <= TC, E_TC <= log(V) E_D, H(X_i) <= log V, KL = E_TC for the fixed
    orders, ... (to rounding)."""
    import sympy as sp

    from mdmt.bounds.refutation.quantities import instance_quantities
    from mdmt.bounds.refutation.rules import _facts
    from mdmt.constructions.languages import random_ngram
    from mdmt.constructions.reverse.chain import subset_entropies
    from mdmt.constructions.reverse.tables import build_tables

    lang = random_ngram(3, 2, 0.5, 0.0, seed=1)
    HW = subset_entropies(build_tables(lang, 4))
    names = {"KL", "E_TC", "E_D", "SER", "P_distinct"}
    used = set()
    for process in ("iid", "uniform", "random:tc", "confidence", "margin", "entropy", "threshold:0.5",
                    "entropy-sum:0.5", "stride", "blocks"):
        q = instance_quantities(lang, 4, process, 2)
        q.setdefault("P_distinct", 0.5)  # (i.i.d. steps on the interval HMM only: any probability)
        for fact in _facts(4, process, 2, True, names):
            value = float(sp.sympify(fact.constant)) + sum(
                float(sp.sympify(c)) * (HW[v] if isinstance(v, int) else q[v]) for v, c in fact.coeffs.items())
            assert value >= -1e-12, (process, fact.text)
            used.add(fact.lemma)
    assert used == {"kl-nonnegative", "trajectory-dpi", "fixed-partition", "chain-rule", "lemma-B.8", "tc-nonnegative",
                    "alphabet", "ser-range"}  # ser-kl is not linear: the lemma-base test proves with it


def test_a_claim_proved_for_some_processes_only_is_searched_and_reports_each():
    res = search("E_TC <= KL", "ngram:n=2,V=2", (2, 3), (2,), ("stride", "iid"), budget=40, seed=0)
    verdicts = {(c["L"], c["process"]): type(c["result"]).__name__ for c in res.proof["classes"]}
    assert verdicts == {(2, "stride"): "Proof", (3, "stride"): "Proof", (2, "iid"): "NotProved",
                        (3, "iid"): "NotProved"}
    assert res.verdict == "certified violation" and res.candidate.process == "iid"
    assert [c["verdict"] for c in res.to_dict()["proof"]["classes"]].count("proved (lemmas)") == 2


def test_a_proved_claim_still_searches_with_no_proof(capsys):
    rc, text, err = _run(capsys, "--claim", HAN, "--lengths", "3", "--steps", "1", "--budget", "6", "--no-proof")
    assert rc == 0, err
    assert "verdict: no violation found" in text and "proof at" not in text


# ----------------------------------------------------------------------------- the audit's refute findings

THEOREM_4_4 = "SER >= 1 - (1 - exp(-2 * eps) / 2 * (1 - P_distinct)) ** (L / l)"


@pytest.mark.parametrize("family, claim, lengths, steps", [
    ("interval:3", THEOREM_4_4, "3", "2"),  # failed: instance.json lacked the interval length (no l, no P_distinct)
    ("ngram:n=2,V=2", "KL <= 0.5 * TC", "3", "1"),
    ("hmm:S=2,V=2", "KL <= 0.5 * TC", "3", "1"),
])
def test_the_printed_instance_check_re_establishes_the_verdict_for_every_family_kind(tmp_path, capsys, family, claim,
                                                                                     lengths, steps):
    out = tmp_path / "found"
    rc, text, err = _run(capsys, "--claim", claim, "--family", family, "--lengths", lengths, "--steps", steps,
                         "--budget", "30", "--out", str(out), "--json", "--no-proof")
    assert rc == 0, err
    report = json.loads(text)
    assert report["verdict"] == "certified violation", report["verdict"]
    import shlex

    argv = shlex.split(report["reproduce"]["instance"])[2:]  # mdmt refute ...
    rc, again, err = _run(capsys, *argv, "--json", "--no-proof")
    assert rc == 0, err
    rerun = json.loads(again)
    assert rerun["verdict"] == "certified violation"
    assert rerun["certificate"]["margin"] == report["certificate"]["margin"]


def test_the_shrink_phase_has_budget_for_a_violation_found_at_the_end():
    """Seed 6 with 5 evaluations found its first violation of N <= 2 at L = 4, N = 3 on its last evaluation, and
    reported it unshrunk; the same language violates at L = 3, N = 3 (N <= 2 reads N alone)."""
    res = search("N <= 2", "ngram:n=2,V=2", (3, 4), (1, 2, 3), ("uniform",), budget=5, seed=6, certify=False,
                 prove=False)
    assert res.candidate.violates and (res.candidate.L, res.candidate.N) == (3, 3)
    assert res.phases["shrink"] >= 1


def test_among_the_smallest_counterexamples_the_larger_violation_is_kept():
    """Same L, N and positive entries: the margin -0.69 is kept over -4.6e-8, whatever the tables' sum of -log p
    (which preferred the tiny violation on rows with 2^-11 entries)."""
    from mdmt.bounds.refutation.refute_result import Candidate
    from mdmt.constructions.languages.ngram import NGram

    spiky = NGram(2, np.array([1 - 2.0 ** -11, 2.0 ** -11]), np.array([[1 - 2.0 ** -11, 2.0 ** -11], [0.5, 0.5]]))
    flat = NGram(2, np.array([0.5, 0.5]), np.array([[0.5, 0.5], [0.5, 0.5]]))
    tiny = Candidate(flat, 3, 1, "iid", -4.6e-8)
    large = Candidate(spiky, 3, 1, "iid", -0.69)
    assert min([tiny, large], key=Candidate.size) is large


def test_the_report_says_that_n_does_not_limit_threshold_and_entropy_sum(capsys):
    rc, text, err = _run(capsys, "--claim", "KL <= 100", "--family", "ngram:n=2,V=2", "--lengths", "3", "--steps",
                         "2", "--processes", "threshold:0.5,iid", "--budget", "3", "--no-proof")
    assert rc == 0, err
    assert "note: N does not limit threshold:0.5" in text
    rc, text, err = _run(capsys, "--claim", "KL <= 100", "--family", "ngram:n=2,V=2", "--lengths", "3", "--steps",
                         "2", "--processes", "iid", "--budget", "3", "--no-proof")
    assert "note:" not in text


def test_a_time_budget_is_divided_among_shards_run_in_this_process():
    """--shards 2 --jobs 1 with 1 s: the search takes about 1 s, not 2 (each shard has half)."""
    t0 = time.perf_counter()
    res = search("KL <= TC", "ngram:n=2,V=2", (3,), (2,), ("iid",), budget="1s", seed=0, shards=2, jobs=1,
                 prove=False)
    assert time.perf_counter() - t0 < 1.9 and res.evaluations >= 2


def test_multipliers_that_rounding_misses_are_solved_exactly_on_the_lp_support(monkeypatch):
    """With the rounding made useless (denominators up to 1), the multipliers 1/3 of (DTC <= 2 TC) / 3 at L = 3 come
    from the exact solve on the LP's support (fmpq_mat): I(X1; X2) + I(X1; X3) + I(X2; X3), each times 1/3."""
    from mdmt.bounds.refutation import shannon
    from mdmt.bounds.refutation.rules import prove_claim

    monkeypatch.setattr(shannon, "LIMIT_DENOMINATOR", 1)
    proof = prove_claim("DTC / 3 <= (L - 1) * TC / 3", 3)
    assert isinstance(proof, shannon.Proof) and {y for y, _, _ in proof.steps} == {Fraction(1, 3)}


def test_the_verify_rows_of_proofs_hold_and_catch_a_checker_that_accepts_anything(monkeypatch):
    """Family RF of mdmt verify: the hand-written certificate of DTC <= 2 TC at L = 3 is accepted, one with a halved
    multiplier refused, the elemental inequalities counted; an exact check that accepts everything fails a row."""
    from mdmt.bounds.refutation import shannon
    from mdmt.bounds.verification.checks_refute import _proof_rows

    rows = _proof_rows()
    assert len(rows) == 3 and all(r.holds for r in rows)
    monkeypatch.setattr(shannon, "verify", lambda *args: shannon.Proof(3, {}, 0, False, [], 0, "fmpq"))
    assert [r.holds for r in _proof_rows()] == [True, False, True]
