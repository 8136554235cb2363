"""The base of the reverse processes that are not reveal-only policies: ReMDM's remasking and verified drafting.

A reveal-only process (:class:`~.policies.Policy`) is described by plans that the policy chain and the
sampler of :mod:`.policies` run; the processes below bring their own exact law (``exact_law``) and
sampler (``sample``), which :mod:`.policy_exact` and :mod:`.policy_sampler` call instead.  The grammar
(:func:`~.policies.parse_policy`) accepts both kinds.
"""

from __future__ import annotations


class LawProcess:
    """A reverse process with its own ``exact_law(language, L, ...)`` and ``sample(language, L, num, ...)``."""

    adaptive = False
    spec = "process"

    def plans(self, L: int):
        raise ValueError(f"policy {self.spec!r} is not a reveal-only process (it has no plan)")

    def expected_nfe(self, L: int) -> float | None:
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"
