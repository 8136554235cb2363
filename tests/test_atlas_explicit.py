"""The atlas on explicit laws: exact KL and SER of a task from the (V+1)^L tables (small L), against values
derived by hand."""

import json
import math

from mdmt.cli import main


def test_atlas_on_shuffle_four_in_two_steps(capsys):
    # uniform process, sizes (2, 2) at random positions, oracle marginals: the first two positions are independent
    # uniform items (distinct w.p. 3/4), the last two independent uniform among the 2 items left (distinct w.p.
    # 1/2): every permutation gets p(x) = (1/4)^2 (1/2)^2 = 1/64 whatever the positions, so
    # SER = 1 - 24/64 = 5/8 and KL = log((1/24) / (1/64)) = log(8/3); accuracy 3/8 = 2^(-KL in bits)
    assert main(["atlas", "--language", "task:shuffle:n=4", "-L", "4", "--steps", "2", "--processes", "uniform",
                 "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert math.isclose(row["ser"], 5 / 8, abs_tol=1e-12)
    assert math.isclose(row["kl"], math.log(8 / 3), rel_tol=1e-12)
    assert math.isclose(2 ** (-row["kl"] / math.log(2)), 1 - row["ser"], rel_tol=1e-12)


def test_atlas_refuses_another_length(capsys):
    assert main(["atlas", "--language", "task:shuffle:n=4", "-L", "5", "--steps", "4"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "L = 5: this explicit law holds sequences of length 4 only" in err


# ----------------------------------------------------------------------------- the atlas at the scale of the support

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mdmt.bounds.studies.atlas import atlas  # noqa: E402
from mdmt.constructions.languages import ExplicitLanguage  # noqa: E402
from mdmt.constructions.languages.spec import language_from_spec  # noqa: E402
from mdmt.constructions.reverse.chain import chain_quantities  # noqa: E402
from mdmt.constructions.reverse.information import information_profile  # noqa: E402
from mdmt.constructions.reverse.policies import IID, policy_list  # noqa: E402
from mdmt.constructions.reverse.schedules import reveal_probabilities  # noqa: E402
from mdmt.constructions.reverse.tables import build_tables  # noqa: E402

ALL = ("iid,uniform,random:tc,random:dtc,confidence,margin,entropy,threshold:0.9,entropy-sum:1,stride,blocks,"
       "optimal,bisect,verified:2,remdm:cap")


def _random_law():
    """A law with non-uniform float weights on 14 random words of length 4 over 3 tokens (no symmetry)."""
    rng = np.random.default_rng(5)
    X = np.unique(rng.integers(0, 3, size=(20, 4)), axis=0)[:14]
    w = rng.random(len(X)) + 0.1
    return ExplicitLanguage(X, w / w.sum(), n_symbols=3)


SMALL = [("task:shuffle:n=3", 2, ALL), ("task:parity:n=4", 2, ALL), ("task:dyck:L=6", 3, ALL),
         ("random", 2, ALL + ",threshold:0.3,threshold:0.5,entropy-sum:0.5")]


@pytest.mark.parametrize("spec, N, processes", SMALL, ids=[s[0] for s in SMALL])
def test_support_path_equals_the_tables_column_by_column(spec, N, processes):
    # the (V+1)^L tables (policy_exact, chain, information) and the support (support_exact, support_forced, the
    # profile of the support) are separate code paths: every column of every row must agree
    lang = _random_law() if spec == "random" else language_from_spec(spec)
    L = lang.length
    tab = atlas(lang, L, N, processes, method="tables")
    sup = atlas(lang, L, N, processes)  # auto: the support for an explicit law
    for key in ("entropy", "total_correlation", "dual_total_correlation", "sum_mutual_information"):
        assert sup["instance"][key] == pytest.approx(tab["instance"][key], rel=1e-10, abs=1e-12)
    np.testing.assert_allclose(sup["instance"]["profile"], tab["instance"]["profile"], rtol=1e-10, atol=1e-12)
    assert [r["process"] for r in sup["rows"]] == [r["process"] for r in tab["rows"]]
    for rt, rs in zip(tab["rows"], sup["rows"]):
        assert set(rs) == set(rt), rt["process"]
        for key, vt in rt.items():
            vs = rs[key]
            if isinstance(vt, float) and vt is not None:
                assert vs == pytest.approx(vt, rel=1e-9, abs=1e-11), (rt["process"], key, vt, vs)
            else:
                assert vs == vt, (rt["process"], key, vt, vs)


def test_support_chains_for_every_rule_against_the_tables():
    # the teacher-forced chain on the support for the rules the atlas takes from the profile (uniform positions),
    # and E[NFE] of i.i.d. steps (closed form) through the off-support continuation of the process's chain
    from mdmt.bounds.studies.atlas import iid_positions_kl
    from mdmt.constructions.reverse.policy_exact import teacher_forced
    from mdmt.constructions.reverse.support_forced import support_expected_nfe, support_teacher_forced

    lang = _random_law()
    L = lang.length
    tables = build_tables(lang, L)
    for pol in policy_list("iid,uniform,random:tc", 2):

        want = teacher_forced(lang, L, pol, tables=tables)["total_correlation"]
        assert support_teacher_forced(lang, pol)["total_correlation"] == pytest.approx(want, rel=1e-10)
    iid = IID(reveal_probabilities("cosine", 3))
    assert support_expected_nfe(lang, iid) == pytest.approx(iid.expected_nfe(L), rel=1e-12)
    f = information_profile(tables)
    want = chain_quantities(lang, L, iid.pi, tables=tables)["expected_total_correlation"]
    assert iid_positions_kl(f, iid.pi) == pytest.approx(want, rel=1e-10)


def test_expected_calls_off_the_support_by_hand():
    # task:copy, V = 2, n = 5 (00000 or 11111), entropy-sum with gamma = 0.8 nats: at the start every entropy is
    # log 2 = 0.693, so the step reveals two positions (0.693 <= 0.8 < 1.386).  They agree w.p. 1/2: the three
    # left have entropy 0 and one more call reveals them (2 calls).  They differ w.p. 1/2: off the support the
    # marginals are uniform, the next step reveals two (log 2 each) and the last one more (3 calls).  E[NFE] = 5/2.
    lang = language_from_spec("task:copy:n=5,V=2")
    for method in ("support", "tables"):
        row = atlas(lang, 5, 2, "entropy-sum:0.8", method=method)["rows"][0]
        assert row["expected_nfe"] == pytest.approx(2.5, rel=1e-12), method
        assert row["ser"] == pytest.approx(0.5, rel=1e-12)  # the first two differ w.p. 1/2


def test_parallelbench_shuffle_closed_forms_beyond_the_tables(capsys):
    # task:shuffle:n=8 (L = 8, V = 8): 9^8 partial assignments exceed the tables; the atlas runs on the 40,320
    # permutations.  With u positions revealed the n - u items left are a uniform permutation, so a step revealing
    # s of them has TC = s log(n - u) - log((n - u)! / (n - u - s)!) (ParallelBench, Kang et al. Eq. (4): L_T is
    # the sum over the steps), and the oracle's accuracy is prod_j (n-u_j)! / ((n-u_j-s_j)! (n-u_j)^s_j) (Eq. (5)).
    # Sizes 2,2,2,2: L_T = log(8/7 * 6/5 * 4/3 * 2/1) = log(128/35), accuracy 35/128 = 1 - SER = 2^(-KL bits).
    assert main(["atlas", "--language", "task:shuffle:n=8", "-L", "8", "--steps", "4", "--processes",
                 "uniform,blocks,stride,confidence,entropy-sum:1,threshold:0.9", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    rows = {r["process"]: r for r in res["rows"]}
    for name in ("uniform", "blocks", "stride", "confidence"):  # every rule reveals 2 uniformly random / fixed items
        r = rows[name]
        assert r["pb_lower"] == pytest.approx(math.log(128 / 35), rel=1e-12), name
        assert r["total_correlation"] == pytest.approx(math.log(128 / 35), rel=1e-12), name
        assert r["kl"] == pytest.approx(math.log(128 / 35), rel=1e-12), name
        assert 1 - r["ser"] == pytest.approx(35 / 128, rel=1e-12), name
        assert r["expected_nfe"] == 4
    assert rows["uniform"]["profile_kl"] == pytest.approx(math.log(128 / 35), rel=1e-12)
    # entropy-sum:1: one item per step while log m > 1 (m >= 3 items left), the last two together (log 2 + log 2
    # > 1): 7 calls, the last pair correct w.p. 1/2.  threshold:0.9: one item per step, exact in 8 calls.
    assert rows["entropy-sum:1"]["expected_nfe"] == pytest.approx(7, rel=1e-12)
    assert rows["entropy-sum:1"]["kl"] == pytest.approx(math.log(2), rel=1e-12)
    assert rows["entropy-sum:1"]["total_correlation"] == pytest.approx(math.log(2), rel=1e-12)
    assert rows["threshold:0.9"]["expected_nfe"] == pytest.approx(8, rel=1e-12)
    assert rows["threshold:0.9"]["kl"] == pytest.approx(0, abs=1e-12)
    inst = res["instance"]
    assert inst["entropy"] == pytest.approx(math.log(math.factorial(8)), rel=1e-12)
    assert inst["total_correlation"] == pytest.approx(8 * math.log(8) - math.log(math.factorial(8)), rel=1e-12)


def test_shuffle_fixed_partition_equals_eq4_and_eq5():
    # shuffle n = 5, blocks and stride over N = 2 steps are the fixed partitions 3 + 2: Eq. (4) gives
    # L_T = 3 log 5 - log(5*4*3) + 2 log 2 - log 2 = log(25/6), Eq. (5) accuracy 60/125 * 2/4 = 6/25
    lang = language_from_spec("task:shuffle:n=5")
    rows = [r for method in ("support", "tables") for r in atlas(lang, 5, 2, "blocks,stride,uniform", method=method)["rows"]]
    for r in rows:
        assert r["pb_lower"] == pytest.approx(math.log(25 / 6), rel=1e-12), r["process"]
        assert r["kl"] == pytest.approx(math.log(25 / 6), rel=1e-12), r["process"]
        assert 1 - r["ser"] == pytest.approx(6 / 25, rel=1e-12), r["process"]


def test_sizes_that_do_not_fit_are_refused_in_one_line(capsys, monkeypatch):
    # and at once: the information profile (2^16 subsets of positions here, seconds of work) is computed when a row
    # first needs it, after that row's law has passed its size checks
    def profile(language):
        raise AssertionError("the information profile was computed before the law's size checks")

    monkeypatch.setattr("mdmt.bounds.studies.atlas_support.information_profile_explicit", profile)
    monkeypatch.setenv("MDMT_MAX_MEMORY", "4M")
    assert main(["atlas", "--language", "task:latin:4", "-L", "16", "--steps", "4", "--processes", "confidence"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("mdmt atlas: error:") and "2^16 revealed sets per sequence" in err


def test_python_api_takes_explicit_laws_and_refuses_a_denoiser_on_the_support():
    lang = language_from_spec("task:parity:n=4")
    res = atlas(lang, 4, 2, "uniform,confidence")
    assert res["instance"]["ngram_order"] is None and res["rows"][0]["chain_bound"] is None
    with pytest.raises(ValueError, match="needs an explicit law"):
        atlas(language_from_spec("interval:2"), 4, 2, "uniform", method="support")


def test_mixture_chain_equals_the_support_law_plan_by_plan():
    # i.i.d. steps and random step sizes as one chain over (size state, revealed set) against support_law, which
    # runs the rates subset by subset and the random sizes one step-size vector at a time
    from mdmt.constructions.reverse.support_exact import support_law
    from mdmt.constructions.reverse.support_mixtures import mixture_law

    for lang in (_random_law(), language_from_spec("task:dyck:L=6"), language_from_spec("task:shuffle:n=4")):
        for N in (1, 2, 3):
            for pol in policy_list("iid,iid:cosine,random:tc,random:dtc,random:uniform", N):
                want = support_law(lang, pol, rationals=False)
                got = mixture_law(lang, pol)
                np.testing.assert_allclose(got.p, want.p, rtol=1e-12, atol=1e-15, err_msg=f"{lang} {pol.spec} N={N}")
                assert got.kl_nats == pytest.approx(want.kl_nats, rel=1e-12)


def test_the_size_chain_gives_the_expected_calls_of_every_step_size_law():
    # E[NFE] from the size chain against the sum over every step-size vector (RandomSizes.compositions) and the
    # closed form of i.i.d. steps
    from mdmt.constructions.reverse.support_mixtures import size_chain_nfe

    for L in (2, 5, 9):
        for N in (1, 2, 3, 6):
            for pol in policy_list("iid,iid:cosine,random:tc,random:dtc,random:uniform", N):
                assert size_chain_nfe(pol, L) == pytest.approx(pol.expected_nfe(L), rel=1e-12, abs=1e-12), (L, N, pol)


def test_a_sweep_takes_each_explicit_law_at_its_own_length(capsys):
    # every language at every length, except an explicit law: its own length only (it must be asked for)
    assert main(["atlas", "--language", "task:shuffle:n=3", "--language", "task:parity:n=4", "-L", "3,4",
                 "--steps", "2", "--processes", "uniform", "--json"]) == 0
    got = [(r["instance"]["language"], r["instance"]["length"]) for r in json.loads(capsys.readouterr().out)["instances"]]
    assert got == [("task:shuffle:n=3", 3), ("task:parity:n=4", 4)]
    assert main(["atlas", "--language", "task:shuffle:n=3", "-L", "4,5", "--steps", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "L = 4, 5: this explicit law holds sequences of length 3 only" in err


def test_latin_squares_of_order_four_at_l16_by_hand():
    # task:latin:4 (576 squares, L = 16, V = 4; 5^16 partial assignments, far beyond the tables).  blocks over
    # N = 4 steps reveals row after row: row 1 has 4 free cells (1/4 each), row 2 three options per cell, row 3
    # two, row 4 one, so every square gets p = 4^-4 3^-4 2^-4 = 1/576^2: KL = log 576 and accuracy 576/576^2 = 1/576;
    # the oracle's KL equals the ParallelBench partition value E sum TC.  stride reveals column after column: the same
    # by transposition.  Instance: H = log 576, every cell uniform (sum_i H(X_i) = 16 log 4) and fixed by the others
    # (DTC = H, sum_i I = 16 log 4); Li & Cai's expression with s_max = 4 is 3/16 sum_i I = 3 log 4 < log 576: it fails
    # for these orders, whose positions are not uniformly random (docs/atlas.md).
    res = atlas(language_from_spec("task:latin:4"), 16, 4, "blocks,stride")
    inst = res["instance"]
    assert inst["entropy"] == pytest.approx(math.log(576), rel=1e-12)
    assert inst["total_correlation"] == pytest.approx(16 * math.log(4) - math.log(576), rel=1e-12)
    assert inst["dual_total_correlation"] == pytest.approx(math.log(576), rel=1e-12)
    assert inst["sum_mutual_information"] == pytest.approx(16 * math.log(4), rel=1e-12)
    for r in res["rows"]:
        assert r["kl"] == pytest.approx(math.log(576), rel=1e-12), r["process"]
        assert 1 - r["ser"] == pytest.approx(1 / 576, rel=1e-9), r["process"]
        assert r["pb_lower"] == pytest.approx(math.log(576), rel=1e-12) and r["pb_holds"]
        assert r["li_cai"] == pytest.approx(3 * math.log(4), rel=1e-12) and r["li_cai_holds"] is False
        assert r["expected_nfe"] == 4 and r["chain_bound"] is None


def test_a_length_beyond_the_support_chains_is_refused_in_one_line():
    X = np.array([[0] * 30, [1] * 30])
    with pytest.raises(ValueError, match=r"2\^L revealed sets per sequence; L = 30 exceeds mdmt's limit of 24"):
        atlas(ExplicitLanguage(X, [0.5, 0.5], n_symbols=2), 30, 3, "uniform")


def test_the_profile_counts_the_python_work_of_each_subset(monkeypatch):
    # 2 sequences of length 16: 2^16 subsets, each a few numpy calls whatever M; with a work limit of 10^7 the
    # profile is refused (about 6.6e7 operations), naming the size, instead of counting only M 2^L = 1.3e5
    from mdmt.constructions.reverse.information_explicit import information_profile_explicit
    from mdmt.runtime.resources import ResourceError

    monkeypatch.setenv("MDMT_MAX_WORK", "1e7")
    with pytest.raises(ResourceError, match=r"2 sequences x 2\^16 subsets of positions"):
        information_profile_explicit(ExplicitLanguage(np.array([[0] * 16, [1] * 16]), [0.5, 0.5], n_symbols=2))
