"""Random n-gram and HMM languages with a temperature and a threshold (the paper's Algorithms 1 and 2, Table 1).

The paper draws the parameters of its formal languages at random with a *temperature*
(higher = more random) and a *threshold* (probabilities below it are pruned, so that the
support is a strict subset and SER is not trivial); the bodies of its Algorithms 1 and 2
were lost in extraction.  mdmt fixes the following parametrization (Appendix E.1).

Every probability vector (a row of a transition matrix, of an emission matrix, or an
initial law) of length m is drawn as

    p_k ∝ U_k^(KAPPA / temperature),   U_1..U_m i.i.d. uniform on (0, 1],   KAPPA = 8,

that is ``softmax(KAPPA * log(U) / temperature)``: tempered softmax of logits whose lower
tail is exponential.  The family is exponential in β = KAPPA / temperature with
sufficient statistic log U, so for fixed U the entropy of every row increases with the
temperature (dH/dβ = -β·Var(log U) <= 0): temperature -> ∞ gives the uniform law,
temperature -> 0 the point mass on the largest U.

Pruning: every entry strictly below ``threshold`` is set to 0 and the row renormalised.
If that would empty the row (every entry below the threshold), the row's largest entry is
kept, so it becomes a point mass: no row is ever empty.  After renormalisation every
non-zero entry is >= ``threshold``.

Initial laws.  An HMM's initial state law is drawn with the same recipe (length S, same
threshold).  An n-gram's initial law is the law of the first n-1 tokens, a vector of
V^(n-1) entries drawn with the same recipe; its threshold is scaled to
``threshold / V^(n-2)`` so that it sits at the same fraction of the uniform value
1/V^(n-1) as ``threshold`` does of 1/V for a transition row.  The order of draws from the
generator is: n-gram transition then initial; HMM transition, emission, then initial.

Why KAPPA = 8.  With this constant the Table 1 presets prune between 5 % and 40 % of the
entries of *every* array (transition, emission and initial; ``pruned_fraction`` reports the
exact figures, ``mdmt language --list`` prints them).  A Gaussian-logit recipe
``softmax(c·z/temperature)`` cannot do that with one constant: the HMM's 8-entry emission
rows at temperature 3.2 and threshold 0.003 are hardly ever pruned unless the n-gram rows
are pruned by more than 40 %.

The HMM preset's support.  Pruning makes the n-gram supports strict subsets of V^L (a
uniformly random sequence of length 16 is almost never in them).  For the 32-state ``hmm``
preset it does not: from any set of reachable hidden states, some successor emits every
token, so every sequence of V^L keeps positive probability (checked exactly, by a subset
construction over the reachable sets of hidden states, for seeds 0-9).  SER is trivial there;
the preset serves TER and timing.

The ``-ter`` presets use threshold 0, as the paper does for TER, so that generative
perplexity stays finite.

An HMM whose SER means something: ``hmm-sparse``.  Not in Table 1; mdmt adds it so that an HMM
panel of Figure 1 has a strict support.  It has the ``hmm`` preset's size and temperature
(32 states, |V| = 8, temperature 3.2) but prunes harder: transitions and the initial law at
threshold 0.06 (about 6 successors per state instead of 24) and emissions at their own
threshold 0.3 (each state emits about 1.3 of the 8 tokens).  Sparse emissions alone are not
enough -- with the ``hmm`` preset's dense transitions every token stays reachable from every
set of states -- but together they make the support a small subset of V^L: a uniformly random
sequence of length 16 lies in it with probability of a few percent (tested), and the oracle
sampler's SER falls with the number of steps N as the n-grams' does.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .hmm import HMM
from .ngram import NGram, check_order
from mdmt.runtime.resources import check_memory
from mdmt.runtime.validation import as_rng, positive_int
from mdmt.constructions.types import Language, Seed

KAPPA = 8.0
"""Constant of the tempered recipe: a row is ``softmax(KAPPA * log(U) / temperature)``."""


def _check_temperature_threshold(temperature, threshold) -> tuple[float, float]:
    try:
        t = float(temperature)
    except (TypeError, ValueError):
        raise ValueError(f"temperature must be a positive number, got {temperature!r}") from None
    if not np.isfinite(t) or t <= 0:
        raise ValueError(f"temperature must be a positive number, got {temperature!r}")
    try:
        th = float(threshold)
    except (TypeError, ValueError):
        raise ValueError(f"threshold must be in [0, 1), got {threshold!r}") from None
    if not np.isfinite(th) or not 0 <= th < 1:
        raise ValueError(f"threshold must be in [0, 1), got {threshold!r}")
    return t, th


def random_rows(rng: np.random.Generator, rows: int, size: int, temperature: float, threshold: float) -> np.ndarray:
    """``rows`` probability vectors of length ``size`` drawn by the tempered recipe, pruned at ``threshold``."""
    temperature, threshold = _check_temperature_threshold(temperature, threshold)
    check_memory(f"a random table of {rows} x {size} probabilities", 8 * 4 * rows * size, "use a smaller language")
    u = 1.0 - rng.random((rows, size))  # uniform on (0, 1]: log is finite
    z = np.log(u) * (KAPPA / temperature)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    keep = p >= threshold
    keep[np.arange(rows), p.argmax(axis=1)] = True  # a row whose entries all fall below stays a point mass
    p = np.where(keep, p, 0.0)
    return p / p.sum(axis=1, keepdims=True)


def random_ngram(n: int, vocab_size: int, temperature: float, threshold: float, seed: Seed = None) -> NGram:
    """Algorithm 1: a random n-gram over ``vocab_size`` tokens (see the module docstring for the recipe)."""
    n = check_order(n)
    V = positive_int("vocab_size", vocab_size)
    temperature, threshold = _check_temperature_threshold(temperature, threshold)
    rng = as_rng(seed)
    transition = random_rows(rng, V ** (n - 1), V, temperature, threshold)
    initial = random_rows(rng, 1, V ** (n - 1), temperature, threshold / V ** (n - 2))[0]
    return NGram(n, initial, transition)


def random_hmm(n_states: int, vocab_size: int, temperature: float, threshold: float, seed: Seed = None,
               emission_threshold: float | None = None) -> HMM:
    """Algorithm 2: a random HMM with ``n_states`` hidden states over ``vocab_size`` tokens.

    ``emission_threshold`` (default: ``threshold``) prunes the emission rows on their own.
    """
    S = positive_int("n_states", n_states)
    V = positive_int("vocab_size", vocab_size)
    temperature, threshold = _check_temperature_threshold(temperature, threshold)
    e_threshold = threshold if emission_threshold is None else _check_temperature_threshold(temperature,
                                                                                           emission_threshold)[1]
    rng = as_rng(seed)
    transmat = random_rows(rng, S, S, temperature, threshold)
    emission = random_rows(rng, S, V, temperature, e_threshold)
    start = random_rows(rng, 1, S, temperature, threshold)[0]
    return HMM(start, transmat, emission)


@dataclass(frozen=True)
class Preset:
    """Parameters of one Table 1 language (``n`` for n-grams, ``n_states`` for HMMs; 0 when unused)."""

    name: str
    kind: str  # "ngram" or "hmm"
    vocab_size: int
    temperature: float
    threshold: float
    n: int = 0
    n_states: int = 0
    emission_threshold: float | None = None  # HMMs: a threshold of their own for the emissions (None: ``threshold``)

    def build(self, seed=0):
        """The language drawn with ``seed``."""
        if self.kind == "ngram":
            return random_ngram(self.n, self.vocab_size, self.temperature, self.threshold, seed)
        return random_hmm(self.n_states, self.vocab_size, self.temperature, self.threshold, seed,
                          emission_threshold=self.emission_threshold)

    def as_dict(self) -> dict:
        return asdict(self)


def _table1() -> dict[str, Preset]:
    base = [
        Preset("2gram", "ngram", 8, 2.0, 0.008, n=2),
        Preset("3gram", "ngram", 8, 2.0, 0.008, n=3),
        Preset("4gram", "ngram", 8, 2.0, 0.005, n=4),
        Preset("hmm", "hmm", 8, 3.2, 0.003, n_states=32),
    ]
    out = {p.name: p for p in base}
    for p in base:  # threshold 0 for TER: generative perplexity stays finite
        out[p.name + "-ter"] = Preset(p.name + "-ter", p.kind, p.vocab_size, p.temperature, 0.0, p.n, p.n_states)
    out["hmm-sparse"] = Preset("hmm-sparse", "hmm", 8, 3.2, 0.06, n_states=32, emission_threshold=0.3)
    return out


PRESETS: dict[str, Preset] = _table1()
"""The languages by name: Table 1's ``2gram``, ``3gram``, ``4gram``, ``hmm``, their ``-ter`` variants, and
``hmm-sparse`` (an HMM with a strict support, module docstring)."""


def preset(name: str, seed: Seed = 0) -> Language:
    """The Table 1 language ``name`` (a key of ``PRESETS``) drawn with ``seed``."""
    if not isinstance(name, str) or name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; valid presets: {', '.join(PRESETS)}")
    return PRESETS[name].build(seed)


def pruned_fraction(language) -> dict[str, float]:
    """Fraction of entries that are exactly 0 in each parameter array of a language.

    Keys follow the file format (:mod:`mdmt.constructions.languages.io`): ``initial`` and ``transition``
    for an n-gram; ``initial``, ``transition`` and ``emission`` for an HMM.
    """
    if isinstance(language, NGram):
        arrays = {"initial": language.initial_, "transition": language.transition_}
    elif isinstance(language, HMM):
        arrays = {"initial": language.startprob_, "transition": language.transmat_, "emission": language.emissionprob_}
    else:
        raise ValueError(f"expected an HMM or an NGram, got {type(language).__name__}")
    return {k: float(np.mean(v == 0)) for k, v in arrays.items()}
