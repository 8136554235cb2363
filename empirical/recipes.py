"""The architecture presets and training recipes of the networks, as plain data (no torch needed).

``ARCHITECTURES`` fixes a network's shape per preset (``--model tiny|paper``): ``paper`` is Table 2
of the paper; ``tiny`` a CPU-sized version with the same structure plus an n-gram layer of order 4
(the largest order of Table 1's languages) and a 64-unit recurrent layer (what the HMM-type languages
need beyond the table).  ``RECIPES`` holds their training defaults: ``paper`` is Table 3, ``tiny`` was
chosen by the ablation of docs/empirical.md on a CPU.  :mod:`mdmt.empirical.model` and :mod:`mdmt.empirical.train`
re-export them as ``PRESETS`` and ``RECIPES``; commands validate ``--model`` against them before
torch is imported.
"""

ARCHITECTURES = {
    "tiny": dict(d_model=64, n_layers=2, n_heads=4, seq_len=64, ngram=4, recurrent=64),
    "paper": dict(d_model=512, n_layers=8, n_heads=8, seq_len=512),
}

#: Training objectives: the MDM's ELBO weighted per masked count, per time, or harmonic; see mdmt.empirical.train.
ESTIMATORS = ("count", "time", "harmonic")

#: The training recipe of each architecture preset: the defaults of ``mdmt train`` and ``mdmt figure1``.
RECIPES = {
    "tiny": dict(train_steps=2000, batch=64, lr=3e-3, table_lr=10.0, estimator="harmonic", warmup_frac=0.1),
    "paper": dict(train_steps=20000, batch=64, lr=3e-4, estimator="count", warmup_frac=0.1),
}
