"""One property, two depths: a Hypothesis test in the default tier and the same test, with more examples, in the
integration tier (README, "The tests, in two tiers")."""

from __future__ import annotations

from typing import Callable

import pytest
from hypothesis import given, settings


def in_both_tiers(check: Callable, quick: int, thorough: int, **strategies) -> tuple[Callable, Callable]:
    """``check`` given ``strategies``: ``quick`` examples for the default tier, ``thorough`` for the integration tier.

    Bind the pair to ``test_name`` and ``test_name_thoroughly``.  Both draw from one derandomized sequence (the
    profile of :mod:`mdmt.proofs.settings`), so the quick test's cases are the first cases of the thorough one.
    """
    if not 0 < quick < thorough:
        raise ValueError(f"need 0 < quick < thorough examples, got quick={quick}, thorough={thorough}")
    quick_test = settings(max_examples=quick, deadline=None)(given(**strategies)(check))
    thorough_test = settings(max_examples=thorough, deadline=None)(given(**strategies)(check))
    return quick_test, pytest.mark.integration(thorough_test)
