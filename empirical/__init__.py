"""The empirical side of mdmt: transformers trained on the formal languages (Section 5, Appendix E).

* :mod:`empirical.model`     one transformer, used as a bidirectional MDM (SUBS parameterization)
                             or as the causal AR baseline (KV cache); presets ``tiny`` and ``paper``;
* :mod:`empirical.train`     training with the continuous-time ELBO (linear schedule, weight 1/t) or
                             next-token cross entropy, validation NLL against the entropy rate,
                             checkpoint and exact resume;
* :mod:`empirical.sampling`  the ddpm_cache sampler (Eq. 3, THEORY §2) for any denoiser, and AR sampling;
* :mod:`empirical.metrics`   generative perplexity, SER (Wilson interval), the measured learning
                             error (Assumption 4.1) and the bound it enters.

Importing this package does not import torch; the submodules do.
"""
