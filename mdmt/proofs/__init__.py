"""The proof check that ships with mdmt: Hypothesis property tests of the proof chain of Feng et al. (2025).

Each test draws small languages (random n-grams and HMMs, the interval HMM of Theorem 4.4), lengths and
schedules, and compares mdmt's exact quantities with their definitions, computed by enumeration, link by
link:

* Eq. 3: the exact output law p_N equals the mixture over every reveal assignment tau in [N]^L, on and off
  the support, and SER counts the support of q; Lemma B.2 (C1): KL(q || p_N) <= E_tau KL(q || p_tau);
  the linearity formula of E_tau KL (:mod:`.test_exact_law`);
* Lemma B.3 (C2): KL(q || p_tau) = sum of total correlations + learning terms, each >= 0, for every
  assignment; one token per step reproduces q exactly (:mod:`.test_exact_law`);
* Definitions B.4/B.5 and Lemma B.7 (C4-C5): the separator scan equals the definition of D_j, and the exact
  E[D_j] equals the mean over every assignment (:mod:`.test_dependency_counts`);
* Theorem 4.4 (Lemmas C.5-C.6): the closed-form oracle SER of the interval HMM equals the generic exact
  evaluator and lies above the theorem's lower bound (:mod:`.test_interval_theorem44`).

Run them from an installed mdmt, without the repository (pytest and hypothesis installed, the ``test``
extra)::

    python -m pytest --pyargs mdmt.proofs -q
    mdmt verify --pytest

The repository's default test run collects them too (pyproject's ``testpaths``).  Their brute-force
references are in :mod:`.reference`.
"""
