"""Explicit laws: the (position, token) index against a brute-force filter of the support, exact probabilities,
hashing of complete sequences, the work and memory guards, and the refusals of malformed supports."""

import math
from fractions import Fraction

import numpy as np
import pytest

from mdmt.constructions.languages.explicit import ExplicitLanguage, explicit_bytes
from mdmt.constructions.languages.explicit_inference import row_hashes
from mdmt.constructions.languages.spec import language_from_spec
from mdmt.runtime.validation import MASK


def _brute(support, weights, V, X):
    """q(x_U) and the posterior marginals by scanning every support sequence in Python (no index, no numpy
    filter): the reference."""
    n, L = X.shape
    mass = np.zeros(n)
    post = np.zeros((n, L, V))
    for r, x in enumerate(X):
        for y, w in zip(support.tolist(), weights):
            if all(t == MASK or t == s for t, s in zip(x, y)):
                mass[r] += w
                for i, s in enumerate(y):
                    post[r, i, s] += w
        if mass[r] > 0:
            post[r] /= mass[r]
            for i, t in enumerate(x):
                if t != MASK:
                    post[r, i] = 0
                    post[r, i, t] = 1
    return mass, post


def _random_law(seed, M=60, L=5, V=4, exact=False):
    rng = np.random.default_rng(seed)
    words = rng.choice(V ** L, size=M, replace=False)
    support = np.array([[(w // V ** (L - 1 - i)) % V for i in range(L)] for w in words])
    if exact:
        raw = [Fraction(int(k), 1) for k in rng.integers(1, 9, size=M)]
        total = sum(raw)
        weights = [k / total for k in raw]
    else:
        w = rng.random(M) + 0.1
        weights = (w / w.sum()).tolist()
    return support, weights


@pytest.mark.parametrize("seed, exact", [(0, False), (1, True), (2, False)])
def test_index_agrees_with_a_brute_force_filter(seed, exact):
    support, weights = _random_law(seed, exact=exact)
    lang = ExplicitLanguage(support, weights, n_symbols=4)
    rng = np.random.default_rng(seed + 10)
    X = np.concatenate([support[rng.integers(0, len(support), 30)], rng.integers(0, 4, (30, 5))])
    X[rng.random(X.shape) < 0.5] = MASK
    X[0] = MASK  # nothing revealed
    mass, post = _brute(support, [float(w) for w in weights], 4, X)
    np.testing.assert_allclose(np.exp(lang.log_likelihood(X)), mass, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(lang.in_support(X), mass > 0)
    on = mass > 0
    np.testing.assert_allclose(lang.posterior_marginals(X[on]), post[on], atol=1e-12)
    off = lang.posterior_marginals(X, off_support="uniform")
    masked_off = (~on)[:, None] & (X == MASK)
    assert np.all(off[masked_off] == 0.25)
    with pytest.raises(ValueError, match="has probability 0 under the language"):
        lang.posterior_marginals(X)
    # complete sequences go through the hash: every support row finds its own weight, other rows -inf
    full = lang.log_likelihood(lang.support_)
    np.testing.assert_array_equal(full, np.minimum(np.log(lang.weights_), 0))
    outside = rng.integers(0, 4, (200, 5))
    known = {tuple(r) for r in support.tolist()}
    want = np.array([tuple(r) in known for r in outside.tolist()])
    np.testing.assert_array_equal(lang.in_support(outside), want)
    assert np.all(np.isneginf(lang.log_likelihood(outside[~want])))


def test_exact_probabilities_are_rationals():
    support, weights = _random_law(3, exact=True)
    lang = ExplicitLanguage(support, weights, n_symbols=4)
    x = np.full(5, MASK)
    x[1] = support[0, 1]
    want = sum((w for y, w in zip(support.tolist(), weights) if y[1] == x[1]), Fraction(0))
    assert lang.probability(x) == want and isinstance(lang.probability(x), Fraction)
    assert lang.probability(np.full(5, MASK)) == 1
    shuffle = language_from_spec("task:shuffle:n=5")
    y = np.array([0, MASK, MASK, MASK, 1])
    assert shuffle.probability(y) == Fraction(math.factorial(3), 120)  # 3! permutations fix items 0 and 1
    floats = ExplicitLanguage(support, [float(w) for w in weights], n_symbols=4)
    assert isinstance(floats.probability(x), float) and math.isclose(floats.probability(x), float(want))


def test_uniform_laws_give_ratios_of_counts():
    # shuffle n=7 with one item revealed: each other item at each other position has probability exactly 1/6
    lang = language_from_spec("task:shuffle:n=7")
    x = np.full((1, 7), MASK)
    x[0, 3] = 5
    p = lang.posterior_marginals(x)[0]
    assert np.all(p[np.arange(7) != 3][:, [v for v in range(7) if v != 5]] == 1 / 6)
    assert lang.log_likelihood(x)[0] == np.log(720 / 5040)


def test_queries_cost_the_shortest_list_not_the_support(monkeypatch):
    lang = language_from_spec("task:shuffle:n=8")  # M = 40320; a revealed token leaves a list of 5040
    X = lang.sample_sequences(2, seed=0)
    X[:, 1:] = MASK
    monkeypatch.setenv("MDMT_MAX_WORK", "1e5")  # 2 * 5040 * 8 = 80640 < 1e5 < 2 * 40320 * 8
    lang.posterior_marginals(X)
    X[0, 0] = MASK  # nothing revealed on row 0: the prior, still accepted (computed once from the support)
    X[1, 0] = MASK
    with pytest.raises(ValueError, match=r"posterior marginals of 2 sequence\(s\) against a support of 40320"):
        lang.posterior_marginals(X)


def test_row_hashes_tell_rows_apart():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (2000, 12))
    h = row_hashes(X)
    _, first = np.unique(X, axis=0, return_index=True)
    assert len(np.unique(h[first])) == len(first)  # no collision among distinct rows
    assert row_hashes(X[:1])[0] == h[0]


def test_a_support_too_large_is_refused(monkeypatch):
    monkeypatch.setenv("MDMT_MAX_MEMORY", "1M")
    support = np.zeros((20000, 8), dtype=np.int64)
    support[:, 0] = np.arange(20000)
    with pytest.raises(ValueError, match=r"an explicit law of 20000 sequences of length 8 needs"):
        ExplicitLanguage(support)
    assert explicit_bytes(20000, 8, exact=True, n_symbols=20000) > 1 << 20


@pytest.mark.parametrize("support, weights, kw, message", [
    ([[0, 1], [0, 1]], None, {}, r"the sequence \[0, 1\] is listed twice"),
    ([[0, 1], [1]], None, {}, "support"),
    ([[0, 5]], None, {"n_symbols": 3}, "5"),
    ([[0], [1]], [0.5, -0.5], {}, "weight 1 = -0.5 is not a positive finite number"),
    ([[0], [1]], [0.5, float("nan")], {}, "weight 1 = nan is not a positive finite number"),
    ([[0], [1]], [0.0, 0.0], {}, "weight 0 = 0.0 is not a positive finite number"),
    ([[0], [1]], ["1/3", "1/3"], {}, r"weights sum to 2/3 \(= 0.66666666666666663\), not 1"),
    ([[0], [1]], [0.2, 0.3], {}, "weights sum to 0.5, not 1"),
    ([[0], [1]], ["1/3", "x"], {}, "weight 1 = 'x' is not a number"),
])
def test_malformed_supports_are_refused(support, weights, kw, message):
    with pytest.raises(ValueError, match=message):
        ExplicitLanguage(support, weights, **kw)


def test_normalise_divides_by_the_sum():
    lang = ExplicitLanguage([[1], [0]], ["1/3", "1/3"], normalise=True)
    assert lang.exact_weights == (Fraction(1, 2), Fraction(1, 2))
    assert ExplicitLanguage([[0], [1]], [0.2, 0.3], normalise=True).weights_.tolist() == [0.4, 0.6]


@pytest.mark.integration
def test_a_million_sequences():
    rng = np.random.default_rng(0)
    support = np.unique(rng.integers(0, 8, (1_050_000, 16)), axis=0)[:1_000_000]
    lang = ExplicitLanguage(support, n_symbols=8)
    X = lang.sample_sequences(200, seed=1)
    X[rng.random(X.shape) < 0.7] = MASK
    keep = [np.all(lang.support_[:, x != MASK] == x[x != MASK], axis=1) for x in X]
    np.testing.assert_allclose(np.exp(lang.log_likelihood(X)), [k.sum() / 1e6 for k in keep], rtol=1e-12)
    assert np.all(lang.in_support(lang.support_[::1000]))


# ---------------------------------------------------------------------------------------------- files
@pytest.mark.parametrize("ext", ["json", "npz", "NPZ"])
@pytest.mark.parametrize("weights", [None, ["1/7", "2/7", "4/7"], [0.2, 0.3, 0.5]])
def test_files_round_trip_exactly(tmp_path, ext, weights):
    from mdmt.constructions.languages import load_language, save_language
    from mdmt.constructions.languages.io import language_digest

    lang = ExplicitLanguage([[2, 1], [0, 1], [1, 1]], weights, n_symbols=4)
    path = save_language(lang, tmp_path / f"e.{ext}")
    back = load_language(path)
    assert back == lang and back.exact_weights == lang.exact_weights and back.n_symbols == 4
    assert language_digest(back) == language_digest(lang)
    assert language_digest(lang) != language_digest(ExplicitLanguage([[2, 1], [0, 1], [1, 1]], n_symbols=5)) \
        or weights is not None


def test_a_hand_written_file_with_rational_weights(tmp_path):
    from mdmt.constructions.languages import load_language

    path = tmp_path / "l.json"
    path.write_text('{"kind": "explicit", "n_symbols": 3, "length": 2, "sequences": [[0, 1], [2, 2]], '
                    '"weights": ["1/576", "575/576"]}')
    lang = load_language(path)
    assert lang.exact_weights == (Fraction(1, 576), Fraction(575, 576))
    assert language_from_spec(str(path)) == lang


BAD_FILES = {
    "duplicate": ({"sequences": [[0, 1], [0, 1]]}, r"invalid key 'sequences': support: the sequence [0, 1] is listed twice"),
    "mixed lengths": ({"sequences": [[0, 1], [1]]}, "sequence 1 has 1 tokens, not length = 2"),
    "token >= V": ({"sequences": [[0, 1], [1, 3]]}, "token 3 is outside the vocabulary (allowed 0..2)"),
    "negative weight": ({"weights": [1.5, -0.5]}, "weight 1 = -0.5 is not a positive finite number"),
    "NaN weight": ({"weights": [0.5, float("nan")]}, "weight 1 = nan is not a positive finite number"),
    "zero-sum weights": ({"weights": [0, 0]}, "weight 0 = 0 is not positive"),
    "sum not 1": ({"weights": ["1/3", "1/3"]}, "weights sum to 2/3 (= 0.66666666666666663), not 1"),
    "float sum not 1": ({"weights": [0.3, 0.3]}, "weights sum to 0.6, not 1"),
    "boolean weight": ({"weights": [True, 0.3]}, "weight 0 is True, not a number"),
    "text weight": ({"weights": ["half", 0.3]}, "weight 0 = 'half' is not a number"),
    "float token": ({"sequences": [[0, 1.5], [1, 2]]}, "sequence 0 position 1: token 1.5 is not an integer"),
    "no V": ({"n_symbols": None}, "missing key 'n_symbols'"),
    "empty": ({"sequences": []}, "an explicit law needs at least one sequence"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_bad_files_are_refused_in_one_line(tmp_path, capsys, case):
    import json

    from mdmt.cli import main

    doc = {"kind": "explicit", "n_symbols": 3, "length": 2, "sequences": [[0, 1], [1, 2]]}
    change, message = BAD_FILES[case]
    doc.update(change)
    doc = {k: v for k, v in doc.items() if v is not None}
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["language", "--language", str(tmp_path / "bad.json"), "--out", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("mdmt language: error: --language ") and message in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_normalise_writes_a_normalised_copy(tmp_path, capsys):
    from mdmt.cli import main
    from mdmt.constructions.languages import load_language

    (tmp_path / "w.json").write_text('{"kind": "explicit", "n_symbols": 2, "length": 1, "sequences": [[0], [1]], '
                                     '"weights": ["1/3", "1/6"]}')
    assert main(["language", "--language", str(tmp_path / "w.json"), "--normalise", "--out", str(tmp_path / "n.json")]) == 0
    assert load_language(tmp_path / "n.json").exact_weights == (Fraction(2, 3), Fraction(1, 3))
    assert main(["language", "--kind", "hmm", "--normalise", "--out", str(tmp_path / "h.json")]) == 2
    assert "--normalise applies to --language FILE only" in capsys.readouterr().err


def test_a_file_too_large_to_hold_is_refused(tmp_path, capsys, monkeypatch):
    from mdmt.cli import main
    from mdmt.constructions.languages import save_language

    save_language(language_from_spec("task:shuffle:n=7"), tmp_path / "s.npz")
    monkeypatch.setenv("MDMT_MAX_MEMORY", "1000K")  # the file's arrays fit (867 KiB), the law does not
    assert main(["language", "--language", str(tmp_path / "s.npz"), "--out", str(tmp_path / "o.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "5040 sequences of length 7" in err and "needs" in err, err
    assert not (tmp_path / "o.npz").exists()


def test_sequence_entropy_is_exact_and_sample_reports_it(capsys):
    import json

    from mdmt.cli import main

    lang = language_from_spec("task:latin:4")
    assert math.isclose(lang.sequence_entropy(16), math.log(576), rel_tol=1e-12)
    with pytest.raises(ValueError, match="length 5: this explicit law holds sequences of length 16 only"):
        lang.sequence_entropy(5)
    assert main(["sample", "--language", "task:shuffle:n=4", "--length", "4", "--steps", "4", "--num", "5",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["entropy_rate_method"] == "exact" and math.isclose(out["entropy_rate"], math.log(24) / 4)
    assert main(["sample", "--language", "task:shuffle:n=4", "--length", "5", "--steps", "4", "--num", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("mdmt sample: error:") and "length 4 only" in err, err


def test_membership_survives_hash_collisions(monkeypatch):
    from mdmt.constructions.languages import explicit_inference

    # every row hashed to one value: the lookup must fall back to comparing tokens
    monkeypatch.setattr(explicit_inference, "row_hashes", lambda X: np.zeros(len(X), dtype=np.uint64))
    lang = ExplicitLanguage([[0, 1, 2], [2, 1, 0], [1, 1, 1]], ["1/2", "1/4", "1/4"], n_symbols=3)
    X = np.array([[2, 1, 0], [0, 0, 0], [1, 1, 1], [0, 1, 2]])
    np.testing.assert_array_equal(lang.in_support(X), [True, False, True, True])
    np.testing.assert_array_equal(lang.log_likelihood(X), [np.log(0.25), -np.inf, np.log(0.25), np.log(0.5)])


def test_log_likelihood_of_exact_weights_is_correctly_rounded():
    # 1/10 + 2/10 in floats is 0.30000000000000004; the exact sum is 3/10, whose float is 0.3
    lang = ExplicitLanguage([[0, 0], [0, 1], [1, 1]], ["1/10", "2/10", "7/10"])
    assert lang.log_likelihood(np.array([[0, MASK]]))[0] == np.log(0.3) != np.log(0.1 + 0.2)
    floats = ExplicitLanguage([[0, 0], [0, 1], [1, 1]], [0.1, 0.2, 0.7])
    assert math.isclose(floats.log_likelihood(np.array([[0, MASK]]))[0], np.log(0.3), rel_tol=1e-15)


def test_the_benchmark_runs_and_agrees(tmp_path, capsys):
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_explicit.py"
    spec = importlib.util.spec_from_file_location("bench_explicit", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "b.json"
    assert bench.main(["--language", "task:shuffle:n=5", "--num", "30", "--repeats", "1", "--reveal", "0.5",
                       "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert rows[0]["max_abs_difference"] < 1e-12 and rows[0]["ratio"] > 0
    assert "ratio" in capsys.readouterr().out


def test_weights_equal_in_floats_but_not_exactly_are_summed_exactly():
    eps = Fraction(1, 10**30)  # below float64 resolution: both weights round to 0.5
    lang = ExplicitLanguage([[0], [1]], [Fraction(1, 2) + eps, Fraction(1, 2) - eps])
    assert lang.weights_[0] == lang.weights_[1]
    assert lang.probability(np.array([1])) == Fraction(1, 2) - eps
    assert lang.probability(np.array([0])) == Fraction(1, 2) + eps
