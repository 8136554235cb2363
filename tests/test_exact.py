"""The exact output law p_N (Eq. 3) and the proof-chain quantities (C1, C2; Lemmas B.2-B.3): cases by hand, limits and
refusals.  The property tests against enumeration are the proof check, mdmt/proofs/test_exact_law.py."""

import numpy as np
import pytest

from mdmt.constructions.languages import random_ngram
from mdmt.constructions.reverse.chain import chain_quantities
from mdmt.constructions.reverse.denoisers import TemperedOracle, UniformMixture
from mdmt.constructions.reverse.exact import exact_metrics, exact_output_law
from mdmt.constructions.reverse.schedules import expected_nfe, p_distinct
from mdmt.constructions.reverse.tables import build_tables
from mdmt.proofs.reference import law_by_assignments


def test_ser_of_the_law_everywhere_counts_only_the_support():
    """interval:2 at L = 4, N = 1: every position in one step; an interval's two bits agree with probability 1/2.

    By hand: two intervals, each consistent with probability 1/2, so SER = 1 - 1/4 = 3/4.
    """
    from mdmt import language_from_spec

    lang = language_from_spec("interval:2")
    for support_only in (True, False):
        res = exact_output_law(lang, 4, [1.0], support_only=support_only)
        assert res.ser == pytest.approx(0.75, abs=1e-12)


def test_oracle_kl_and_ser_decrease_to_zero_with_more_steps():
    lang = random_ngram(3, 2, 2.0, 0.05, seed=1)
    kls, sers = [], []
    for N in [1, 2, 4, 16, 64, 512]:
        res = exact_output_law(lang, 6, np.full(N, 1 / N))
        kls.append(res.kl_nats)
        sers.append(res.ser)
    assert np.all(np.diff(kls) < 0) and np.all(np.diff(sers) < 0)
    assert kls[-1] < 0.01 and sers[-1] < 0.01 and sers[0] > 0.1


def test_exact_metrics_collects_the_law_and_the_chain():
    lang = random_ngram(2, 3, 2.0, 0.05, seed=2)
    pi = np.array([0.3, 0.3, 0.4])
    m = exact_metrics(lang, 4, pi)
    res = exact_output_law(lang, 4, pi)
    assert m["kl_nats"] == res.kl_nats and m["ser"] == res.ser
    assert m["p_distinct"] == p_distinct(pi, 4) and m["expected_nfe"] == expected_nfe(pi, 4)
    assert m["expected_assignment_kl"] == pytest.approx(m["expected_total_correlation"] + m["expected_learning_term"])
    assert m["expected_learning_term"] == pytest.approx(0.0, abs=1e-12)  # the oracle has no learning error
    assert m["kl_bits_per_token"] == pytest.approx(m["kl_nats"] / (4 * np.log(2)))  # Eq. 4


def test_exact_rejects_too_large_instances():
    with pytest.raises(ValueError, match="partial assignments"):
        build_tables(random_ngram(2, 8, 2.0, 0.0, seed=0), 12)


def test_the_refusal_at_large_L_names_the_interval_hmms_closed_form(capsys):
    """On the interval HMM the oracle SER has a closed form at any L (oracle_ser, mdmt curve ser): the refusal names
    it (library and command line); on another language, and at an L that is not a multiple of l, only Monte Carlo."""
    from mdmt.cli import main
    from mdmt.constructions.languages.interval import interval_hmm, interval_length_of
    from mdmt.constructions.reverse.exact import exact_metrics, exact_output_law

    pi = np.full(4, 0.25)
    names = r"closed form at any L: oracle_ser\(5, 20, pi\).*mdmt curve ser -l 5 -L 20"
    for call in (exact_output_law, exact_metrics):
        with pytest.raises(ValueError, match=names):
            call(interval_hmm(5), 20, pi)
    with pytest.raises(ValueError, match="partial assignments") as exc:
        exact_metrics(random_ngram(2, 16, 2.0, 0.0, seed=0), 20, pi)
    assert "oracle_ser" not in str(exc.value) and "Monte Carlo sampler" in str(exc.value)
    assert main(["exact", "--language", "interval:5", "-L", "20", "-N", "4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "oracle_ser(5, 20, pi)" in err and "mdmt curve ser -l 5 -L 20" in err
    assert [interval_length_of(interval_hmm(l)) for l in (2, 3, 5)] == [2, 3, 5]
    assert interval_length_of(random_ngram(2, 4, 2.0, 0.0, seed=0)) is None


def test_learning_term_is_a_kl_divergence_and_zero_for_the_oracle():
    lang = random_ngram(2, 3, 2.0, 0.05, seed=2)
    pi = np.array([0.3, 0.3, 0.4])
    assert chain_quantities(lang, 4, pi)["expected_learning_term"] == 0.0  # exactly: rows compared with themselves
    for den in (UniformMixture(lang, 0.2), TemperedOracle(lang, 0.5)):
        ch = chain_quantities(lang, 4, pi, den)
        assert ch["expected_learning_term"] > 0
        # the two sides of C2 in expectation come from different formulas and agree
        assert ch["expected_assignment_kl"] == pytest.approx(ch["expected_total_correlation"] + ch["expected_learning_term"],
                                                             rel=1e-12)


def test_one_thread_and_several_give_bitwise_equal_steps():
    """A step's chunks run on one thread or on mdmt's kernel threads (mdmt.runtime.parallel); the chunks are summed
    in their order, so the results are equal bit for bit."""
    from mdmt.constructions.reverse.exact import _CHUNKS, _chunks, _step
    from mdmt.constructions.reverse.tables import denoiser_table
    from mdmt.runtime.parallel import run_ranges, set_threads

    lang = random_ngram(2, 3, 2.0, 0.05, seed=3)
    t = build_tables(lang, 4)
    D = denoiser_table(t, None)
    f = np.random.default_rng(0).random(t.n_states)
    live = t.q_ext > 0
    a = _step(f, t.digits, D, 0.4, t.V, t.strides, live, _CHUNKS)
    outs = np.zeros((_CHUNKS, t.n_states))
    old = set_threads(3)
    try:
        run_ranges(_chunks, _CHUNKS, f, t.digits, D, 0.4, t.V, t.strides, live, _CHUNKS, outs, parts=_CHUNKS)
    finally:
        set_threads(old)
    b = np.zeros(t.n_states)
    for c in range(_CHUNKS):
        b += outs[c]
    assert np.array_equal(a, b) and a.sum() > 0


def test_references_equal_brute_force():
    """bounds/verification/references.py's p_N (a mixture over reveal orders) against the enumeration of mdmt/proofs/reference.py."""
    from mdmt.bounds.verification.references import ChainEval, Partitions, Reference, partition_probabilities

    lang = random_ngram(2, 2, 2.0, 0.05, seed=5)
    L, pi = 3, np.array([0.5, 0.25, 0.25])
    den = UniformMixture(lang, 0.3)
    q, pN, ekl = law_by_assignments(lang, L, pi, den)
    ref = Reference(lang, L)
    from mdmt.constructions.reverse.tables import support_table

    ch = ChainEval(ref, ref.table(support_table(build_tables(lang, L), den)), Partitions(L, L))
    e, p = ch.expected(partition_probabilities(ch.parts, pi, ref.B))
    np.testing.assert_allclose(p.mid, pN[q > 0], rtol=1e-12)
    assert float(e.mid) == pytest.approx(ekl, rel=1e-11)


def test_exact_refuses_before_building_huge_integers():
    import time

    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"about 10\^954242509 partial assignments"):
        build_tables(random_ngram(2, 8, 2.0, 0.0, seed=0), 10 ** 9)
    assert time.perf_counter() - t0 < 1
