"""mdmt.empirical: transformers trained on the formal languages (Section 5, Appendix E of the paper).

* :mod:`mdmt.empirical.model`       one transformer, used as a bidirectional MDM (SUBS parameterization)
                                    or as the causal AR baseline (KV cache); architectures ``tiny`` and ``paper``;
* :mod:`mdmt.empirical.train`       one :class:`~mdmt.empirical.train.TrainConfig`; training with the
                                    continuous-time ELBO or next-token cross entropy, validation NLL
                                    against the entropy rate, checkpoint and exact resume;
* :mod:`mdmt.empirical.sampling`    the ddpm_cache sampler (Eq. 3) for networks, and AR sampling;
* :mod:`mdmt.empirical.metrics`     the entropy rate and the AR model's KL;
* :mod:`mdmt.empirical.evaluation`  a trained network measured against its language (``mdmt evaluate``);
* :mod:`mdmt.empirical.data`        seeded data sets on disk;
* :mod:`mdmt.empirical.experiments` Figure 1 as a resumable experiment;
* provenance of every result: :mod:`mdmt.runtime.provenance`.

Public names (loaded on first use, so that importing the package stays light): ``ModelConfig``,
``TrainConfig``, ``load_run``, ``load_model``, ``sample_model``, ``evaluate`` (``mdmt evaluate``: validation gap,
learning error, SER and perplexity against N), ``Figure1``, ``Figure1Config``,
``entropy_rate``, ``set_threads``; training is ``mdmt.train`` (``train`` here is the submodule).

Importing this package does not import torch; the submodules do.  It sets ``OMP_WAIT_POLICY=PASSIVE``
(unless set): torch's OpenMP worker threads otherwise spin after every parallel region,
and between the small torch operations of a training step they take the CPU from it (a step of the
``tiny`` MDM, with its batch drawn by numba, cost 0.5-1 CPU s instead of 0.06-0.08 s on a 2-core
machine).  It has effect when this package is imported before torch.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def set_threads(n: int, torch: bool = True) -> None:
    """Run mdmt's kernels (:func:`mdmt.runtime.parallel.set_threads`), and torch unless ``torch`` is False, on ``n``
    threads.  mdmt's kernels run on Python threads of their own, not on numba's OpenMP layer, so torch's thread count
    set here holds whatever numba computes afterwards."""
    from mdmt.runtime.parallel import set_threads as kernel_threads

    kernel_threads(n)
    if torch:
        from ._torch import torch as _torch

        _torch.set_num_threads(n)


from mdmt.lazy import lazy_exports  # noqa: E402

__getattr__, __dir__, __all__ = lazy_exports(
    "mdmt.empirical", globals(),
    {"ModelConfig": "mdmt.empirical.model", "TrainConfig": "mdmt.empirical.run_config",
     "load_run": "mdmt.empirical.train", "load_model": "mdmt.empirical.train",
     "sample_model": "mdmt.empirical.sampling", "evaluate": "mdmt.empirical.evaluation",
     "Figure1": "mdmt.empirical.experiments",
     "Figure1Config": "mdmt.empirical.experiments", "entropy_rate": "mdmt.empirical.metrics"})
__all__ = sorted([*__all__, "set_threads"])
