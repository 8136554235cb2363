"""Every malformed language or sequence is rejected with a message naming the offending value."""

import numpy as np
import pytest

from mdmt.constructions.languages import HMM, NGram
from mdmt.runtime.validation import MASK

GOOD_PI = [0.5, 0.5]
GOOD_A = [[0.9, 0.1], [0.2, 0.8]]
GOOD_B = [[0.7, 0.3], [0.1, 0.9]]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(transmat=[[0.9, 0.1], [0.2, 0.7]]), r"transmat row 1 sums to 0\.9, not 1"),
        (dict(emissionprob=[[0.7, 0.3], [-0.1, 1.1]]), r"emissionprob\[1, 0\] is a negative probability \(-0\.1\)"),
        (dict(startprob=[np.nan, 1.0]), r"startprob\[0\] is not finite"),
        (dict(startprob=[0.5, 0.6]), r"startprob sums to 1\.1, not 1"),
        (dict(transmat=[[1.0]]), r"transmat must have shape \(2, 2\)"),
        (dict(emissionprob=[[1.0, 0.0]]), r"emissionprob must have 2 rows"),
        (dict(startprob=[[0.5, 0.5]]), r"startprob must have 1 dimension"),
        (dict(transmat=[[np.inf, 0.0], [0.5, 0.5]]), r"transmat\[0, 0\] is not finite"),
    ],
)
def test_hmm_rejects_malformed_parameters(kwargs, message):
    params = dict(startprob=GOOD_PI, transmat=GOOD_A, emissionprob=GOOD_B)
    params.update(kwargs)
    with pytest.raises(ValueError, match=message):
        HMM(**params)


def test_hmm_tolerance_is_respected():
    HMM([0.5, 0.5 + 5e-7], GOOD_A, GOOD_B)  # within atol=1e-6
    with pytest.raises(ValueError, match="sums to"):
        HMM([0.5, 0.5 + 5e-7], GOOD_A, GOOD_B, atol=1e-9)


@pytest.mark.parametrize(
    "X, message",
    [
        ([[0, 2]], r"sequence 0 position 1: token 2 is outside the vocabulary \(allowed 0\.\.1 or -1 \(mask\)\)"),
        ([[0, 1], [-2, 0]], r"sequence 1 position 0: token -2 is outside the vocabulary"),
        ([[0, 0.5]], r"sequence 0 position 1: token 0\.5 is not an integer"),
        ([[[0]]], r"must have shape \(n, L\) or \(L,\)"),
    ],
)
def test_tokens_outside_the_vocabulary_are_rejected(X, message):
    hmm = HMM(GOOD_PI, GOOD_A, GOOD_B)
    with pytest.raises(ValueError, match=message):
        hmm.log_likelihood(X)


def test_mask_only_where_allowed():
    hmm = HMM(GOOD_PI, GOOD_A, GOOD_B)
    assert np.isfinite(hmm.log_likelihood([[MASK, 1]])).all()
    with pytest.raises(ValueError, match="allowed 0..1\\)"):
        hmm.check_tokens([[MASK, 1]], allow_mask=False)


def test_ngram_rejects_malformed_parameters():
    with pytest.raises(ValueError, match=r"n must be >= 2, got 1"):
        NGram(1, [1.0], [[1.0]])
    with pytest.raises(ValueError, match=r"transition must have V\*\*\(n-1\) = 2\*\*2 = 4 rows"):
        NGram(3, np.full(4, 0.25), [[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(ValueError, match=r"initial must be the law of the first n-1 tokens"):
        NGram(2, [0.2, 0.3, 0.5], [[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(ValueError, match=r"transition row 1 sums to 0\.5"):
        NGram(2, [0.5, 0.5], [[0.5, 0.5], [0.25, 0.25]])


def test_sampling_arguments_are_checked():
    hmm = HMM(GOOD_PI, GOOD_A, GOOD_B)
    with pytest.raises(ValueError, match="length must be >= 1, got 0"):
        hmm.sample_sequences(3, 0)
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        hmm.sample_sequences(3, 4, seed=-1)
    assert hmm.sample_sequences(0, 4).shape == (0, 4)


@pytest.mark.parametrize("value, message", [
    ([0.5, "0.5"], r"p\[1\] is a str \('0.5'\), not a number"),
    ([np.True_, 0.0], r"p\[0\] is a boolean \(np.True_\), not a number"),
    ((0.5, 0.5, None), r"p\[2\] is a NoneType"),
    ("0.5 0.5", "p must be an array of numbers, got str"),
    (None, "p must be an array of numbers, got NoneType"),
    (np.array(["0.5", "0.5"]), "p must be an array of numbers, got an array of dtype <U3"),
    (np.array([0.5, 0.5], dtype=object), "got an array of dtype object"),
    ([1e400, 0.0], r"p\[0\] is not finite \(inf\)"),
    ([2**1100, 0], r"p must be an array of numbers \(int too large to convert to float\)"),
    ([[0.5, 0.5]], r"p\[0\] is a list, but p must have 1 dimension"),
    ([], r"p must not be empty"),
    ([1e308, 1e308], r"p\[0\] = 1e\+308 is not a probability \(greater than 1\)"),  # its sum would overflow
])
def test_probabilities_must_be_numbers(value, message):
    """NumPy would turn strings and booleans into numbers silently; mdmt names the entry instead."""
    from mdmt.runtime.validation import probability_array

    with pytest.raises(ValueError, match=message):
        probability_array("p", value, 1)
    assert probability_array("p", [np.float32(0.5), np.int64(0), 0.5], 1).tolist() == [0.5, 0.0, 0.5]


def _limits():
    """(dtype, value) at each end of every integer dtype that lies outside a small vocabulary."""
    for dt in (np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32, np.int64):
        info = np.iinfo(dt)
        yield dt, int(info.max)
        if info.min < MASK:
            yield dt, int(info.min)
    yield np.uint64, 2**63  # the smallest uint64 that int64 reads as negative


@pytest.mark.parametrize("language", ["hmm", "2gram", "3gram"])
@pytest.mark.parametrize("method", ["log_likelihood", "in_support", "posterior_marginals"])
@pytest.mark.parametrize("dtype, token", list(_limits()), ids=lambda v: getattr(v, "__name__", str(v)))
def test_token_ids_at_the_limits_of_every_integer_dtype_are_refused(language, method, dtype, token):
    """2**64 - 1 as uint64 used to wrap to the mask (-1): the value of a masked position came back."""
    from mdmt.constructions.languages import preset

    q = preset(language)
    X = np.array([[0, token, 1]], dtype=dtype)
    with pytest.raises(ValueError, match=rf"^sequence 0 position 1: token {token} is outside the vocabulary"):
        getattr(q, method)(X)


@pytest.mark.parametrize("X, token", [([[0, 2**64 - 1]], 2**64 - 1), ([[0, 2**70]], 2**70), ([[0, -2**70]], -2**70),
                                      (np.array([[0.0, 2.0**64]]), 2**64), (np.array([[0.0, -2.0**63]]), -2**63)])
def test_python_integers_and_floats_beyond_int64_are_refused(X, token):
    from mdmt.constructions.languages import preset

    with pytest.raises(ValueError, match=rf"^sequence 0 position 1: token {token} is outside the vocabulary"):
        preset("2gram").log_likelihood(X)


def test_tokens_of_every_integer_dtype_inside_the_vocabulary_are_read():
    from mdmt.constructions.languages import preset

    q = preset("2gram")
    expected = q.log_likelihood(np.array([[0, MASK, 1]]))
    for dt in (np.int8, np.int16, np.int32, np.int64):
        assert q.log_likelihood(np.array([[0, MASK, 1]], dtype=dt)) == expected
    expected = q.log_likelihood(np.array([[0, 2, 1]]))
    for dt in (np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.float32):
        assert q.log_likelihood(np.array([[0, 2, 1]], dtype=dt)) == expected


def test_regular_file_refuses_folders_fifos_and_devices_by_kind(tmp_path):
    """Checked from the file's status, so a FIFO is never opened (opening one blocks until a writer comes)."""
    import os

    from mdmt.runtime.validation import regular_file

    fifo, f = tmp_path / "fifo", tmp_path / "f.txt"
    os.mkfifo(fifo)
    f.write_text("0 1\n")
    assert regular_file(f, "--x f.txt") == f
    for path, kind in ((fifo, "a FIFO"), (tmp_path, "a folder"), ("/dev/zero", "a character device")):
        with pytest.raises(ValueError, match=rf"^--x y is {kind}, not a regular file$"):
            regular_file(path, "--x y")
    with pytest.raises(FileNotFoundError):
        regular_file(tmp_path / "missing", "--x missing")
