"""Verified drafting (SPEC ``verified:B``, ``verified:B1,B2,...``, ``verified:adaptive[:B0]``): an MDM drafts a
block, the exact causal conditionals verify it.

A *round* starts from the revealed prefix x_{<i} (everything after it masked) and takes the block
k = i, ..., e - 1, e = min(i + B, L), B the block size of the round (the draft schedule below):

1. **draft** -- one call of the masked denoiser: every block position is drafted independently from
   its oracle marginal given the prefix, y_k ~ d_k = q(x_k | x_{<i}) (the factorised law of Eq. 3);
2. **verify** left to right with the causal conditionals t_k = q(x_k | x_{<k}), x_{i..k-1} the drafts
   already accepted: y_k is accepted with probability min(1, t_k(y_k) / d_k(y_k)); at the first
   rejection x_k is drawn from the residual (t_k - d_k)^+ / ||(t_k - d_k)^+||_1 and the round ends.

This is speculative sampling (Leviathan, Kalman & Matias, "Fast inference from transformers via
speculative decoding", ICML 2023, Theorem 1): each revealed token has law t_k exactly, so the output
law is the language's, q, whatever the block sizes -- they may depend on everything revealed before
the round, as the adaptive schedule's do -- only the number of rounds is random.  In self-speculative
masked diffusion (Campbell et al., arXiv 2510.03929) the draft and its causal verification are one
forward pass of one network; mdmt counts one network call per round (NFE = rounds; the first draft
of a block is always accepted, since d_i = t_i, so a round reveals between 1 and B tokens; B = 1 is
autoregressive sampling, L calls).

**Draft schedules** (:class:`DraftSchedule`), the block size B of each round:

``verified:B``            B in every round;
``verified:B1,B2,...,Bk`` B1 in the first round, B2 in the second, ..., Bk in the k-th and every later one;
``verified:adaptive[:B0]`` B0 (default 2) in the first round; after a round whose B drafts were all accepted
                          the next block is min(B + 2, L), after a round that ended in a rejection it is
                          max(B - 1, 1) -- the adaptive speculation length of assisted generation (the
                          "heuristic" schedule of Hugging Face transformers, the baseline of Mamou et al.,
                          arXiv 2405.04304): grow while the drafts agree with the verifier, shrink when not.

:func:`verified_law` gives the exact output law and E[rounds] by enumerating every round from every
reachable (prefix, schedule state) (small L, from the joint tables); :func:`sample_verified` runs the
process at any L on an HMM or n-gram (forward filtering gives d_k and t_k).  Both use :func:`accept_prob`
and :func:`residual_law`.
"""

from __future__ import annotations

import math

import numpy as np

from mdmt.runtime.validation import positive_int

from .process_base import LawProcess

MAX_PREFIXES = 1 << 16  # V^L prefixes enumerated (in Python) by the exact law
DEFAULT_B0 = 2  # the adaptive schedule's first block
GROW, SHRINK = 2, 1  # the adaptive schedule: B + 2 after a fully accepted draft, B - 1 after a rejection


def accept_prob(d: float, t: float) -> float:
    """Speculative sampling's acceptance probability of a draft token: min(1, t(y) / d(y)) (d(y) > 0)."""
    return min(1.0, t / d)


def residual_law(d: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The resampling law after a rejection: (t - d)^+ normalised (t itself when d = t: never used then)."""
    r = np.maximum(t - d, 0.0)
    z = r.sum(axis=-1, keepdims=True)
    return np.where(z > 0, r / np.where(z > 0, z, 1.0), t)


class DraftSchedule:
    """The block size of every round (module docstring, "Draft schedules").

    A schedule has a small state (``ctrl``): the round's index for a list of sizes (capped at the last), the
    current block size for the adaptive rule.  ``block(ctrl)`` is the round's block size and ``after(ctrl, full,
    L)`` the next state, ``full`` whether every draft of the round was accepted; both take numpy arrays.
    """

    def __init__(self, sizes=(1,), adaptive: bool = False):
        self.sizes = tuple(positive_int("block size B", b) for b in sizes)
        self.adaptive = bool(adaptive)
        if self.adaptive and len(self.sizes) != 1:
            raise ValueError("the adaptive draft schedule takes one initial block size B0")
        sizes_text = ",".join(str(b) for b in self.sizes)
        self.spec = f"verified:adaptive:{self.sizes[0]}" if self.adaptive else f"verified:{sizes_text}"

    def start(self) -> int:
        return self.sizes[0] if self.adaptive else 0

    def block(self, ctrl):
        if self.adaptive:
            return ctrl
        return np.asarray(self.sizes)[np.minimum(ctrl, len(self.sizes) - 1)]

    def after(self, ctrl, full, L: int):
        if self.adaptive:
            return np.where(full, np.minimum(np.asarray(ctrl) + GROW, L), np.maximum(np.asarray(ctrl) - SHRINK, 1))
        return np.minimum(np.asarray(ctrl) + 1, len(self.sizes) - 1)


def as_schedule(B) -> DraftSchedule:
    """A :class:`DraftSchedule` from itself or a fixed block size."""
    return B if isinstance(B, DraftSchedule) else DraftSchedule((positive_int("block size B", B),))


def verified_law(language, L: int, B, tables=None) -> tuple[np.ndarray, float, object]:
    """(p on V^L in the tables' order, E[rounds], tables): every round from every reachable (prefix, schedule state)
    (module docstring); ``B`` a block size or a :class:`DraftSchedule`.

    Off the support (reachable only through a faulty acceptance rule) the conditionals are uniform.
    """
    from .tables import build_tables

    L = positive_int("L", L)
    sched = as_schedule(B)
    V = language.n_symbols
    if L * math.log2(max(V, 2)) > math.log2(MAX_PREFIXES):
        raise ValueError(f"the exact law of verified drafting at L = {L} enumerates up to V^L = {V}^{L} prefixes; at "
                         f"most {MAX_PREFIXES} are supported (use the Monte Carlo sampler)")
    tables = tables or build_tables(language, L)
    V, qx = tables.V, tables.q_ext
    strides = tables.strides

    def cond(state: int, k: int) -> np.ndarray:
        base = state - V * strides[k]  # digit k set to token 0
        vals = qx[base + strides[k] * np.arange(V)]
        z = qx[state]
        return vals / z if z > 0 else np.full(V, 1.0 / V)

    frontier = [dict() for _ in range(L + 1)]  # (state, schedule state) -> mass, by prefix length
    frontier[0][(int(V * strides.sum()), sched.start())] = 1.0  # the all-masked state
    out = np.zeros(tables.n_states)
    rounds = 0.0

    def emit(state, length, mass, ctrl):
        if length == L:
            out[state] += mass
        else:
            key = (state, ctrl)
            frontier[length][key] = frontier[length].get(key, 0.0) + mass

    for i in range(L):
        for (s, ctrl), mass in frontier[i].items():
            rounds += mass
            e = min(i + int(sched.block(ctrl)), L)
            full, cut = int(sched.after(ctrl, True, L)), int(sched.after(ctrl, False, L))
            drafts = [cond(s, k) for k in range(i, e)]
            stack = [(s, i, mass)]
            while stack:
                cur, k, w = stack.pop()
                d, t = drafts[k - i], cond(cur, k)
                rej = 0.0
                for y in range(V):
                    if d[y] == 0.0:
                        continue
                    a = accept_prob(d[y], t[y])
                    nxt = cur + (y - V) * strides[k]
                    if a > 0.0:
                        if k + 1 == e:
                            emit(nxt, e, w * d[y] * a, full)
                        else:
                            stack.append((nxt, k + 1, w * d[y] * a))
                    rej += w * d[y] * (1.0 - a)
                if rej > 0.0:
                    res = residual_law(d, t)
                    for z in np.flatnonzero(res > 0):
                        emit(cur + (int(z) - V) * strides[k], k + 1, rej * res[z], cut)
    return out[tables.full_index], float(rounds), tables


def sample_verified(language, L: int, B, num: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(samples (num, L), rounds (num,)) of verified drafting at any L (module docstring), forward filtering on the HMM;
    ``B`` a block size or a :class:`DraftSchedule` (each sample follows its own)."""
    from ..languages.ngram import as_hmm

    L = positive_int("L", L)
    sched = as_schedule(B)
    ctrl = np.full(num, sched.start(), dtype=np.int64)
    hmm = as_hmm(language)
    A = np.asarray(hmm.transmat_, dtype=np.float64)
    E = np.asarray(hmm.emissionprob_, dtype=np.float64)
    V = E.shape[1]
    X = np.full((num, L), -1, dtype=np.int64)
    pos = np.zeros(num, dtype=np.int64)
    pred = np.tile(np.asarray(hmm.startprob_, dtype=np.float64), (num, 1))  # law of h_pos given x_{<pos}
    rounds = np.zeros(num, dtype=np.int64)

    def draw(P, u):
        c = np.cumsum(P, axis=1)
        return np.minimum((c < u[:, None] * c[:, -1:]).sum(axis=1), V - 1)

    def observe(law, x):
        a = law * E[:, x].T
        a /= a.sum(axis=1, keepdims=True)
        return a @ A

    while True:
        act = np.flatnonzero(pos < L)
        if act.size == 0:
            break
        rounds[act] += 1
        p0, g = pos[act], pred[act]
        blocks = sched.block(ctrl[act])
        blen = np.minimum(blocks, L - p0)
        B = int(np.max(blocks))
        drafts, ys = [], []
        for o in range(B):  # one call: the marginals of the block given the prefix, drawn independently
            d = g @ E
            d /= d.sum(axis=1, keepdims=True)
            drafts.append(d)
            ys.append(draw(d, rng.random(act.size)))
            g = g @ A
        cur = pred[act].copy()
        alive = np.ones(act.size, dtype=bool)
        newpos = p0.copy()
        for o in range(B):
            live = np.flatnonzero(alive & (o < blen))
            if live.size == 0:
                break
            t = cur[live] @ E
            t /= t.sum(axis=1, keepdims=True)
            d, y = drafts[o][live], ys[o][live]
            r = np.arange(live.size)
            a = np.minimum(1.0, t[r, y] / d[r, y])
            ok = rng.random(live.size) < a
            z = y.copy()
            bad = ~ok
            if bad.any():
                z[bad] = draw(residual_law(d[bad], t[bad]), rng.random(int(bad.sum())))
                alive[live[bad]] = False
            X[act[live], p0[live] + o] = z
            cur[live] = observe(cur[live], z)
            newpos[live] = p0[live] + o + 1
        pos[act] = newpos
        pred[act] = cur
        ctrl[act] = sched.after(ctrl[act], alive, L)  # alive: every draft of the round accepted
    return X, rounds


class Verified(LawProcess):
    """Verified drafting with a draft schedule (SPEC ``verified:B``, ``verified:B1,B2,...``, ``verified:adaptive[:B0]``;
    module docstring); ``B`` a block size or a :class:`DraftSchedule`."""

    def __init__(self, B):
        self.B = as_schedule(B)
        self.spec = self.B.spec

    method = "verified"
    oracle_only = "verifies with the oracle's causal conditionals: no other denoiser"

    def _law(self, language, L, tables):
        return verified_law(language, L, self.B, tables)

    def _draw(self, language, L, num, rng):
        return sample_verified(language, L, self.B, num, rng)

    def expected_nfe(self, L):
        return None

