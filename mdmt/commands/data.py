"""``mdmt data``: seeded training and validation sets of a language, stored in a folder (Section 5.1).

``mdmt data --language preset:3gram-ter --length 512 --out data/3gram-ter`` writes ``train.npy``,
``val.npy`` and ``manifest.json`` (spec, sizes, SHA-256 of each array); an existing folder with
the same spec is loaded and checked, and regenerated (the status says why) if a file is damaged.
A folder holding another spec's set, or files that are not an mdmt data set, is left alone
unless ``--force``.  ``mdmt data --verify FOLDER`` checks the digests and regenerates the arrays
from the manifest to confirm they are reproduced bit for bit.  ``mdmt train --data FOLDER``
trains on a stored set.
"""

from __future__ import annotations

from ._common import (add_force, add_json, add_language, add_length, add_num, add_seed, at_least, integer,
                      load_language, print_json)

DEFAULTS = {"length": 64, "num": 10000, "num_val": 1000, "seed": 0}
"""The defaults of the options that describe a data set (None in the parser, so that --verify can refuse them)."""


def add_arguments(p):
    add_language(p, required=False)
    add_length(p, required=False, default=None, help="sequence length L (default 64)")
    add_num(p, DEFAULTS["num"], "training sequences")
    p.add_argument("--num-val", type=integer, default=None, help="number of validation sequences (default 1000)")
    add_seed(p, what=" of the sequences")
    p.set_defaults(num=None, seed=None)
    p.add_argument("--out", help="folder to write (or load, if it holds the same spec)")
    add_force(p)
    p.add_argument("--verify", metavar="FOLDER", help="check a stored set against its manifest and regeneration")
    add_json(p)


def run(args) -> int:
    from pathlib import Path

    from mdmt.empirical.data import DataSpec, ensure, verify

    if args.verify is not None:
        given = [f"{flag} {value}" if value is not True else flag
                 for flag, value in (("--language", args.language), ("--out", args.out), ("--length", args.length),
                                     ("--num", args.num), ("--num-val", args.num_val), ("--seed", args.seed),
                                     ("--force", args.force or None)) if value is not None]
        if given:
            raise ValueError(f"--verify takes a folder alone: {given[0]} does not apply (the manifest records the "
                             "data set)")
        manifest = verify(args.verify, flag="--verify")
        status = "verified: digests match and regeneration reproduces both arrays bit for bit"
        folder = Path(args.verify)
    else:
        if args.language is None or args.out is None:
            raise ValueError("give --language and --out (or --verify FOLDER)")
        for key, value in DEFAULTS.items():
            if getattr(args, key) is None:
                setattr(args, key, value)
        at_least("--length", args.length)
        at_least("--num", args.num)
        at_least("--num-val", args.num_val)
        language = load_language(args.language)  # an error names --language and the SPEC
        spec = DataSpec(language=args.language, seed=args.seed, num_train=args.num, num_val=args.num_val,
                        length=args.length)
        folder = Path(args.out)
        from mdmt.runtime.locks import output_lock
        from mdmt.runtime.outputs import check_output_folder

        with output_lock(check_output_folder(folder)):  # one writer per --out: a second run is refused at once
            stored = ensure(folder, spec, language, force=args.force)
        manifest, status = stored.manifest, stored.status
    if args.json:
        print_json({"folder": str(folder), "status": status, **manifest})
        return 0
    print(f"{folder}: {manifest['language']}, L = {manifest['length']}, {manifest['num_train']} training + "
          f"{manifest['num_val']} validation sequences, seed {manifest['seed']}, |V| = {manifest['vocab_size']}")
    print(f"train sha256 {manifest['sha256']['train']}\nval   sha256 {manifest['sha256']['val']}\n{status}")
    return 0
