"""Task presets (``task:NAME[:PARAMS]``): each law's support against a count derived independently, the SPEC
grammar, and the Dyck language written as an HMM agreeing with its explicit form."""

import itertools
import math

import numpy as np
import pytest

from mdmt.constructions.languages.explicit import ExplicitLanguage
from mdmt.constructions.languages.spec import canonical_spec, language_from_spec
from mdmt.constructions.languages.tasks import DEFAULT_CLUES, TASKS, dyck_hmm, task_language
from mdmt.runtime.validation import MASK


def _uniform(lang):
    M = lang.n_sequences
    assert lang.exact_weights is not None and set(lang.exact_weights) == {__import__("fractions").Fraction(1, M)}


def _brute(L, V, keep):
    """Every word of V^L satisfying ``keep``, enumerated naively (the independent count)."""
    return [w for w in itertools.product(range(V), repeat=L) if keep(w)]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_shuffle_is_every_permutation(n):
    lang = language_from_spec(f"task:shuffle:n={n}")
    assert lang.n_sequences == math.factorial(n) and lang.n_symbols == n and lang.length == n
    assert np.all(np.sort(lang.support_, axis=1) == np.arange(n))  # each row a permutation; distinct by construction
    _uniform(lang)


@pytest.mark.parametrize("n", [1, 2, 5, 10])
def test_parity_counts_two_to_the_n_minus_one(n):
    lang = language_from_spec(f"task:parity:{n}")
    assert lang.n_sequences == 2 ** (n - 1) and lang.n_symbols == 2
    assert np.all(lang.support_.sum(axis=1) % 2 == 0)
    if n <= 5:
        assert lang.support_.tolist() == [list(w) for w in _brute(n, 2, lambda w: sum(w) % 2 == 0)]


@pytest.mark.parametrize("L, catalan", [(2, 1), (4, 2), (6, 5), (8, 14), (10, 42), (12, 132)])
def test_dyck_counts_catalan_numbers(L, catalan):  # Catalan(m) = 1, 1, 2, 5, 14, 42, 132 (OEIS A000108)
    lang = language_from_spec(f"task:dyck:{L}")
    assert lang.n_sequences == catalan

    def balanced(w):
        h = 0
        for t in w:
            h += 1 if t == 0 else -1
            if h < 0:
                return False
        return h == 0

    if L <= 10:
        assert lang.support_.tolist() == [list(w) for w in _brute(L, 2, balanced)]


def _is_latin(rows):
    k = len(rows)
    return all(sorted(r) == list(range(k)) for r in rows) and all(sorted(c) == list(range(k)) for c in zip(*rows))


def test_latin_order_three_by_brute_force_and_order_four_by_reduced_squares():
    three = language_from_spec("task:latin:3")  # all 3^9 grids filtered: 12 Latin squares (OEIS A002860)
    assert three.support_.tolist() == [list(w) for w in _brute(9, 3, lambda w: _is_latin([w[0:3], w[3:6], w[6:9]]))]
    four = language_from_spec("task:latin:4")
    assert four.n_sequences == 576 and four.length == 16 and four.n_symbols == 4
    grids = four.support_.reshape(-1, 4, 4)
    assert all(_is_latin(g.tolist()) for g in grids)
    # L(4) = 4! 3! R(4) with R(4) = 4 reduced squares (first row and first column in order): count those present
    reduced = [g for g in grids if g[0].tolist() == [0, 1, 2, 3] and g[:, 0].tolist() == [0, 1, 2, 3]]
    assert len(reduced) == 4 == 576 // (math.factorial(4) * math.factorial(3))


def _sudoku_ok(w):
    g = [w[4 * r:4 * r + 4] for r in range(4)]
    boxes = [[g[r][c] for r in (2 * a, 2 * a + 1) for c in (2 * b, 2 * b + 1)] for a in (0, 1) for b in (0, 1)]
    return _is_latin(g) and all(sorted(bx) == [0, 1, 2, 3] for bx in boxes)


def test_sudoku_completions_by_brute_force():
    # the 288 grids of 4 x 4 Sudoku: the 576 Latin squares of order 4 whose 2 x 2 boxes are permutations, checked
    # on the squares the brute force of test_latin finds; then the clues filter them
    four = language_from_spec("task:latin:4").support_.tolist()
    grids = [w for w in four if _sudoku_ok(w)]
    assert len(grids) == 288
    assert language_from_spec("task:sudoku:clues=" + "." * 16).support_.tolist() == grids
    for clues in (DEFAULT_CLUES, "1234341221434321", "1...............", "12..34..2......."):
        want = [w for w in grids if all(c == "." or w[k] == int(c) - 1 for k, c in enumerate(clues))]
        lang = language_from_spec(f"task:sudoku:clues={clues}")
        assert lang.support_.tolist() == want and lang.n_symbols == 4
    assert language_from_spec(f"task:sudoku:clues={DEFAULT_CLUES}").n_sequences == 12  # the documented default
    with pytest.raises(ValueError, match="the support is empty"):
        language_from_spec("task:sudoku:clues=11..............")


def test_list_tasks_follow_the_input_list():
    assert language_from_spec("task:replace-index:n=4,i=2").support_.tolist() == [[0, 1, 4, 3]]
    rr = language_from_spec("task:replace-random:n=3")
    assert rr.support_.tolist() == sorted([[3, 1, 2], [0, 3, 2], [0, 1, 3]]) and rr.n_symbols == 4
    copy = language_from_spec("task:copy:n=3,V=4")
    assert copy.support_.tolist() == [[v] * 3 for v in range(4)]
    big = language_from_spec("task:copy:n=6,V=50000")  # V^n = 1.6e28 words; the support is the V repeats
    assert big.n_sequences == 50000 and big.n_symbols == 50000
    post = big.posterior_marginals(np.array([[MASK, MASK, 7, MASK, MASK, MASK]]))
    assert np.all(post[0, :, 7] == 1.0)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_insert_and_remove_random(n):
    ins = language_from_spec(f"task:insert-random:{n}")  # n + 1 places for the new item n
    want = sorted(tuple(list(range(p)) + [n] + list(range(p, n))) for p in range(n + 1))
    assert [tuple(r) for r in ins.support_.tolist()] == want and ins.length == n + 1 and ins.n_symbols == n + 1
    if n >= 2:
        rem = language_from_spec(f"task:remove-random:{n}")  # n items to drop
        want = sorted(tuple(v for v in range(n) if v != p) for p in range(n))
        assert [tuple(r) for r in rem.support_.tolist()] == want and rem.length == n - 1 and rem.n_symbols == n


def test_canonical_forms():
    assert canonical_spec("task:shuffle:n=8") == "task:shuffle:n=8" == canonical_spec("task:shuffle:8")
    assert canonical_spec("task:latin:4") == "task:latin:order=4" == canonical_spec("task:latin")
    assert canonical_spec("task:copy:V=5, n=3") == "task:copy:n=3,V=5"
    assert canonical_spec("task:sudoku:clues=1" + "0" * 15) == "task:sudoku:order=4,clues=1" + "." * 15
    for name in TASKS:  # the canonical form names the same law, and is its own normal form
        c = canonical_spec(f"task:{name}")
        assert canonical_spec(c) == c
        assert language_from_spec(c) == language_from_spec(f"task:{name}")


@pytest.mark.parametrize("spec, message", [
    ("task:nope", "unknown task 'nope'; valid tasks: copy"),
    ("task:", "expected task:NAME"),
    ("task:latin:9", r"order = 9 must be in 1..5"),
    ("task:latin:x", "order = 'x' is not an integer"),
    ("task:copy:n=3,n=4", "parameter 'n' given twice"),
    ("task:copy:V=3,4", "only the first parameter"),
    ("task:copy:W=2", "task 'copy' has no parameter 'W'; its parameters: n, V"),
    ("task:dyck:7", "L = 7 is odd"),
    ("task:replace-index:n=3,i=3", "i = 3 is not a position"),
    ("task:sudoku:clues=5", "has 1 characters; expected 16"),
    ("task:sudoku:clues=123456789abcdefg", "'5' is not a digit 1-4"),
    ("task:sudoku:order=9", r"order = 9 must be in 4..4"),
    ("shuffle:n=8", r"did you mean task:shuffle:n=8\?"),
])
def test_bad_task_specs_name_the_spec(spec, message):
    with pytest.raises(ValueError, match=message):
        language_from_spec(spec)


def test_a_support_too_large_is_refused_before_enumerating(monkeypatch):
    monkeypatch.setenv("MDMT_MAX_MEMORY", "1M")
    with pytest.raises(ValueError, match=r"the support of task:shuffle:n=12 \(479001600 sequences"):
        language_from_spec("task:shuffle:n=12")


@pytest.mark.parametrize("L", [2, 4, 8])
def test_dyck_hmm_and_explicit_law_agree(L):
    explicit = language_from_spec(f"task:dyck:{L}")
    hmm = dyck_hmm(L)
    # every word of {0,1}^L: the same probability (1/Catalan on the support, 0 elsewhere)
    words = np.array(list(itertools.product((0, 1), repeat=L)))
    np.testing.assert_allclose(np.exp(hmm.log_likelihood(words)), np.exp(explicit.log_likelihood(words)),
                               rtol=1e-12, atol=0)
    np.testing.assert_array_equal(hmm.in_support(words), explicit.in_support(words))
    # posterior marginals given every partially revealed prefix of positive probability
    rng = np.random.default_rng(L)
    X = explicit.sample_sequences(40, seed=1)
    X[rng.random(X.shape) < 0.6] = MASK
    np.testing.assert_allclose(hmm.posterior_marginals(X), explicit.posterior_marginals(X), atol=1e-12)


def test_task_language_is_an_explicit_law():
    lang = task_language("shuffle", n=4)
    assert isinstance(lang, ExplicitLanguage) and lang == language_from_spec("task:shuffle:4")
    with pytest.raises(ValueError, match="has no parameter 'm'"):
        task_language("shuffle", m=4)
