"""A trained network measured against its language (``mdmt evaluate``; Section 5 of the paper).

:func:`evaluate` returns, for an MDM or AR checkpoint and the language it was trained on, the paired
validation gap (the network's NLL per token minus the exact -ln q(x)/L on the same sequences), an
MDM's measured learning error (the epsilon of Theorems 4.2 and 4.4, Monte Carlo over random masks),
and per number of steps N the SER and generative perplexity of its samples (ddpm_cache for an MDM,
one token per step for an AR model) -- the table ``points`` of a :class:`mdmt.results.Result`.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from mdmt.runtime.validation import seed_of
from mdmt.results import Result
from mdmt.constructions.types import Language

from ._torch import torch
from .model import Transformer


def evaluate(model: Transformer, language: Language, L: int, steps: Iterable[int], *, schedule: str = "linear",
             num: int = 512, val_num: int = 512, learning_error_num: int = 256, seed: int = 0,
             batch: int = 256) -> Result:
    """The measurements of the module docstring for ``model`` on ``language`` at length L (an AR model is
    sampled at N = L alone); ``.to_frame()`` gives the points, ``["val_gap"]`` and ``["learning_error"]`` the rest."""
    from mdmt.constructions.reverse.learning import learning_error
    from mdmt.constructions.reverse.metrics import sample_metrics
    from mdmt.constructions.reverse.schedules import reveal_probabilities

    from .sampling import MDMDenoiser, sample_model
    from .train import paired_gap, sequence_nll

    kind = "ar" if model.cfg.causal else "mdm"
    out: dict = {"kind": kind, "L": L, "parameters": model.num_parameters(), "val_gap": None}
    if kind == "ar" or L == model.cfg.seq_len:  # an MDM's NELBO is over its whole length
        x = np.asarray(language.sample_sequences(val_num, L, np.random.default_rng(seed_of(seed, 30))),
                       dtype=np.int64)
        nll = sequence_nll(model, torch.as_tensor(x), seed_of(seed, 31), 8, batch=batch)
        out["val_gap"] = paired_gap(nll, -language.log_likelihood(x) / L)
    if kind == "mdm" and learning_error_num:
        out["learning_error"] = learning_error(language, MDMDenoiser(model, batch=batch), L, method="monte_carlo",
                                               num=learning_error_num, seed=seed_of(seed, 32) % 2**32, batch=batch)
    points = []
    for N in (steps if kind == "mdm" else [L]):
        pi = reveal_probabilities(schedule, N) if kind == "mdm" else None
        res = sample_model(model, num, L, pi, seed=seed_of(seed, 33, N) % 2**31, batch=batch)
        m = sample_metrics(language, res.samples)
        points.append({"N": N, "nfe_mean": float(res.nfe.mean()), "ser": m["ser"], "ser_ci": m["ser_ci"],
                       "gen_perplexity": m["gen_perplexity"], "gen_perplexity_ci": m["gen_perplexity_ci"],
                       "gen_nll_per_token": m["gen_nll_per_token"], "seconds": res.seconds})
    out["points"] = points
    return Result(out, tables=("points",))
