"""Language files (JSON, .npz) and the hmmlearn bridge: exact round trips, every malformed input named."""

import json
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mdmt.constructions.languages import HMM, NGram, from_hmmlearn, interval_hmm, load_language, random_hmm, random_ngram, save_language, to_hmmlearn
from mdmt.constructions.languages.io import read_document


@st.composite
def languages(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    threshold = draw(st.sampled_from([0.0, 0.05, 0.3]))
    temperature = draw(st.floats(0.2, 10.0))
    if draw(st.booleans()):
        return random_ngram(draw(st.integers(2, 4)), draw(st.integers(1, 4)), temperature, threshold, seed)
    return random_hmm(draw(st.integers(1, 6)), draw(st.integers(1, 5)), temperature, threshold, seed)


@given(lang=languages(), ext=st.sampled_from([".json", ".npz", ".lang"]), named=st.booleans())
def test_round_trip_is_exact(tmp_path_factory, lang, ext, named):
    path = tmp_path_factory.mktemp("lang") / f"l{ext}"
    kw = {"name": "x", "metadata": {"seed": 1, "note": "é"}} if named else {}
    save_language(lang, path, **kw)
    back = load_language(path)
    assert type(back) is type(lang) and back == lang  # array_equal: bit-for-bit
    doc = read_document(path)
    assert doc["kind"] == lang.kind
    if named:
        assert doc["name"] == "x" and doc["metadata"] == {"seed": 1, "note": "é"}


def test_json_document_has_the_documented_form(tmp_path):
    p = tmp_path / "h.json"
    h = random_hmm(3, 2, 1.0, 0.0, seed=0)
    save_language(h, p, name="demo")
    d = json.loads(p.read_text())
    assert d["format"] == "mdmt-language" and d["version"] == 1 and d["kind"] == "hmm" and d["name"] == "demo"
    assert d["initial"] == h.startprob_.tolist() and d["transition"] == h.transmat_.tolist()
    assert d["emission"] == h.emissionprob_.tolist()
    g = random_ngram(3, 2, 1.0, 0.0, seed=0)
    save_language(g, p)
    d = json.loads(p.read_text())
    assert d["kind"] == "ngram" and d["n"] == 3 and len(d["initial"]) == 4 and len(d["transition"]) == 4


def test_minimal_and_nested_forms_load(tmp_path):
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"kind": "hmm", "initial": [1.0], "transition": [[1.0]], "emission": [[0.25, 0.75]]}))
    assert load_language(p) == HMM([1.0], [[1.0]], [[0.25, 0.75]])
    # extra keys are ignored; an n-gram's initial law may be nested n-1 deep
    p.write_text(json.dumps({"kind": "ngram", "n": 3, "initial": [[0.5, 0], [0, 0.5]],
                             "transition": [[1, 0], [0, 1], [0.5, 0.5], [0.5, 0.5]], "comment": "anything"}))
    assert load_language(p) == NGram(3, [0.5, 0, 0, 0.5], [[1, 0], [0, 1], [0.5, 0.5], [0.5, 0.5]])


def test_interval_hmm_round_trips(tmp_path):
    h = interval_hmm(4)
    for ext in (".json", ".npz"):
        save_language(h, tmp_path / f"i{ext}")
        assert load_language(tmp_path / f"i{ext}") == h


GOOD = {"kind": "hmm", "initial": [0.5, 0.5], "transition": [[0.5, 0.5], [1.0, 0.0]], "emission": [[1.0, 0.0], [0.3, 0.7]]}


def bad(**changes):
    d = {k: v for k, v in GOOD.items() if k not in changes or changes[k] is not None}
    d.update({k: v for k, v in changes.items() if v is not None})
    return d


@pytest.mark.parametrize(
    "doc, message",
    [
        (bad(kind=None), "missing key 'kind'"),
        (bad(initial=None), "missing key 'initial'"),
        (bad(transition=None), "missing key 'transition'"),
        (bad(emission=None), "missing key 'emission'"),
        ({"kind": "ngram", "initial": [1.0], "transition": [[1.0]]}, "missing key 'n'"),
        (bad(kind="tree"), "invalid key 'kind': unknown kind 'tree'"),
        (bad(version=2), "invalid key 'version': unsupported version 2"),
        (bad(format="other"), "invalid key 'format': 'other'"),
        (bad(transition=[[0.5, 0.4], [1.0, 0.0]]), "invalid key 'transition': transmat row 0 sums to 0.9"),
        (bad(emission=[[1.0, 0.0], [1.2, -0.2]]), r"invalid key 'emission': emissionprob\[1, 1\] is a negative probability"),
        (bad(initial=[float("nan"), 1.0]), r"invalid key 'initial': startprob\[0\] is not finite \(nan\)"),
        (bad(initial=[1.0]), r"invalid key 'transition': transmat must have shape \(1, 1\) to match startprob, got \(2, 2\)"),
        (bad(emission=[[1.0, 0.0]]), "invalid key 'emission': emissionprob must have 2 rows"),
        (bad(transition=[0.5, 0.5]), "invalid key 'transition': transmat must have 2 dimension"),
        (bad(transition=[[0.5, 0.5], [1.0]]), "invalid key 'transition': transmat must be an array of numbers"),
        (bad(initial="0.5 0.5"), "invalid key 'initial': expected an array of numbers, got str"),
        (bad(emission=[["a", "b"], [0.3, 0.7]]), r"invalid key 'emission': emissionprob\[0, 0\] is a str \('a'\), not a number"),
        ({"kind": "ngram", "n": "two", "initial": [1.0], "transition": [[1.0]]}, "invalid key 'n': n must be an integer"),
        ({"kind": "ngram", "n": 1, "initial": [1.0], "transition": [[1.0]]}, "invalid key 'n': n must be >= 2, got 1"),
        ({"kind": "ngram", "n": 3, "initial": [0.5, 0.5], "transition": [[1, 0], [0, 1]]},
         "invalid key 'transition': transition must have V\\*\\*\\(n-1\\) = 2\\*\\*2 = 4 rows"),
        ({"kind": "ngram", "n": 2, "initial": [1.0], "transition": [[1, 0], [0, 1]]},
         "invalid key 'initial': initial must be the law of the first n-1 tokens"),
        ([GOOD], "expected a JSON object, got list"),
        (bad(initial=["0.5", "0.5"]), r"invalid key 'initial': startprob\[0\] is a str \('0.5'\), not a number"),
        (bad(transition=[[0.5, 0.5], [True, False]]), r"invalid key 'transition': transmat\[1, 0\] is a boolean"),
        (bad(emission=[[1.0, 0.0], [0.3, None]]), r"invalid key 'emission': emissionprob\[1, 1\] is a NoneType"),
        (bad(initial=[10**400, 0]), r"invalid key 'initial': startprob must be an array of numbers \(int too large"),
        ({"kind": "ngram", "n": 10**30, "initial": [1.0], "transition": [[1.0]]},
         "invalid key 'n': n = 1000000000000000000000000000000 is larger than the largest supported n-gram order 64"),
        ({"kind": "ngram", "n": True, "initial": [1.0], "transition": [[1.0]]}, "invalid key 'n': n must be an integer"),
        ({"kind": "ngram", "n": 40, "initial": [0.5, 0.5], "transition": [[0.5, 0.5], [0.5, 0.5]]},
         r"transition must have V\*\*\(n-1\) = 2\*\*39 = 549755813888 rows"),
    ],
)
def test_malformed_json_is_rejected_naming_the_key(tmp_path, doc, message):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))  # NaN is written as the JSON extension literal NaN
    with pytest.raises(ValueError, match=message) as err:
        load_language(p)
    assert str(p) in str(err.value)


def test_unreadable_files(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{not json")
    with pytest.raises(ValueError, match="invalid JSON"):
        load_language(p)
    p.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(ValueError, match="not a text"):
        load_language(p)
    z = tmp_path / "x.npz"
    z.write_bytes(b"PK\x03\x04 truncated zip")
    with pytest.raises(ValueError, match="not a readable .npz language file"):
        load_language(z)
    np.savez(z, initial=np.array([1.0]), transition=np.array([[1.0]]))  # no meta, no emission
    with pytest.raises(ValueError, match="missing key 'kind'"):
        load_language(z)
    np.savez(z, meta=np.array(json.dumps({"kind": "hmm"})), initial=np.array([1.0]), transition=np.array([[1.0]]))
    with pytest.raises(ValueError, match="missing key 'emission'"):
        load_language(z)
    with pytest.raises(FileNotFoundError):
        load_language(tmp_path / "missing.json")
    p.write_text("[" * 100000 + "]" * 100000)  # deeper than Python's recursion limit
    with pytest.raises(ValueError, match="invalid JSON \\(arrays nested too deeply\\)"):
        load_language(p)
    with pytest.raises(ValueError, match="is a folder, not a language file"):
        load_language(tmp_path)
    np.savez(z, meta=np.array(json.dumps({"kind": "hmm"})), initial=np.array([True, False]), transition=np.eye(2),
             emission=np.eye(2))
    with pytest.raises(ValueError, match="invalid key 'initial': startprob must be an array of numbers, got an array of dtype bool"):
        load_language(z)


def test_saving_rejects_what_it_cannot_write(tmp_path):
    with pytest.raises(ValueError, match="cannot save a dict"):
        save_language({"kind": "hmm"}, tmp_path / "x.json")
    with pytest.raises(ValueError, match="metadata must be a dict"):
        save_language(HMM([1.0], [[1.0]], [[1.0]]), tmp_path / "x.json", metadata=[1])
    with pytest.raises(ValueError):
        save_language(HMM([1.0], [[1.0]], [[1.0]]), tmp_path / "x.json", metadata={"x": float("inf")})


def hmmlearn_scores(model, X):
    return np.array([model.score(x.reshape(-1, 1)) for x in X])


@pytest.mark.parametrize("make", [lambda: random_hmm(7, 5, 2.0, 0.02, seed=3), lambda: random_ngram(3, 3, 2.0, 0.01, seed=1),
                                  lambda: interval_hmm(3)])
def test_hmmlearn_conversion_preserves_the_law(make):
    pytest.importorskip("hmmlearn", reason="hmmlearn (peer) not installed")
    lang = make()
    model = to_hmmlearn(lang)
    X = lang.sample_sequences(6, 30, seed=0)
    np.testing.assert_allclose(hmmlearn_scores(model, X), lang.log_likelihood(X), rtol=1e-10)
    back = from_hmmlearn(model)
    assert back == (lang if isinstance(lang, HMM) else lang.to_hmm())


def test_the_names_hmm_shares_with_hmmlearn_mean_what_they_mean_there():
    """The correspondence: HMM.score(X, lengths) is hmmlearn's total log-likelihood of concatenated sequences;
    HMM.sample(n, random_state) returns (X (n, 1), Z (n,)) as hmmlearn's does; the batch forms are
    log_likelihood (one value per row) and sample_sequences (n, L)."""
    pytest.importorskip("hmmlearn", reason="hmmlearn (peer) not installed")
    lang = random_hmm(5, 4, 2.0, 0.05, seed=2)
    model = to_hmmlearn(lang)
    X = lang.sample_sequences(3, 9, seed=1)
    lengths = [9, 9, 9]
    flat = X.reshape(-1, 1)
    assert lang.score(flat, lengths) == pytest.approx(model.score(flat, lengths), rel=1e-10)
    assert lang.score(flat, lengths) == pytest.approx(lang.log_likelihood(X).sum(), rel=1e-12)
    assert lang.score(X[0].reshape(-1, 1)) == pytest.approx(model.score(X[0].reshape(-1, 1)), rel=1e-10)
    mixed = [4, 9, 4, 10]  # sequences of several lengths, concatenated
    assert lang.score(flat[:27], mixed) == pytest.approx(model.score(flat[:27], mixed), rel=1e-10)
    x, z = lang.sample(50, random_state=3)
    hx, hz = model.sample(50, random_state=3)
    assert x.shape == hx.shape == (50, 1) and z.shape == hz.shape == (50,)
    assert x.dtype.kind == z.dtype.kind == "i"
    # every (state, symbol) and (state, next state) the draw shows is possible under the law
    assert (lang.emissionprob_[z, x[:, 0]] > 0).all() and (lang.transmat_[z[:-1], z[1:]] > 0).all()
    assert lang.startprob_[z[0]] > 0
    x2, z2 = lang.sample(50, random_state=3)
    assert np.array_equal(x, x2) and np.array_equal(z, z2)  # deterministic given the seed
    with pytest.raises(ValueError, match="lengths sum to 10"):
        lang.score(flat, [5, 5])
    with pytest.raises(ValueError, match="log_likelihood"):
        lang.score(X)  # an (n, L) batch is the other method's input


def test_hmm_sample_draws_the_hmm_law():
    """The hidden-state sampler of HMM.sample against the exact law: the symbol frequencies at position 0..2 of
    4000 draws of length 3 match the exact marginals (chi-square, p > 1e-4 for a correct sampler)."""
    from scipy.stats import chisquare

    lang = random_hmm(3, 3, 1.0, 0.0, seed=5)
    draws = np.array([lang.sample(3, random_state=s)[0][:, 0] for s in range(4000)])
    codes = draws @ np.array([9, 3, 1])
    grid = np.array([[a, b, c] for a in range(3) for b in range(3) for c in range(3)])
    expected = np.exp(lang.log_likelihood(grid)) * len(draws)
    observed = np.bincount(codes, minlength=27)
    assert chisquare(observed, expected).pvalue > 1e-4


def test_from_hmmlearn_validates():
    pytest.importorskip("hmmlearn", reason="hmmlearn (peer) not installed")
    from hmmlearn.hmm import CategoricalHMM

    with pytest.raises(ValueError, match="hmmlearn model has no startprob_"):
        from_hmmlearn(CategoricalHMM(n_components=2))
    m = to_hmmlearn(random_hmm(2, 2, 1.0, 0.0, seed=0))
    m.transmat_ = np.array([[0.5, 0.6], [0.5, 0.5]])
    with pytest.raises(ValueError, match="transmat row 0 sums to 1.1"):
        from_hmmlearn(m)


def test_missing_hmmlearn_gives_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "hmmlearn", None)
    monkeypatch.setitem(sys.modules, "hmmlearn.hmm", None)
    with pytest.raises(ImportError, match="needs hmmlearn"):
        to_hmmlearn(random_hmm(2, 2, 1.0, 0.0, seed=0))


@pytest.mark.parametrize("text, key", [
    ('{"kind": "hmm", "initial": [1.0], "initial": [0.5], "transition": [[1.0]], "emission": [[1.0]]}', "initial"),
    ('{"kind": "ngram", "n": 2, "n": 3, "initial": [1.0], "transition": [[1.0]]}', "n"),
    ('{"kind": "hmm", "initial": [1.0], "transition": [[1.0]], "emission": [[1.0]], '
     '"metadata": {"seed": 1, "seed": 2}}', "seed"),
])
def test_a_key_given_twice_is_refused_naming_it(tmp_path, text, key):
    """JSON keeps the last of two equal keys: a language file that gives one twice is refused instead."""
    p = tmp_path / "l.json"
    p.write_text(text)
    with pytest.raises(ValueError, match=rf"^{p}: invalid JSON \(key '{key}' appears more than once in an object\)$"):
        load_language(p)


def test_a_key_given_twice_in_the_meta_of_an_npz_is_refused(tmp_path):
    z = tmp_path / "l.npz"
    np.savez(z, meta=np.array('{"kind": "hmm", "kind": "ngram"}'), initial=np.array([1.0]),
             transition=np.array([[1.0]]), emission=np.array([[1.0]]))
    with pytest.raises(ValueError, match="key 'kind' appears more than once"):
        load_language(z)
