"""Random n-gram and HMM languages with temperature and threshold (the paper's Algorithms 1 and 2, Table 1).

The paper's algorithm bodies were lost in extraction; mdmt fixes this parametrization:

* every probability vector (a row of a transition, emission or initial law) is
  ``softmax(KAPPA * z / temperature)`` with z i.i.d. standard normal and ``KAPPA = 4``:
  a higher temperature flattens the logits, so the language is more random;
* then every entry below ``threshold`` is set to 0 and the row renormalised.  If
  that would empty a row, its largest entry is kept (so no row is ever empty).

With ``KAPPA = 4`` the Table 1 presets really prune: about a quarter of the
n-gram transition entries and a tenth of the HMM transition entries are 0
(``pruned_fraction`` reports the exact figures; ``mdmt language --list`` prints
them).  The ``-ter`` presets use threshold 0, as the paper does for TER, so that
generative perplexity stays finite.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .hmm import HMM
from .ngram import NGram
from .validation import as_rng, positive_int

KAPPA = 4.0


def random_rows(rng: np.random.Generator, rows: int, size: int, temperature: float, threshold: float) -> np.ndarray:
    """``rows`` probability vectors of length ``size``: tempered softmax of Gaussian logits, pruned at ``threshold``."""
    if not np.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"temperature must be a positive number, got {temperature!r}")
    if not np.isfinite(threshold) or not 0 <= threshold < 1:
        raise ValueError(f"threshold must be in [0, 1), got {threshold!r}")
    z = rng.standard_normal((rows, size)) * (KAPPA / temperature)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    keep = p >= threshold
    keep[np.arange(rows), p.argmax(axis=1)] = True  # never an empty row
    p = np.where(keep, p, 0.0)
    return p / p.sum(axis=1, keepdims=True)


def random_ngram(n: int, vocab_size: int, temperature: float, threshold: float, seed=None) -> NGram:
    """Algorithm 1: an n-gram over ``vocab_size`` tokens; the law of the first n-1 tokens is drawn the same way."""
    n = positive_int("n", n, minimum=2)
    V = positive_int("vocab_size", vocab_size)
    rng = as_rng(seed)
    transition = random_rows(rng, V ** (n - 1), V, temperature, threshold)
    # The initial law has V**(n-1) entries: its threshold is scaled so that it sits at the same
    # fraction of the uniform value 1/V**(n-1) as `threshold` does of 1/V for a transition row.
    initial = random_rows(rng, 1, V ** (n - 1), temperature, threshold / V ** (n - 2))[0]
    return NGram(n, initial, transition)


def random_hmm(n_states: int, vocab_size: int, temperature: float, threshold: float, seed=None) -> HMM:
    """Algorithm 2: an HMM with ``n_states`` hidden states over ``vocab_size`` tokens."""
    S = positive_int("n_states", n_states)
    V = positive_int("vocab_size", vocab_size)
    rng = as_rng(seed)
    transmat = random_rows(rng, S, S, temperature, threshold)
    emission = random_rows(rng, S, V, temperature, threshold)
    start = random_rows(rng, 1, S, temperature, threshold)[0]
    return HMM(start, transmat, emission)


@dataclass(frozen=True)
class Preset:
    """Parameters of one Table 1 language."""

    name: str
    kind: str  # "ngram" or "hmm"
    vocab_size: int
    temperature: float
    threshold: float
    n: int = 0  # n-gram order
    n_states: int = 0  # HMM hidden states

    def build(self, seed=0):
        if self.kind == "ngram":
            return random_ngram(self.n, self.vocab_size, self.temperature, self.threshold, seed)
        return random_hmm(self.n_states, self.vocab_size, self.temperature, self.threshold, seed)


def _table1() -> dict[str, Preset]:
    base = [
        Preset("2gram", "ngram", 8, 2.0, 0.008, n=2),
        Preset("3gram", "ngram", 8, 2.0, 0.008, n=3),
        Preset("4gram", "ngram", 8, 2.0, 0.005, n=4),
        Preset("hmm", "hmm", 8, 3.2, 0.003, n_states=32),
    ]
    out = {p.name: p for p in base}
    for p in base:
        out[p.name + "-ter"] = Preset(p.name + "-ter", p.kind, p.vocab_size, p.temperature, 0.0, p.n, p.n_states)
    return out


PRESETS: dict[str, Preset] = _table1()


def preset(name: str, seed=0):
    """The Table 1 language ``name`` (see ``PRESETS``) drawn with ``seed``."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; valid presets: {', '.join(PRESETS)}")
    return PRESETS[name].build(seed)


def pruned_fraction(language) -> dict[str, float]:
    """Fraction of exactly-zero entries in each parameter array of a language."""
    if isinstance(language, NGram):
        arrays = {"initial": language.initial_, "transition": language.transition_}
    else:
        arrays = {"startprob": language.startprob_, "transmat": language.transmat_, "emissionprob": language.emissionprob_}
    return {k: float(np.mean(v == 0)) for k, v in arrays.items()}
