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
                        "with # ignored (mdmt sample --out writes one)")
    add_json(p)


def _bad_token(path, lineno: int, toks: list[str], n_symbols: int) -> str:
    for tok in toks:
        if not _TOKEN.fullmatch(tok):
            return f"{path} line {lineno}: token {tok[:40]!r} is not an integer"
        if not 0 <= int(tok) < n_symbols:
            return f"{path} line {lineno}: token {int(tok)} is outside the vocabulary 0..{n_symbols - 1}"
    return f"{path} line {lineno}: unreadable tokens"


def read_sequences(path, n_symbols: int) -> list[np.ndarray]:
    """Parse the sequence file; errors name the line and the token."""
    from mdmt.constructions.resources import check_memory
    from mdmt.constructions.validation import regular_file

    path = regular_file(path, f"--sequences {path}")
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
        ll[idx] = lang.score(X)
        ins[idx] = lang.in_support(X)
    if args.json:
        print_json([{"log_likelihood": float(a) if b else None, "in_support": bool(b)} for a, b in zip(ll, ins)])
    else:
        print(format_table(["sequence", "length", "log_likelihood", "in_support"],
                           [[i, int(lengths[i]), ll[i], bool(ins[i])] for i in range(len(seqs))]))
    return 0
