"""``mdmt data``: seeded training and validation sets of a language, stored in a folder (Section 5).

``mdmt data --preset 3gram-ter --length 512 --out data/3gram-ter`` writes ``train.npy``,
``val.npy`` and ``manifest.json`` (spec, sizes, SHA-256 of each array); an existing folder with
the same spec is loaded and checked, one with another spec or a damaged file is regenerated.
``mdmt data --verify FOLDER`` checks the digests and regenerates the arrays from the manifest to
confirm they are reproduced bit for bit.  ``mdmt train --data FOLDER`` trains on a stored set.
"""

from __future__ import annotations

HELP = "seeded train/validation sets of a language, stored on disk and regenerated deterministically"


def add_arguments(p):
    p.add_argument("--preset", help="language: a Table 1 preset (e.g. 3gram-ter, hmm) or interval-<l>")
    p.add_argument("--language-seed", type=int, default=0, help="seed of the preset language (default 0)")
    p.add_argument("--length", "-L", type=int, default=64, help="sequence length L (default 64)")
    p.add_argument("--n-train", type=int, default=10000, help="training sequences (default 10000)")
    p.add_argument("--n-val", type=int, default=1000, help="validation sequences (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sequences (default 0)")
    p.add_argument("--out", help="folder to write (or load, if it holds the same spec)")
    p.add_argument("--verify", metavar="FOLDER", help="check a stored set against its manifest and regeneration")
    p.add_argument("--json", action="store_true", help="print the manifest as one JSON document")


def run(args) -> int:
    from pathlib import Path

    from empirical.data import DataSpec, load_or_create, read_manifest, verify

    from ._common import print_json

    if args.verify is not None:
        if args.out is not None or args.preset is not None:
            raise ValueError("--verify takes a folder alone: drop --out and --preset")
        manifest = verify(args.verify)
        status = "verified: digests match and regeneration reproduces both arrays bit for bit"
        folder = Path(args.verify)
    else:
        if args.preset is None or args.out is None:
            raise ValueError("give --preset and --out (or --verify FOLDER)")
        spec = DataSpec(language=args.preset, language_seed=args.language_seed, seed=args.seed,
                        n_train=args.n_train, n_val=args.n_val, length=args.length)
        folder = Path(args.out)
        before = read_manifest(folder)
        load_or_create(folder, spec)
        manifest = read_manifest(folder)
        status = "loaded (same spec, digests match)" if before == manifest else "written"
    if args.json:
        print_json({"folder": str(folder), "status": status, **manifest})
        return 0
    print(f"{folder}: {manifest['language']} (language seed {manifest['language_seed']}), L = {manifest['length']}, "
          f"{manifest['n_train']} training + {manifest['n_val']} validation sequences, seed {manifest['seed']}, "
          f"|V| = {manifest['vocab_size']}")
    print(f"train sha256 {manifest['sha256']['train']}\nval   sha256 {manifest['sha256']['val']}\n{status}")
    return 0
