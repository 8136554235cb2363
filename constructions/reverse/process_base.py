"""The base of the reverse processes that are not reveal-only policies: ReMDM's remasking and verified drafting.

A reveal-only process (:class:`~.policies.Policy`) is described by plans that the policy chain and the
sampler of :mod:`.policies` run; the processes below bring their own exact law (``exact_law``) and
sampler (``sample``), which :mod:`.policy_exact` and :mod:`.policy_sampler` call instead.  The grammar
(:func:`~.policies.parse_policy`) accepts both kinds.
"""

from __future__ import annotations

import time


class LawProcess:
    """A reverse process with its own ``exact_law(language, L, ...)`` and ``sample(language, L, num, ...)``.

    A subclass gives ``_law(language, L, tables) -> (p, expected calls, tables)``, ``_draw(language, L, num, rng)
    -> (X, calls)``, ``method`` (the sampler's name) and ``oracle_only`` (why no other denoiser is taken); the two
    public methods wrap them in mdmt's result types, identically for every such process.
    """

    adaptive = False
    spec = "process"
    method = "process"
    oracle_only = "runs with the oracle denoiser only"

    def _law(self, language, L, tables):
        raise NotImplementedError

    def _draw(self, language, L, num, rng):
        raise NotImplementedError

    def _refuse_denoiser(self, *given) -> None:
        if any(g is not None for g in given):
            raise ValueError(f"policy {self.spec!r} {self.oracle_only}")

    def exact_law(self, language, L, denoiser=None, support_only=True, tables=None, table=None):
        """(the exact output law as an :class:`~.exact.ExactResult`, the expected number of network calls)."""
        import numpy as np

        from .exact import ExactResult

        self._refuse_denoiser(denoiser, table)
        p, calls, tables = self._law(language, L, tables)
        return ExactResult(sequences=tables.sequences, q=tables.q, p=p, pi=np.empty(0), support_only=support_only), calls

    def sample(self, language, L, num, denoiser=None, rng=None):
        """``num`` sequences of the process as a :class:`~.sampler.SampleResult` (with the calls of each)."""
        from .sampler import SampleResult

        self._refuse_denoiser(denoiser)
        t0 = time.perf_counter()
        X, calls = self._draw(language, L, num, rng)
        return SampleResult(X, calls, None, time.perf_counter() - t0, self.method)

    def plans(self, L: int):
        raise ValueError(f"policy {self.spec!r} is not a reveal-only process (it has no plan)")

    def expected_nfe(self, L: int) -> float | None:
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"
