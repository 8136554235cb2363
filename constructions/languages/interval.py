"""The interval counterexample HMM of Theorem 4.4 (Example C.7, Note C.8 of the paper).

A sequence of length L = K·l is cut into K intervals of length l.  Inside an
interval every pair of positions (a, b), a < b, carries an independent fair bit
c_ab.  The token at in-interval position a is the (l-1)-bit word of the bits of
its pairs, partners in increasing order, most significant bit first:
``token = sum_k c_{a, partner_k} << (l - 2 - k)``, so |V| = 2^(l-1) (l = 5 gives the
paper's 16 symbols).  A sequence is in the support iff both ends of every pair
agree; the law is uniform on the support, which has 2^(K·l(l-1)/2) sequences.

As an HMM: the hidden state at in-interval position a holds the bits of every
pair still "open" at a, i.e. the pairs (b, c) with b <= a <= c.  The state emits
the token at a deterministically; moving to a+1 keeps the bits of pairs still
open and draws the bits of the new pairs (a+1, c), c > a+1, uniformly; after the
last position of an interval the next interval starts with fresh bits.  For l = 5
that is 16 + 128 + 256 + 128 + 16 = 544 states.
"""

from __future__ import annotations

import itertools

import numpy as np

from .hmm import HMM
from mdmt.runtime.resources import check_memory
from mdmt.runtime.validation import positive_int, token_array

MAX_INTERVAL_LENGTH = 6  # the state space grows like 2^(l^2/4)


def check_interval_length(l) -> int:
    """``l`` as an int in 2..MAX_INTERVAL_LENGTH, else ``ValueError`` naming it."""
    l = positive_int("interval length l", l, minimum=2)
    if l > MAX_INTERVAL_LENGTH:
        raise ValueError(f"interval length l={l} is too large for an explicit HMM (at most {MAX_INTERVAL_LENGTH})")
    return l


def partners(a: int, l: int) -> list[int]:
    """The partners of position a inside an interval of length l, in the token's bit order."""
    return [b for b in range(l) if b != a]


def _open_pairs(a: int, l: int) -> list[tuple[int, int]]:
    return [(b, c) for b, c in itertools.combinations(range(l), 2) if b <= a <= c]


def interval_hmm(l: int) -> HMM:
    """The Theorem 4.4 counterexample for interval length ``l`` as an explicit (pi, A, B)."""
    l = check_interval_length(l)
    V = 2 ** (l - 1)
    opens = [_open_pairs(a, l) for a in range(l)]
    offsets = np.cumsum([0] + [2 ** len(p) for p in opens])
    S = int(offsets[-1])
    A = np.zeros((S, S))
    B = np.zeros((S, V))
    for a in range(l):
        pairs = opens[a]
        index = {p: k for k, p in enumerate(pairs)}
        for bits in range(2 ** len(pairs)):
            s = offsets[a] + bits

            def bit(pair):
                return (bits >> index[pair]) & 1

            token = 0
            for k, b in enumerate(partners(a, l)):
                token |= bit((min(a, b), max(a, b))) << (l - 2 - k)
            B[s, token] = 1.0
            if a + 1 < l:
                nxt = opens[a + 1]
                kept = 0
                fresh = []
                for k, p in enumerate(nxt):
                    if p in index:
                        kept |= bit(p) << k
                    else:
                        fresh.append(k)
                for combo in range(2 ** len(fresh)):
                    code = kept
                    for f, k in enumerate(fresh):
                        code |= ((combo >> f) & 1) << k
                    A[s, offsets[a + 1] + code] = 2.0 ** -len(fresh)
            else:
                A[s, offsets[0]:offsets[1]] = 1.0 / (offsets[1] - offsets[0])
    pi = np.zeros(S)
    pi[offsets[0]:offsets[1]] = 1.0 / (offsets[1] - offsets[0])
    return HMM(pi, A, B)


def interval_length_of(language) -> int | None:
    """l where ``language`` is the interval HMM of :func:`interval_hmm` (its tables, up to rounding), else None:
    what lets a refusal of the exact law name the closed forms of that language."""
    V = getattr(language, "n_symbols", None)
    tables = [getattr(language, name, None) for name in ("startprob_", "transmat_", "emissionprob_")]
    if not isinstance(V, int) or V < 2 or V & (V - 1) or any(t is None for t in tables):
        return None
    l = V.bit_length()  # V = 2^(l-1)
    if l > MAX_INTERVAL_LENGTH:
        return None
    ref = interval_hmm(l)
    ref_tables = (ref.startprob_, ref.transmat_, ref.emissionprob_)
    same = all(np.shape(t) == np.shape(r) and np.allclose(t, r, rtol=0.0, atol=1e-12)
               for t, r in zip(tables, ref_tables))
    return l if same else None


def decode_token(token: int, l: int, position: int) -> dict[int, int]:
    """The pair bits carried by ``token`` at in-interval ``position``: {partner: bit}."""
    l = positive_int("interval length l", l, minimum=2)
    if not 0 <= position < l:
        raise ValueError(f"position {position} is outside an interval of length {l}")
    if not 0 <= token < 2 ** (l - 1):
        raise ValueError(f"token {token} is outside the vocabulary 0..{2 ** (l - 1) - 1}")
    return {b: (token >> (l - 2 - k)) & 1 for k, b in enumerate(partners(position, l))}


def pair_consistent(X, l: int) -> np.ndarray:
    """Bool (n,): both ends of every pair agree in every interval (the support, checked directly)."""
    l = positive_int("interval length l", l, minimum=2)
    X = token_array(X, 2 ** (l - 1), allow_mask=False)
    n, L = X.shape
    if L % l:
        raise ValueError(f"sequence length L={L} is not a multiple of the interval length l={l}")
    Y = X.reshape(n, L // l, l)
    ok = np.ones(n, dtype=bool)
    for a, b in itertools.combinations(range(l), 2):
        bit_a = (Y[:, :, a] >> (l - 2 - partners(a, l).index(b))) & 1
        bit_b = (Y[:, :, b] >> (l - 2 - partners(b, l).index(a))) & 1
        ok &= np.all(bit_a == bit_b, axis=1)
    return ok


def support_size(L: int, l: int) -> int:
    """Number of pair-consistent sequences of length L: 2^(K·l(l-1)/2), K = L/l."""
    L = positive_int("L", L)
    l = positive_int("interval length l", l, minimum=2)
    if L % l:
        raise ValueError(f"sequence length L={L} is not a multiple of the interval length l={l}")
    bits = (L // l) * l * (l - 1) // 2
    check_memory(f"the exact support size 2^{bits} (L = {L}, l = {l})", bits // 8,
                 f"its base-2 logarithm is K·l(l-1)/2 = {bits}")
    return 2**bits
