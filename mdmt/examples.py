"""The Examples section of every ``mdmt COMMAND --help``: a few command lines per command, each one that parses
(tests/test_cli_grammar.py) and, at these sizes, runs in seconds (those needing PyTorch or a checkpoint say so)."""

EXAMPLES = {
    "verify": ["mdmt verify --quick", "mdmt verify -k T44 --format markdown"],
    "compile": ["mdmt compile    # once after install: 30 s on two cores; 2 s when the cache is warm",
                "mdmt compile --jobs 2 --json"],
    "counterexample": ["mdmt counterexample -l 5 --out ce5.json    # the paper's 16-symbol HMM"],
    "language": ["mdmt language --list", "mdmt language --language preset:3gram --out lang.json",
                 "mdmt language --kind hmm --states 4 --vocab 3 --seed 1 --out hmm.json"],
    "score": ["mdmt score --language ce5.json --sequences seqs.txt",
              "mdmt score --language preset:3gram --sequences data/3g/val.npy --json"],
    "exact": ["mdmt exact --language interval:3 -L 6 -N 3", "mdmt exact --language lang.json -L 4 -N 2 --json"],
    "sample": ["mdmt sample --language preset:3gram -L 512 -N 64 --num 200",
               "mdmt sample --language interval:5 -L 500 -N 100 --num 500 --out seqs.txt",
               "mdmt sample --checkpoint runs/mdm/ckpt.pt -L 64 -N 16 --language preset:2gram-ter   # empirical extra"],
    "dependencies": ["mdmt dependencies --n 3 -L 256 -N 16", "mdmt dependencies --n 2 -L 64 -N 8 --schedule cosine"],
    "curve ter": ["mdmt curve ter --n 3 --eps 0.05", "mdmt curve ter --n 2 --eps 0.01 --lengths 256,1024 --json"],
    "curve ser": ["mdmt curve ser -l 5 -L 1000", "mdmt curve ser -l 3 -L 60 --plot ser.png"],
    "data": ["mdmt data --language preset:3gram -L 64 --num 1000 --out data/3g", "mdmt data --verify data/3g"],
    "train": ["mdmt train --language preset:2gram-ter --model tiny -L 32 --train-steps 200 --out runs/mdm   "
              "# empirical extra", "mdmt train --language preset:2gram-ter --ar -L 32 --train-steps 200 --out runs/ar"],
    "evaluate": ["mdmt evaluate --checkpoint runs/mdm/ckpt.pt -N 8,64   # empirical extra"],
    "figure1": ["mdmt figure1 --kinds oracle --lengths 64,128 --steps 8,64 --out runs/fig1-oracle",
                "mdmt figure1 --model tiny --out runs/fig1   # empirical extra; one worker per core (--jobs auto); 54 minutes on 2"],
    "speed": ["mdmt speed --model tiny --lengths 64,128 -N 16   # empirical extra"],
    "atlas": ["mdmt atlas --language interval:3 -L 6 -N 3",
              "mdmt atlas --language preset:2gram --language interval:2 -L 2,4 -N 2 --jobs 2 --out atlas"],
    "refute": ["mdmt refute --claim 'KL <= (2 ** ceil(log2(s_max)) - 1) / L * sum_MI' --family ngram:n=3,V=2 "
               "--lengths 5 --steps 3 --process confidence --budget 40 --out li-cai",
               "mdmt refute --claim 'KL <= L * eps + log(V) * E_D' --family ngram:n=2,V=2 --lengths 3,4 --steps 1,2",
               "mdmt refute --claim 'E_TC <= KL' --family interval:3 --lengths 3,6 --budget 5m --shards 4 --jobs 2"],
    "adaptive sample": ["mdmt adaptive sample --language interval:5 -L 500 -N 5 --policy stride --num 200"],
    "adaptive exact": ["mdmt adaptive exact --language interval:3 -L 6 -N 3 --policy confidence"],
    "adaptive ser": ["mdmt adaptive ser --interval-lengths 3 --intervals 4,8 --num 200 --jobs 2"],
    "adaptive ter": ["mdmt adaptive ter --language preset:2gram-ter --lengths 16,32 --policies iid,confidence "
                     "--num 64"],
    "samplers": ["mdmt samplers --language interval:3 --lengths 6,12 --samplers uniform,bisect,verified,ar"],
    "schedule": ["mdmt schedule --language preset:2gram -L 64 -N 8",
                 "mdmt schedule --language preset:2gram -L 16,32,64 --target 0.05 --per-token"],
}


def epilog(leaf: str) -> str | None:
    """The Examples section of the command (``curve ter`` for a subcommand), or None if it has none."""
    lines = EXAMPLES.get(leaf)
    if not lines:
        return None
    return "Examples:\n" + "\n".join(f"  {line}" for line in lines)
