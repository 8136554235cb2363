"""The exact output law p_N of the N-step masked diffusion sampler (Section 3.2, Eq. 3; Eqs. 4-5).

The factorised reverse process is a Markov chain on *partial assignments* (U, x_U), the
states of :mod:`.tables`.  At step j (rate r_j, see :mod:`.schedules`) every masked position
independently stays masked with probability 1 - r_j or takes the value v with probability
r_j p(v | x_U): a product measure over the masked positions, whose successors are enumerated
depth-first with running products (numba).  The denoiser is evaluated once per state (one
batched call), steps with pi_j = 0 are skipped, and no reveal order is ever enumerated: a
step costs O((2V+1)^L).

With ``support_only`` the chain is continued only from states with q(x_U) > 0 (a state
outside the support can never finish inside it); the mass it loses is exactly the SER
(Eq. 5).  From p_N: KL(q || p_N) in nats and bits per token (= the log2 TER gap, Eq. 4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np

from mdmt.constructions.types import Denoiser, Language, RevealProbabilities

from ..languages.ngram import check_language
from .chain import chain_quantities
from .schedules import as_pi, expected_nfe, p_distinct, reveal_rates
from .tables import Tables, build_tables, check_exact_size, denoiser_table, support_table
from mdmt.runtime.numba_cache import configure_numba_cache
from mdmt.runtime.parallel import run_ranges

configure_numba_cache()  # before the @njit(cache=True) below: numba's cache keyed on mdmt's source

_CHUNKS = 4  # fixed work split of a step (results do not depend on the number of threads)


SERIAL_MAX_STATES = 1 << 16  # below this a step runs its chunks in one thread (thread start-up dominates)


@nb.njit(cache=True, nogil=True)
def _chunk(f, digits, D, r, V, strides, live, nchunks, c, out):
    """Chunk c of one reverse step: push the mass of its live states through the product measure.

    The depth-first search assigns the masked positions of state s one by one; the
    partial successor after d choices is itself a state (the undecided positions still
    masked), so a subtree whose partial successor is not live is pruned.
    """
    S, L = digits.shape
    stay = 1.0 - r
    pos = np.empty(L, dtype=np.int64)
    choice = np.empty(L + 1, dtype=np.int64)
    w = np.empty((L, V + 1))
    pp = np.empty(L + 1)
    cp = np.empty(L + 1, dtype=np.int64)
    lo = c * S // nchunks
    hi = (c + 1) * S // nchunks
    for s in range(lo, hi):
        mass = f[s]
        if mass == 0.0 or not live[s]:
            continue
        k = 0
        for i in range(L):
            if digits[s, i] == V:
                pos[k] = i
                for v in range(V):
                    w[k, v] = r * D[s, i, v]
                w[k, V] = stay
                k += 1
        if k == 0:
            out[s] += mass
            continue
        pp[0] = mass
        cp[0] = s
        d = 0
        choice[0] = -1
        while d >= 0:
            choice[d] += 1
            ch = choice[d]
            if ch > V:
                d -= 1
                continue
            wt = w[d, ch]
            if wt == 0.0:
                continue
            t = cp[d] + (ch - V) * strides[pos[d]]
            if not live[t]:
                continue  # q(x_U) = 0 here: no completion of it is in the support
            m = pp[d] * wt
            if d + 1 == k:
                out[t] += m
            else:
                pp[d + 1] = m
                cp[d + 1] = t
                d += 1
                choice[d] = -1


@nb.njit(cache=True, nogil=True)
def _chunks(lo, hi, f, digits, D, r, V, strides, live, nchunks, outs):
    """Chunks lo..hi-1 of one reverse step, chunk c into outs[c]."""
    for c in range(lo, hi):
        _chunk(f, digits, D, r, V, strides, live, nchunks, c, outs[c])


def _step(f, digits, D, r, V, strides, live, nchunks):
    """One reverse step; the same chunks and the same order of sums in one thread or several (equal results)."""
    S = digits.shape[0]
    outs = np.zeros((nchunks, S))
    if S <= SERIAL_MAX_STATES:
        _chunks(0, nchunks, f, digits, D, r, V, strides, live, nchunks, outs)
    else:
        run_ranges(_chunks, nchunks, f, digits, D, r, V, strides, live, nchunks, outs, parts=nchunks)
    res = np.zeros(S)
    for c in range(nchunks):
        res += outs[c]
    return res


@dataclass
class ExactResult:
    """The exact output law p_N of the sampler on V^L and the metrics derived from it."""

    sequences: np.ndarray  # (V^L, L), lexicographic
    q: np.ndarray  # q on V^L
    p: np.ndarray  # p_N on V^L (with support_only, exact on supp q and 0 elsewhere)
    pi: np.ndarray
    support_only: bool

    @property
    def probs(self) -> np.ndarray:
        """p_N(x) for every x in ``sequences``."""
        return self.p

    @property
    def L(self) -> int:
        return int(self.sequences.shape[1])

    @property
    def support_mass(self) -> float:
        """sum_{x: q(x) > 0} p_N(x)."""
        return float(self.p[self.q > 0].sum())

    @property
    def ser(self) -> float:
        """SER(p_N) = 1 - sum_{x: q(x) > 0} p_N(x) (Eq. 5)."""
        return float(min(1.0, max(0.0, 1.0 - self.support_mass)))

    @property
    def kl_nats(self) -> float:
        """KL(q || p_N) in nats (inf if p_N misses part of the support)."""
        m = self.q > 0
        if np.any(self.p[m] <= 0):
            return math.inf
        return float(max(0.0, np.sum(self.q[m] * (np.log(self.q[m]) - np.log(self.p[m])))))

    @property
    def kl_bits_per_token(self) -> float:
        """log2 TER(p_N) - log2 TER(q) = KL(q || p_N) / (L ln 2) (Eq. 4)."""
        return self.kl_nats / (self.L * math.log(2))

    def prob(self, x) -> float:
        """p_N(x) of one sequence."""
        x = np.asarray(x, dtype=np.int64)
        V = int(round(len(self.q) ** (1.0 / self.L)))
        if x.shape != (self.L,) or x.min() < 0 or x.max() >= V:
            raise ValueError(f"{x.tolist()} is not a sequence of {self.L} tokens in 0..{V - 1}")
        return float(self.p[int(x @ (V ** np.arange(self.L - 1, -1, -1)))])


def exact_output_law(language: Language, L: int, pi: RevealProbabilities, denoiser: Denoiser | None = None, support_only: bool = True,
                     tables: Tables | None = None, table: np.ndarray | None = None) -> ExactResult:
    """p_N on V^L for the oracle (``denoiser=None``) or any denoiser, by the chain on partial assignments.

    ``pi`` is the reveal-probability vector (``reveal_probabilities(schedule, N)``).
    ``tables``/``table`` let callers reuse the joint table and the denoiser table.
    """
    if tables is None:
        check_exact_size(check_language(language).n_symbols, L, language)  # names the interval HMM's closed form where it applies
    tables = tables or build_tables(language, L)
    if tables.L != L:
        raise ValueError(f"tables were built for L = {tables.L}, not L = {L}")
    pi = as_pi(pi)
    live = tables.q_ext > 0 if support_only else np.ones(tables.n_states, dtype=bool)
    if table is not None:
        D = table
    elif denoiser is None:
        D = denoiser_table(tables, None)
    else:
        D = denoiser_table(tables, denoiser, states=np.flatnonzero(live))
    f = np.zeros(tables.n_states)
    f[-1] = 1.0  # the all-masked state (every digit V) is the last index
    for j, r in enumerate(reveal_rates(pi)):
        if pi[j] == 0.0:
            continue
        f = _step(f, tables.digits, D, float(r), tables.V, tables.strides, live, _CHUNKS)
    return ExactResult(tables.sequences, tables.q, f[tables.full_index], pi, support_only)


def exact_metrics(language: Language, L: int, pi: RevealProbabilities, denoiser: Denoiser | None = None) -> dict:
    """Exact KL(q || p_N) (nats, bits/token), SER, P_distinct, E[NFE] and the proof-chain expectations."""
    check_exact_size(language.n_symbols, L, language)
    tables = build_tables(language, L)
    pi = as_pi(pi)
    D = support_table(tables, denoiser)
    res = exact_output_law(language, L, pi, tables=tables, table=D)
    chain = chain_quantities(language, L, pi, denoiser, tables=tables, table=None if denoiser is None else D)
    return {
        "kl_nats": res.kl_nats,
        "kl_bits_per_token": res.kl_bits_per_token,
        "ser": res.ser,
        "p_distinct": p_distinct(pi, L),
        "expected_nfe": expected_nfe(pi, L),
        **chain,
    }


