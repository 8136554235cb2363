"""The Hypothesis settings of mdmt's property tests, for the proof check (this package) and the repository's tests.

``mdmt`` (the default): 25 derandomized examples per test, no deadline: the same cases on every run, so a
failure reproduces, and no example database (``.hypothesis/``) is written into the folder the check runs in;
``thorough``: 300 random examples.  ``HYPOTHESIS_PROFILE`` picks one.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings


def load_profile() -> str:
    """Register the profiles and load the one ``HYPOTHESIS_PROFILE`` names (``mdmt`` by default); its name."""
    settings.register_profile("mdmt", deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow],
                              derandomize=True, database=None)
    settings.register_profile("thorough", deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
    name = os.environ.get("HYPOTHESIS_PROFILE", "mdmt")
    settings.load_profile(name)
    return name
