"""mdmt.bounds: the paper's theorems as sympy statements with explicit constants, separator and
dependency counts, every link of the proofs as a check (``mdmt verify``), and bound curves."""
