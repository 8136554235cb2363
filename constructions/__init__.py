"""mdmt.constructions: the objects the paper's theorems speak of.

* :mod:`mdmt.constructions.languages` -- HMM and n-gram languages with exact inference, random
  Table 1 languages, the interval counterexample of Theorem 4.4, file formats, the SPEC grammar;
* :mod:`mdmt.constructions.reverse` -- the masked diffusion reverse process: schedules,
  denoisers, the exact output law, the proof-chain quantities, the oracle sampler, metrics;
* :mod:`mdmt.runtime.validation` and :mod:`mdmt.constructions.reverse.confidence` -- input
  validation and confidence intervals, shared by both.

Importing this package imports nothing heavy; import the subpackages (or ``mdmt`` itself).
"""
