"""pytest configuration of the proof check: mdmt's Hypothesis profile (:mod:`.settings`)."""

from mdmt.proofs.settings import load_profile

load_profile()
