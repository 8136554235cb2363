"""The cost model of the parts of a Figure 1 run (:meth:`mdmt.empirical.experiments.Figure1._parts`): the expected
seconds of a part, by which :mod:`mdmt.sweep` orders the parts and estimates the time left."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from mdmt.constructions.languages.spec import language_from_spec

if TYPE_CHECKING:
    from .experiments import Figure1Config


#: The cost model of a part, in seconds of one worker (one thread) on the 2-core AMD EPYC machine.  An oracle
#: point costs ORACLE_SECONDS * (num / 512) * L^ORACLE_L * min(N, L)^ORACLE_N * W^ORACLE_W, times ORACLE_TER on a
#: TER language (its assignment-KL estimate), W the positive entries of the tables the exact recursion reads (an
#: n-gram's conditional table, an HMM's transition and emission tables): the exponents from a least-squares fit of
#: log seconds to the 240 oracle points of a committed Figure 1 run.  Training a network costs TRAIN_SECONDS per
#: sequence-token of its batches, and its points NETWORK_POINT_SECONDS per sequence, token and network call.  The
#: three constants are scaled so that the model's totals of oracle and network parts equal the measured part times
#: of the committed run in docs/results/figure1_tiny (run.log); ``python benchmarks/sweep.py`` repeats the
#: comparison part by part, and tests/test_sweep.py checks the ranking (Spearman >= 0.8) and both totals.
ORACLE_SECONDS = 1.25e-6
ORACLE_L, ORACLE_N, ORACLE_W, ORACLE_TER = 0.95, 0.24, 1.2, 1.28
TRAIN_SECONDS = 3.9e-5
NETWORK_POINT_SECONDS = 1.65e-5


def recursion_work(language) -> int:
    """W of the cost model: the positive entries of the tables the exact recursion reads."""
    if hasattr(language, "transmat_"):
        return int((np.asarray(language.transmat_) > 0).sum() + (np.asarray(language.emissionprob_) > 0).sum())
    return int((np.asarray(language.transition_) > 0).sum())


def part_seconds(cfg: Figure1Config, part, work: int | None = None) -> float:
    """The expected seconds of one part of a Figure 1 run (the cost model above), for ordering and the ETA."""
    _, name, role, kinds, lengths = part
    seconds = 0.0
    if lengths:  # an oracle part: its points at one length
        W = recursion_work(language_from_spec(name)) if work is None else work
        for L in lengths:
            per = (ORACLE_SECONDS * (cfg.num / 512) * L ** ORACLE_L * W ** ORACLE_W
                   * (ORACLE_TER if role == "ter" else 1.0))
            seconds += sum(per * min(N, L) ** ORACLE_N for N in cfg.steps)
    else:  # the networks of a language, their learning error and their points
        nets = [k for k in kinds if k in ("mdm", "ar")]
        seconds += TRAIN_SECONDS * len(nets) * cfg.train_steps * cfg.batch * cfg.length
        if "mdm" in nets:
            seconds += NETWORK_POINT_SECONDS * cfg.num * cfg.length * sum(min(N, cfg.length) for N in cfg.steps)
    return seconds
