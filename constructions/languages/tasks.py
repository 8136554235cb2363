"""The tasks of the parallel-decoding literature as explicit laws: ``task:NAME[:PARAMS]`` (docs/tasks.md).

Each task is the law of an output Y listed on its support (:class:`~.explicit.ExplicitLanguage`), uniform on it:

``copy``            one token v ~ Uniform{0..V-1} repeated n times (the copy chain; support V sequences, any V);
``replace-index``   the input list (0, 1, ..., n-1) with position i replaced by the new item n (one sequence);
``replace-random``  the input list with one uniformly chosen position replaced by the new item n (n sequences);
``insert-random``   the input list with the new item n inserted at a uniform place (n + 1 sequences of length n + 1);
``remove-random``   the input list with one uniform item removed (n sequences of length n - 1);
``shuffle``         a uniform permutation of the input list (n! sequences);
``parity``          a uniform binary word of length n with an even number of ones (2^(n-1) sequences);
``latin``           a uniform Latin square of the given order read row by row (576 for order 4);
``sudoku``          a uniform completion of a 4 x 4 Sudoku (2 x 2 boxes) with the given clues;
``dyck``            a uniform Dyck-1 word of length L, 0 = open, 1 = close (Catalan(L/2) sequences).

The list tasks (``replace-index``, ``replace-random``, ``shuffle``) follow ParallelBench Section 4 (Kang et al.,
arXiv 2510.04767; ``insert-random`` and ``remove-random`` are two more list tasks of its benchmark): the law is that of the output Y given one fixed input X, the list of the n distinct items
0, 1, ..., n-1 (token i is the i-th item of X) and, for the replace tasks, the new item n.  Any other input of n
distinct items gives the same law up to renaming tokens, so every quantity of the paper (the sampler's law,
KL and SER of Eqs. 4-5 of Feng et al.) is the same.

PARAMS is ``key=value`` pairs separated by commas; the first parameter of a task may be given by its value alone
(``task:latin:4``, ``task:dyck:8``, ``task:shuffle:8``).  :func:`canonical_task` writes every parameter as
``key=value`` in the task's order (``task:shuffle:n=8``, ``task:latin:order=4``).

``dyck`` is also written as an HMM over (position, height, token) (:func:`dyck_hmm`), so that two kinds of
language compute the same law (tests/test_tasks.py checks that they agree on every probability and posterior).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from mdmt.runtime.resources import check_memory

from .explicit import ExplicitLanguage, explicit_bytes

# ---------------------------------------------------------------------------------------------- enumerators


def _permutations(n: int) -> np.ndarray:
    """All n! permutations of 0..n-1 as an (n!, n) int64 array (built by inserting item j at every place)."""
    P = np.zeros((1, 0), dtype=np.int64)
    for j in range(n):
        m = P.shape[1]
        blocks = [np.insert(P, p, j, axis=1) for p in range(m + 1)]
        P = np.concatenate(blocks, axis=0)
    return P


def _copy(n: int, V: int) -> np.ndarray:
    return np.repeat(np.arange(V, dtype=np.int64)[:, None], n, axis=1)


def _replace_index(n: int, i: int) -> np.ndarray:
    x = np.arange(n, dtype=np.int64)
    x[i] = n
    return x[None, :]


def _replace_random(n: int) -> np.ndarray:
    X = np.tile(np.arange(n, dtype=np.int64), (n, 1))
    X[np.arange(n), np.arange(n)] = n
    return X


def _insert_random(n: int) -> np.ndarray:
    """The input list 0..n-1 with the new item n inserted at each of the n + 1 places."""
    x = np.arange(n, dtype=np.int64)
    return np.stack([np.insert(x, p, n) for p in range(n + 1)])


def _remove_random(n: int) -> np.ndarray:
    """The input list 0..n-1 with each one of its n items removed."""
    x = np.arange(n, dtype=np.int64)
    return np.stack([np.delete(x, p) for p in range(n)])


def _parity(n: int) -> np.ndarray:
    k = np.arange(1 << (n - 1), dtype=np.int64)
    bits = (k[:, None] >> np.arange(n - 2, -1, -1)) & 1 if n > 1 else np.zeros((1, 0), dtype=np.int64)
    last = bits.sum(axis=1, keepdims=True) % 2
    return np.concatenate([bits, last], axis=1).astype(np.int64)


def _dyck(L: int) -> np.ndarray:
    """Every Dyck-1 word of length L (0 = open, 1 = close), grown one token at a time over feasible prefixes."""
    W = np.zeros((1, 0), dtype=np.int64)
    h = np.zeros(1, dtype=np.int64)
    for i in range(L):
        left = L - i - 1  # tokens after this one
        up_ok = h + 1 <= left
        down_ok = (h >= 1) & (h - 1 <= left)
        W = np.concatenate([np.concatenate([W[up_ok], np.zeros((up_ok.sum(), 1), np.int64)], axis=1),
                            np.concatenate([W[down_ok], np.ones((down_ok.sum(), 1), np.int64)], axis=1)])
        h = np.concatenate([h[up_ok] + 1, h[down_ok] - 1])
    return W


def _latin(order: int) -> np.ndarray:
    """Every Latin square of the given order, read row by row: rows are permutations with no column repeated."""
    P = _permutations(order).astype(np.int8)
    squares = P[:, None, :]  # (R, rows so far, order)
    for _ in range(order - 1):
        R = squares.shape[0]
        check_memory(f"enumerating Latin squares of order {order}", R * P.shape[0] * order * 2,
                     "use a smaller order")
        clash = np.zeros((R, P.shape[0]), dtype=bool)
        for r in range(squares.shape[1]):
            clash |= np.any(squares[:, r, None, :] == P[None, :, :], axis=2)
        a, b = np.nonzero(~clash)
        squares = np.concatenate([squares[a], P[b][:, None, :]], axis=1)
    return squares.reshape(squares.shape[0], order * order).astype(np.int64)


def _sudoku(order: int, clues: str) -> np.ndarray:
    """The completions of a Sudoku of order 4 (2 x 2 boxes) agreeing with ``clues`` (digits 1-4, '.' blank)."""
    G = _latin(order).reshape(-1, order, order)
    b = math.isqrt(order)
    boxes = G.reshape(-1, b, b, b, b).transpose(0, 1, 3, 2, 4).reshape(-1, order, order)
    ok = np.all(np.sort(boxes, axis=2) == np.arange(order), axis=(1, 2))
    X = G[ok].reshape(-1, order * order)
    for k, c in enumerate(clues):
        if c != ".":
            X = X[X[:, k] == int(c) - 1]
    return X


# ---------------------------------------------------------------------------------------------- the catalogue


@dataclass(frozen=True)
class Param:
    """One parameter of a task: its name, default, allowed range (integers) and meaning."""

    name: str
    default: int | str
    doc: str
    low: int | None = None
    high: int | None = None


@dataclass(frozen=True)
class Task:
    """A task preset: its one-line law, parameters, support size and length (both known before enumerating),
    vocabulary size, and the enumerator of its support."""

    name: str
    law: str
    params: tuple[Param, ...]
    count: Callable[..., int]
    length: Callable[..., int]
    vocab: Callable[..., int]
    support: Callable[..., np.ndarray]
    check: Callable[..., None] = lambda **kw: None


def _catalan(m: int) -> int:
    return math.comb(2 * m, m) // (m + 1)


def _check_dyck(L: int) -> None:
    if L % 2:
        raise ValueError(f"L = {L} is odd: a Dyck word has as many closing as opening brackets (L even)")


def _check_replace_index(n: int, i: int) -> None:
    if not 0 <= i < n:
        raise ValueError(f"i = {i} is not a position of a list of n = {n} items (0 <= i < n)")


DEFAULT_CLUES = "12..34.........."
"""The default 4 x 4 Sudoku: 1 2 in the first row, 3 4 at the start of the second (2 x 2 boxes), 0-based tokens
0-3 for the digits 1-4; it has 12 completions (tests/test_tasks.py counts them by brute force)."""


def _check_sudoku(order: int, clues: str) -> None:
    if order != 4:
        raise ValueError(f"order = {order}: only 4 x 4 Sudoku (order 4, 2 x 2 boxes) is enumerated")
    if len(clues) != order * order:
        raise ValueError(f"clues {clues!r} has {len(clues)} characters; expected {order * order} "
                         f"(row by row, digits 1-{order}, '.' or 0 for a blank)")
    bad = [c for c in clues if c not in "." + "".join(str(d) for d in range(1, order + 1))]
    if bad:
        raise ValueError(f"clues {clues!r}: {bad[0]!r} is not a digit 1-{order} or a blank ('.' or 0)")


def _sudoku_count(order: int, clues: str) -> int:
    return 288  # an upper bound before the clues filter (the 4 x 4 Sudoku grids); the support is counted after


TASKS: dict[str, Task] = {
    "copy": Task(
        "copy", "one token v ~ Uniform{0..V-1} repeated n times (V sequences)",
        (Param("n", 4, "length", 1, 10**6), Param("V", 2, "vocabulary size", 1, 10**9)),
        count=lambda n, V: V, length=lambda n, V: n, vocab=lambda n, V: V, support=_copy),
    "replace-index": Task(
        "replace-index", "the input list 0..n-1 with position i replaced by the new item n (one sequence)",
        (Param("n", 4, "list length", 1, 10**6), Param("i", 0, "the replaced position, 0-based", 0, 10**6)),
        count=lambda n, i: 1, length=lambda n, i: n, vocab=lambda n, i: n + 1, support=_replace_index,
        check=_check_replace_index),
    "replace-random": Task(
        "replace-random", "the input list 0..n-1 with one uniform position replaced by the new item n (n sequences)",
        (Param("n", 4, "list length", 1, 10**5),),
        count=lambda n: n, length=lambda n: n, vocab=lambda n: n + 1, support=_replace_random),
    "insert-random": Task(
        "insert-random", "the input list 0..n-1 with the new item n inserted at a uniform place (n+1 sequences)",
        (Param("n", 4, "list length", 1, 10**5),),
        count=lambda n: n + 1, length=lambda n: n + 1, vocab=lambda n: n + 1, support=_insert_random),
    "remove-random": Task(
        "remove-random", "the input list 0..n-1 with one uniform item removed (n sequences of length n-1)",
        (Param("n", 4, "list length", 2, 10**5),),
        count=lambda n: n, length=lambda n: n - 1, vocab=lambda n: n, support=_remove_random),
    "shuffle": Task(
        "shuffle", "a uniform permutation of the input list 0..n-1 (n! sequences)",
        (Param("n", 4, "list length", 1, 12),),
        count=lambda n: math.factorial(n), length=lambda n: n, vocab=lambda n: n, support=_permutations),
    "parity": Task(
        "parity", "a uniform binary word of length n with an even number of ones (2^(n-1) sequences)",
        (Param("n", 4, "length", 1, 40),),
        count=lambda n: 1 << (n - 1), length=lambda n: n, vocab=lambda n: 2, support=_parity),
    "latin": Task(
        "latin", "a uniform Latin square of the given order read row by row (12 of order 3, 576 of order 4)",
        (Param("order", 4, "side of the square", 1, 5),),
        count=lambda order: (1, 2, 12, 576, 161280)[order - 1], length=lambda order: order * order,
        vocab=lambda order: order, support=_latin),
    "sudoku": Task(
        "sudoku", "a uniform completion of a 4 x 4 Sudoku (2 x 2 boxes) with the given clues, read row by row",
        (Param("order", 4, "side of the grid (4)", 4, 4),
         Param("clues", DEFAULT_CLUES, "16 characters row by row: digits 1-4, '.' or 0 for a blank")),
        count=_sudoku_count, length=lambda order, clues: order * order, vocab=lambda order, clues: order,
        support=_sudoku, check=_check_sudoku),
    "dyck": Task(
        "dyck", "a uniform Dyck-1 word of length L, 0 = open, 1 = close (Catalan(L/2) sequences)",
        (Param("L", 8, "length (even)", 2, 60),),
        count=lambda L: _catalan(L // 2), length=lambda L: L, vocab=lambda L: 2, support=_dyck, check=_check_dyck),
}
"""The task presets by name (module docstring; docs/tasks.md states each law)."""


def parse_task(name: str, text: str = "", where: str | None = None) -> dict:
    """The validated parameters of ``task:NAME:TEXT`` as a dict in the task's order (defaults filled in).

    ``ValueError`` names the spec (``where``) and the offending parameter or value.
    """
    where = where or (f"task:{name}:{text}" if text else f"task:{name}")
    if name not in TASKS:
        raise ValueError(f"language {where!r}: unknown task {name!r}; valid tasks: {', '.join(TASKS)}")
    task = TASKS[name]
    names = [p.name for p in task.params]
    given: dict[str, str] = {}
    items = text.split(",") if text.strip() else []
    for k, item in enumerate(items):
        item = item.strip()
        key, sep, value = item.partition("=")
        if not sep:
            if k != 0:
                raise ValueError(f"language {where!r}: parameter {item!r} has no name; only the first parameter "
                                 f"({names[0]}) may be given by its value alone (write key=value)")
            key, value = names[0], item
        key, value = key.strip(), value.strip()
        if key not in names:
            raise ValueError(f"language {where!r}: task {name!r} has no parameter {key!r}; its parameters: "
                             f"{', '.join(names)}")
        if key in given:
            raise ValueError(f"language {where!r}: parameter {key!r} given twice")
        given[key] = value
    params: dict = {}
    for p in task.params:
        if p.name not in given:
            params[p.name] = p.default
            continue
        value = given[p.name]
        if isinstance(p.default, int):
            if not (value.isdigit() or (value[:1] == "-" and value[1:].isdigit())):
                raise ValueError(f"language {where!r}: {p.name} = {value!r} is not an integer")
            v = int(value)
            if (p.low is not None and v < p.low) or (p.high is not None and v > p.high):
                raise ValueError(f"language {where!r}: {p.name} = {v} must be in {p.low}..{p.high} ({p.doc})")
            params[p.name] = v
        else:
            params[p.name] = value.replace("0", ".") if p.name == "clues" else value
    try:
        task.check(**params)
    except ValueError as exc:
        raise ValueError(f"language {where!r}: {exc}") from None
    return params


def canonical_task(name: str, params: dict) -> str:
    """``task:NAME:k1=v1,k2=v2`` with every parameter of the task in its order (the one normal form)."""
    return f"task:{name}:" + ",".join(f"{p.name}={params[p.name]}" for p in TASKS[name].params)


def task_size(name: str, **params) -> tuple[int, int]:
    """(number of sequences, length) of a task's support, known before enumerating it (an upper bound for
    ``sudoku``, whose clues are applied while enumerating)."""
    task = TASKS[name]
    return int(task.count(**params)), int(task.length(**params))


def task_language(name: str, **params) -> ExplicitLanguage:
    """The explicit law of a task preset (``task_language("shuffle", n=8)``; module docstring, docs/tasks.md).

    Parameters not given take their defaults; values are checked as in a SPEC.  The support size is estimated
    before anything is enumerated and refused above ``MDMT_MAX_MEMORY`` (one line naming the size).
    """
    text = ",".join(f"{k}={v}" for k, v in params.items())
    full = parse_task(name, text)
    spec = canonical_task(name, full)
    M, L = task_size(name, **full)
    check_memory(f"the support of {spec} ({M} sequences of length {L})",
                 2 * explicit_bytes(M, L, exact=False, n_symbols=TASKS[name].vocab(**full)), "use a smaller task")
    X = TASKS[name].support(**full)
    if X.shape[0] == 0:
        raise ValueError(f"language {spec!r}: the support is empty (the clues have no completion)")
    return ExplicitLanguage(X, n_symbols=TASKS[name].vocab(**full))


# ---------------------------------------------------------------------------------------------- Dyck as an HMM


def _completions(L: int) -> np.ndarray:
    """N[i, h]: the number of ways to write tokens i..L-1 from height h (before token i) down to height 0,
    never below 0 (a ballot number; N[L, 0] = 1)."""
    N = np.zeros((L + 1, L + 2), dtype=object)
    N[L, 0] = 1
    for i in range(L - 1, -1, -1):
        for h in range(0, L + 1):
            N[i, h] = N[i + 1, h + 1] + (N[i + 1, h - 1] if h >= 1 else 0)
    return N


def dyck_hmm(L: int):
    """The uniform law on Dyck-1 words of length L as an HMM over the states (i, h, t): position i, height h
    after token i, token t emitted (deterministic emission).

    From height h before token i the chain opens with probability N[i+1, h+1] / N[i, h] (N of
    :func:`_completions`), which makes every Dyck word of length L equally likely (probability 1 / Catalan(L/2)):
    the product of the ratios telescopes to 1 / N[0, 0].  Unused rows (after the last position, unreachable
    states) loop on themselves.
    """
    from .hmm import HMM

    _check_dyck(int(L))
    L = int(L)
    N = _completions(L)
    states = [(i, h, t) for i in range(L) for h in range(0, L + 1) for t in (0, 1)
              if N[i + 1, h] > 0 and (h >= 1 if t == 0 else True) and h <= i + 1 and (h + i + 1) % 2 == 0]
    index = {s: k for k, s in enumerate(states)}
    S = len(states)
    pi = np.zeros(S)
    A = np.zeros((S, S))
    B = np.zeros((S, 2))
    pi[index[(0, 1, 0)]] = 1.0
    for (i, h, t), k in index.items():
        B[k, t] = 1.0
        if i == L - 1:
            A[k, k] = 1.0
            continue
        total = N[i + 1, h]
        for t2, h2 in ((0, h + 1), (1, h - 1)):
            if h2 >= 0 and (i + 1, h2, t2) in index and N[i + 2, h2] > 0:
                A[k, index[(i + 1, h2, t2)]] = N[i + 2, h2] / total
        if A[k].sum() == 0:
            A[k, k] = 1.0
    return HMM(pi, A, B)
