"""Exact inference on HMMs and n-grams (Section 4.1; the oracle denoiser of Section 3.2) against brute-force enumeration."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mdmt.constructions.languages import HMM, NGram
from mdmt.runtime.numba_cache import read_only
from mdmt.runtime.validation import MASK
from mdmt.constructions.languages import inference, ngram_inference
from tests.reference import all_sequences, hmm_joint, masked_marginal, ngram_joint, posterior_by_enumeration


def _random_stochastic(rng, shape, zero_frac):
    a = rng.random(shape)
    a[rng.random(shape) < zero_frac] = 0.0
    a[..., 0] += (a.sum(axis=-1) == 0)  # never an empty row
    return a / a.sum(axis=-1, keepdims=True)


@st.composite
def small_hmms(draw, max_states=3, max_symbols=3):
    seed = draw(st.integers(0, 2**32 - 1))
    S = draw(st.integers(1, max_states))
    V = draw(st.integers(1, max_symbols))
    zero = draw(st.sampled_from([0.0, 0.3, 0.6]))
    rng = np.random.default_rng(seed)
    return HMM(_random_stochastic(rng, S, zero), _random_stochastic(rng, (S, S), zero), _random_stochastic(rng, (S, V), zero))


def _both_paths(hmm):
    """The dense (BLAS block) and the sparse (CSR) kernels of one HMM."""
    p = hmm._kernel_params
    return [dataclasses.replace(p, sparse=False), dataclasses.replace(p, sparse=True)]


@given(small_hmms(), st.integers(1, 4))
def test_likelihood_and_support_equal_brute_force(hmm, L):
    X = all_sequences(hmm.n_symbols, L)
    q = hmm_joint(hmm.startprob_, hmm.transmat_, hmm.emissionprob_, L)
    assert q.sum() == pytest.approx(1.0, abs=1e-12)
    for params in _both_paths(hmm):
        ll = inference.log_likelihood(params, X)
        with np.errstate(divide="ignore"):
            np.testing.assert_allclose(ll, np.log(q), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(hmm.in_support(X), q > 0)
    np.testing.assert_array_equal(np.isfinite(hmm.log_likelihood(X)), q > 0)


@given(small_hmms(), st.integers(2, 4), st.integers(0, 2**32 - 1))
def test_partial_marginals_and_oracle_denoiser_equal_brute_force(hmm, L, seed):
    rng = np.random.default_rng(seed)
    X = all_sequences(hmm.n_symbols, L)
    q = hmm_joint(hmm.startprob_, hmm.transmat_, hmm.emissionprob_, L)
    partial = X[rng.integers(len(X), size=6)].copy()
    partial[rng.random(partial.shape) < 0.5] = MASK
    ref = np.array([masked_marginal(X, q, x) for x in partial])
    for params in _both_paths(hmm):
        with np.errstate(divide="ignore"):
            np.testing.assert_allclose(inference.log_likelihood(params, partial), np.log(ref), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(hmm.in_support(partial), ref > 0)
    live = partial[ref > 0]
    if len(live) == 0:
        return
    for params in _both_paths(hmm):
        post = inference.posterior_marginals(params, live)
        for x, P in zip(live, post):
            z = masked_marginal(X, q, x)
            for i in range(L):
                if x[i] == MASK:
                    cond = []
                    for v in range(hmm.n_symbols):
                        y = x.copy()
                        y[i] = v
                        cond.append(masked_marginal(X, q, y) / z)
                    np.testing.assert_allclose(P[i], cond, rtol=1e-9, atol=1e-12)
                else:
                    np.testing.assert_array_equal(P[i], np.eye(hmm.n_symbols)[x[i]])


def test_posterior_rejects_zero_probability_context():
    hmm = HMM([1.0, 0.0], [[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="sequence 1 has probability 0"):
        hmm.posterior_marginals([[0, MASK], [1, MASK]])


@given(small_hmms(max_states=3, max_symbols=2), st.integers(0, 2**16))
def test_sampling_matches_the_law(hmm, seed):
    L = 3
    X = all_sequences(hmm.n_symbols, L)
    q = hmm_joint(hmm.startprob_, hmm.transmat_, hmm.emissionprob_, L)
    n = 4000
    smp = hmm.sample_sequences(n, L, seed=seed)
    assert hmm.in_support(smp).all()
    idx = (smp * hmm.n_symbols ** np.arange(L - 1, -1, -1)).sum(axis=1)
    counts = np.bincount(idx, minlength=len(q))
    # Every cell within 5 binomial standard deviations (plus one count of slack).
    sd = np.sqrt(np.clip(n * q * (1 - q), 0, None))  # q may exceed 1 by a rounding error (one symbol)
    assert np.all(np.abs(counts - n * q) <= 5 * sd + 1)


def test_sampling_is_deterministic_and_chunk_independent():
    rng = np.random.default_rng(3)
    hmm = HMM(_random_stochastic(rng, 5, 0.2), _random_stochastic(rng, (5, 5), 0.2), _random_stochastic(rng, (5, 4), 0.2))
    a = hmm.sample_sequences(50, 30, seed=11)
    b = hmm.sample_sequences(50, 30, seed=11)
    np.testing.assert_array_equal(a, b)
    c = inference.sample(hmm._kernel_params, 50, 30, np.random.default_rng(11), chunk=7)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, hmm.sample_sequences(50, 30, seed=12))


@st.composite
def small_ngrams(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(2, 3))
    V = draw(st.integers(1, 3))
    zero = draw(st.sampled_from([0.0, 0.4]))
    rng = np.random.default_rng(seed)
    return NGram(n, _random_stochastic(rng, V ** (n - 1), zero), _random_stochastic(rng, (V ** (n - 1), V), zero))


def _ngram_brute(ng: NGram, X: np.ndarray) -> np.ndarray:
    """q(x) straight from the n-gram's definition (initial law times conditionals)."""
    V, k = ng.n_symbols, ng.n - 1
    L = X.shape[1]
    out = np.empty(len(X))
    for r, x in enumerate(X):
        if L <= k:
            marg = ng.initial_.reshape((V,) * k).sum(axis=tuple(range(L, k)))
            out[r] = marg[tuple(x)]
            continue
        p = ng.initial_[int(np.ravel_multi_index(tuple(x[:k]), (V,) * k))]
        for i in range(k, L):
            ctx = int(np.ravel_multi_index(tuple(x[i - k:i]), (V,) * k))
            p *= ng.transition_[ctx, x[i]]
        out[r] = p
    return out


@given(small_ngrams(), st.integers(1, 5))
def test_ngram_to_hmm_preserves_the_law(ng, L):
    X = all_sequences(ng.n_symbols, L)
    ref = _ngram_brute(ng, X)
    assert ref.sum() == pytest.approx(1.0)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(ng.log_likelihood(X), np.log(ref), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(ng.in_support(X), ref > 0)
    H = -(ref[ref > 0] * np.log(ref[ref > 0])).sum()
    assert ng.sequence_entropy(L) == pytest.approx(H, rel=1e-10, abs=1e-12)


def test_long_sequences_do_not_underflow():
    """L = 4096: log q(x) is about -8000 nats (q(x) ~ 1e-3500), far below float64's range."""
    rng = np.random.default_rng(0)
    V = 8
    ng = NGram(3, _random_stochastic(rng, V**2, 0.0), _random_stochastic(rng, (V**2, V), 0.0))
    X = ng.sample_sequences(4, 4096, seed=1)
    ref = np.array([np.log(ng.initial_[x[0] * V + x[1]]) + sum(np.log(ng.transition_[x[i - 2] * V + x[i - 1], x[i]]) for i in range(2, 4096)) for x in X])
    assert np.all(ref < -3000)
    np.testing.assert_allclose(ng.log_likelihood(X), ref, rtol=1e-12)
    assert ng.in_support(X).all()
    Xm = X.copy()
    Xm[:, 1::3] = MASK
    post = ng.posterior_marginals(Xm)
    assert np.all(np.isfinite(post))
    np.testing.assert_allclose(post.sum(axis=2), 1.0, atol=1e-12)
    hmm = HMM(_random_stochastic(rng, 32, 0.3), _random_stochastic(rng, (32, 32), 0.3), _random_stochastic(rng, (32, V), 0.3))
    Y = hmm.sample_sequences(3, 4096, seed=2)
    ll = hmm.log_likelihood(Y)
    assert np.all(np.isfinite(ll)) and np.all(ll < -1000)
    Y[:, ::2] = MASK
    assert np.all(np.isfinite(hmm.posterior_marginals(Y)))


def test_support_large_state_space_without_byte_table():
    """The multi-word reachability kernel (no byte table) agrees with the table kernel."""
    rng = np.random.default_rng(5)
    S, V = 130, 3
    hmm = HMM(_random_stochastic(rng, S, 0.5), _random_stochastic(rng, (S, S), 0.97), _random_stochastic(rng, (S, V), 0.5))
    X = rng.integers(0, V, size=(300, 12))
    p = hmm._kernel_params
    no_table = dataclasses.replace(p, succ_table=read_only(np.zeros((0, 256, p.start_bits.shape[0]), dtype=np.uint64)))
    np.testing.assert_array_equal(inference.support(p, X), inference.support(no_table, X))
    np.testing.assert_array_equal(inference.support(p, X), np.isfinite(hmm.log_likelihood(X)))


@st.composite
def ngrams_up_to_4(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(2, 4))
    V = draw(st.integers(1, 3))
    zero = draw(st.sampled_from([0.0, 0.3, 0.6]))
    rng = np.random.default_rng(seed)
    C = V ** (n - 1)
    return NGram(n, _random_stochastic(rng, C, zero), _random_stochastic(rng, (C, V), zero))


@given(ngrams_up_to_4(), st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_ngram_tables_path_equals_the_hmm_path_and_brute_force(ng, L, seed):
    """The direct n-gram routines (frontier of contexts) against the equivalent HMM and against enumeration.

    Three code paths: ngram_inference (contexts), inference on to_hmm() (window states) and the joint
    table of tests/reference.py (initial law times conditionals), on partial sequences with L < n too.
    """
    rng = np.random.default_rng(seed)
    X = all_sequences(ng.n_symbols, L)
    q = ngram_joint(ng, L)
    partial = X[rng.integers(len(X), size=8)].copy()
    partial[rng.random(partial.shape) < 0.5] = MASK
    partial[0] = MASK  # the fully masked sequence: q(x_U) = 1
    ref = np.array([masked_marginal(X, q, x) for x in partial])
    hmm = ng.to_hmm()
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(ng.log_likelihood(partial), np.log(ref), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(ng.log_likelihood(partial), hmm.log_likelihood(partial), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(ng.log_likelihood(X), np.log(q), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(ng.in_support(partial), ref > 0)
    np.testing.assert_array_equal(ng.in_support(X), q > 0)
    post = ng.posterior_marginals(partial, off_support="uniform")
    np.testing.assert_allclose(post, hmm.posterior_marginals(partial, off_support="uniform"), rtol=1e-9, atol=1e-12)
    for x, P, z in zip(partial, post, ref):
        if z > 0:
            np.testing.assert_allclose(P, posterior_by_enumeration(X, q, x), rtol=1e-9, atol=1e-12)
    if np.any(ref == 0):
        with pytest.raises(ValueError, match="has probability 0 under the language"):
            ng.posterior_marginals(partial)


@given(ngrams_up_to_4(), st.integers(1, 7), st.integers(0, 2**16))
def test_ngram_sampling_draws_the_hmm_paths_sequences(ng, L, seed):
    """Same seed, same sequences bit for bit: stored data sets stay reproducible whichever path drew them."""
    np.testing.assert_array_equal(ng.sample_sequences(40, L, seed=seed), ng.to_hmm().sample_sequences(40, L, seed=seed))
    a = ngram_inference.sample(ng._tables, 40, L, np.random.default_rng(seed), chunk=3)
    np.testing.assert_array_equal(a, ng.sample_sequences(40, L, seed=seed))


def test_a_large_ngram_is_scored_without_its_hmm(monkeypatch):
    """A 4-gram over 32 symbols: 32768 contexts, an equivalent HMM of 48 GiB; its own tables are 8 MiB.

    Under a 1 GiB limit the HMM form is refused, and every routine still works: the scores equal the
    chain rule summed with NumPy, the posteriors of a masked position the normalised conditionals.
    """
    monkeypatch.setenv("MDMT_MAX_MEMORY", "1G")
    rng = np.random.default_rng(0)
    V, k = 32, 3
    ng = NGram(4, _random_stochastic(rng, V**k, 0.0), _random_stochastic(rng, (V**k, V), 0.5))
    with pytest.raises(ValueError, match="the HMM form of this 4-gram .* needs 48.0 GiB of memory, more than the limit"):
        ng.to_hmm()
    X = ng.sample_sequences(20, 300, seed=1)

    def context(x, i):  # big-endian index of (x_{i-3}, x_{i-2}, x_{i-1})
        return x[..., i - 3] * V * V + x[..., i - 2] * V + x[..., i - 1]

    chain = np.log(ng.initial_[context(X, 3)]) + sum(np.log(ng.transition_[context(X, i), X[:, i]]) for i in range(3, 300))
    np.testing.assert_allclose(ng.log_likelihood(X), chain, rtol=1e-12)
    assert ng.in_support(X).all()
    Y = X.copy()
    Y[:, 150] = MASK  # q(x_150 = v | the rest) ∝ prod_{i=150..153} P(x_i | x_{i-3..i-1}) with x_150 = v
    post = ng.posterior_marginals(Y[:2])
    for r in range(2):
        w = np.empty(V)
        for v in range(V):
            x = X[r].copy()
            x[150] = v
            w[v] = np.prod([ng.transition_[context(x, i), x[i]] for i in range(150, 154)])
        np.testing.assert_allclose(post[r, 150], w / w.sum(), rtol=1e-10, atol=1e-15)
        np.testing.assert_array_equal(post[r, 149], np.eye(V)[X[r, 149]])


def test_zero_length_sequences_have_probability_one():
    """L = 0: the empty product. Every routine answers without reaching a kernel (which reads position 0)."""
    rng = np.random.default_rng(1)
    hmm = HMM(_random_stochastic(rng, 3, 0.2), _random_stochastic(rng, (3, 3), 0.2), _random_stochastic(rng, (3, 2), 0.2))
    ng = NGram(3, _random_stochastic(rng, 4, 0.2), _random_stochastic(rng, (4, 2), 0.2))
    for lang in (hmm, ng):
        for n in (0, 1, 3):
            E = np.zeros((n, 0), dtype=np.int64)
            np.testing.assert_array_equal(lang.log_likelihood(E), np.zeros(n))
            np.testing.assert_array_equal(lang.in_support(E), np.ones(n, dtype=bool))
            assert lang.posterior_marginals(E).shape == (n, 0, 2)
        np.testing.assert_array_equal(lang.log_likelihood([]), [0.0])  # one empty sequence
        assert lang.log_likelihood(np.zeros((0, 5), dtype=np.int64)).shape == (0,)
        assert lang.posterior_marginals(np.zeros((0, 5), dtype=np.int64)).shape == (0, 5, 2)
    for params in _both_paths(hmm):
        E = np.zeros((2, 0), dtype=np.int64)
        np.testing.assert_array_equal(inference.log_likelihood(params, E), [0.0, 0.0])
        np.testing.assert_array_equal(inference.support(params, E), [True, True])
        assert inference.posterior_marginals(params, E).shape == (2, 0, 2)
        assert inference.sample(params, 2, 0, np.random.default_rng(0)).shape == (2, 0)
    assert ngram_inference.sample(ng._tables, 2, 0, np.random.default_rng(0)).shape == (2, 0)


# ----------------------------------------------------------------------------- n-gram support and scores, every path
def _dense_ngram_reference(ng: NGram, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log q(x_U), q(x_U) > 0) of each row by the forward recursion on all C contexts, in NumPy, all rows at once.

    Context (a, s) (oldest token a, suffix s) moves to (s, b) with probability T[(a, s), b]: the
    recursion sums over a with the tables reshaped to (V, Q, V); no frontier, no bitset, no numba.
    The support is propagated as booleans (a context is reachable if some reachable context moves to
    it with positive probability), apart from the weights.
    """
    V, C, k = ng.n_symbols, ng.n_contexts, ng.n - 1
    Q = C // V
    T3 = ng.transition_.reshape(V, Q, V)
    moves = T3 > 0
    X = np.asarray(X)
    R, L = X.shape
    digits = (np.arange(C)[:, None] // V ** np.arange(k - 1, -1, -1)) % V  # the k tokens of each context
    ok = np.ones((R, C), dtype=bool)
    for j in range(min(L, k)):
        ok &= (X[:, j, None] < 0) | (digits[None, :, j] == X[:, j, None])
    alpha = np.where(ok, ng.initial_[None, :], 0.0)
    reach = alpha > 0
    ll = np.zeros(R)
    for t in range(k, max(L, k) + 1):  # normalise; then positions k..L-1 (none when L <= k: the initial marginal)
        s = alpha.sum(axis=1)
        live = s > 0
        ll[live] += np.log(s[live])
        alpha[live] /= s[live, None]
        if t >= L:
            break
        alpha = np.einsum("raq,aqb->rqb", alpha.reshape(R, V, Q), T3).reshape(R, C)
        reach = (reach.reshape(R, V, Q)[:, :, :, None] & moves[None]).any(axis=1).reshape(R, C)
        seen = X[:, t, None] >= 0
        agree = digits[None, :, -1] == X[:, t, None]
        alpha = np.where(seen & ~agree, 0.0, alpha)
        reach &= ~seen | agree
    return np.where(alpha.sum(axis=1) > 0, ll, -np.inf), reach.any(axis=1)


def _ngram_with_zeros(n: int, V: int, seed: int, zero: float = 0.4) -> NGram:
    rng = np.random.default_rng(seed)
    C = V ** (n - 1)
    return NGram(n, _random_stochastic(rng, C, zero), _random_stochastic(rng, (C, V), zero))


def _masked_batches(ng: NGram, L: int, seed: int) -> np.ndarray:
    """Sampled sequences under every masking pattern the kernels branch on, and sequences off the support.

    Mask rates 0 (fully revealed) to 1 (all masked), the first n-1 positions masked, runs of masks,
    and uniformly random tokens (mostly unreachable under a pruned n-gram), fully revealed and half masked.
    """
    rng = np.random.default_rng(seed)
    X = ng.sample_sequences(12, L, seed=seed)
    rows = []
    for rate in (0.0, 0.05, 0.3, 0.5, 0.9, 1.0):
        M = X.copy()
        M[rng.random(M.shape) < rate] = MASK
        rows.append(M)
    first = X.copy()
    first[:, : ng.n - 1] = MASK
    runs = X.copy()
    runs[:, (np.arange(L) // 3) % 2 == 1] = MASK
    noise = rng.integers(0, ng.n_symbols, size=(12, L))
    noise_masked = noise.copy()
    noise_masked[rng.random(noise.shape) < 0.5] = MASK
    return np.concatenate(rows + [first, runs, noise, noise_masked])


_ORDERS_AND_SIZES = [(2, 2), (2, 3), (2, 5), (2, 8), (2, 16), (3, 2), (3, 3), (3, 4), (3, 6), (3, 8), (3, 16),
                     (4, 2), (4, 3), (4, 4), (4, 8), (4, 10), (4, 16)]


@pytest.mark.parametrize("n,V", _ORDERS_AND_SIZES)
def test_ngram_support_and_score_equal_the_hmm_and_a_dense_recursion(n, V):
    """in_support exactly, score to 1e-12, against the equivalent HMM (C <= 1024) and a NumPy forward pass.

    Covers the one-word reachability kernel (C <= 64 in one block), the list and bitset kernels with
    their switches, padded bit layouts (G V < 64), and the score's dense window recursion, on fully
    revealed, partly and fully masked sequences, first positions masked, sequences off the support,
    and lengths below, at and just above n - 1.
    """
    ng = _ngram_with_zeros(n, V, seed=100 * n + V)
    for L in sorted({1, n - 1, n, 40}):
        X = _masked_batches(ng, L, seed=L)
        ll_ref, in_ref = _dense_ngram_reference(ng, X)
        in_support = ng.in_support(X)
        np.testing.assert_array_equal(in_support, in_ref)
        assert in_ref.any() and (L == 1 or not in_ref.all())  # both outcomes are exercised
        ll = ng.log_likelihood(X)
        np.testing.assert_array_equal(np.isfinite(ll), in_ref)
        np.testing.assert_allclose(ll[in_ref], ll_ref[in_ref], rtol=1e-12, atol=1e-12)
        if ng.n_contexts <= 1024:
            hmm = ng.to_hmm()
            np.testing.assert_array_equal(in_support, hmm.in_support(X))
            np.testing.assert_allclose(ll[in_ref], hmm.log_likelihood(X)[in_ref], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n,V", [(2, 8), (3, 4), (3, 6), (3, 16), (4, 4), (4, 8), (4, 16), (2, 70)])
def test_ngram_support_with_every_group_size(n, V):
    """The reachability tables with groups of 8, 4, 2 and 1 contexts (those dividing Q) give the same support.

    G = 8 with V = 16 and V = 70 make blocks of more than one word.
    """
    ng = _ngram_with_zeros(n, V, seed=7 * n + V)
    tables = ng._tables
    Q = ng.n_contexts // V
    X = _masked_batches(ng, 30, seed=V)
    _, ref = _dense_ngram_reference(ng, X)
    sizes = [G for G in (1, 2, 4, 8) if Q % G == 0]
    for G in sizes:
        reach = ngram_inference.ReachTables.build(tables, group=G)
        assert reach.group == G and reach.nw == -(-G * V // 64)
        np.testing.assert_array_equal(ngram_inference.support(tables, X, reach=reach), ref)
    # a cap on the table bytes makes the default choice fall back to smaller groups
    small = ngram_inference.ReachTables.build(tables, max_bytes=0)
    assert small.group == 1
    np.testing.assert_array_equal(ngram_inference.support(tables, X, reach=small), ref)


@pytest.mark.parametrize("n,V,G", [(3, 8, 8), (4, 16, 4), (3, 32, 2), (2, 70, 1), (4, 3, 1), (3, 6, 2), (4, 10, 4), (4, 2, 4)])
def test_reach_tables_choose_the_largest_group_that_fits(n, V, G):
    """G is the largest of 8, 4, 2, 1 dividing Q = V^(n-2) with G V <= 64 (or 1)."""
    assert _ngram_with_zeros(n, V, seed=0)._tables.reach.group == G


def test_reach_tables_reject_a_bad_group():
    tables = _ngram_with_zeros(3, 6, seed=0)._tables  # Q = 6
    for bad in (3, 4, 16, "8"):
        with pytest.raises(ValueError, match="group must be 1, 2, 4 or 8 and divide 6"):
            ngram_inference.ReachTables.build(tables, group=bad)


def test_ngram_score_with_tiny_probabilities():
    """Transition probabilities of 1e-120 and 1e-60: normalisers below 1e-100 and long products of them.

    The chain rule summed in logs (fully revealed) and the equivalent HMM (masked) agree to 1e-12.
    """
    V = 3
    T = np.array([[1 - 1e-120, 1e-120, 0.0], [0.5, 0.0, 0.5], [1e-60, 0.0, 1 - 1e-60]] * V)
    ng = NGram(3, np.full(V * V, 1 / (V * V)), T)
    rng = np.random.default_rng(0)
    X = np.zeros((40, 60), dtype=np.int64)  # walks choosing each allowed next token with probability 1/2
    X[:, :2] = rng.integers(0, V, size=(40, 2))
    for i in range(2, 60):
        for r in range(40):
            X[r, i] = rng.choice(np.flatnonzero(T[X[r, i - 2] * V + X[r, i - 1]] > 0))
    assert ng.in_support(X).all()
    chain = np.array([np.log(ng.initial_[x[0] * V + x[1]])
                      + sum(np.log(T[x[i - 2] * V + x[i - 1], x[i]]) for i in range(2, len(x))) for x in X])
    assert chain.min() < -1000
    np.testing.assert_allclose(ng.log_likelihood(X), chain, rtol=1e-12)
    M = X.copy()
    M[rng.random(M.shape) < 0.3] = MASK
    np.testing.assert_allclose(ng.log_likelihood(M), ng.to_hmm().log_likelihood(M), rtol=1e-12)
    np.testing.assert_array_equal(ng.in_support(M), np.isfinite(ng.to_hmm().log_likelihood(M)))


def test_lowest_set_bit_of_a_word():
    """The de Bruijn lowest-bit index of the support kernels equals Python's (w & -w).bit_length() - 1."""
    from mdmt.constructions.languages.ngram_inference import trailing_zeros

    rng = np.random.default_rng(0)
    words = [1 << i for i in range(64)] + [int(w) | 1 << int(s) for w, s in
                                           zip(rng.integers(0, 2**63, 500), rng.integers(0, 64, 500))]
    for w in words:
        assert trailing_zeros(np.uint64(w)) == (w & -w).bit_length() - 1, hex(w)
