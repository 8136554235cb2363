"""Theorem statements with explicit constants, separator and dependency counts, bound checks and curves."""
