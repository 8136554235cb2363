"""The empirical side of mdmt: transformers trained on the formal languages (Section 5, Appendix E).

* :mod:`empirical.data`        seeded train/validation sets on disk, regenerated deterministically;
* :mod:`empirical.model`       a bidirectional MDM (MDLM's SUBS parameterization) and an AR baseline
                               with the same architecture (causal attention, KV cache);
* :mod:`empirical.train`       training with the continuous-time ELBO, validation NLL against the
                               language's entropy rate, checkpoint/resume, DDP under torchrun;
* :mod:`empirical.sampling`    the ddpm_cache sampler (Eq. 3, THEORY §2) and AR sampling;
* :mod:`empirical.metrics`     TER (generative perplexity under q), SER, the measured learning error
                               (Assumption 4.1) and the (C4) bound evaluated with it;
* :mod:`empirical.experiments` Figure 1 sweeps and the speed comparison of MDM and AR.

Importing this package does not import torch; the submodules do.
"""
