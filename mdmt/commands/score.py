"""``mdmt score``: exact log-likelihood and support membership of sequences."""

from pathlib import Path

import numpy as np

from ._common import add_json, add_language, format_table, load_language, print_json

HELP = "print the natural-log likelihood and support membership of each sequence in a file"


def add_arguments(p):
    add_language(p)
    p.add_argument("--sequences", required=True,
                   help="text file: one sequence per line, tokens as space-separated integers (mdmt sample --out writes one)")
    add_json(p)


def read_sequences(path, n_symbols: int) -> list[np.ndarray]:
    """Parse the sequence file; errors name the line and the token."""
    seqs = []
    for lineno, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        toks = []
        for tok in line.split():
            try:
                v = int(tok)
            except ValueError:
                raise ValueError(f"{path} line {lineno}: token {tok!r} is not an integer") from None
            if not 0 <= v < n_symbols:
                raise ValueError(f"{path} line {lineno}: token {v} is outside the vocabulary 0..{n_symbols - 1}")
            toks.append(v)
        seqs.append(np.array(toks, dtype=np.int64))
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
