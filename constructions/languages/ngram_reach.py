"""Exact reachability on sets of n-gram contexts: the tables and kernels of the support check (Section 4.1).

q(x_U) > 0 is decided without floating point by following the contexts that the revealed tokens
allow (the successors c -> shift[c] + b with T[c, b] > 0 of the n-gram's equivalent HMM, never
built).  This module holds what :func:`mdmt.constructions.languages.ngram_inference.support` runs:

* :class:`ReachTables` -- the successor tables of groups of G contexts, built once per n-gram;
* :func:`_support_kernel` -- the reachability of every sequence, the contexts kept as a short list
  (:func:`_set_step`) or as a bitset advanced by table look-ups (:func:`_bits_step`), whichever is
  cheaper at the step, or, for C <= 64 contexts, as one 64-bit register (:func:`_support_one_word`);
* :func:`trailing_zeros` -- the index of the lowest set bit of a word;
* :func:`_window_contexts` -- the contexts of the first window consistent with the revealed tokens,
  the start of every routine of :mod:`.ngram_inference`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numba as nb
import numpy as np

from mdmt.runtime.resources import check_memory
from mdmt.runtime.numba_cache import configure_numba_cache

if TYPE_CHECKING:
    from .ngram_inference import NGramTables

configure_numba_cache()  # before the @njit(cache=True) below: numba's cache keyed on mdmt's source

_REACH_TABLE_MAX_BYTES = 16 << 20

# The index of the lowest set bit of a 64-bit word by de Bruijn multiplication: the lowest bit w & -w times the
# de Bruijn constant puts a distinct 6-bit pattern in the top bits, which the table maps back to the index.
_DE_BRUIJN = 0x03F79D71B4CB0A89
_DE_BRUIJN_INDEX = np.zeros(64, dtype=np.int64)
for _i in range(64):
    _DE_BRUIJN_INDEX[(((1 << _i) * _DE_BRUIJN) & ((1 << 64) - 1)) >> 58] = _i
del _i


@nb.njit(cache=True, inline="always")
def trailing_zeros(w):
    """The number of trailing zero bits of a non-zero uint64 word (the index of its lowest set bit)."""
    low = w & (~w + np.uint64(1))
    return _DE_BRUIJN_INDEX[np.int64((low * np.uint64(_DE_BRUIJN)) >> np.uint64(58))]


# ----------------------------------------------------------------------------- windows
@nb.njit(cache=True, nogil=True)
def _window_contexts(V, k, x, L, ctx):
    """The contexts of positions 0..k-1 consistent with x (positions >= L free); returns their number V^f.

    ctx[j] is the j-th of them in big-endian order of the f free digits (the earliest free position is the
    most significant), so the free digits of ctx[j] are the base-V digits of j.
    """
    m = 1
    ctx[0] = 0
    for j in range(k):
        tok = x[j] if j < L else -1
        if tok >= 0:
            for i in range(m):
                ctx[i] = ctx[i] * V + tok
        else:
            for i in range(m - 1, -1, -1):  # in place, from the end
                c = ctx[i] * V
                for b in range(V - 1, -1, -1):
                    ctx[i * V + b] = c + b
            m *= V
    return m


# ----------------------------------------------------------------------------- support
@nb.njit(cache=True, nogil=True)
def _position(c, GV, nw):
    """Bit of context c in a :class:`ReachTables` bitset: block c // GV (nw words each), bit c % GV in it."""
    return (c // GV) * 64 * nw + c % GV


@nb.njit(cache=True, nogil=True)
def _context(pos, GV, nw):
    """The context at bit ``pos`` of a :class:`ReachTables` bitset (the inverse of :func:`_position`)."""
    return (pos // (64 * nw)) * GV + pos % (64 * nw)


@nb.njit(cache=True)
def _fill_reach_tables(T, G, nw, gpos, table, allowed):
    """Fill ``gpos``, ``table`` and ``allowed`` of :class:`ReachTables` from T > 0.

    The entry of a one-bit pattern is the successor set of one context; the entry of any other
    pattern p is the union of the entries of its lowest bit and of p without it.
    """
    C, V = T.shape
    Q = C // V
    GV = G * V
    one = np.uint64(1)
    for a in range(V):
        for sg in range(Q // G):
            c0 = a * Q + sg * G
            gpos[a, sg] = _position(c0, GV, nw)
            for i in range(G):
                pc = _position(c0 + i, GV, nw)
                for b in range(V):
                    if T[c0 + i, b] > 0.0:
                        off = i * V + b
                        table[sg, a, 1 << i, off >> 6] |= one << np.uint64(off & 63)
                        allowed[b, pc >> 6] |= one << np.uint64(pc & 63)
            for p in range(3, 1 << G):
                low = p & -p
                if p != low:
                    for w in range(nw):
                        table[sg, a, p, w] = table[sg, a, p ^ low, w] | table[sg, a, low, w]


@dataclass(frozen=True)
class ReachTables:
    """Successor tables for reachability on bitsets of contexts.

    Context c = a Q + s (oldest token a, Q = C / V) moves to s V + b for the tokens b with T[c, b] > 0.
    Cut the suffixes s into groups of G: the G V successors of the contexts a Q + sg G + i (i < G) form
    one *block* sg, the same for every a, so a masked step builds block sg from the V G-bit patterns of
    the set at those contexts: V look-ups of ``table[sg, a, pattern]``, C / G for the whole set, where
    the equivalent HMM's successor table ORs C / 64 words per look-up of 8 states.  A revealed token x
    needs no table: the patterns of the set & ``allowed[x]`` (the contexts c with T[c, x] > 0) are ORed
    over a into the G-bit pattern f of the surviving suffixes, and block sg is ``spread[f] << x``
    (bit i V + x for each i in f).  When all C <= 64 contexts are one block (Q = G), ``after[x, f]`` is
    the successor set of {s V + x : s in f}, so a masked step right after a revealed one is one look-up.

    Layout: block sg is ``nw`` words (G V bits; nw = 1 unless G V > 64), so context c sits at bit
    (c // GV) 64 nw + c % GV (:func:`_position`, GV = G V) and ``gpos[a, sg]`` is the bit of the first
    context of group (a, sg).  G is the largest of 8, 4, 2, 1 that divides Q with G V <= 64 and a table
    of at most ``max_bytes``.
    """

    group: int  # G
    nw: int  # words per block
    gpos: np.ndarray  # (V, Q / G) int64
    table: np.ndarray  # (Q / G, V, 2^G, nw) uint64
    allowed: np.ndarray  # (V, Q / G * nw) uint64
    spread: np.ndarray  # (2^G,) uint64
    after: np.ndarray  # (V, 2^G) uint64 when the contexts are one block (Q = G, C <= 64), else empty

    @classmethod
    def build(cls, tables: "NGramTables", group: int | None = None,
              max_bytes: int = _REACH_TABLE_MAX_BYTES) -> "ReachTables":
        """The tables of an n-gram; ``group`` forces G (1, 2, 4 or 8, a divisor of Q)."""
        C, V = tables.T.shape
        Q = C // V
        if group is None:
            G = 8
            while G > 1 and (Q % G or G * V > 64 or 8 * (C // G) << G > max_bytes):
                G //= 2
        elif group in (1, 2, 4, 8) and Q % group == 0:
            G = group
        else:
            raise ValueError(f"group must be 1, 2, 4 or 8 and divide {Q}, got {group!r}")
        nw = -(-G * V // 64)
        QG = Q // G
        check_memory(f"the reachability tables of an n-gram with {C} contexts",
                     8 * (QG * V * (1 << G) * nw + V * QG * nw) + 8 * V * QG, "use a smaller n-gram")
        gpos = np.empty((V, QG), dtype=np.int64)
        table = np.zeros((QG, V, 1 << G, nw), dtype=np.uint64)
        allowed = np.zeros((V, QG * nw), dtype=np.uint64)
        _fill_reach_tables(tables.T, G, nw, gpos, table, allowed)
        spread = np.zeros(1 << G, dtype=np.uint64)
        if G * V <= 64:
            for i in range(G):
                spread[(np.arange(1 << G) >> i) & 1 == 1] |= np.uint64(1) << np.uint64(i * V)
        return cls(group=G, nw=nw, gpos=gpos, table=table, allowed=allowed, spread=spread,
                   after=_successors_after(table, G, V) if QG * nw == 1 else np.zeros((0, 0), dtype=np.uint64))


def _successors_after(table: np.ndarray, G: int, V: int) -> np.ndarray:
    """after[x, f] = the successors of the contexts s V + x, s in the pattern f, for one-block tables (Q = G)."""
    succ = np.array([table[0, c // G, 1 << (c % G), 0] for c in range(G * V)], dtype=np.uint64)
    after = np.zeros((V, 1 << G), dtype=np.uint64)
    for p in range(1, 1 << G):
        low = p & -p
        after[:, p] = after[:, p ^ low] | succ[(low.bit_length() - 1) * V + np.arange(V)]
    return after


@nb.njit(cache=True, nogil=True)
def _set_step(T, shift, x, F, cur, m, mark):
    """Advance the frontier F[cur, :m] (a set of contexts) by token x (-1 = masked) into F[1 - cur]; returns m2."""
    V = T.shape[1]
    lo = 0 if x < 0 else x
    hi = V if x < 0 else x + 1
    nxt = 1 - cur
    m2 = 0
    for i in range(m):
        c = F[cur, i]
        base = shift[c]
        for v in range(lo, hi):
            if T[c, v] > 0.0:
                c2 = base + v
                if not mark[c2]:
                    mark[c2] = True
                    F[nxt, m2] = c2
                    m2 += 1
    for j in range(m2):
        mark[F[nxt, j]] = False
    return m2


@nb.njit(cache=True, nogil=True)
def _bits_step(x, B, cur, G, nw, gpos, table, allowed, spread):
    """Advance the bitset B[cur] by token x (-1 = masked) into B[1 - cur] (see :class:`ReachTables`).

    Returns (the number of non-zero words of the new set, the last of them, its index).
    """
    V, QG = gpos.shape
    gmask = (np.uint64(1) << np.uint64(G)) - np.uint64(1)
    nxt = 1 - cur
    nonzero = 0
    lone = np.uint64(0)
    where = 0
    for sg in range(QG):
        for i in range(nw):
            acc = np.uint64(0)
            if x < 0:
                for a in range(V):
                    gp = gpos[a, sg]
                    p = np.int64((B[cur, gp >> 6] >> np.uint64(gp & 63)) & gmask)
                    acc |= table[sg, a, p, i]
            else:
                f = np.uint64(0)
                for a in range(V):
                    gp = gpos[a, sg]
                    f |= ((B[cur, gp >> 6] & allowed[x, gp >> 6]) >> np.uint64(gp & 63)) & gmask
                if nw == 1:
                    acc = spread[np.int64(f)] << np.uint64(x)
                else:  # G V > 64: bit j V + x of the block for each j in f, those in word i
                    while f != 0:
                        bit = np.int64(trailing_zeros(f)) * V + x
                        f &= f - np.uint64(1)
                        if bit >> 6 == i:
                            acc |= np.uint64(1) << np.uint64(bit & 63)
            B[nxt, sg * nw + i] = acc
            if acc != 0:
                nonzero += 1
                lone = acc
                where = sg * nw + i
    return nonzero, lone, where


@nb.njit(cache=True, nogil=True)
def _support_one(init, T, shift, k, x, G, nw, gpos, table, allowed, spread, F, mark, B):
    """q(x_U) > 0 for one sequence: reachability of contexts, exact (no floating-point arithmetic).

    The reachable contexts are kept as a list F (cheap while it is short; a revealed token after a
    lone context is one look-up of T, the chain rule) or as a bitset B stepped by :func:`_bits_step`,
    whichever is cheaper: a masked token turns a list of m contexts into a bitset when its m V
    successors would cost more than the bitset step's V Q / G look-ups, and a bitset of a few contexts
    goes back to a list.  ``mark`` is all False on entry and is left so.
    """
    V = T.shape[1]
    L = x.shape[0]
    W = B.shape[1]
    GV = G * V
    bits_cost = gpos.shape[1] * V * nw
    few = max(1, bits_cost // (4 * V))  # a bitset of at most this many contexts goes back to a list
    m = _window_contexts(V, k, x, L, F[0])
    live = np.int64(0)
    for j in range(m):
        c = F[0, j]
        if init[c] > 0.0:
            F[0, live] = c
            live += 1
    m = live
    if m == 0:
        return False
    fc = np.int64(0)  # F[fc, :m] is the list (np.int64, not a literal 0: one signature for the callees)
    bc = np.int64(0)  # B[bc] is the bitset
    as_bits = False
    for t in range(k, L):
        xt = x[t]
        if not as_bits:
            if m == 1 and xt >= 0:
                c = F[fc, 0]
                if T[c, xt] <= 0.0:
                    return False
                F[fc, 0] = shift[c] + xt
                continue
            if xt >= 0 or 2 * m * V <= bits_cost:
                m = _set_step(T, shift, xt, F, fc, m, mark)
                fc = 1 - fc
                if m == 0:
                    return False
                continue
            for w in range(W):
                B[bc, w] = 0
            for i in range(m):
                pc = _position(F[fc, i], GV, nw)
                B[bc, pc >> 6] |= np.uint64(1) << np.uint64(pc & 63)
            as_bits = True
        nonzero, lone, where = _bits_step(xt, B, bc, G, nw, gpos, table, allowed, spread)
        bc = 1 - bc
        if nonzero == 0:
            return False
        if nonzero == 1 and (lone & (lone - np.uint64(1))) == 0:  # one context left
            F[fc, 0] = _context(where * 64 + np.int64(trailing_zeros(lone)), GV, nw)
            m = 1
            as_bits = False
        elif few > 1 and nonzero <= few:
            m = 0
            for w in range(W):
                v = B[bc, w]
                while v != 0 and m <= few:
                    F[fc, m] = _context(w * 64 + np.int64(trailing_zeros(v)), GV, nw)
                    m += 1
                    v &= v - np.uint64(1)
            as_bits = m > few
    return True


@nb.njit(cache=True, nogil=True)
def _support_one_word(init, T, shift, k, x, G, table, allowed, spread, after, ctx):
    """:func:`_support_one` when the C <= 64 contexts are one block (Q = G): the set is one 64-bit register.

    Context c = a G + i is bit c.  A masked step is V look-ups (one per oldest token a) and a revealed
    one folds the patterns of R & allowed[x] over a into the suffixes f that survive: the set is then
    {s V + x : s in f}, kept as (f, x), and a masked step from it is one look-up, ``after[x, f]``.  A
    lone context follows the chain rule.
    """
    V = T.shape[1]
    L = x.shape[0]
    ug = np.uint64(G)
    gmask = (np.uint64(1) << ug) - np.uint64(1)
    one = np.uint64(1)
    halving = V & (V - 1) == 0
    m = _window_contexts(V, k, x, L, ctx)
    r = np.uint64(0)
    for j in range(m):
        c = ctx[j]
        if init[c] > 0.0:
            r |= one << np.uint64(c)
    if r == 0:
        return False
    single = np.int64(trailing_zeros(r)) if r & (r - one) == 0 else -1
    last = -1  # >= 0: the set is {s V + last : s in the pattern f}, not yet spread into r
    f = np.uint64(0)
    for t in range(k, L):
        xt = x[t]
        if single >= 0:
            if xt >= 0:
                if T[single, xt] <= 0.0:
                    return False
                single = shift[single] + xt
                continue
            r = table[0, single // G, 1 << (single % G), 0]
        elif xt < 0:
            if last >= 0:
                r = after[last, np.int64(f)]
                last = -1
            else:
                new = np.uint64(0)
                for a in range(V):
                    new |= table[0, a, np.int64((r >> np.uint64(a * G)) & gmask), 0]
                r = new
        else:
            if last >= 0:
                r = spread[np.int64(f)] << np.uint64(last)
            r &= allowed[xt, 0]
            if halving:  # V a power of two: fold the V patterns pairwise
                width = V * G // 2
                while width >= G:
                    r |= r >> np.uint64(width)
                    width //= 2
                f = r & gmask
            else:
                f = np.uint64(0)
                for a in range(V):
                    f |= (r >> np.uint64(a * G)) & gmask
            if f == 0:
                return False
            if f & (f - one) == 0:
                single = np.int64(trailing_zeros(f)) * V + xt
                last = -1
            else:
                last = xt
            continue
        single = np.int64(trailing_zeros(r)) if r & (r - one) == 0 else -1  # (a masked step keeps r non-empty)
    return True


@nb.njit(cache=True, nogil=True)
def _support_kernel(lo, hi, init, T, shift, k, X, G, nw, gpos, table, allowed, spread, after, n_blocks, out):
    """out[b] = q(x_U) > 0 for the rows b of blocks lo..hi-1 of n_blocks (mdmt.runtime.parallel.run_ranges)."""
    n = X.shape[0]
    C = T.shape[0]
    W = allowed.shape[1]
    for blk in range(lo, hi):
        F = np.empty((2, C), dtype=np.int64)
        mark = np.zeros(C, dtype=np.bool_)
        B = np.empty((2, W), dtype=np.uint64)
        for b in range(blk * n // n_blocks, (blk + 1) * n // n_blocks):
            if W == 1 and nw == 1:
                out[b] = _support_one_word(init, T, shift, k, X[b], G, table, allowed, spread, after, F[0])
            else:
                out[b] = _support_one(init, T, shift, k, X[b], G, nw, gpos, table, allowed, spread, F, mark, B)
