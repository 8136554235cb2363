"""The search space of :mod:`.refute`: a family of languages, as integer codes that Hypothesis draws and shrinks.

A family is one of

``ngram:n=N,V=V``
    every n-gram of order N over V tokens (Feng et al., Section 3's n-gram languages): the initial
    law of the first N - 1 tokens and the conditional table;
``hmm:S=S,V=V``
    every HMM with S hidden states over V tokens (Section 3's HMMs): start, transition and emission
    tables;
``explicit:V=V,L=L,M=M``
    every explicit law (a support with weights, docs/tasks.md) of at most M distinct sequences of length L
    over V tokens: M sequences of L token codes and M weight codes (a sequence drawn twice adds its weights,
    one of weight code 0 is dropped, all dropped is uniform on the distinct sequences);
a language SPEC (``interval:l``, ``preset:NAME[:SEED]``, ``task:NAME[:PARAMS]``, a language file)
    perturbations of that language inside its support (an explicit law's weights: its one table): each positive entry is scaled by
    2^(k/2), k in -6..6, or dropped (the row keeps at least one entry).  The code of all zeros is
    the language itself, so the first instance Hypothesis tries, and the one it shrinks toward,
    is the given language.

An instance of a random family is coded by one small integer per table entry: 0 is a zero, w >= 1
the weight 2^(w - 1) (w <= :data:`WEIGHT_LEVELS`); a row of zeros is uniform.  The coding is chosen
for the search: Hypothesis shrinks integers toward 0, so its smallest instances are sparse, and
rows with one non-zero code are deterministic -- the tables where extremal cases live; large codes
reach probability ratios of 2^(WEIGHT_LEVELS - 1).  The size of an instance (:func:`instance_size`)
orders counterexamples: shorter, fewer steps, fewer positive entries, smaller codes.

Every value the search draws is built from Hypothesis's booleans (:func:`below`, :func:`choice`), never from
its integer draws: Hypothesis gives an integer draw, now and then, one of the literals of the modules the
process has loaded from outside site-packages (a notebook's own modules, a test suite, an editable install), and
caches them under ``.hypothesis/`` in the working folder.  With booleans only, a seed means the same search in
every process, and a search writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mdmt.runtime.validation import positive_int

FAMILY_KEYS = {"ngram": ("n", "V"), "hmm": ("S", "V"), "explicit": ("V", "L", "M")}
SHRINK_ENTRIES = 64  # Hypothesis shrinks the codes of a family with at most this many table entries; its shrinker's
# work grows faster than linearly in the booleans drawn (four per entry), so a larger family's violation is shrunk by
# the search's own moves alone (refute._Search.shrink)
WEIGHT_LEVELS = 12  # codes 0..12: zero, or weights 1, 2, 4, ..., 2^11
PERTURB_LEVELS = 6  # a perturbation scales an entry by 2^(k/2), |k| <= 6, or drops it (k = -7)
TEMPERATURES = (0.3, 0.5, 1.0, 2.0, 4.0)  # Algorithm 1/2 draws: low temperatures give peaked rows
THRESHOLDS = (0.0, 0.05, 0.2)  # and pruning thresholds: dense rows, and sparse ones
MAX_TABLE_ENTRIES = 2000  # four bits per entry are drawn and shrunk (Hypothesis holds 8 KiB of choices per instance)


def parse_family(text: str) -> tuple[str, dict]:
    """``ngram:n=3,V=2`` -> ("ngram", {"n": 3, "V": 2}); a ValueError names what is wrong."""
    kind, _, rest = str(text).partition(":")
    if kind not in FAMILY_KEYS:
        raise ValueError(f"family {text!r}: expected ngram:n=N,V=V, hmm:S=S,V=V, explicit:V=V,L=L,M=M or a "
                         "language (interval:l, preset:NAME, task:NAME, a file)")
    params = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq or key not in FAMILY_KEYS[kind] or key in params:
            keys = ", ".join(k + "=..." for k in FAMILY_KEYS[kind])
            raise ValueError(f"family {text!r}: {part!r} is not one of {keys}")
        try:
            params[key] = positive_int(f"family {text!r}: {key}", int(value), minimum=1 if key != "V" else 2)
        except ValueError:
            raise ValueError(f"family {text!r}: {key} must be an integer (>= 2 for V), got {value!r}") from None
    missing = [k for k in FAMILY_KEYS[kind] if k not in params]
    if missing:
        raise ValueError(f"family {text!r}: missing {', '.join(missing)}")
    if kind == "ngram" and params["n"] < 2:
        raise ValueError(f"family {text!r}: n must be at least 2 (an n-gram conditions on n - 1 tokens)")
    return kind, params


def _normalise(weights: np.ndarray) -> np.ndarray:
    """Rows of non-negative weights as probabilities; a row of zeros becomes uniform."""
    w = np.asarray(weights, dtype=np.float64)
    totals = w.sum(axis=-1, keepdims=True)
    return np.where(totals > 0, w / np.where(totals > 0, totals, 1.0), 1.0 / w.shape[-1])


@dataclass(frozen=True)
class Family:
    """A family of languages (module docstring): its table shapes and how integer codes become a language."""

    spec: str
    kind: str  # "ngram", "hmm", "explicit" or "language" (perturbations of ``base``)
    shapes: tuple  # shapes of the tables, in :func:`~.certificate.tables_of`'s order
    base: object = None
    interval: int | None = None  # l of the interval HMM (its quantities l and P_distinct)
    order: int | None = None  # n of an n-gram family
    vocab: int | None = None  # V of an explicit family (its tables are tokens and weights)
    length: int | None = None  # L of an explicit law (a family of explicit laws holds one length)

    @property
    def n_symbols(self) -> int:
        """|V|: the last table (conditionals, or emissions) has one column per token."""
        if self.base is not None:
            return int(getattr(self.base, "n_symbols"))
        if self.vocab is not None:
            return int(self.vocab)
        return int(self.shapes[-1][-1])

    @property
    def entries(self) -> int:
        return int(sum(int(np.prod(s)) for s in self.shapes))

    def language(self, codes) -> object:
        """The language of a flat sequence of integer codes (one per table entry)."""
        from .certificate import tables_of, with_tables

        codes = np.asarray(codes, dtype=np.int64)
        if codes.shape != (self.entries,):
            raise ValueError(f"family {self.spec}: expected {self.entries} codes, got {codes.size}")
        if self.kind == "explicit":
            return self._explicit(codes)
        if self.length is not None and not codes.any():  # an explicit base law itself, its exact weights kept
            return self.base
        tables, k = [], 0
        base = tables_of(self.base) if self.base is not None else None
        for t, shape in enumerate(self.shapes):
            c = codes[k:k + int(np.prod(shape))].reshape(shape)
            k += c.size
            if base is None:
                tables.append(_normalise(np.where(c > 0, np.exp2(np.maximum(c, 1) - 1.0), 0.0)))
            else:
                b = np.asarray(base[t], dtype=np.float64)
                w = np.where((b > 0) & (c > -PERTURB_LEVELS - 1), b * np.exp2(c / 2.0), 0.0)
                w = np.where(w.sum(axis=-1, keepdims=True) > 0, w, b)  # a row dropped entirely keeps the base row
                tables.append(_normalise(w))
        if self.base is not None:
            return with_tables(self.base, tables)
        from mdmt.constructions.languages.hmm import HMM
        from mdmt.constructions.languages.ngram import NGram

        return NGram(self.order, *tables) if self.kind == "ngram" else HMM(*tables)

    def _explicit(self, codes: np.ndarray):
        """The explicit law of a random family's codes (module docstring)."""
        from mdmt.constructions.languages.explicit import ExplicitLanguage

        M, L = self.shapes[0]
        tokens = np.minimum(codes[:M * L].reshape(M, L), self.n_symbols - 1)
        weights = np.where(codes[M * L:] > 0, np.exp2(np.maximum(codes[M * L:], 1) - 1.0), 0.0)
        words, inverse = np.unique(tokens, axis=0, return_inverse=True)
        mass = np.bincount(inverse.ravel(), weights=weights, minlength=len(words)).astype(np.float64)
        if not (mass > 0).any():
            mass = np.ones(len(words))
        keep = mass > 0
        return ExplicitLanguage(words[keep], mass[keep] / mass[keep].sum(), n_symbols=self.n_symbols)

    def codes(self):
        """The Hypothesis strategy of code sequences: free codes (shrinking toward zeros: sparse tables, or the base
        language), and for a random family also the codes of languages drawn by Algorithms 1/2 of Feng et al.'s
        appendix with a drawn temperature, pruning threshold and seed (a prior that puts sparse and peaked rows
        where random codes rarely do)."""
        from hypothesis import strategies as st

        if self.base is not None:  # k in -PERTURB_LEVELS-1..PERTURB_LEVELS as a sign and a size, 0 for no bits
            return _bits(self.entries, _Signed(PERTURB_LEVELS + 2, PERTURB_LEVELS))
        if self.kind == "explicit":  # token codes, then weight codes (all zeros: one sequence 0..0)
            M, L = self.shapes[0]
            return st.tuples(_bits(M * L, _Scaled(self.n_symbols)), _bits(M, _Scaled(WEIGHT_LEVELS + 1))).map(_join)
        free = _bits(self.entries, _Scaled(WEIGHT_LEVELS + 1))
        drawn = st.builds(self.drawn_codes, choice(TEMPERATURES), choice(THRESHOLDS), below(2 ** 31))
        return st.booleans().flatmap(_Either(free, drawn))

    def drawn_codes(self, temperature: float, threshold: float, seed: int) -> tuple:
        """The codes nearest a language of Algorithm 1 (n-grams) or 2 (HMMs): each positive entry p of a row as
        1 + round(log2(p / the row's smallest positive entry)), capped at WEIGHT_LEVELS."""
        from mdmt.constructions.languages.random_languages import random_hmm, random_ngram

        from .certificate import tables_of

        if self.kind == "ngram":
            lang = random_ngram(self.order, self.n_symbols, temperature, threshold, seed=seed)
        else:
            lang = random_hmm(self.shapes[0][0], self.n_symbols, temperature, threshold, seed=seed)
        codes = []
        for t in tables_of(lang):
            rows = np.asarray(t, dtype=np.float64).reshape(-1, np.shape(t)[-1])
            smallest = np.where(rows > 0, rows, np.inf).min(axis=1, keepdims=True)
            c = np.where(rows > 0, 1 + np.round(np.log2(np.where(rows > 0, rows, 1.0) / smallest)), 0)
            codes.extend(int(v) for v in np.minimum(c, WEIGHT_LEVELS).ravel())
        return tuple(codes)


def below(n: int):
    """The Hypothesis strategy of the integers 0..n-1, made of booleans (module docstring): k = bit length of n - 1
    bits b, read as an integer and scaled to floor(b n / 2^k), so it shrinks toward 0 and reaches every value."""
    from hypothesis import strategies as st

    n = positive_int("number of values", n)
    code = _Scaled(n)
    if code.k == 0:
        return st.just(0)
    return st.tuples(*[st.booleans()] * code.k).map(code)


def _bits(count: int, code):
    """``count`` codes, each read by ``code`` from its ``code.k`` booleans.  For a family that Hypothesis shrinks
    (at most ``SHRINK_ENTRIES`` of :mod:`.refute`), one tuple of booleans per code; for a larger one, one flat list
    of booleans mapped once, which Hypothesis draws and describes at a cost linear in its length (a tuple per
    code costs a description of each code by its call when an example is reported)."""
    from hypothesis import strategies as st

    if count <= SHRINK_ENTRIES:
        return st.tuples(*[st.tuples(*[st.booleans()] * code.k).map(code)] * count)
    size = count * code.k
    return st.lists(st.booleans(), min_size=size, max_size=size).map(_Codes(count, code))


class _Codes:
    """A flat list of booleans read as ``count`` codes of ``code.k`` bits each (:func:`_bits`)."""

    def __init__(self, count: int, code):
        self.count, self.code = count, code

    def __call__(self, bits) -> tuple:
        k = self.code.k
        return tuple(self.code(bits[i * k:(i + 1) * k]) for i in range(self.count))

    def __repr__(self) -> str:
        return f"codes({self.count}, {self.code!r})"


class _Scaled:
    """k = bit length of n - 1 bits, read as an integer b and scaled to floor(b n / 2^k): 0..n-1, shrinking to 0."""

    def __init__(self, n: int):
        self.n, self.k = n, (n - 1).bit_length()

    def __call__(self, bits) -> int:
        return (int("".join("01"[b] for b in bits), 2) * self.n) >> self.k

    def __repr__(self) -> str:
        return f"scaled({self.n})"


class _Signed:
    """A sign bit and a size in 0..n-1 (:class:`_Scaled`): -size, or +size capped at ``cap`` (the perturbation
    codes of :meth:`Family.codes`; all zeros is 0, no perturbation)."""

    def __init__(self, n: int, cap: int):
        self.size, self.cap = _Scaled(n), cap
        self.k = 1 + self.size.k

    def __call__(self, bits) -> int:
        size = self.size(bits[1:])
        return -size if bits[0] else min(size, self.cap)

    def __repr__(self) -> str:
        return f"signed({self.size.n}, {self.cap})"


def _join(parts) -> tuple:
    """The token codes and the weight codes of an explicit family as one flat tuple."""
    return tuple(parts[0]) + tuple(parts[1])


class _Either:
    """The free codes or the drawn ones, by a drawn boolean (:meth:`Family.codes`)."""

    def __init__(self, free, drawn):
        self.free, self.drawn = free, drawn

    def __call__(self, use_free: bool):
        return self.free if use_free else self.drawn

    def __repr__(self) -> str:
        return "free_or_drawn"


def choice(values):
    """The Hypothesis strategy of one of ``values`` (shrinking toward the first), made of booleans (:func:`below`)."""
    values = list(values)
    return below(len(values)).map(values.__getitem__)


def family(text) -> Family:
    """The :class:`Family` a ``--family`` text names (module docstring)."""
    text = str(text).strip()
    if text.partition(":")[0] in FAMILY_KEYS:
        kind, params = parse_family(text)
        V = params["V"]
        if kind == "explicit":
            M, L = params["M"], params["L"]
            fam = Family(text, kind, ((M, L), (M,)), vocab=V, length=L)
        else:
            if kind == "ngram":
                C = V ** (params["n"] - 1)
                shapes = ((C,), (C, V))
            else:
                S = params["S"]
                shapes = ((S,), (S, S), (S, V))
            fam = Family(text, kind, shapes, order=params.get("n"))
    else:
        from mdmt.constructions.languages.spec import language_from_spec

        from .certificate import NotCertifiable, tables_of

        try:
            base = language_from_spec(text)
        except ValueError as exc:
            raise ValueError(f"family {text!r}: {exc}") from None
        try:
            shapes = tuple(np.shape(t) for t in tables_of(base))
        except NotCertifiable as exc:
            raise ValueError(f"family {text!r}: {exc}") from None
        interval = int(text.partition(":")[2]) if text.startswith("interval:") else _file_interval(text)
        length = int(getattr(base, "length")) if getattr(base, "kind", None) == "explicit" else None
        fam = Family(text, "language", shapes, base=base, interval=interval, length=length)
    if fam.entries > MAX_TABLE_ENTRIES:
        raise ValueError(f"family {text!r}: its tables have {fam.entries} entries; the search draws one code "
                         f"per entry and supports at most {MAX_TABLE_ENTRIES}")
    return fam


def _file_interval(path: str) -> int | None:
    """The interval length l recorded in a language file's metadata (``mdmt refute --out`` writes it for an instance
    of the interval HMM's family, so that the check of the instance has ``l`` and ``P_distinct``), else None."""
    from mdmt.constructions.languages.io import read_document
    from mdmt.constructions.languages.spec import interval_length_of

    try:
        if interval_length_of(path) is not None:
            return interval_length_of(path)
        doc = read_document(path)
    except (OSError, ValueError, RecursionError):
        return None
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    l = meta.get("interval") if isinstance(meta, dict) else None
    if l is None:
        return None
    if isinstance(l, bool) or not isinstance(l, int) or l < 2:
        raise ValueError(f"family {path!r}: its metadata's interval length must be an integer >= 2, got {l!r}")
    return l


def instance_size(L: int, N: int, language) -> tuple:
    """The order in which counterexamples are compared: L, N, positive entries, then the sum of the tables' -log p."""
    from .certificate import tables_of

    tables = [np.asarray(t, dtype=np.float64) for t in tables_of(language)]
    positive = sum(int((t > 0).sum()) for t in tables)
    spread = sum(float(-np.log(t[t > 0]).sum()) for t in tables)
    return (int(L), int(N), positive, round(spread, 9))
