"""``mdmt score``: exact log-likelihood and support membership of sequences."""

import re
from pathlib import Path

import numpy as np

from ._common import add_json, add_language, format_table, load_language, print_json

_TOKEN = re.compile(r"-?[0-9]+")
_BYTES_PER_CHAR = 24  # peak bytes per character of the file while parsing (strings, then int64 rows)


def add_arguments(p):
    add_language(p)
    p.add_argument("--sequences", required=True,
                   help="text file: one sequence per line, tokens as space-separated integers, lines starting "
                        "with # ignored (mdmt sample --out writes one); or a NumPy .npy array of integer tokens, "
                        "shape (n, L) or (L,) (mdmt data writes train.npy and val.npy)")
    add_json(p)


def _bad_token(path, lineno: int, toks: list[str], n_symbols: int) -> str:
    for tok in toks:
        if not _TOKEN.fullmatch(tok):
            return f"{path} line {lineno}: token {tok[:40]!r} is not an integer"
        if not 0 <= int(tok) < n_symbols:
            return f"{path} line {lineno}: token {int(tok)} is outside the vocabulary 0..{n_symbols - 1}"
    return f"{path} line {lineno}: unreadable tokens"


_NPY_MAGIC = b"\x93NUMPY"


def read_npy_sequences(path: Path, n_symbols: int) -> list[np.ndarray]:
    """The sequences of a .npy array of integer tokens, each checked against the vocabulary in the array's own
    dtype (no wrap-around: uint64 2**64-1 is refused, not read as -1); errors name the sequence and position."""
    from mdmt.runtime.resources import check_memory, format_bytes
    from mdmt.runtime.validation import token_array

    try:
        with open(path, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, dtype = read(fh)
    except (ValueError, EOFError, TypeError) as exc:
        raise ValueError(f"--sequences {path}: not a readable .npy array ({' '.join(str(exc).split())})") from None
    count = int(np.prod(shape, dtype=object))
    check_memory(f"reading --sequences {path} ({format_bytes(count * dtype.itemsize)} of tokens)",
                 count * (dtype.itemsize + 16), "score the sequences in smaller files")  # the array, its int64 copy
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, EOFError) as exc:
        raise ValueError(f"--sequences {path}: not a readable .npy array ({' '.join(str(exc).split())})") from None
    if arr.ndim not in (1, 2):
        raise ValueError(f"--sequences {path}: expected an array of shape (n, L) or (L,), got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"--sequences {path}: no sequences (shape {arr.shape})")
    try:
        X = token_array(arr, n_symbols, allow_mask=False)
    except ValueError as exc:
        raise ValueError(f"--sequences {path}: {exc}") from None
    return list(X)


def read_sequences(path, n_symbols: int) -> list[np.ndarray]:
    """Parse the sequence file (text, or a .npy array); errors name the line (or sequence, position) and token."""
    from mdmt.runtime.resources import check_memory
    from mdmt.runtime.validation import regular_file

    path = regular_file(path, f"--sequences {path}")
    with open(path, "rb") as fh:
        if fh.read(len(_NPY_MAGIC)) == _NPY_MAGIC or path.suffix.lower() == ".npy":
            return read_npy_sequences(path, n_symbols)
    check_memory(f"reading {path}", _BYTES_PER_CHAR * path.stat().st_size, "score the sequences in smaller files")
    try:
        text = path.read_text()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a text file ({exc.reason} at byte {exc.start})") from None
    seqs = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        toks = line.split()
        try:
            row = np.array([int(t) for t in toks], dtype=np.int64) if all(map(_TOKEN.fullmatch, toks)) else None
        except OverflowError:
            row = None
        if row is None or row.min() < 0 or row.max() >= n_symbols:
            raise ValueError(_bad_token(path, lineno, toks, n_symbols))
        seqs.append(row)
    if not seqs:
        raise ValueError(f"{path}: no sequences")
    return seqs


def run(args) -> int:
    lang = load_language(args.language)
    seqs = read_sequences(args.sequences, lang.n_symbols)
    ll = np.empty(len(seqs))
    ins = np.empty(len(seqs), dtype=bool)
    lengths = np.array([len(s) for s in seqs])
    for L in np.unique(lengths):  # one batched call per length
        idx = np.flatnonzero(lengths == L)
        X = np.stack([seqs[i] for i in idx])
        ll[idx] = lang.log_likelihood(X)
        ins[idx] = lang.in_support(X)
    if args.json:
        print_json([{"log_likelihood": float(a) if b else None, "in_support": bool(b)} for a, b in zip(ll, ins)])
    else:
        print(format_table(["sequence", "length", "log_likelihood", "in_support"],
                           [[i, int(lengths[i]), ll[i], bool(ins[i])] for i in range(len(seqs))]))
        print(summary_line(ll, ins, lengths))
    return 0


def summary_line(ll, ins, lengths) -> str:
    """One line after the table: how many sequences are in the support (1 - that fraction is the set's sequence
    error rate, Section 4.3) and their mean log-likelihood, per sequence and per token."""
    n, k = len(ins), int(np.sum(ins))
    span = f"L = {lengths.min()}" if lengths.min() == lengths.max() else f"L = {lengths.min()}..{lengths.max()}"
    line = f"{n} sequences ({span}): {k} in the support ({k / n:.4g}; error rate {1 - k / n:.4g})"
    if k:
        line += (f"; their mean log-likelihood {float(np.mean(ll[ins])):.6g} nats, "
                 f"{float(np.sum(ll[ins]) / np.sum(lengths[ins])):.6g} nats per token")
    return line
