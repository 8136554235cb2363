"""mdmt.bounds: the paper's theorems as sympy statements with explicit constants, separator and
dependency counts, every link of the proofs as a check (``mdmt verify``), and bound curves.

Public names (loaded on first use): ``ter_curve``, ``ser_curve`` (the curves of ``mdmt curve``),
``parse_claim``, ``instance_quantities``, ``certify_claim``, ``CONJECTURES``, ``STATEMENTS`` (the sympy
statements).  ``atlas``, ``verify`` and ``refute`` are submodules here; their functions are ``mdmt.atlas``,
``mdmt.verify`` and ``mdmt.refute``.
"""

from mdmt.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    "mdmt.bounds", globals(),
    {"ter_curve": "mdmt.bounds.curves", "ser_curve": "mdmt.bounds.curves", "parse_claim": "mdmt.bounds.claims",
     "instance_quantities": "mdmt.bounds.quantities", "certify_claim": "mdmt.bounds.certificate",
     "CONJECTURES": "mdmt.bounds.conjectures"},
    {"STATEMENTS": ("mdmt.bounds.statements", "ALL")})
