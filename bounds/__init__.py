"""mdmt.bounds: the paper's theorems as sympy statements with explicit constants, separator and
dependency counts, every link of the proofs as a check (``mdmt verify``), and bound curves.

Public names (loaded on first use): ``ter_curve``, ``ser_curve`` (the curves of ``mdmt curve``),
``atlas_sweep`` (``mdmt atlas`` over several instances), ``ser_study``, ``ter_study`` (``mdmt adaptive
ser|ter``) -- each returns a :class:`mdmt.results.Result` with ``.to_frame()``, ``.to_csv()`` and ``.plot()`` --
``parse_claim``, ``instance_quantities``, ``certify_claim``, ``CONJECTURES``, ``STATEMENTS`` (the sympy
statements).  ``atlas``, ``verify`` and ``refute`` are submodules here; their functions are ``mdmt.atlas``,
``mdmt.verify`` and ``mdmt.refute``.
"""

from mdmt.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    "mdmt.bounds", globals(),
    {"ter_curve": "mdmt.bounds.studies.curves", "ser_curve": "mdmt.bounds.studies.curves", "atlas_sweep": "mdmt.bounds.studies.atlas",
     "ser_study": "mdmt.bounds.studies.adaptive", "ter_study": "mdmt.bounds.studies.adaptive", "parse_claim": "mdmt.bounds.refutation.claims",
     "instance_quantities": "mdmt.bounds.refutation.quantities", "certify_claim": "mdmt.bounds.refutation.certificate",
     "CONJECTURES": "mdmt.bounds.refutation.conjectures"},
    {"STATEMENTS": ("mdmt.bounds.theorems.statements", "ALL")})
