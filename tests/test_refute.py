"""The counterexample search: it rediscovers documented failures and seeded mistakes, certifies them, and never
refutes a true bound."""

import math
import os

import pytest

from mdmt.bounds.refutation.claims import ClaimError
from mdmt.bounds.refutation.refute import NUMERIC_TOL, family_of, parse_family, search

LI_CAI = "KL <= (2 ** ceil(log2(s_max)) - 1) / L * sum_MI"
CHAIN = "KL <= L * eps + log(V) * E_D"  # Lemma B.9 in total form: a theorem


def test_it_rediscovers_li_and_cai_under_top_k_confidence_and_certifies_it():
    """docs/atlas.md: Li & Cai's bound assumes uniformly random positions; top-k confidence breaks it.
    Budget stated: 40 exact evaluations on binary 3-grams at L = 5, N = 3."""
    res = search(LI_CAI, "ngram:n=3,V=2", (5,), (3,), ("confidence",), budget=40, seed=0)
    assert res.verdict == "certified violation" and res.evaluations <= 40
    assert res.candidate.margin < -0.05 and res.certificate["margin"][1] < 0
    assert res.certificate["values"]["KL"] > res.certificate["values"]["sum_MI"] / 5  # the bound is (2 - 1)/5 sum_MI


def test_it_rediscovers_parallelbench_for_random_partitions_and_certifies_it():
    """ParallelBench's lower bound E sum_j TC <= KL holds for one fixed partition (docs/atlas.md) and fails for the
    mixture of partitions of i.i.d. steps; budget stated: 40 evaluations on binary 2-grams at L = 2, 3, N = 2."""
    res = search("E_TC <= KL", "ngram:n=2,V=2", (2, 3), (2,), ("iid",), budget=40, seed=0)
    assert res.verdict == "certified violation" and res.certificate["margin"][1] < 0 and res.candidate.L == 2
    fixed = search("E_TC <= KL", "ngram:n=2,V=2", (3,), (2,), ("stride",), budget=20, seed=0, prove=False)
    assert fixed.verdict == "no violation found" and abs(fixed.candidate.margin) <= NUMERIC_TOL  # attained
    # and for one fixed partition it is a lemma (KL = E_TC, docs/claims.md): proved without a search
    assert search("E_TC <= KL", "ngram:n=2,V=2", (3,), (2,), ("stride",), budget=20).verdict == "proved (lemmas)"


def test_a_seeded_wrong_constant_is_found_and_certified():
    res = search("KL <= L * eps + log(V) * E_D / 2", "ngram:n=2,V=2", (4,), (1,), ("iid",), budget=40, seed=0)
    assert res.verdict == "certified violation" and res.candidate.margin < 0


@pytest.mark.parametrize("claim, family, processes", [
    (CHAIN, "ngram:n=2,V=2", ("iid",)),
    (CHAIN, "ngram:n=3,V=2", ("iid",)),
    (LI_CAI, "ngram:n=3,V=2", ("uniform",)),  # inside Li & Cai's assumption
])
def test_a_true_bound_is_never_refuted_and_the_tightest_instance_is_reported(claim, family, processes):
    res = search(claim, family, (4,), (1, 2), processes, budget=24, seed=1, prove=False)  # the search itself
    assert res.verdict == "no violation found" and res.evaluations == 24
    assert res.candidate.margin >= -NUMERIC_TOL  # at worst a tight instance, up to the rounding of the two sides
    assert 0 <= res.candidate.relative <= 1


def test_the_search_is_deterministic_given_a_seed():
    b = search("KL <= TC", "hmm:S=2,V=2", (3,), (2,), ("iid", "confidence"), budget=10, seed=5, certify=False,
               prove=False)
    c = search("KL <= TC", "hmm:S=2,V=2", (3,), (2,), ("iid", "confidence"), budget=10, seed=5, certify=False,
               prove=False)
    assert b.history == c.history and b.candidate.margin == c.candidate.margin and len(b.history) == 10
    with pytest.raises(ClaimError, match="needs the quantities E_D"):  # an HMM has no separators: no E_D
        search(CHAIN, "hmm:S=2,V=2", (3,), (2,), ("iid",), budget=4, seed=5)


@pytest.mark.parametrize("text, says", [("ngram:n=3", "missing V"), ("ngram:n=3,V=2,S=4", "'S=4' is not one of"),
                                        ("tree:n=3,V=2", "expected ngram"), ("hmm:S=x,V=2", "S must be an integer"),
                                        ("ngram:n=3,V=1", "V must be an integer (>= 2")])
def test_families_are_checked(text, says):
    with pytest.raises(ValueError, match=None) as exc:
        parse_family(text)
    assert says in str(exc.value)


def test_the_continuous_refinement_moves_toward_a_violation():
    """Nelder-Mead on the softmax logits of one drawn 2-gram lowers the margin of 'KL <= 1' (it raises the KL of
    revealing four tokens at once), keeping the table's zeros."""
    import numpy as np

    from mdmt.bounds.refutation.claims import parse_claim
    from mdmt.bounds.refutation.refute import Budget, Candidate, _margins, _nelder_mead, _Search, family_of
    from mdmt.constructions.languages import random_ngram

    claim = parse_claim("KL <= 1")
    lang = random_ngram(2, 2, 2.0, 0.0, seed=3)
    start = Candidate(lang, 4, 1, "uniform", *_margins(claim, lang, 4, 1, "uniform"))
    state = _Search(claim, family_of("ngram:n=2,V=2"), Budget(evaluations=40))
    _nelder_mead(state, start, state.budget.point(1.0))
    better = state.best
    assert len(state.history) <= 40 and better.margin < start.margin - 0.05
    assert better.margin == min(state.history) and np.array_equal(better.language.transition_ > 0, lang.transition_ > 0)


@pytest.mark.integration
def test_the_seed_means_the_same_search_in_any_process():
    """A seed gives the same instances under pytest (its plugin, profiles and modules loaded) as in a fresh
    interpreter.  (The search's guard against Hypothesis's draws from the literals of loaded modules is what
    test_refute_cli's shard test catches: without it, a search after others in one pytest process differs.)"""
    import json
    import subprocess
    import sys

    call = ('search("KL <= TC", "ngram:n=2,V=2", (3, 4), (1, 2), ("iid",), budget=60, seed=11, certify=False, '
            'prove=False)')
    code = f"import json\nfrom mdmt.bounds.refutation.refute import search\nprint(json.dumps({call}.history))"
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    here = search("KL <= TC", "ngram:n=2,V=2", (3, 4), (1, 2), ("iid",), budget=60, seed=11, certify=False,
                  prove=False).history
    assert json.loads(fresh.stdout) == here


@pytest.mark.integration
def test_the_seed_means_the_same_search_beside_any_loaded_module(tmp_path):
    """Hypothesis gives an integer draw, now and then, one of the literals of the modules a process has loaded
    from outside site-packages (and caches them under .hypothesis/ in the working folder).  A process that has
    loaded a module full of large literals gets the same instances for a seed, and the search writes nothing
    in the working folder: it draws booleans only (mdmt.bounds.refutation.families.below).  Without that, 200 draws of
    this search take one of these literals as an Algorithm 1 seed."""
    import json
    import subprocess
    import sys

    literals = ", ".join(str(1000 + 7919 * i) for i in range(600))  # in the range of the drawn seeds
    (tmp_path / "user_module.py").write_text(f"CONSTANTS = [{literals}]\n")
    call = ('search("KL <= TC", "ngram:n=2,V=2", (3, 4), (1, 2), ("iid",), budget=200, seed=11, certify=False, '
            'refine=False, prove=False)')
    fresh = f"import json\nfrom mdmt.bounds.refutation.refute import search\nprint(json.dumps({call}.history))"
    runs = []
    for code in (fresh, "import user_module\n" + fresh):
        work = tmp_path / f"run{len(runs)}"
        work.mkdir()
        runs.append(json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                              timeout=300, check=True, cwd=work,
                                              env={**os.environ, "PYTHONPATH": str(tmp_path)}).stdout))
        assert list(work.iterdir()) == [], f"the search wrote {sorted(p.name for p in work.iterdir())}"
    assert runs[0] == runs[1]


def test_the_boolean_draws_reach_every_value_and_shrink_toward_the_first():
    from hypothesis import find, settings

    from mdmt.bounds.refutation.families import below, choice

    quiet = settings(database=None, max_examples=2000)
    for n in (1, 2, 3, 5, 13, 14):
        assert find(below(n), lambda v: True, settings=quiet) == 0
        for v in range(n):
            assert find(below(n), lambda x, v=v: x == v, settings=quiet) == v
    assert find(choice(["iid", "confidence"]), lambda p: True, settings=quiet) == "iid"


def test_the_search_uses_only_the_public_api_of_hypothesis():
    """Hypothesis's internals change between its releases; the refutation engine (core) imports its public API."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for path in sorted(root.glob("bounds/*.py")) + sorted(root.glob("mdmt/**/*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.startswith("hypothesis.internal") for n in names), f"{path.name} imports {names}"


def _copying_chain(p_first=0.5):
    import numpy as np

    from mdmt.constructions.languages import NGram

    return NGram(2, np.array([p_first, 1 - p_first]), np.array([[1.0, 0.0], [0.0, 1.0]]))


def test_the_search_keeps_the_smallest_violation_and_shrinks_it_further():
    """The halved chain bound fails on a copying chain at every L (KL = (L - 1) log 2 > (L - 1) log 2 / 2). Of the
    violations evaluated, the state keeps the smallest (L, N, positive entries); the shrink phase then takes the
    smallest length and number of steps searched that still violate."""
    from mdmt.bounds.refutation.claims import parse_claim
    from mdmt.bounds.refutation.refute import Budget, _Search, family_of

    claim = parse_claim("KL <= L * eps + log(V) * E_D / 2")
    state = _Search(claim, family_of("ngram:n=2,V=2"), Budget(evaluations=50))
    for L in (4, 3, 5):
        state.evaluate(_copying_chain(), L, 1, "iid")
    assert state.smallest.L == 3 and state.smallest.violates
    shrunk = state.shrink(state.evaluate(_copying_chain(), 5, 2, "iid"), (2, 3, 4, 5), (1, 2))
    assert (shrunk.L, shrunk.N) == (2, 1) and shrunk.violates and state.phases["shrink"] >= 1


@pytest.mark.parametrize("codes, initial, rows", [
    ((0, 0, 0, 0, 0, 0), [0.5, 0.5], [[0.5, 0.5], [0.5, 0.5]]),  # zeros: uniform rows
    ((1, 3, 0, 2, 12, 12), [0.2, 0.8], [[0.0, 1.0], [0.5, 0.5]]),  # weights 2^(w-1): 1 and 4; 0 and 2; equal
    ((0, 5, 2, 0, 1, 11), [0.0, 1.0], [[1.0, 0.0], [1 / 1025, 1024 / 1025]]),
])
def test_codes_become_the_tables_worked_by_hand(codes, initial, rows):
    import numpy as np

    lang = family_of("ngram:n=2,V=2").language(codes)
    assert np.allclose(lang.initial_, initial, rtol=0, atol=1e-15)
    assert np.allclose(lang.transition_, rows, rtol=0, atol=1e-15)


def test_perturbation_codes_scale_drop_and_keep_the_base_by_hand():
    """A language family: code 0 keeps an entry, k scales it by 2^(k/2), -7 drops it; a row dropped entirely keeps
    the base row; entries outside the base support stay 0."""
    import numpy as np

    fam = family_of("interval:2")
    base = fam.base
    zero = fam.language([0] * fam.entries)
    assert all(np.array_equal(a, b) for a, b in zip((zero.startprob_, zero.transmat_, zero.emissionprob_),
                                                    (base.startprob_, base.transmat_, base.emissionprob_)))
    start = np.asarray(base.startprob_)
    support = np.flatnonzero(start > 0)
    codes = [0] * fam.entries
    codes[support[0]] = 2  # doubled, before normalisation
    lang = fam.language(codes)
    expected = start.copy()
    expected[support[0]] *= 2
    assert np.allclose(lang.startprob_, expected / expected.sum(), rtol=0, atol=1e-15)
    codes[support[0]] = -6  # the smallest scale, 2^-3, still kept
    expected = start.copy()
    expected[support[0]] /= 8
    assert np.allclose(fam.language(codes).startprob_, expected / expected.sum(), rtol=0, atol=1e-15)
    codes[support[0]] = -7  # dropped
    expected = start.copy()
    expected[support[0]] = 0
    lang = fam.language(codes)
    assert np.allclose(lang.startprob_, expected / expected.sum(), rtol=0, atol=1e-15)
    codes = [0] * fam.entries
    for i in support:
        codes[i] = -7  # the whole row: the base row is kept
    assert np.array_equal(fam.language(codes).startprob_, start)


def test_algorithm_draws_are_coded_by_hand_keeping_each_rows_smallest_entry(monkeypatch):
    """drawn_codes codes each positive entry p of a row as 1 + round(log2(p / the row's smallest positive entry)):
    by hand, (1/7, 2/7, 4/7) -> 1, 2, 3 (weights 1, 2, 4: the row itself), (0, 1/3, 2/3) -> 0, 1, 2, (1, 0, 0) ->
    1, 0, 0; (1/4, 3/4, 0) -> 1, 1 + round(log2 3) = 3, 0 (weights 1, 4: 1/5, 4/5).  Without the 1 the smallest entry
    of every row would become a zero (and the row (1, 0, 0) uniform)."""
    import numpy as np

    from mdmt.bounds.refutation.families import family
    from mdmt.constructions.languages import NGram, random_languages

    drawn = NGram(2, [0.25, 0.75, 0.0], [[1 / 7, 2 / 7, 4 / 7], [0.0, 1 / 3, 2 / 3], [1.0, 0.0, 0.0]])
    monkeypatch.setattr(random_languages, "random_ngram", lambda *a, **k: drawn)
    fam = family("ngram:n=2,V=3")
    codes = fam.drawn_codes(1.0, 0.0, 0)
    assert codes == (1, 3, 0, 1, 2, 3, 0, 1, 2, 1, 0, 0)
    lang = fam.language(codes)
    assert np.allclose(lang.initial_, [0.2, 0.8, 0.0], rtol=0, atol=1e-15)
    assert np.allclose(lang.transition_, drawn.transition_, rtol=0, atol=1e-15)


def test_a_sharded_search_reports_the_smallest_violation_of_any_shard(monkeypatch):
    """Three shards (faked: their results are given) violate at L = 5, 3 and 4, and a fourth finds none: the search
    reports the shard with L = 3 -- the smallest instance (L first, then N), not the first shard's."""
    import numpy as np

    import mdmt.sweep
    from mdmt.bounds.refutation.refute import Candidate, RefuteResult

    def result(L, margin):
        lang = _copying_chain()
        return RefuteResult("KL <= 0", "numeric violation" if margin < 0 else "no violation found",
                            Candidate(lang, L, 1, "iid", margin, -1.0 if margin < 0 else 0.5), None, 10, 0.1)

    shards = [result(5, -1.0), result(3, -0.5), result(4, -2.0), result(2, 0.3)]

    class Done:
        def results(self):
            return shards

    monkeypatch.setattr(mdmt.sweep, "run_parts", lambda *a, **k: Done())
    res = search("KL <= 0", "ngram:n=2,V=2", lengths=(2, 3, 4, 5), steps=(1,), budget=40, shards=4, certify=False)
    assert res.verdict == "numeric violation" and res.candidate.L == 3 and res.candidate.margin == -0.5
    assert np.array_equal(res.candidate.language.transition_, np.eye(2))
