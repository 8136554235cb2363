"""mdmt.empirical: transformers trained on the formal languages (Section 5, Appendix E of the paper).

* :mod:`mdmt.empirical.model`       one transformer, used as a bidirectional MDM (SUBS parameterization)
                                    or as the causal AR baseline (KV cache); architectures ``tiny`` and ``paper``;
* :mod:`mdmt.empirical.train`       one :class:`~mdmt.empirical.train.TrainConfig`; training with the
                                    continuous-time ELBO or next-token cross entropy, validation NLL
                                    against the entropy rate, checkpoint and exact resume;
* :mod:`mdmt.empirical.sampling`    the ddpm_cache sampler (Eq. 3) for networks, and AR sampling;
* :mod:`mdmt.empirical.metrics`     the entropy rate and the AR model's KL;
* :mod:`mdmt.empirical.data`        seeded data sets on disk;
* :mod:`mdmt.empirical.experiments` Figure 1 as a resumable experiment;
* provenance of every result: :mod:`mdmt.provenance`.

Importing this package does not import torch; the submodules do.
"""
